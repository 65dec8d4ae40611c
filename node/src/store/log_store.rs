//! `LogStore`: the Raft log and vote in RocksDB, for openraft's `RaftLogStorage` and
//! `RaftLogReader`.
//!
//! Raft's safety rests on what a node has acknowledged: an appended entry or a granted
//! vote must still be there after a crash. A vote or purge is a `WriteBatch` written
//! with `sync = true` before the call returns. A leader's append does no I/O on the
//! caller's task: its entries are encoded (when small: each keeps its JSON, see
//! [`LogEntry`](crate::raft::LogEntry), which the writer stores and the appends to
//! the followers copy) and go to the `LogTail` (readable from there the moment
//! `append` returns, as openraft requires) and to the `LogWriter` thread, which
//! writes them and completes their `IOFlushed` callback — what lets Raft count them
//! as durable here — only after an fsync that covers them. A truncation goes through
//! the same thread, after the appends queued before it. So a leader's Raft sends its
//! entries to its followers while its disk syncs, and concurrent appends share one
//! fsync. A follower's append (entries of another node's term) is
//! written and synced on the caller's task when the writer is idle and the disk quick,
//! since a follower waits for that sync before anything else anyway
//! (`LogWriter::append_as_follower`).
//! (openraft's own 0.9 RocksDB example writes without syncing at all; this store
//! does not copy it.)
//!
//! The committed log id is handed to the writer without waiting: the writer writes
//! and fsyncs it with the next append, or on its own after a few ms when no append
//! comes. A crash in between only makes a restarted node re-apply a little less before
//! its leader tells it the commit index again; the committed log id is a hint, never
//! the record of what a quorum holds.
//!
//! Layout: column family `log` maps the big-endian index to the JSON entry; column
//! family `meta` holds `vote`, `committed` and `last_purged` as JSON. A purge records
//! the purge point and deletes the entries in one batch, so the log never shows a hole
//! nor loses its purge point.

use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use openraft::OptionalSend;
use openraft::storage::{IOFlushed, LogState, RaftLogReader, RaftLogStorage};
use openraft::type_config::alias::{EntryOf, LogIdOf, VoteOf};
use rocksdb::{DB, Direction, IteratorMode, WriteBatch};

use super::database::{
    CF_LOG, CF_META, column_family, read_json, run_blocking, to_json, write_synced,
};
use super::error::StoreError;
use super::log_tail::LogTail;
use super::log_writer::LogWriter;
use super::store_sizes::StoreSizes;
use crate::raft::FleetRaft;
use crate::raft::log_entry::encode_each_within;
use crate::raft::network::ON_RUNTIME_BYTES_MAX;

type Entry = EntryOf<FleetRaft>;
type LogId = LogIdOf<FleetRaft>;
type Vote = VoteOf<FleetRaft>;

const KEY_VOTE: &str = "vote";
pub(super) const KEY_COMMITTED: &str = "committed";
const KEY_LAST_PURGED: &str = "last_purged";

/// The most entries one `limited_get_log_entries` returns, so a follower far behind
/// is caught up in bounded messages rather than one that holds the whole log.
pub const ENTRIES_PER_READ_MAX: usize = 1_024;

/// The Raft log, vote, committed and purge records of one node.
///
/// Cloning is cheap (shared handles); a clone is the log reader that openraft's
/// replication tasks use, and it sees every entry the store appended.
#[derive(Clone)]
pub struct LogStore {
    /// First, so it is dropped first: the last clone's drop waits for the writer to
    /// finish what is queued (a committed log id, say) while `db` is still open.
    writer: LogWriter,
    db: Arc<DB>,
    tail: LogTail,
    /// This node's Raft id: entries of its own terms are a leader's appends.
    own_id: u64,
}

impl LogStore {
    pub(crate) fn new(db: Arc<DB>, own_id: u64, sizes: StoreSizes) -> Result<Self, StoreError> {
        let tail = LogTail::default();
        let writer = LogWriter::start(&db, tail.clone(), sizes)?;
        Ok(Self {
            writer,
            db,
            tail,
            own_id,
        })
    }

    /// The entries with an index in `range`, at most `limit` of them, in index order.
    /// Reads through one RocksDB iterator, which sees one consistent version of the
    /// log even while appends go on.
    fn read_entries(
        &self,
        range: impl RangeBounds<u64>,
        limit: usize,
    ) -> Result<Vec<Entry>, StoreError> {
        let start = match range.start_bound() {
            Bound::Included(&first) => first,
            Bound::Excluded(&before) => match before.checked_add(1) {
                Some(first) => first,
                None => return Ok(Vec::new()),
            },
            Bound::Unbounded => 0,
        };
        // `None`: up to the end of the log.
        let end_exclusive = match range.end_bound() {
            Bound::Included(&last) => last.checked_add(1),
            Bound::Excluded(&end) => Some(end),
            Bound::Unbounded => None,
        };
        // The tail first: whatever it no longer holds below its lowest index is in
        // RocksDB by then (see `LogTail`).
        let (tail_from, tail) = self.tail.read(start, end_exclusive, limit);
        let written_end = match (end_exclusive, tail_from) {
            (Some(end), Some(from)) => Some(end.min(from)),
            (end, from) => end.or(from),
        };
        let mut entries = self.read_written(start, written_end, limit)?;
        for entry in tail {
            if entries.len() >= limit {
                break;
            }
            push_contiguous(&mut entries, entry)?;
        }
        Ok(entries)
    }

    /// The entries RocksDB holds from `start` up to `end_exclusive`, at most `limit`.
    /// Reads through one RocksDB iterator, which sees one consistent version of the
    /// log even while the writer goes on.
    fn read_written(
        &self,
        start: u64,
        end_exclusive: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Entry>, StoreError> {
        let mut entries: Vec<Entry> = Vec::new();
        if end_exclusive.is_some_and(|end| end <= start) {
            return Ok(entries);
        }
        let family = column_family(&self.db, CF_LOG)?;
        let start_key = start.to_be_bytes();
        let iterator = self
            .db
            .iterator_cf(family, IteratorMode::From(&start_key, Direction::Forward));
        for item in iterator {
            if entries.len() >= limit {
                break;
            }
            let (key, value) = item.map_err(|source| StoreError::Read {
                column_family: CF_LOG,
                what: format!("log entries from index {start}"),
                source,
            })?;
            let index = decode_index(&key)?;
            if end_exclusive.is_some_and(|end| index >= end) {
                break;
            }
            push_contiguous(&mut entries, decode_entry(index, &value)?)?;
        }
        Ok(entries)
    }

    /// The log id of the last entry present, ignoring the purge point.
    fn last_present_log_id(&self) -> Result<Option<LogId>, StoreError> {
        let family = column_family(&self.db, CF_LOG)?;
        let Some(item) = self.db.iterator_cf(family, IteratorMode::End).next() else {
            return Ok(None);
        };
        let (key, value) = item.map_err(|source| StoreError::Read {
            column_family: CF_LOG,
            what: "the last log entry".to_string(),
            source,
        })?;
        let entry = decode_entry(decode_index(&key)?, &value)?;
        Ok(Some(entry.log_id()))
    }

    /// Puts `value` (or deletes the key for `None`) in `meta`, synced.
    async fn write_meta<T: serde::Serialize>(
        &self,
        key: &'static str,
        value: Option<&T>,
    ) -> Result<(), StoreError> {
        let encoded = value.map(|v| to_json(v, key)).transpose()?;
        let db = Arc::clone(&self.db);
        run_blocking(key, move || {
            let family = column_family(&db, CF_META)?;
            let mut batch = WriteBatch::default();
            match encoded {
                Some(bytes) => batch.put_cf(family, key, bytes),
                None => batch.delete_cf(family, key),
            }
            write_synced(&db, batch, CF_META, || format!("`{key}`"))
        })
        .await
    }
}

/// Deletes the entries `first..=last` from the log in `batch`. (RocksDB's range
/// delete excludes its end key, so the last one is deleted on its own; this also
/// covers `last == u64::MAX`.)
pub(super) fn delete_indexes(
    batch: &mut WriteBatch,
    family: &rocksdb::ColumnFamily,
    first: u64,
    last: u64,
) {
    if first > last {
        return;
    }
    batch.delete_range_cf(family, first.to_be_bytes(), last.to_be_bytes());
    batch.delete_cf(family, last.to_be_bytes());
}

/// The bytes of the log stored from index `first` on, as RocksDB holds them.
pub(super) fn log_bytes_from(db: &DB, first: u64) -> Result<u64, StoreError> {
    let family = column_family(db, CF_LOG)?;
    let start_key = first.to_be_bytes();
    let mut bytes = 0;
    for item in db.iterator_cf(family, IteratorMode::From(&start_key, Direction::Forward)) {
        let (_, value) = item.map_err(|source| StoreError::Read {
            column_family: CF_LOG,
            what: format!("the log's size from index {first}"),
            source,
        })?;
        bytes += value.len() as u64;
    }
    Ok(bytes)
}

/// Appends `entry` to `entries`, refusing a hole before it.
fn push_contiguous(entries: &mut Vec<Entry>, entry: Entry) -> Result<(), StoreError> {
    if let Some(previous) = entries.last() {
        let expected = previous.log_id().index + 1;
        if entry.log_id().index != expected {
            return Err(StoreError::Corrupt {
                what: format!(
                    "the log has a hole: index {expected} is missing before {}",
                    entry.log_id().index
                ),
            });
        }
    }
    entries.push(entry);
    Ok(())
}

fn decode_index(key: &[u8]) -> Result<u64, StoreError> {
    let bytes: [u8; 8] = key.try_into().map_err(|_| StoreError::Corrupt {
        what: format!(
            "a key of {} bytes in `{CF_LOG}` is not an 8-byte index",
            key.len()
        ),
    })?;
    Ok(u64::from_be_bytes(bytes))
}

fn decode_entry(index: u64, value: &[u8]) -> Result<Entry, StoreError> {
    let entry = Entry::decode(value).map_err(|source| StoreError::Decode {
        column_family: CF_LOG,
        what: format!("the entry at index {index}"),
        source,
    })?;
    if entry.log_id().index != index {
        return Err(StoreError::Corrupt {
            what: format!(
                "the entry stored at index {index} has log id {}",
                entry.log_id()
            ),
        });
    }
    Ok(entry)
}

impl RaftLogReader<FleetRaft> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        Ok(self.read_entries(range, usize::MAX)?)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(read_json(&self.db, CF_META, KEY_VOTE)?)
    }

    async fn limited_get_log_entries(
        &mut self,
        start: u64,
        end: u64,
    ) -> Result<Vec<Entry>, io::Error> {
        Ok(self.read_entries(start..end, ENTRIES_PER_READ_MAX)?)
    }
}

impl RaftLogStorage<FleetRaft> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<FleetRaft>, io::Error> {
        let last_purged_log_id: Option<LogId> = read_json(&self.db, CF_META, KEY_LAST_PURGED)?;
        let last_present = self
            .tail
            .last_log_id()
            .map_or_else(|| self.last_present_log_id(), |id| Ok(Some(id)))?;
        // With every entry purged, the last log id is the purge point.
        let last_log_id = std::cmp::max(last_present, last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        Ok(self.write_meta(KEY_VOTE, Some(vote)).await?)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        // Not waited for (see the module docs): the writer records it and syncs soon.
        self.writer.commit(committed);
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, io::Error> {
        // What was saved last may still be queued in the writer.
        self.writer.barrier().await?;
        Ok(read_json(&self.db, CF_META, KEY_COMMITTED)?)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: IOFlushed<FleetRaft>,
    ) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut entries: Vec<Entry> = entries.into_iter().collect();
        if entries.is_empty() {
            callback.io_completed(Ok(()));
            return Ok(());
        }
        // Encoded once, here, when small: the writer stores that JSON, and a leader's
        // appends to its followers copy it from the entries they read back.
        let small = encode_each_within(&mut entries, ON_RUNTIME_BYTES_MAX);
        // Readable now; written, synced and reported durable by the writer (or here,
        // for a follower).
        self.tail.insert(&entries);
        // Entries of this node's own terms: it leads (or, rarely, a later leader sends
        // back entries of a term it led, which may as well take the thread).
        let own_terms = entries[0].log_id().leader_id.node_id == self.own_id;
        if own_terms {
            self.writer.append(entries, callback);
        } else {
            self.writer.append_as_follower(entries, small, callback);
        }
        Ok(())
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        let first_removed = match last_log_id {
            Some(log_id) => match log_id.index.checked_add(1) {
                Some(first) => first,
                None => return Ok(()),
            },
            None => 0,
        };
        self.tail.truncate_from(first_removed);
        self.writer.truncate(first_removed).await?;
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        let purged = to_json(&log_id, KEY_LAST_PURGED)?;
        let last = log_id.index;
        let db = Arc::clone(&self.db);
        run_blocking("a log purge", move || {
            let meta = column_family(&db, CF_META)?;
            let log = column_family(&db, CF_LOG)?;
            let mut batch = WriteBatch::default();
            batch.put_cf(meta, KEY_LAST_PURGED, purged);
            delete_indexes(&mut batch, log, 0, last);
            write_synced(&db, batch, "log+meta", || {
                format!("purge of the log up to index {last}")
            })
        })
        .await?;
        self.tail.purge_through(last);
        Ok(())
    }
}
