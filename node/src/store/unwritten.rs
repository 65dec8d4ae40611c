//! `Unwritten`: the log entries that were appended but are not yet written to
//! RocksDB, kept in memory so that they are readable the moment `append` returns.
//!
//! *Invariant:* every entry of the log is here or in RocksDB. An append puts its
//! entries here before it hands them to the [`LogWriter`](super::log_writer), and
//! the writer takes them out only after RocksDB holds them. So a reader that sees the
//! lowest index held here reads everything below it from RocksDB and the rest from
//! here, and never finds a hole while entries move from one to the other.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use openraft::type_config::alias::{EntryOf, LogIdOf};

use crate::raft::FleetRaft;

type Entry = EntryOf<FleetRaft>;
type LogId = LogIdOf<FleetRaft>;

/// The unwritten tail of the log; clones share it.
#[derive(Clone, Default)]
pub(crate) struct Unwritten {
    entries: Arc<Mutex<BTreeMap<u64, Entry>>>,
}

impl Unwritten {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds copies of `entries` until they are written.
    pub(crate) fn insert(&self, entries: &[Entry]) {
        let mut held = self.lock();
        for entry in entries {
            held.insert(entry.log_id.index, entry.clone());
        }
    }

    /// Lets go of the entries that RocksDB now holds; an entry that a truncation
    /// replaced meanwhile (same index, another log id) stays.
    pub(crate) fn written(&self, log_ids: &[LogId]) {
        let mut held = self.lock();
        for log_id in log_ids {
            if held.get(&log_id.index).is_some_and(|e| e.log_id == *log_id) {
                held.remove(&log_id.index);
            }
        }
    }

    /// Drops the entries from index `first` on (a truncation of the log).
    pub(crate) fn truncate_from(&self, first: u64) {
        self.lock().split_off(&first);
    }

    /// The log id of the last unwritten entry.
    pub(crate) fn last_log_id(&self) -> Option<LogId> {
        self.lock().values().next_back().map(|e| e.log_id)
    }

    /// The lowest index held (everything below it is in RocksDB) and copies of the
    /// held entries from `start` up to `end_exclusive`, at most `limit`.
    pub(crate) fn read(
        &self,
        start: u64,
        end_exclusive: Option<u64>,
        limit: usize,
    ) -> (Option<u64>, Vec<Entry>) {
        let held = self.lock();
        let first = held.keys().next().copied();
        let entries = held
            .range(start..)
            .take_while(|(index, _)| end_exclusive.is_none_or(|end| **index < end))
            .take(limit)
            .map(|(_, entry)| entry.clone())
            .collect();
        (first, entries)
    }
}
