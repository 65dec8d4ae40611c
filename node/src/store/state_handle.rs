//! `StateHandle`: read access to the applied fleet state for queries and for waits
//! on progress, shared with the state machine store that writes it.
//!
//! The state, the last applied log id and the last membership sit behind one lock,
//! so a snapshot (or a query) always sees them together, never a state that is one
//! entry ahead of its log id. A `watch` channel carries the last applied index, so a
//! caller that just wrote can wait until its entry is applied here without polling.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use openraft::type_config::alias::{LogIdOf, StoredMembershipOf};
use tokio::sync::watch;

use super::store_sizes::StoreSizes;
use crate::raft::FleetRaft;
use crate::state::FleetState;

/// What the state machine has applied: the state and the Raft position it is at.
#[derive(Debug, Default)]
pub(crate) struct AppliedState {
    pub(crate) state: FleetState,
    pub(crate) last_applied: Option<LogIdOf<FleetRaft>>,
    pub(crate) last_membership: StoredMembershipOf<FleetRaft>,
}

/// The applied state, shared between the state machine store (the only writer) and
/// its handles.
pub(crate) type SharedAppliedState = Arc<RwLock<AppliedState>>;

/// Locks for reading. The lock is poisoned only if `FleetState::apply` panicked while
/// holding it; that panic already stops the state machine task and with it Raft, so a
/// reader gets the last state rather than a second panic.
pub(crate) fn read_applied(shared: &SharedAppliedState) -> RwLockReadGuard<'_, AppliedState> {
    shared.read().unwrap_or_else(PoisonError::into_inner)
}

/// Locks for writing; see [`read_applied`] about poisoning.
pub(crate) fn write_applied(shared: &SharedAppliedState) -> RwLockWriteGuard<'_, AppliedState> {
    shared.write().unwrap_or_else(PoisonError::into_inner)
}

/// Read access to the applied state for queries and waits.
#[derive(Clone)]
pub struct StateHandle {
    applied: SharedAppliedState,
    applied_index: watch::Receiver<u64>,
    sizes: StoreSizes,
}

impl StateHandle {
    pub(crate) fn new(
        applied: SharedAppliedState,
        applied_index: watch::Receiver<u64>,
        sizes: StoreSizes,
    ) -> Self {
        Self {
            applied,
            applied_index,
            sizes,
        }
    }

    /// The bytes written to the log and the size of the current snapshot.
    pub fn sizes(&self) -> &StoreSizes {
        &self.sizes
    }

    /// Runs `f` on the applied state under the read lock. Keep `f` short: the state
    /// machine waits for it before applying the next entry.
    pub fn read<T>(&self, f: impl FnOnce(&FleetState) -> T) -> T {
        f(&read_applied(&self.applied).state)
    }

    /// The index of the last applied log entry (0 before anything was applied).
    pub fn applied_index(&self) -> u64 {
        *self.applied_index.borrow()
    }

    /// A receiver of the last applied index; it wakes whenever entries are applied or
    /// a snapshot is installed.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.applied_index.clone()
    }
}
