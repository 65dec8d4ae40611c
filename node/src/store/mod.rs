//! The node's durable storage for Raft: the log and vote in one RocksDB database, and
//! the state machine with its snapshot, in a file beside it.
//!
//! [`open_store`] opens (or creates) the database in a directory and returns the two
//! halves openraft needs — a [`LogStore`] (`RaftLogStorage`) and a
//! [`StateMachineStore`] (`RaftStateMachine`) — and a [`StateHandle`] through which
//! the node runtime reads the applied [`FleetState`](crate::state::FleetState) and
//! waits for progress. The effects of applied commands go to the channel given to
//! `open_store`, tagged with their log index.
//!
//! # Durability
//! Every vote and purge is written with RocksDB's `sync` option, every snapshot is
//! fsynced into its file before it replaces the last one, and an append or
//! truncation is reported done to Raft only after an fsync of the write-ahead log that
//! covers it (group commit, see `log_writer`), so what this node acknowledged survives
//! `kill -9` and power loss (SPEC K1). The state itself is kept in memory and rebuilt
//! on restart from the last snapshot plus the committed log after it.
//!
//! # Layout
//! - [`log_store`]: `LogStore`, the log (`log` column family) and vote, committed and
//!   purge point (`meta`).
//! - [`state_machine_store`]: `StateMachineStore`, applying commands, building and
//!   installing snapshots, and `AppliedEffects`.
//! - `snapshot_file`: `SnapshotFile`, the current snapshot in a file of its own
//!   (written aside, fsynced, renamed into place; checksummed).
//! - [`state_handle`]: `StateHandle`, read access and the applied-index watch.
//! - [`store_sizes`]: `StoreSizes`, the bytes written to the log and the size of the
//!   current snapshot, which snapshots are paced by.
//! - [`error`]: `StoreError`, naming the path, column family and operation that failed.
//! - `database`: the column families, opening, synced and unsynced writes.
//! - `log_writer`: `LogWriter`, the thread that writes appends, truncations and the
//!   newest committed log id, one fsync for every job waiting, then their callbacks;
//!   a follower's append may run the same round on its caller's thread.
//! - `log_tail`: `LogTail`, the newest log entries in memory: those not yet in RocksDB,
//!   readable meanwhile, and the most recent written ones, for replication.

mod database;
pub mod error;
pub mod log_store;
mod log_tail;
mod log_writer;
mod snapshot_file;
pub mod state_handle;
pub mod state_machine_store;
pub mod store_sizes;
#[cfg(test)]
mod test_entries;

use std::path::Path;
use std::sync::Arc;

use tokio::sync::mpsc;

pub use error::StoreError;
pub use log_store::{ENTRIES_PER_READ_MAX, LogStore};
pub use state_handle::StateHandle;
pub use state_machine_store::{AppliedEffects, StateMachineStore};
pub use store_sizes::StoreSizes;

/// Opens the store in `dir` (creating the directory and database if needed) for the
/// node whose Raft id is `node_id`, and restores the state from its last snapshot.
/// Effects of commands applied from now on are sent to `effects`.
///
/// Fails if the directory cannot be created, RocksDB cannot open it (for example,
/// another process holds it), or the stored snapshot cannot be decoded.
pub fn open_store(
    dir: &Path,
    node_id: u64,
    effects: mpsc::UnboundedSender<AppliedEffects>,
) -> Result<(LogStore, StateMachineStore, StateHandle), StoreError> {
    let db = database::open(dir)?;
    let sizes = StoreSizes::default();
    let (state_machine, handle) =
        StateMachineStore::open(Arc::clone(&db), dir, effects, sizes.clone())?;
    // The log above the snapshot was written since it, before a restart or not.
    let above_snapshot = handle.applied_index().saturating_add(1);
    sizes.add_log_bytes(log_store::log_bytes_from(&db, above_snapshot)?);
    let log_store = LogStore::new(db, node_id, sizes)?;
    Ok((log_store, state_machine, handle))
}
