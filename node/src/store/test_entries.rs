//! Log ids and blank entries for the store's unit tests.

use openraft::RaftTypeConfig;
use openraft::entry::RaftEntry;
use openraft::type_config::alias::{EntryOf, LogIdOf};
use openraft::vote::RaftLeaderIdExt;

use crate::raft::FleetRaft;

/// The log id at `index` in `term` (leader node 1).
pub(crate) fn log_id(term: u64, index: u64) -> LogIdOf<FleetRaft> {
    LogIdOf::<FleetRaft>::new(
        <FleetRaft as RaftTypeConfig>::LeaderId::new_committed(term, 1),
        index,
    )
}

/// Blank entries of `term` at `indexes`.
pub(crate) fn blanks(term: u64, indexes: impl IntoIterator<Item = u64>) -> Vec<EntryOf<FleetRaft>> {
    indexes
        .into_iter()
        .map(|i| EntryOf::<FleetRaft>::new_blank(log_id(term, i)))
        .collect()
}
