//! The RocksDB store against real RocksDB in temporary directories: openraft's own
//! storage suite, durability of the vote, log and committed id across a reopen, and a
//! snapshot that restores the fleet state after a restart while openraft re-applies
//! the committed log after it.

use std::collections::BTreeSet;

use fleet_node::raft::{FleetRaft, node_id};
use fleet_node::state::{
    Actor, Command, Effect, FleetSettings, FleetState, NodeName, OpenDeliberation, Request, Tier,
};
use fleet_node::store::{
    AppliedEffects, LogStore, StateHandle, StateMachineStore, StoreError, open_store,
};
use openraft::entry::RaftEntry;
use openraft::storage::{
    IOFlushed, RaftLogReader, RaftLogStorage, RaftSnapshotBuilder, RaftStateMachine,
};
use openraft::testing::log::{StoreBuilder, Suite};
use openraft::type_config::TypeConfigExt;
use openraft::type_config::alias::{EntryOf, LogIdOf, VoteOf};
use openraft::vote::RaftLeaderIdExt;
use openraft::{
    EntryPayload, ErrorSubject, ErrorVerb, Membership, RaftTypeConfig, StorageError, StorageHelper,
    StoredMembership,
};
use tempfile::TempDir;
use tokio::sync::mpsc;

type Entry = EntryOf<FleetRaft>;
type LogId = LogIdOf<FleetRaft>;

/// 2026-03-25 14:05:00 UTC.
const START_MS: u64 = 1_774_447_500_000;

/// Builds stores for the node `own_id`. The suite's entries are node 0's: with 0 the
/// store appends them as a leader's (through the log writer's thread), with another
/// id as a follower's (synced on the caller's thread while the writer is idle).
struct RocksStoreBuilder {
    own_id: u64,
}

impl StoreBuilder<FleetRaft, LogStore, StateMachineStore, TempDir> for RocksStoreBuilder {
    async fn build(
        &self,
    ) -> Result<(TempDir, LogStore, StateMachineStore), StorageError<FleetRaft>> {
        let io_error = |e: std::io::Error| {
            StorageError::from_io_error(ErrorSubject::Store, ErrorVerb::Read, e)
        };
        let dir = TempDir::new().map_err(io_error)?;
        // The suite never looks at effects; the receiver may go.
        let (effects, _) = mpsc::unbounded_channel();
        let (log, state_machine, _) =
            open_store(dir.path(), self.own_id, effects).map_err(|e| io_error(e.into()))?;
        Ok((dir, log, state_machine))
    }
}

#[tokio::test]
async fn openraft_storage_suite_passes_with_a_leaders_appends() {
    Suite::test_all(RocksStoreBuilder { own_id: 0 })
        .await
        .expect("openraft's storage suite");
}

#[tokio::test]
async fn openraft_storage_suite_passes_with_a_followers_appends() {
    Suite::test_all(RocksStoreBuilder { own_id: 1 })
        .await
        .expect("openraft's storage suite");
}

fn beast() -> u64 {
    node_id("beast")
}

fn log_id(term: u64, index: u64) -> LogId {
    LogId::new(
        <FleetRaft as RaftTypeConfig>::LeaderId::new_committed(term, beast()),
        index,
    )
}

/// A command as Raft carries it: boxed.
fn command(request: Request) -> Box<Command> {
    Box::new(Command {
        at_ms: START_MS,
        actor: Actor::Operator,
        request,
    })
}

fn name(node: &str) -> NodeName {
    NodeName::new(node).expect("a valid node name")
}

/// The entries a fresh fleet's log starts with: openraft's first entry at index 0,
/// the first membership, the bootstrap, every member healthy, and one deliberation
/// opened (index 4).
fn fleet_entries() -> Vec<Entry> {
    let membership = Membership::new_with_defaults(vec![BTreeSet::from([beast()])], []);
    let healthy: BTreeSet<NodeName> = ["beast", "5070", "mac"].map(name).into();
    vec![
        Entry::new_blank(log_id(0, 0)),
        Entry::new_membership(log_id(1, 1), membership),
        Entry::new_normal(
            log_id(1, 2),
            command(Request::Bootstrap(FleetSettings::default_for("home"))),
        ),
        Entry::new_normal(
            log_id(1, 3),
            Box::new(Command {
                at_ms: START_MS,
                actor: Actor::Leader(name("beast")),
                request: Request::ReportHealth { healthy },
            }),
        ),
        Entry::new_normal(
            log_id(1, 4),
            command(Request::OpenDeliberation(open("first"))),
        ),
    ]
}

fn open(topic: &str) -> OpenDeliberation {
    OpenDeliberation {
        topic: topic.into(),
        tier: Some(Tier::One),
        options: Vec::new(),
        participants: None,
        phase_ms: None,
        urgent: false,
        request_id: format!("open-{topic}"),
    }
}

async fn apply(state_machine: &mut StateMachineStore, entries: Vec<Entry>) {
    let stream = futures::stream::iter(entries.into_iter().map(|entry| Ok((entry, None))));
    state_machine.apply(stream).await.expect("apply");
}

/// Appends and waits until the store reports the entries flushed.
async fn append(log: &mut LogStore, entries: Vec<Entry>) {
    let (flushed, was_flushed) = FleetRaft::oneshot();
    log.append(entries, IOFlushed::signal(flushed))
        .await
        .expect("append");
    was_flushed
        .await
        .expect("the flush callback was invoked")
        .expect("the append was flushed");
}

fn snapshot_of(handle: &StateHandle) -> FleetState {
    handle.read(FleetState::clone)
}

fn drain(effects: &mut mpsc::UnboundedReceiver<AppliedEffects>) -> Vec<AppliedEffects> {
    std::iter::from_fn(|| effects.try_recv().ok()).collect()
}

#[tokio::test]
async fn vote_log_and_committed_survive_a_reopen() {
    let dir = TempDir::new().expect("temp dir");
    let vote = VoteOf::<FleetRaft>::new(3, beast());
    let bootstrap = command(Request::Bootstrap(FleetSettings::default_for("home")));
    {
        let (effects, _) = mpsc::unbounded_channel();
        let (mut log, _state_machine, _) = open_store(dir.path(), beast(), effects).expect("open");
        let mut entries: Vec<Entry> = (1..=6).map(|i| Entry::new_blank(log_id(1, i))).collect();
        entries[2] = Entry::new_normal(log_id(1, 3), bootstrap.clone());
        append(&mut log, entries).await;
        log.save_vote(&vote).await.expect("vote");
        log.purge(log_id(1, 1)).await.expect("purge");
        log.truncate_after(Some(log_id(1, 4)))
            .await
            .expect("truncate");
        log.save_committed(Some(log_id(1, 3)))
            .await
            .expect("committed");
    }

    let (effects, _) = mpsc::unbounded_channel();
    let (mut log, _state_machine, _) = open_store(dir.path(), beast(), effects).expect("reopen");
    assert_eq!(log.read_vote().await.expect("read vote"), Some(vote));
    assert_eq!(
        log.read_committed().await.expect("read committed"),
        Some(log_id(1, 3))
    );
    let state = log.get_log_state().await.expect("log state");
    assert_eq!(state.last_purged_log_id, Some(log_id(1, 1)));
    assert_eq!(state.last_log_id, Some(log_id(1, 4)));
    let entries = log.try_get_log_entries(0..100).await.expect("entries");
    let ids: Vec<LogId> = entries.iter().map(|e| e.log_id()).collect();
    assert_eq!(ids, vec![log_id(1, 2), log_id(1, 3), log_id(1, 4)]);
    // Each carries its JSON, for an append to a follower to copy.
    for entry in &entries {
        let json = entry
            .encoded()
            .expect("an entry read back carries its JSON");
        assert_eq!(serde_json::from_slice::<Entry>(json).unwrap(), *entry);
    }
    assert!(
        matches!(entries[1].payload(), EntryPayload::Normal(c) if *c == bootstrap),
        "the command came back as written: {:?}",
        entries[1].payload()
    );
}

#[tokio::test]
async fn the_newest_committed_id_is_read_back_at_once_and_after_a_reopen() {
    let dir = TempDir::new().expect("temp dir");
    {
        let (effects, _) = mpsc::unbounded_channel();
        let (mut log, _state_machine, _) = open_store(dir.path(), beast(), effects).expect("open");
        append(
            &mut log,
            (1..=4).map(|i| Entry::new_blank(log_id(1, i))).collect(),
        )
        .await;
        // Recorded by the writer thread, without a wait: several in a row, as Raft's
        // task hands them over, of which the newest must win.
        for index in 1..=4 {
            log.save_committed(Some(log_id(1, index)))
                .await
                .expect("committed");
        }
        assert_eq!(
            log.read_committed().await.expect("read committed"),
            Some(log_id(1, 4))
        );
        log.save_committed(None).await.expect("committed");
        assert_eq!(log.read_committed().await.expect("read committed"), None);
        log.save_committed(Some(log_id(1, 2)))
            .await
            .expect("committed");
    }
    let (effects, _) = mpsc::unbounded_channel();
    let (mut log, _state_machine, _) = open_store(dir.path(), beast(), effects).expect("reopen");
    assert_eq!(
        log.read_committed().await.expect("read committed"),
        Some(log_id(1, 2))
    );
}

/// The indexes of `entries`, checked to be `expected` in order, each entry carrying
/// its JSON (whether it was read from memory or from RocksDB).
fn assert_indexes(entries: &[Entry], expected: std::ops::RangeInclusive<u64>, what: &str) {
    let indexes: Vec<u64> = entries.iter().map(|e| e.log_id().index).collect();
    assert_eq!(indexes, expected.collect::<Vec<_>>(), "{what}");
    let bare = entries.iter().filter(|e| e.encoded().is_none()).count();
    assert_eq!(bare, 0, "{what}: entries without their JSON");
}

#[tokio::test]
async fn a_log_longer_than_its_memory_tail_reads_back_whole_across_the_boundary() {
    // More written entries than the store keeps in memory (4,096), so a read spans
    // RocksDB and memory; then again from RocksDB alone after a reopen.
    const LAST: u64 = 6_000;
    let dir = TempDir::new().expect("temp dir");
    {
        let (effects, _) = mpsc::unbounded_channel();
        let (mut log, _state_machine, _) = open_store(dir.path(), beast(), effects).expect("open");
        for chunk in (1..=LAST).collect::<Vec<_>>().chunks(500) {
            append(
                &mut log,
                chunk
                    .iter()
                    .map(|&i| Entry::new_blank(log_id(1, i)))
                    .collect(),
            )
            .await;
        }
        let all = log.try_get_log_entries(1..=LAST).await.expect("entries");
        assert_indexes(&all, 1..=LAST, "the whole log, from disk and memory");
        let around = log
            .try_get_log_entries(1_500..2_500)
            .await
            .expect("entries");
        assert_indexes(&around, 1_500..=2_499, "a range across the boundary");
        log.purge(log_id(1, 3_000)).await.expect("purge");
        let after_purge = log.try_get_log_entries(3_001..).await.expect("entries");
        assert_indexes(&after_purge, 3_001..=LAST, "the log after a purge");
    }
    let (effects, _) = mpsc::unbounded_channel();
    let (mut log, _state_machine, _) = open_store(dir.path(), beast(), effects).expect("reopen");
    let state = log.get_log_state().await.expect("log state");
    assert_eq!(state.last_purged_log_id, Some(log_id(1, 3_000)));
    assert_eq!(state.last_log_id, Some(log_id(1, LAST)));
    let reopened = log.try_get_log_entries(3_001..).await.expect("entries");
    assert_indexes(&reopened, 3_001..=LAST, "the log after a reopen");
}

#[tokio::test]
async fn a_snapshot_restores_the_state_and_the_committed_log_is_applied_after_it() {
    let dir = TempDir::new().expect("temp dir");
    let second = Entry::new_normal(
        log_id(1, 5),
        command(Request::OpenDeliberation(open("second"))),
    );
    let second_bytes = serde_json::to_vec(&second).expect("encode").len() as u64;
    let (state_at_snapshot, state_after_log, snapshot_meta) = {
        let (effects, mut applied_effects) = mpsc::unbounded_channel();
        let (mut log, mut state_machine, handle) =
            open_store(dir.path(), beast(), effects).expect("open");
        let mut applied_index = handle.subscribe();
        let mut entries = fleet_entries();
        entries.push(second.clone());
        append(&mut log, entries).await;
        log.save_vote(&VoteOf::<FleetRaft>::new(1, beast()))
            .await
            .expect("vote");
        log.save_committed(Some(log_id(1, 5)))
            .await
            .expect("committed");

        apply(&mut state_machine, fleet_entries()).await;
        assert!(
            applied_index.has_changed().expect("watch open"),
            "the watch woke"
        );
        assert_eq!(*applied_index.borrow_and_update(), 4);
        assert_eq!(handle.applied_index(), 4);
        let opened = drain(&mut applied_effects);
        let first_open = opened
            .iter()
            .find(|applied| applied.log_index == 4)
            .expect("opening a deliberation has effects");
        assert!(
            first_open
                .effects
                .iter()
                .any(|effect| matches!(effect, Effect::RequestInput { .. })),
            "participants are asked for input: {first_open:?}"
        );
        assert_eq!(handle.read(|state| state.deliberations.len()), 1);

        let snapshot = state_machine
            .build_snapshot()
            .await
            .expect("build snapshot");
        assert_eq!(snapshot.meta.last_log_id, Some(log_id(1, 4)));
        assert_eq!(snapshot.meta.last_membership.log_id(), &Some(log_id(1, 1)));
        let state_at_snapshot = snapshot_of(&handle);

        apply(&mut state_machine, vec![second]).await;
        assert_eq!(handle.read(|state| state.deliberations.len()), 2);
        (state_at_snapshot, snapshot_of(&handle), snapshot.meta)
    };
    assert_ne!(state_at_snapshot, state_after_log);

    let (effects, mut applied_effects) = mpsc::unbounded_channel();
    let (mut log, mut state_machine, handle) =
        open_store(dir.path(), beast(), effects).expect("reopen");
    assert_eq!(
        snapshot_of(&handle),
        state_at_snapshot,
        "restored from the snapshot"
    );
    assert_eq!(handle.applied_index(), 4);
    assert_eq!(
        handle.sizes().log_bytes_written(),
        second_bytes,
        "the log above the snapshot counts as written since it, for the snapshot pacer"
    );
    let (last_applied, membership) = state_machine.applied_state().await.expect("applied");
    assert_eq!(last_applied, Some(log_id(1, 4)));
    assert_eq!(membership, snapshot_meta.last_membership);
    let current = state_machine
        .get_current_snapshot()
        .await
        .expect("read snapshot")
        .expect("a snapshot is stored");
    assert_eq!(current.meta, snapshot_meta);

    // What openraft does when a node starts: re-apply the committed log after the
    // snapshot.
    StorageHelper::new(&mut log, &mut state_machine)
        .with_id(beast())
        .get_initial_state()
        .await
        .expect("initial state");
    assert_eq!(
        snapshot_of(&handle),
        state_after_log,
        "the committed entry was applied"
    );
    assert_eq!(handle.applied_index(), 5);
    let reapplied = drain(&mut applied_effects);
    assert!(
        reapplied.iter().any(|applied| applied.log_index == 5),
        "the re-applied entry's effects reach the runtime: {reapplied:?}"
    );
    assert!(reapplied.iter().all(|applied| applied.log_index == 5));
}

#[tokio::test]
async fn an_installed_snapshot_replaces_the_state_and_survives_a_reopen() {
    let leader_dir = TempDir::new().expect("temp dir");
    let follower_dir = TempDir::new().expect("temp dir");
    let (effects, _) = mpsc::unbounded_channel();
    let (_log, mut leader, leader_handle) =
        open_store(leader_dir.path(), beast(), effects).expect("open");
    apply(&mut leader, fleet_entries()).await;
    let snapshot = leader.build_snapshot().await.expect("build");
    {
        let (effects, _) = mpsc::unbounded_channel();
        let (_log, mut follower, follower_handle) =
            open_store(follower_dir.path(), node_id("mac"), effects).expect("open follower");
        let mut applied_index = follower_handle.subscribe();
        follower
            .install_snapshot(&snapshot.meta, snapshot.snapshot.clone())
            .await
            .expect("install");
        assert_eq!(*applied_index.borrow_and_update(), 4);
        assert_eq!(snapshot_of(&follower_handle), snapshot_of(&leader_handle));
    }
    let (effects, _) = mpsc::unbounded_channel();
    let (_log, mut follower, follower_handle) =
        open_store(follower_dir.path(), node_id("mac"), effects).expect("reopen follower");
    assert_eq!(snapshot_of(&follower_handle), snapshot_of(&leader_handle));
    let (last_applied, membership) = follower.applied_state().await.expect("applied");
    assert_eq!(last_applied, Some(log_id(1, 4)));
    assert_eq!(
        membership,
        StoredMembership::new(
            Some(log_id(1, 1)),
            Membership::new_with_defaults(vec![BTreeSet::from([beast()])], [])
        )
    );
}

#[tokio::test]
async fn a_damaged_snapshot_is_refused_and_leaves_the_state_alone() {
    let dir = TempDir::new().expect("temp dir");
    let (effects, _) = mpsc::unbounded_channel();
    let (_log, mut state_machine, handle) = open_store(dir.path(), beast(), effects).expect("open");
    apply(&mut state_machine, fleet_entries()).await;
    let before = snapshot_of(&handle);
    let snapshot = state_machine.build_snapshot().await.expect("build");
    let error = state_machine
        .install_snapshot(&snapshot.meta, b"{\"format_version\":99}".to_vec())
        .await
        .expect_err("an unknown format version is refused");
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
    assert!(error.to_string().contains("version"), "{error}");
    assert_eq!(snapshot_of(&handle), before);
}

#[tokio::test]
async fn a_second_open_of_a_directory_in_use_is_refused_naming_it() {
    let dir = TempDir::new().expect("temp dir");
    let (effects, _) = mpsc::unbounded_channel();
    let _first = open_store(dir.path(), beast(), effects.clone()).expect("open");
    let error = match open_store(dir.path(), beast(), effects) {
        Ok(_) => panic!("a directory in use was opened twice"),
        Err(error) => error,
    };
    assert!(matches!(error, StoreError::Open { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains(&dir.path().display().to_string()),
        "{error}"
    );
}
