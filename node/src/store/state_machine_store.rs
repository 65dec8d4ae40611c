//! `StateMachineStore`: openraft's `RaftStateMachine` and `RaftSnapshotBuilder` over
//! the pure [`FleetState`], with the current snapshot persisted in RocksDB.
//!
//! The state lives in memory (it is small, and the pure state machine is fast); what
//! survives a restart is the last snapshot, in its own `SnapshotFile` beside the
//! database, plus the log and the committed log id in the [`LogStore`]. On open the
//! state is restored from that snapshot, so `applied_state()` reports the snapshot's
//! last log id, and openraft re-applies the committed entries after it. A store written
//! by an earlier build keeps its snapshot in RocksDB's `snapshot` column family; it is
//! read from there until the first snapshot file replaces it.
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
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use futures::{Stream, StreamExt};
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine};
use openraft::type_config::alias::{
    EntryOf, LogIdOf, SnapshotMetaOf, SnapshotOf, StoredMembershipOf,
};
use openraft::{EntryPayload, OptionalSend, StoredMembership};
use rocksdb::{DB, WriteBatch};
use tokio::sync::{mpsc, watch};

use super::database::{CF_SNAPSHOT, column_family, read_json, run_blocking, write_unsynced};
use super::error::StoreError;
use super::snapshot_file::SnapshotFile;
use super::state_handle::{
    AppliedState, SharedAppliedState, StateHandle, read_applied, write_applied,
};
use super::store_sizes::StoreSizes;
use crate::raft::{CommandOutcome, FleetRaft};
use crate::state::{Effect, FleetState, Snapshot};

type LogId = LogIdOf<FleetRaft>;
type SnapshotMeta = SnapshotMetaOf<FleetRaft>;
type StoredSnapshot = SnapshotOf<FleetRaft, Vec<u8>>;

/// Where an earlier build kept the snapshot: keys of the `snapshot` column family.
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
    /// The current snapshot's file.
    file: Arc<SnapshotFile>,
    /// What is stored; its lock serialises writes of the current snapshot, so a
    /// snapshot built from an older state never replaces a newer one that was
    /// installed meanwhile.
    stored: Arc<Mutex<StoredRecord>>,
    /// Where the current snapshot's size is kept.
    sizes: StoreSizes,
}

/// What the store holds as its current snapshot.
#[derive(Default)]
struct StoredRecord {
    /// The stored snapshot's last log id (`None` inside: it covers no entry); `None`
    /// when there is no snapshot.
    last_log_id: Option<Option<LogId>>,
    /// Whether an earlier build's snapshot is still in the `snapshot` column family,
    /// to be deleted once a file replaces it.
    in_rocksdb: bool,
}

impl StateMachineStore {
    /// Restores the state from the stored snapshot, if any, and returns the store with
    /// a handle on its state (which also reads `sizes`).
    pub(crate) fn open(
        db: Arc<DB>,
        dir: &Path,
        effects: mpsc::UnboundedSender<AppliedEffects>,
        sizes: StoreSizes,
    ) -> Result<(Self, StateHandle), StoreError> {
        let file = SnapshotFile::open(dir)?;
        let (stored, in_rocksdb) = match file.read()? {
            Some(snapshot) => (Some(snapshot), false),
            None => {
                let earlier = read_rocksdb_snapshot(&db)?;
                let in_rocksdb = earlier.is_some();
                (earlier, in_rocksdb)
            }
        };
        let record = StoredRecord {
            last_log_id: stored.as_ref().map(|s| s.meta.last_log_id),
            in_rocksdb,
        };
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
            file: Arc::new(file),
            stored: Arc::new(Mutex::new(record)),
            sizes,
        };
        Ok((store, handle))
    }

    /// Applies one entry; returns what its proposer gets and the command's effects.
    fn apply_entry(&self, entry: EntryOf<FleetRaft>) -> (CommandOutcome, Vec<Effect>) {
        let mut applied = write_applied(&self.applied);
        let log_id = entry.log_id();
        applied.last_applied = Some(log_id);
        match entry.into_payload() {
            EntryPayload::Blank => (CommandOutcome::default(), Vec::new()),
            EntryPayload::Normal(command) => {
                let outcome = applied.state.apply(*command);
                let result = CommandOutcome {
                    result: Some(outcome.result),
                };
                (result, outcome.effects)
            }
            EntryPayload::Membership(membership) => {
                applied.last_membership = StoredMembership::new(Some(log_id), membership);
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
        let meta = meta.clone();
        let db = Arc::clone(&self.db);
        let file = Arc::clone(&self.file);
        let stored = Arc::clone(&self.stored);
        let sizes = self.sizes.clone();
        run_blocking("a snapshot write", move || {
            let mut stored = stored.lock().unwrap_or_else(PoisonError::into_inner);
            if only_if_newer
                && stored
                    .last_log_id
                    .is_some_and(|newest| newest > meta.last_log_id)
            {
                tracing::debug!(
                    built = %describe(&meta.last_log_id),
                    "a newer snapshot is already stored; keeping it"
                );
                return Ok(data);
            }
            file.write(&meta, &data)?;
            stored.last_log_id = Some(meta.last_log_id);
            sizes.set_snapshot_bytes(data.len() as u64);
            if stored.in_rocksdb {
                // Unsynced: once the file is there, it is read first whatever is left.
                let family = column_family(&db, CF_SNAPSHOT)?;
                let mut batch = WriteBatch::default();
                batch.delete_cf(family, KEY_SNAPSHOT_META);
                batch.delete_cf(family, KEY_SNAPSHOT_DATA);
                write_unsynced(&db, batch, CF_SNAPSHOT, || {
                    "the snapshot an earlier build stored".into()
                })?;
                stored.in_rocksdb = false;
            }
            Ok(data)
        })
        .await
    }
}

/// The stored current snapshot, if there is one: the file's, or else the one an
/// earlier build kept in RocksDB.
fn read_snapshot(db: &DB, file: &SnapshotFile) -> Result<Option<StoredSnapshot>, StoreError> {
    match file.read()? {
        Some(snapshot) => Ok(Some(snapshot)),
        None => read_rocksdb_snapshot(db),
    }
}

/// The snapshot an earlier build kept in the `snapshot` column family, if any.
fn read_rocksdb_snapshot(db: &DB) -> Result<Option<StoredSnapshot>, StoreError> {
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
            let log_index = entry.log_id().index;
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
        let (db, file) = (Arc::clone(&self.db), Arc::clone(&self.file));
        Ok(run_blocking("a snapshot read", move || read_snapshot(&db, &file)).await?)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Actor, Command, FleetSettings, Request};
    use crate::store::database::{open, to_json, write_synced};
    use crate::store::open_store;
    use crate::store::snapshot_file::SNAPSHOT_FILE_NAME;
    use crate::store::test_entries::log_id;

    /// A bootstrapped state, as an earlier build's snapshot of it.
    fn bootstrapped() -> FleetState {
        let mut state = FleetState::default();
        state.apply(Command {
            at_ms: 1_000,
            actor: Actor::Operator,
            request: Request::Bootstrap(FleetSettings::default_for("home")),
        });
        state
    }

    /// Writes `state` at log id (1, 4) where an earlier build kept its snapshot.
    fn store_as_an_earlier_build(dir: &Path, state: &FleetState) {
        let db = open(dir).unwrap();
        let meta = SnapshotMeta {
            last_log_id: Some(log_id(1, 4)),
            last_membership: StoredMembership::default(),
        };
        let family = column_family(&db, CF_SNAPSHOT).unwrap();
        let mut batch = WriteBatch::default();
        batch.put_cf(family, KEY_SNAPSHOT_META, to_json(&meta, "meta").unwrap());
        batch.put_cf(family, KEY_SNAPSHOT_DATA, Snapshot::encode(state));
        write_synced(&db, batch, CF_SNAPSHOT, || "an earlier snapshot".into()).unwrap();
    }

    fn read_state(store: &StateHandle) -> FleetState {
        store.read(FleetState::clone)
    }

    #[tokio::test]
    async fn an_earlier_builds_snapshot_is_read_until_a_file_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let state = bootstrapped();
        store_as_an_earlier_build(dir.path(), &state);

        let (log, mut machine, handle) =
            open_store(dir.path(), 1, mpsc::unbounded_channel().0).unwrap();
        assert_eq!(
            read_state(&handle),
            state,
            "restored from the column family"
        );
        let current = machine.get_current_snapshot().await.unwrap().unwrap();
        assert_eq!(current.meta.last_log_id, Some(log_id(1, 4)));
        assert!(!dir.path().join(SNAPSHOT_FILE_NAME).exists());

        let built = machine.build_snapshot().await.unwrap();
        assert_eq!(built.meta.last_log_id, Some(log_id(1, 4)));
        assert!(dir.path().join(SNAPSHOT_FILE_NAME).exists());
        assert!(
            read_rocksdb_snapshot(&machine.db).unwrap().is_none(),
            "the earlier build's snapshot is deleted once the file holds one"
        );
        drop((log, machine, handle));

        let (_log, _machine, handle) =
            open_store(dir.path(), 1, mpsc::unbounded_channel().0).unwrap();
        assert_eq!(read_state(&handle), state, "restored from the file");
    }

    #[tokio::test]
    async fn a_built_snapshot_older_than_the_stored_one_does_not_replace_it() {
        let dir = tempfile::tempdir().unwrap();
        let (_log, mut machine, _handle) =
            open_store(dir.path(), 1, mpsc::unbounded_channel().0).unwrap();
        let newer = SnapshotMeta {
            last_log_id: Some(log_id(2, 9)),
            last_membership: StoredMembership::default(),
        };
        machine
            .install_snapshot(&newer, Snapshot::encode(&bootstrapped()))
            .await
            .unwrap();

        // Built from the state as it was before the install (nothing applied).
        let older = SnapshotMeta {
            last_log_id: Some(log_id(1, 3)),
            last_membership: StoredMembership::default(),
        };
        machine
            .persist_snapshot(&older, Snapshot::encode(&FleetState::default()), true)
            .await
            .unwrap();

        let current = machine.get_current_snapshot().await.unwrap().unwrap();
        assert_eq!(current.meta, newer);
    }
}
