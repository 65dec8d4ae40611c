//! `LeaderContact`: when this node last heard from a leader — an `AppendEntries`
//! (entries or a heartbeat) arriving, or being accepted.
//!
//! openraft keeps a similar instant inside its engine — it starts the leader's lease
//! on this node — but does not publish it for followers. The Raft RPC handler records
//! a contact when the message arrives (the leader is alive, even if this node takes a
//! while to decode and append a large entry) and again after openraft accepted it, so
//! the last contact is never earlier than openraft's own. The succession watch reads
//! it to know when the leader has been silent for a whole lease.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::time::Instant;

/// The last accepted contact from a leader; clones share it.
#[derive(Clone, Debug, Default)]
pub struct LeaderContact {
    last: Arc<Mutex<Option<Instant>>>,
}

impl LeaderContact {
    /// Records a contact now.
    pub fn record(&self) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }

    /// When the last contact was, if there was one since this node started.
    pub fn last(&self) -> Option<Instant> {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
