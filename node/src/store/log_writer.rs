//! `LogWriter`: the thread that writes appended log entries to RocksDB and fsyncs
//! them, so that Raft never waits for the encoder or the disk.
//!
//! openraft asks `append` to return as soon as the entries are readable and to report
//! durability later through their `IOFlushed` callback. The [`LogStore`] therefore
//! only puts the entries in the [`LogTail`] (readable from there) and queues them here.
//! This thread takes every job that is waiting and gathers them, in order, into one
//! `WriteBatch` (appends encoded, truncations as range deletes), writes that batch
//! with one write (without syncing), marks in the [`LogTail`] what RocksDB now holds,
//! then fsyncs RocksDB's write-ahead log once and only then completes the callbacks,
//! in the order they came. While one fsync runs the next jobs queue up and share the
//! next one: under load, many entries ride on one fsync (group commit). When an append
//! came in while a round ran, the log is under concurrent load (a leader with many
//! clients), and the next round gathers for [`GROUP_COMMIT_LINGER`] before it writes,
//! so that each fsync carries several times the entries.
//! The committed log id goes into the same batch, so that recording it never costs
//! Raft's task a write to RocksDB between a commit and its apply, nor this thread a
//! write of its own. Nobody waits for it, and
//! recording it does not wake this thread: it is left in a [`PendingCommit`], and the
//! next round writes it, with the next append (whose fsync covers it) or on its own
//! when no job came for [`IDLE_SYNC_DELAY`] (or [`COMMIT_RECORD_DELAY`], if it was
//! left while the thread slept). So at one write at a time the thread wakes once per
//! write, not twice, and a commit is on disk within [`COMMIT_RECORD_DELAY`] at most.
//! (A node that crashes before its newest commit is on disk restarts with that much
//! less applied, and applies it again when the leader tells it the commit.)
//!
//! A follower's append may skip the thread ([`LogWriter::append_as_follower`]): a
//! follower answers its leader only once the entries are on disk, and its leader sends
//! the next ones only after that answer, so it has nothing to do meanwhile. When the
//! thread has no job, the last fsync was quick ([`QUICK_SYNC`]) and the entries are
//! small, the caller writes and syncs the round itself, and a follower's lone write
//! passes through one thread instead of three (its runtime's, the writer's, its
//! runtime's again). Rounds never overlap: whoever runs one holds the round lock.
//!
//! *Invariant:* a callback is completed `Ok` only after an fsync that began after its
//! entries were written, and rounds run one at a time, in the order their jobs came.
//!
//! [`LogStore`]: super::LogStore
//! [`LogTail`]: super::log_tail::LogTail

use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use openraft::storage::IOFlushed;
use openraft::type_config::alias::{EntryOf, LogIdOf};
use rocksdb::{DB, WriteBatch};
use tokio::sync::oneshot;

use super::database::{CF_LOG, CF_META, column_family, to_json, write_unsynced};
use super::error::StoreError;
use super::log_store::KEY_COMMITTED;
use super::log_tail::LogTail;
use super::store_sizes::StoreSizes;
use crate::raft::FleetRaft;
use crate::runtime::spin_window;

type Entry = EntryOf<FleetRaft>;
type LogId = LogIdOf<FleetRaft>;

/// What the thread does, in the order it was asked.
enum Job {
    /// Write `entries` (each as the JSON it carries, if it does); complete `flushed`
    /// once they are on disk.
    Append {
        entries: Vec<Entry>,
        flushed: IOFlushed<FleetRaft>,
    },
    /// Delete the log from index `first` on; answer once that is on disk.
    Truncate {
        first: u64,
        done: oneshot::Sender<Result<(), String>>,
    },
    /// Answer once everything queued before is on disk.
    Barrier {
        done: oneshot::Sender<Result<(), String>>,
    },
}

impl Job {
    fn is_append(&self) -> bool {
        matches!(self, Self::Append { .. })
    }

    /// How many entries the job appends.
    fn entry_count(&self) -> usize {
        match self {
            Self::Append { entries, .. } => entries.len(),
            Self::Truncate { .. } | Self::Barrier { .. } => 0,
        }
    }
}

/// The committed log id the next round writes (deletes, for `None`), if any.
#[derive(Default)]
struct PendingCommit(Mutex<Option<Option<LogId>>>);

impl PendingCommit {
    fn leave(&self, committed: Option<LogId>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(committed);
    }

    fn take(&self) -> Option<Option<LogId>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    fn is_waiting(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }
}

/// What waits for the fsync that ends a round.
enum Waiter {
    Flushed(IOFlushed<FleetRaft>),
    Done(oneshot::Sender<Result<(), String>>),
}

impl Waiter {
    fn complete(self, result: Result<(), String>) {
        match self {
            Self::Flushed(callback) => callback.io_completed(result.map_err(io::Error::other)),
            Self::Done(done) => {
                let _ = done.send(result);
            }
        }
    }
}

/// The handle of the writing thread; clones share it. When the last clone goes (the
/// store is dropped), the thread finishes what is queued and is joined, so the
/// database is closed by the time the store is gone and can be opened again at once.
#[derive(Clone)]
pub(crate) struct LogWriter {
    thread: Arc<WriterThread>,
}

struct WriterThread {
    queue: Option<Sender<Job>>,
    rounds: Arc<Rounds>,
    handle: Option<JoinHandle<()>>,
}

/// What every round needs, shared by the thread and a follower's caller.
struct Rounds {
    /// Held weakly, and only for the length of a round, so the stores decide when the
    /// database closes.
    db: Weak<DB>,
    tail: LogTail,
    sizes: StoreSizes,
    commit: PendingCommit,
    /// Held by whoever runs a round, so rounds never overlap.
    running: Mutex<()>,
    /// Jobs sent to the thread and not yet completed.
    queued: AtomicUsize,
    /// How long the last fsync took, in microseconds.
    last_sync_micros: AtomicU64,
}

impl Drop for WriterThread {
    fn drop(&mut self) {
        // Closing the queue ends the thread's loop after the last round.
        self.queue.take();
        if let Some(handle) = self.handle.take()
            && handle.join().is_err()
        {
            tracing::error!("the log writer panicked");
        }
    }
}

impl LogWriter {
    /// Starts the writing thread for `db`. Every entry written is counted in `sizes`.
    pub(crate) fn start(
        db: &Arc<DB>,
        tail: LogTail,
        sizes: StoreSizes,
    ) -> Result<Self, StoreError> {
        let (queue, jobs) = channel();
        let rounds = Arc::new(Rounds {
            db: Arc::downgrade(db),
            tail,
            sizes,
            commit: PendingCommit::default(),
            running: Mutex::new(()),
            queued: AtomicUsize::new(0),
            last_sync_micros: AtomicU64::new(0),
        });
        let shared = Arc::clone(&rounds);
        let handle = std::thread::Builder::new()
            .name("fleet-log-writer".into())
            .spawn(move || run(&shared, &jobs))
            .map_err(|source| StoreError::Thread {
                what: "the log writer",
                source,
            })?;
        Ok(Self {
            thread: Arc::new(WriterThread {
                queue: Some(queue),
                rounds,
                handle: Some(handle),
            }),
        })
    }

    fn send(&self, job: Job) -> Result<(), Job> {
        let queued = &self.thread.rounds.queued;
        queued.fetch_add(1, Ordering::SeqCst);
        let sent = match &self.thread.queue {
            Some(queue) => queue.send(job).map_err(|returned| returned.0),
            None => Err(job),
        };
        if sent.is_err() {
            queued.fetch_sub(1, Ordering::SeqCst);
        }
        sent
    }

    /// Writes `entries` and completes `flushed` once they are on disk.
    pub(crate) fn append(&self, entries: Vec<Entry>, flushed: IOFlushed<FleetRaft>) {
        let job = Job::Append { entries, flushed };
        if let Err(Job::Append { flushed, .. }) = self.send(job) {
            flushed.io_completed(Err(io::Error::other("the log writer has stopped")));
        }
    }

    /// Like [`append`](Self::append), for entries a follower got from its leader: when
    /// the thread has no job, the last fsync was quick and the entries are `small`
    /// (their JSON, which each carries, at most
    /// [`ON_RUNTIME_BYTES_MAX`](crate::raft::network::ON_RUNTIME_BYTES_MAX) in all),
    /// this writes and syncs them on the caller's thread and completes `flushed` before
    /// it returns. Otherwise it queues them for the thread: a follower's entries carry
    /// the JSON they came as whatever their size, so carrying it says nothing of that.
    pub(crate) fn append_as_follower(
        &self,
        entries: Vec<Entry>,
        small: bool,
        flushed: IOFlushed<FleetRaft>,
    ) {
        let rounds = &self.thread.rounds;
        if !small {
            return self.append(entries, flushed);
        }
        let Some(_running) = rounds.free_for_a_quick_round() else {
            return self.append(entries, flushed);
        };
        keep_awake_after(under_load(false, entries.len()), true);
        let committed = rounds.commit.take();
        rounds.run(vec![Job::Append { entries, flushed }], committed);
    }

    /// Deletes the log from index `first` on, after every append queued before, and
    /// returns once that is on disk.
    pub(crate) async fn truncate(&self, first: u64) -> Result<(), StoreError> {
        self.queue_and_wait(
            |done| Job::Truncate { first, done },
            || format!("truncating the log from index {first}"),
        )
        .await
    }

    /// Records `committed` as the committed log id, without waiting for it.
    pub(crate) fn commit(&self, committed: Option<LogId>) {
        self.thread.rounds.commit.leave(committed);
    }

    /// Returns once everything queued before is written and on disk.
    pub(crate) async fn barrier(&self) -> Result<(), StoreError> {
        self.queue_and_wait(
            |done| Job::Barrier { done },
            || "finishing the writes queued".into(),
        )
        .await
    }

    /// Queues the job `job` makes and waits for its answer; `doing` names it if the
    /// writer stops first.
    async fn queue_and_wait(
        &self,
        job: impl FnOnce(oneshot::Sender<Result<(), String>>) -> Job,
        doing: impl Fn() -> String,
    ) -> Result<(), StoreError> {
        let (done, answer) = oneshot::channel();
        let stopped = || StoreError::LogWriter {
            reason: format!("it stopped before {}", doing()),
        };
        self.send(job(done)).map_err(|_| stopped())?;
        answer
            .await
            .map_err(|_| stopped())?
            .map_err(|reason| StoreError::LogWriter { reason })
    }
}

/// How long an fsync may take for the next follower's append to be synced on its
/// caller's thread. That thread is the node's runtime, which waits out the sync; a
/// slower sync means the disk is stalling, and the next append goes to the log
/// writer's thread, whose sync, once quick again, lets the caller sync again. (Syncs
/// take 30–180 µs on the hosts in `docs/benchmarks-log.md`, with stalls of tens of ms.)
const QUICK_SYNC: Duration = Duration::from_millis(1);

impl Rounds {
    /// The round lock, if a caller may run a round now: no job waits for the thread
    /// or runs there, and the last fsync was quick.
    fn free_for_a_quick_round(&self) -> Option<MutexGuard<'_, ()>> {
        let quick = self.last_sync_micros.load(Ordering::Relaxed) < QUICK_SYNC.as_micros() as u64;
        if !quick {
            return None;
        }
        let running = self.running.try_lock().ok()?;
        (self.queued.load(Ordering::SeqCst) == 0).then_some(running)
    }

    /// Gathers the jobs of `round`, in order, and then `committed` (when there is one)
    /// into one batch, writes it, fsyncs once, and completes the waiters. The caller
    /// holds the round lock.
    fn run(&self, round: Vec<Job>, committed: Option<Option<LogId>>) {
        let synced = match self.db.upgrade() {
            Some(db) => write_round(&db, &round, committed, &self.tail, &self.sizes)
                .map_err(|error| error.to_string())
                .and_then(|()| self.sync(&db)),
            None => Err("the database was closed before the log was written".to_string()),
        };
        if let Err(reason) = &synced {
            tracing::error!(%reason, "log writes not durable");
        }
        for job in round {
            waiter_of(job).complete(synced.clone());
        }
    }

    /// Fsyncs RocksDB's write-ahead log, and notes how long that took.
    fn sync(&self, db: &DB) -> Result<(), String> {
        let started = Instant::now();
        let synced = db
            .flush_wal(true)
            .map_err(|e| format!("fsync of the write-ahead log failed: {e}"));
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.last_sync_micros.store(micros, Ordering::Relaxed);
        synced
    }
}

/// How long a committed log id left before the thread went to sleep is held back, so
/// that the next append's fsync covers it instead of running just before it.
const IDLE_SYNC_DELAY: Duration = Duration::from_millis(5);

/// How long a round gathers appends before it writes and syncs when the log is under
/// concurrent load: when an append came in while the last round (which appended) wrote
/// and synced. On a leader with many clients that is the common case, and each fsync
/// then carries several times the entries, for a fraction of the CPU (an fsync costs
/// some 50 µs of CPU in the kernel here, whatever it carries; `docs/benchmarks-log.md`).
/// The wait does not delay commits while the followers are slower than it: a leader's
/// entries commit once a quorum has them on disk, and its followers' copies come a
/// network round trip and their own fsync after its own. A follower practically never
/// waits: its leader sends it the next entries only once it has answered for the last,
/// which is after this round's fsync. A write that comes alone (one client) never
/// waits either. What it costs: with a voter down, the leader's own fsync is part of
/// the quorum, and a write under load commits up to this much later.
const GROUP_COMMIT_LINGER: Duration = Duration::from_millis(1);

/// How long the thread sleeps at most with nothing to write: a committed log id left
/// while it slept is written after this long if no job comes first.
const COMMIT_RECORD_DELAY: Duration = Duration::from_millis(50);

fn run(rounds: &Rounds, jobs: &Receiver<Job>) {
    // A job that came in while the last round (which appended) wrote and synced.
    let mut arrived_meanwhile: Option<Job> = None;
    loop {
        let arrived_under_load = arrived_meanwhile.as_ref().is_some_and(Job::is_append);
        let (round, closed) = gather(
            jobs,
            arrived_meanwhile.take(),
            &rounds.commit,
            GROUP_COMMIT_LINGER,
        );
        let appended = round.iter().any(Job::is_append);
        let entries = round.iter().map(Job::entry_count).sum();
        keep_awake_after(under_load(arrived_under_load, entries), appended);
        {
            let _running = rounds
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let committed = rounds.commit.take();
            let jobs_done = round.len();
            if !round.is_empty() || committed.is_some() {
                rounds.run(round, committed);
            }
            rounds.queued.fetch_sub(jobs_done, Ordering::SeqCst);
        }
        if closed {
            break;
        }
        if appended {
            arrived_meanwhile = jobs.try_recv().ok();
        }
    }
}

/// Alone, a write's next hand-offs are worth a CPU kept awake; under load the CPUs
/// are busy anyway, and a spinning thread would only be preempted.
fn keep_awake_after(under_load: bool, appended: bool) {
    if under_load {
        spin_window::stand_down();
    } else if appended {
        spin_window::touch();
    }
}

/// Whether a round finds the log under load: an append arrived while the last round
/// wrote and synced (how a leader's log sees it), or the round appends several
/// entries (how a follower's does: its leader waits for each answer before it sends
/// more, so nothing arrives meanwhile, but under load each append carries a batch).
fn under_load(append_arrived_meanwhile: bool, entries: usize) -> bool {
    append_arrived_meanwhile || entries > 1
}

/// The jobs of the next round, in order, and whether the queue is closed. It starts
/// with `arrived_meanwhile` (a job that came in while the last round wrote and synced)
/// when there is one, or else waits for the next job ([`next_job`]); it then takes every
/// job waiting. When it starts with an append that came meanwhile, the log is under
/// concurrent load, and it first gathers for `linger`.
fn gather(
    jobs: &Receiver<Job>,
    arrived_meanwhile: Option<Job>,
    commit: &PendingCommit,
    linger: Duration,
) -> (Vec<Job>, bool) {
    let (first, closed) = match arrived_meanwhile {
        Some(job) => {
            if job.is_append() {
                std::thread::sleep(linger);
            }
            (Some(job), false)
        }
        None => next_job(jobs, commit),
    };
    (first.into_iter().chain(jobs.try_iter()).collect(), closed)
}

/// Waits for the next job: at most [`IDLE_SYNC_DELAY`] while a committed log id waits
/// to be written, else [`COMMIT_RECORD_DELAY`]; `None` when none came, and whether the
/// queue is closed.
fn next_job(jobs: &Receiver<Job>, commit: &PendingCommit) -> (Option<Job>, bool) {
    let sleep = if commit.is_waiting() {
        IDLE_SYNC_DELAY
    } else {
        COMMIT_RECORD_DELAY
    };
    match jobs.recv_timeout(sleep) {
        Ok(job) => (Some(job), false),
        Err(RecvTimeoutError::Timeout) => (None, false),
        Err(RecvTimeoutError::Disconnected) => (None, true),
    }
}

/// Writes the round's one batch (unsynced), marks its entries written in `tail` and
/// counts their bytes in `sizes`.
fn write_round(
    db: &DB,
    round: &[Job],
    committed: Option<Option<LogId>>,
    tail: &LogTail,
    sizes: &StoreSizes,
) -> Result<(), StoreError> {
    let mut batch = WriteBatch::default();
    let mut written = Vec::new();
    for job in round {
        match job {
            Job::Append { entries, .. } => put_entries(&mut batch, db, entries, &mut written),
            Job::Truncate { first, .. } => delete_from(&mut batch, db, *first),
            Job::Barrier { .. } => Ok(()),
        }?;
    }
    if let Some(committed) = committed {
        put_committed(&mut batch, db, committed)?;
    }
    if !batch.is_empty() {
        write_unsynced(db, batch, "log+meta", || describe(round, committed))?;
        tail.written(&written);
        sizes.add_log_bytes(written.iter().map(|(_, bytes)| *bytes as u64).sum());
    }
    Ok(())
}

fn waiter_of(job: Job) -> Waiter {
    match job {
        Job::Append { flushed, .. } => Waiter::Flushed(flushed),
        Job::Truncate { done, .. } | Job::Barrier { done } => Waiter::Done(done),
    }
}

/// Names what a round writes, for an error.
fn describe(round: &[Job], committed: Option<Option<LogId>>) -> String {
    let mut parts: Vec<String> = round
        .iter()
        .filter_map(|job| match job {
            Job::Append { entries, .. } => {
                let (first, last) = (entries.first()?, entries.last()?);
                Some(format!(
                    "log entries {}..={}",
                    first.log_id().index,
                    last.log_id().index
                ))
            }
            Job::Truncate { first, .. } => {
                Some(format!("truncation of the log from index {first}"))
            }
            Job::Barrier { .. } => None,
        })
        .collect();
    if committed.is_some() {
        parts.push(format!("`{KEY_COMMITTED}`"));
    }
    parts.join(", ")
}

/// Puts `entries` into `batch` (each as the JSON it carries, else encoding it here)
/// and notes each one's log id and size in `written`.
fn put_entries(
    batch: &mut WriteBatch,
    db: &DB,
    entries: &[Entry],
    written: &mut Vec<(LogId, usize)>,
) -> Result<(), StoreError> {
    let family = column_family(db, CF_LOG)?;
    for entry in entries {
        let encoded_here;
        let bytes: &[u8] = match entry.encoded() {
            Some(encoded) => encoded,
            None => {
                encoded_here = to_json(entry, "a log entry")?;
                &encoded_here
            }
        };
        let log_id = entry.log_id();
        written.push((log_id, bytes.len()));
        batch.put_cf(family, log_id.index.to_be_bytes(), bytes);
    }
    Ok(())
}

/// Puts the committed log id (or its deletion, for `None`) into `batch`.
fn put_committed(
    batch: &mut WriteBatch,
    db: &DB,
    committed: Option<LogId>,
) -> Result<(), StoreError> {
    let family = column_family(db, CF_META)?;
    match committed {
        Some(log_id) => batch.put_cf(family, KEY_COMMITTED, to_json(&log_id, KEY_COMMITTED)?),
        None => batch.delete_cf(family, KEY_COMMITTED),
    }
    Ok(())
}

/// Puts the deletion of the log from index `first` on into `batch`.
fn delete_from(batch: &mut WriteBatch, db: &DB, first: u64) -> Result<(), StoreError> {
    let family = column_family(db, CF_LOG)?;
    super::log_store::delete_indexes(batch, family, first, u64::MAX);
    Ok(())
}

#[cfg(test)]
mod tests {
    use openraft::type_config::TypeConfigExt;
    use rocksdb::IteratorMode;

    use super::*;
    use crate::raft::log_entry::encode_each_within;
    use crate::store::database::{open, read_json};
    use crate::store::test_entries::{blanks, log_id};

    fn append(entries: Vec<Entry>) -> Job {
        Job::Append {
            entries,
            flushed: IOFlushed::noop(),
        }
    }

    /// The log ids of the entries in RocksDB, in index order.
    fn stored_log(db: &DB) -> Vec<LogId> {
        let family = column_family(db, CF_LOG).unwrap();
        db.iterator_cf(family, IteratorMode::Start)
            .map(|item| {
                let (_, value) = item.unwrap();
                let entry: Entry = serde_json::from_slice(&value).unwrap();
                entry.log_id()
            })
            .collect()
    }

    #[test]
    fn a_lone_append_is_not_load_and_a_batch_or_an_append_during_a_sync_is() {
        assert!(
            !under_load(false, 1),
            "one entry, nothing waiting: a lone write"
        );
        assert!(!under_load(false, 0), "a round without entries");
        assert!(under_load(false, 2), "a follower's batch of entries");
        assert!(
            under_load(true, 1),
            "an append that came during the last sync"
        );
    }

    #[test]
    fn one_round_applies_its_jobs_in_order_in_one_batch() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path()).unwrap();
        let (tail, sizes) = (LogTail::default(), StoreSizes::default());
        // What the log store does before queueing each job: the tail runs ahead.
        let (old, new) = (blanks(1, 1..=3), blanks(2, 2..=2));
        tail.insert(&old);
        tail.truncate_from(2);
        tail.insert(&new);
        let round = [
            append(old),
            Job::Barrier {
                done: oneshot::channel().0,
            },
            Job::Truncate {
                first: 2,
                done: oneshot::channel().0,
            },
            append(new),
        ];

        write_round(&db, &round, Some(Some(log_id(2, 2))), &tail, &sizes).unwrap();

        assert_eq!(
            stored_log(&db),
            [log_id(1, 1), log_id(2, 2)],
            "3 truncated, 2 replaced"
        );
        let committed: Option<LogId> = read_json(&db, CF_META, KEY_COMMITTED).unwrap();
        assert_eq!(committed, Some(log_id(2, 2)));
        assert!(sizes.log_bytes_written() > 0);

        // A later round that only deletes the committed id.
        write_round(&db, &[], Some(None), &tail, &sizes).unwrap();
        let committed: Option<LogId> = read_json(&db, CF_META, KEY_COMMITTED).unwrap();
        assert_eq!(committed, None);
    }

    /// A writer on a fresh database in `dir`, with the database kept open by the caller.
    fn writer_in(dir: &std::path::Path) -> (Arc<DB>, LogWriter) {
        let db = open(dir).unwrap();
        let writer = LogWriter::start(&db, LogTail::default(), StoreSizes::default()).unwrap();
        (db, writer)
    }

    #[test]
    fn a_followers_append_to_an_idle_writer_is_on_disk_when_the_call_returns() {
        let dir = tempfile::tempdir().unwrap();
        let (db, writer) = writer_in(dir.path());
        writer.commit(Some(log_id(1, 1)));
        let (flushed, mut answer) = FleetRaft::oneshot();

        // As the log store hands them over: small, so each carries its JSON.
        let mut entries = blanks(1, 1..=1);
        assert!(encode_each_within(&mut entries, usize::MAX));
        writer.append_as_follower(entries, true, IOFlushed::signal(flushed));

        // Completed on this thread: the thread would have needed a wake-up and an fsync.
        let result = answer
            .try_recv()
            .expect("completed before the call returned");
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(stored_log(&db), [log_id(1, 1)]);
        let committed: Option<LogId> = read_json(&db, CF_META, KEY_COMMITTED).unwrap();
        assert_eq!(
            committed,
            Some(log_id(1, 1)),
            "the pending commit rode along"
        );
        assert_eq!(writer.thread.rounds.queued.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_followers_append_goes_to_the_thread_while_it_has_work_a_round_runs_or_the_disk_stalls() {
        let dir = tempfile::tempdir().unwrap();
        let (_db, writer) = writer_in(dir.path());
        let rounds = &writer.thread.rounds;
        assert!(rounds.free_for_a_quick_round().is_some(), "idle and quick");

        rounds.queued.store(1, Ordering::SeqCst);
        assert!(
            rounds.free_for_a_quick_round().is_none(),
            "a job queued before must be written first"
        );
        rounds.queued.store(0, Ordering::SeqCst);

        let running = rounds.running.lock().unwrap();
        assert!(
            rounds.free_for_a_quick_round().is_none(),
            "a round is running"
        );
        drop(running);

        let slow = QUICK_SYNC.as_micros() as u64;
        rounds.last_sync_micros.store(slow, Ordering::Relaxed);
        assert!(
            rounds.free_for_a_quick_round().is_none(),
            "the last fsync took {slow} µs"
        );
    }

    #[test]
    fn the_thread_counts_down_the_jobs_it_completed() {
        let dir = tempfile::tempdir().unwrap();
        let (db, writer) = writer_in(dir.path());
        let (flushed, answer) = FleetRaft::oneshot();
        writer.append(blanks(1, 1..=1), IOFlushed::signal(flushed));
        let result = answer.blocking_recv().expect("answered");
        assert!(result.is_ok(), "{result:?}");
        let (done, answer) = oneshot::channel();
        assert!(writer.send(Job::Barrier { done }).is_ok());
        answer.blocking_recv().unwrap().unwrap();
        // Counted down under the round lock, after the answers: wait for the lock.
        drop(writer.thread.rounds.running.lock().unwrap());
        assert_eq!(writer.thread.rounds.queued.load(Ordering::SeqCst), 0);
        assert_eq!(stored_log(&db), [log_id(1, 1)]);
    }

    /// The indexes of the appends in `round`, in order.
    fn appended_indexes(round: &[Job]) -> Vec<u64> {
        round
            .iter()
            .filter_map(|job| match job {
                Job::Append { entries, .. } => Some(entries[0].log_id().index),
                _ => None,
            })
            .collect()
    }

    /// Sends an append of index `index` into `queue` after `delay`, from another thread.
    fn append_later(queue: &Sender<Job>, index: u64, delay: Duration) -> JoinHandle<()> {
        let queue = queue.clone();
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            queue.send(append(blanks(1, index..=index))).unwrap();
        })
    }

    // The linger is long and the late append comes early in it, so that a slow machine
    // cannot make either test pass or fail by its timing.
    const LINGER: Duration = Duration::from_millis(1500);
    const LATE: Duration = Duration::from_millis(300);

    #[test]
    fn an_append_that_came_during_a_round_gathers_the_appends_that_follow_it() {
        let (queue, jobs) = channel();
        let commit = PendingCommit::default();
        let late = append_later(&queue, 2, LATE);

        let (round, closed) = gather(&jobs, Some(append(blanks(1, 1..=1))), &commit, LINGER);

        late.join().unwrap();
        assert!(!closed);
        assert_eq!(appended_indexes(&round), [1, 2], "one round, one fsync");
    }

    #[test]
    fn a_round_that_starts_idle_takes_what_waits_and_goes_at_once() {
        let (queue, jobs) = channel();
        let commit = PendingCommit::default();
        queue.send(append(blanks(1, 1..=1))).unwrap();
        let late = append_later(&queue, 2, LATE);

        let (round, _) = gather(&jobs, None, &commit, LINGER);
        assert_eq!(
            appended_indexes(&round),
            [1],
            "did not wait for the next append"
        );

        late.join().unwrap();
        // Nor does a round wait when what came meanwhile is not an append.
        let (done, _answer) = oneshot::channel();
        let late = append_later(&queue, 3, LATE);
        let (round, _) = gather(&jobs, Some(Job::Barrier { done }), &commit, LINGER);
        assert_eq!(round.len(), 2, "the barrier and the append that waited");
        assert_eq!(appended_indexes(&round), [2]);
        late.join().unwrap();
    }
}
