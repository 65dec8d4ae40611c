//! `StoreSizes`: how many bytes of log entries this node has written since it started
//! (counting the log above its snapshot at start as written then), and how large its
//! current snapshot is — what the runtime paces its snapshots by
//! (see [`snapshot_pacer`](crate::runtime::snapshot_pacer)).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Byte counts shared by the log writer, the state machine store and the runtime;
/// clones share them.
#[derive(Clone, Debug, Default)]
pub struct StoreSizes {
    counts: Arc<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    log_bytes_written: AtomicU64,
    snapshot_bytes: AtomicU64,
}

impl StoreSizes {
    /// Bytes of encoded log entries written to RocksDB since this node started, plus
    /// the log it found above its snapshot when it started.
    pub fn log_bytes_written(&self) -> u64 {
        self.counts.log_bytes_written.load(Ordering::Relaxed)
    }

    /// The size of the current snapshot's data (0 while there is none).
    pub fn snapshot_bytes(&self) -> u64 {
        self.counts.snapshot_bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn add_log_bytes(&self, bytes: u64) {
        self.counts
            .log_bytes_written
            .fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn set_snapshot_bytes(&self, bytes: u64) {
        self.counts.snapshot_bytes.store(bytes, Ordering::Relaxed);
    }
}
