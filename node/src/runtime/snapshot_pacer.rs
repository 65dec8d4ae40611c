//! `SnapshotPacer`: when this node builds a snapshot.
//!
//! A snapshot copies and encodes the whole state, and the state grows with every event
//! (the event log only appends). openraft's own policy counts entries alone, so a
//! snapshot every N entries would cost more per entry the longer a fleet runs. Here a
//! snapshot is due once both hold:
//! - at least `snapshot_every_logs` entries were applied since the last snapshot, and
//! - the log written since then is at least as large, in bytes, as that snapshot.
//!
//! Then each byte written to the log pays for at most about one byte of snapshot,
//! however large the state has grown, and the log a restart replays on top of the
//! snapshot is never much larger than the snapshot itself. A snapshot installed from
//! the leader counts as the last snapshot like one built here, and after a restart
//! the log found above the snapshot counts as written since it.

use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;

use super::fleet_node::FleetNode;

/// How often the pacer looks at the log's growth.
pub const PACER_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// The pacing rule, on what has grown since the last snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotPacer {
    /// The fewest entries applied between two snapshots.
    pub every_logs: u64,
}

impl SnapshotPacer {
    /// Whether a snapshot is due after `entries` entries and `log_bytes` bytes of log
    /// since the last snapshot, whose data took `snapshot_bytes`.
    pub fn is_due(&self, entries: u64, log_bytes: u64, snapshot_bytes: u64) -> bool {
        entries >= self.every_logs && log_bytes >= snapshot_bytes
    }
}

/// Triggers this node's snapshots by `pacer`'s rule until Raft stops (or the task is
/// aborted at shutdown).
pub async fn run_snapshot_pacer(node: Arc<FleetNode>, pacer: SnapshotPacer) {
    let sizes = node.state.sizes().clone();
    let metrics = node.raft.metrics();
    // The snapshot the counts below start from (`None` until seen), and the log bytes
    // written by then: none for the snapshot the node started from, since the log
    // above it counts as written after it (see `StoreSizes`).
    let mut last_snapshot = None;
    let mut log_bytes_at_snapshot = 0;
    // The applied index a requested snapshot will cover, until it is taken.
    let mut requested: Option<u64> = None;
    loop {
        tokio::time::sleep(PACER_CHECK_INTERVAL).await;
        let (snapshot, applied) = {
            let now = metrics.borrow_watched();
            (
                now.snapshot.map(|id| id.index),
                now.last_applied.map_or(0, |id| id.index),
            )
        };
        if last_snapshot != Some(snapshot) {
            if last_snapshot.is_some() {
                log_bytes_at_snapshot = sizes.log_bytes_written();
            }
            last_snapshot = Some(snapshot);
        }
        let since = snapshot.unwrap_or(0);
        // A request counts as taken once a snapshot reaches it; a lost request (the
        // build failed) is made again after as many entries once more.
        if requested.is_some_and(|at| since >= at || applied >= at + pacer.every_logs) {
            requested = None;
        }
        let log_bytes = sizes.log_bytes_written() - log_bytes_at_snapshot;
        let snapshot_bytes = sizes.snapshot_bytes();
        if requested.is_none()
            && pacer.is_due(applied.saturating_sub(since), log_bytes, snapshot_bytes)
        {
            tracing::debug!(applied, since, log_bytes, snapshot_bytes, "snapshot due");
            if node.raft.trigger().snapshot().await.is_err() {
                return;
            }
            requested = Some(applied);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACER: SnapshotPacer = SnapshotPacer { every_logs: 5000 };

    #[test]
    fn the_first_snapshot_is_due_after_the_entry_count_alone() {
        assert!(!PACER.is_due(4999, 1 << 20, 0));
        assert!(PACER.is_due(5000, 0, 0));
    }

    #[test]
    fn a_large_state_waits_until_the_log_has_grown_as_large_as_its_snapshot() {
        let snapshot_bytes = 30 << 20;
        assert!(!PACER.is_due(50_000, (30 << 20) - 1, snapshot_bytes));
        assert!(PACER.is_due(50_000, 30 << 20, snapshot_bytes));
    }

    #[test]
    fn a_small_state_snapshots_every_so_many_entries() {
        assert!(!PACER.is_due(4999, 10 << 20, 4096));
        assert!(PACER.is_due(5000, 1 << 20, 4096));
    }
}
