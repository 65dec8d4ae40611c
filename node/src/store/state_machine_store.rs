//! `StateMachineStore`: openraft's `RaftStateMachine` and `RaftSnapshotBuilder` over
//! the pure [`FleetState`], with the current snapshot persisted in RocksDB.
//!
//! The state lives in memory (it is small, and the pure state machine is fast); what
//! survives a restart is the last snapshot, written synced to the `snapshot` column
//! family, plus the log and the committed log id in the [`LogStore`]. On open the state
//! is restored from that snapshot, so `applied_state()` reports the snapshot's last log
//! id, and openraft re-applies the committed entries after it.
//!
//! Applying an entry runs its [`Command`] through `FleetState::apply`, answers the
//! proposer (if it waits on this node), advances the applied index that
//! [`StateHandle`]s watch, and hands the effects to the node runtime with their log
//! index. Because entries after the snapshot are applied again after a restart, the
//! runtime sees their effects again: effects are at least once, and the log index lets
//! the runtime recognise a repeat.
//!
//! Snapshot data is exactly [`state::Snapshot::encode`](crate::state::Snapshot::encode)
//! of the state (versioned JSON); the last applied log id and membership travel in
//! openraft's `SnapshotMeta` beside it and are stored next to the bytes.
//!
//! [`LogStore`]: super::LogStore
//! [`Command`]: crate::state::Command

use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use futures::{Stream, StreamExt};
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine};
use openraft::type_config::alias::{
    EntryOf, LogIdOf, SnapshotMetaOf, SnapshotOf, StoredMembershipOf,
};
use openraft::{EntryPayload, OptionalSend, StoredMembership};
use rocksdb::{DB, WriteBatch};
use tokio::sync::{mpsc, watch};

use super::database::{CF_SNAPSHOT, column_family, read_json, run_blocking, to_json, write_synced};
use super::error::StoreError;
use super::state_handle::{
    AppliedState, SharedAppliedState, StateHandle, read_applied, write_applied,
};
use super::store_sizes::StoreSizes;
use crate::raft::{CommandOutcome, FleetRaft};
use crate::state::{Effect, FleetState, Snapshot};

type LogId = LogIdOf<FleetRaft>;
type SnapshotMeta = SnapshotMetaOf<FleetRaft>;
type StoredSnapshot = SnapshotOf<FleetRaft, Vec<u8>>;

const KEY_SNAPSHOT_META: &str = "meta";
const KEY_SNAPSHOT_DATA: &str = "data";

/// The effects of one applied entry, for the node runtime to carry out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedEffects {
    /// The index of the log entry whose command produced the effects.
    pub log_index: u64,
    pub effects: Vec<Effect>,
}

/// The fleet's state machine for openraft; also its own snapshot builder (clones
/// share the state).
#[derive(Clone)]
pub struct StateMachineStore {
    db: Arc<DB>,
    applied: SharedAppliedState,
    applied_index: watch::Sender<u64>,
    effects: mpsc::UnboundedSender<AppliedEffects>,
    /// Serialises writes of the current snapshot, so a snapshot built from an older
    /// state never replaces a newer one that was installed meanwhile.
    snapshot_write: Arc<Mutex<()>>,
    /// Where the current snapshot's size is kept.
    sizes: StoreSizes,
}

impl StateMachineStore {
    /// Restores the state from the stored snapshot, if any, and returns the store with
    /// a handle on its state (which also reads `sizes`).
    pub(crate) fn open(
        db: Arc<DB>,
        effects: mpsc::UnboundedSender<AppliedEffects>,
        sizes: StoreSizes,
    ) -> Result<(Self, StateHandle), StoreError> {
        let stored = read_snapshot(&db)?;
        sizes.set_snapshot_bytes(stored.as_ref().map_or(0, |s| s.snapshot.len() as u64));
        let applied = match stored {
            Some(snapshot) => AppliedState {
                state: decode_state(&snapshot.meta, &snapshot.snapshot)?,
                last_applied: snapshot.meta.last_log_id,
                last_membership: snapshot.meta.last_membership,
            },
            None => AppliedState::default(),
        };
        let index = applied.last_applied.as_ref().map_or(0, |id| id.index);
        let (applied_index, receiver) = watch::channel(index);
        let applied = Arc::new(std::sync::RwLock::new(applied));
        let handle = StateHandle::new(Arc::clone(&applied), receiver, sizes.clone());
        let store = Self {
            db,
            applied,
            applied_index,
            effects,
            snapshot_write: Arc::new(Mutex::new(())),
            sizes,
        };
        Ok((store, handle))
    }

    /// Applies one entry; returns what its proposer gets and the command's effects.
    fn apply_entry(&self, entry: EntryOf<FleetRaft>) -> (CommandOutcome, Vec<Effect>) {
        let mut applied = write_applied(&self.applied);
        applied.last_applied = Some(entry.log_id);
        match entry.payload {
            EntryPayload::Blank => (CommandOutcome::default(), Vec::new()),
            EntryPayload::Normal(command) => {
                let outcome = applied.state.apply(command);
                let result = CommandOutcome {
                    result: Some(outcome.result),
                };
                (result, outcome.effects)
            }
            EntryPayload::Membership(membership) => {
                applied.last_membership = StoredMembership::new(Some(entry.log_id), membership);
                (CommandOutcome::default(), Vec::new())
            }
        }
    }

    /// Persists `snapshot` as the current one, synced. With `only_if_newer`, a
    /// snapshot older than the stored one is not written (a build that raced with an
    /// install); an installed snapshot always replaces the stored one.
    async fn persist_snapshot(
        &self,
        meta: &SnapshotMeta,
        data: Vec<u8>,
        only_if_newer: bool,
    ) -> Result<Vec<u8>, StoreError> {
        let encoded_meta = to_json(meta, "the snapshot metadata")?;
        let last_log_id = meta.last_log_id;
        let db = Arc::clone(&self.db);
        let lock = Arc::clone(&self.snapshot_write);
        let sizes = self.sizes.clone();
        run_blocking("a snapshot write", move || {
            let _serialised = lock.lock().unwrap_or_else(PoisonError::into_inner);
            if only_if_newer {
                let stored: Option<SnapshotMeta> = read_json(&db, CF_SNAPSHOT, KEY_SNAPSHOT_META)?;
                if stored.is_some_and(|stored| stored.last_log_id > last_log_id) {
                    tracing::debug!(
                        built = %describe(&last_log_id),
                        "a newer snapshot is already stored; keeping it"
                    );
                    return Ok(data);
                }
            }
            let family = column_family(&db, CF_SNAPSHOT)?;
            let mut batch = WriteBatch::default();
            batch.put_cf(family, KEY_SNAPSHOT_META, encoded_meta);
            batch.put_cf(family, KEY_SNAPSHOT_DATA, &data);
            write_synced(&db, batch, CF_SNAPSHOT, || {
                format!("the snapshot up to {}", describe(&last_log_id))
            })?;
            sizes.set_snapshot_bytes(data.len() as u64);
            Ok(data)
        })
        .await
    }
}

/// The stored current snapshot, if there is one.
fn read_snapshot(db: &DB) -> Result<Option<StoredSnapshot>, StoreError> {
    let Some(meta) = read_json::<SnapshotMeta>(db, CF_SNAPSHOT, KEY_SNAPSHOT_META)? else {
        return Ok(None);
    };
    let family = column_family(db, CF_SNAPSHOT)?;
    let data = db
        .get_cf(family, KEY_SNAPSHOT_DATA)
        .map_err(|source| StoreError::Read {
            column_family: CF_SNAPSHOT,
            what: format!("`{KEY_SNAPSHOT_DATA}`"),
            source,
        })?
        .ok_or_else(|| StoreError::Corrupt {
            what: format!(
                "the snapshot up to {} has metadata but no data",
                describe(&meta.last_log_id)
            ),
        })?;
    Ok(Some(StoredSnapshot {
        meta,
        snapshot: data,
    }))
}

fn decode_state(meta: &SnapshotMeta, data: &[u8]) -> Result<FleetState, StoreError> {
    Snapshot::decode(data).map_err(|source| StoreError::Snapshot {
        what: format!("up to {}", describe(&meta.last_log_id)),
        source,
    })
}

/// The buffer a snapshot is encoded into: twice the last snapshot. The pacer starts a
/// snapshot once the log written since the last one is as large as that snapshot, and
/// the state grows by less than the log that carried the growth, so the new one nearly
/// always fits (and when it does not, the buffer grows as usual). Room that is never
/// written costs address space, not memory.
fn encode_capacity(last_snapshot_bytes: u64) -> usize {
    usize::try_from(last_snapshot_bytes.saturating_mul(2)).unwrap_or(usize::MAX)
}

fn describe(log_id: &Option<LogId>) -> String {
    log_id
        .as_ref()
        .map_or_else(|| "the start".to_string(), |id| format!("log id {id}"))
}

impl RaftStateMachine<FleetRaft> for StateMachineStore {
    type SnapshotData = Vec<u8>;
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId>, StoredMembershipOf<FleetRaft>), io::Error> {
        let applied = read_applied(&self.applied);
        Ok((applied.last_applied, applied.last_membership.clone()))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> Result<(), io::Error>
    where
        Strm: Stream<Item = Result<EntryResponder<FleetRaft>, io::Error>> + Unpin + OptionalSend,
    {
        while let Some(item) = entries.next().await {
            let (entry, responder) = item?;
            let log_index = entry.log_id.index;
            let (outcome, effects) = self.apply_entry(entry);
            // Advanced before the proposer is answered, so a caller whose write
            // returned already finds `applied_index()` at or past its entry.
            self.applied_index.send_replace(log_index);
            if !effects.is_empty()
                && self
                    .effects
                    .send(AppliedEffects { log_index, effects })
                    .is_err()
            {
                tracing::warn!(
                    log_index,
                    "the runtime's effect receiver is gone; effects dropped"
                );
            }
            if let Some(responder) = responder {
                responder.send(outcome);
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Vec<u8>,
    ) -> Result<(), io::Error> {
        let state = decode_state(meta, &snapshot)?;
        // Persisted first: once the state below is replaced, a crash must find this
        // snapshot, not the one it replaced.
        self.persist_snapshot(meta, snapshot, false).await?;
        {
            let mut applied = write_applied(&self.applied);
            applied.state = state;
            applied.last_applied = meta.last_log_id;
            applied.last_membership = meta.last_membership.clone();
        }
        let index = meta.last_log_id.as_ref().map_or(0, |id| id.index);
        self.applied_index.send_replace(index);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<StoredSnapshot>, io::Error> {
        Ok(read_snapshot(&self.db)?)
    }
}

impl RaftSnapshotBuilder<FleetRaft> for StateMachineStore {
    type SnapshotData = Vec<u8>;

    async fn build_snapshot(&mut self) -> Result<StoredSnapshot, io::Error> {
        // On the blocking pool: copying and encoding a large state takes milliseconds,
        // which the runtime's workers owe to heartbeats and client calls.
        let applied = Arc::clone(&self.applied);
        let capacity = encode_capacity(self.sizes.snapshot_bytes());
        let (meta, data) = run_blocking("a snapshot build", move || {
            // Taken under one lock, so the state and its log id belong together;
            // encoded after the lock is released, so applying goes on meanwhile.
            let (meta, state) = {
                let applied = read_applied(&applied);
                let meta = SnapshotMeta {
                    last_log_id: applied.last_applied,
                    last_membership: applied.last_membership.clone(),
                };
                (meta, applied.state.clone())
            };
            Ok((meta, Snapshot::encode_with_capacity(&state, capacity)))
        })
        .await?;
        let data = self.persist_snapshot(&meta, data, true).await?;
        Ok(StoredSnapshot {
            meta,
            snapshot: data,
        })
    }
}
