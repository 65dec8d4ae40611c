//! `LogTail`: the newest log entries, in memory. It holds every entry that was
//! appended but is not yet written to RocksDB, so that an entry is readable the
//! moment `append` returns, and keeps the most recent written ones too, so that
//! replication, which reads an entry just after it was appended, seldom reads
//! RocksDB and decodes the entry again.
//!
//! *Invariant:* the entries held have contiguous indexes, and every entry of the log
//! below the lowest one held is in RocksDB. An append puts its entries here before it
//! hands them to the [`LogWriter`](super::log_writer), which marks them written only
//! after RocksDB holds them; only written entries leave, and only from the low end. So
//! a reader that sees the lowest index held reads everything below it from RocksDB and
//! the rest from here, and never finds a hole while entries move from one to the other.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use openraft::type_config::alias::{EntryOf, LogIdOf};

use crate::raft::FleetRaft;

type Entry = EntryOf<FleetRaft>;
type LogId = LogIdOf<FleetRaft>;

/// The most written entries kept in memory.
const WRITTEN_KEPT_MAX: usize = 4_096;

/// The most bytes (as RocksDB holds them) of written entries kept in memory, so a few
/// large artifacts do not hold on to much memory. A small entry also carries its JSON
/// (see [`LogEntry`](crate::raft::LogEntry)), so small ones take up to twice this.
const WRITTEN_KEPT_BYTES_MAX: usize = 8 * 1024 * 1024;

/// One entry held, and its encoded size once it is written.
struct Held {
    entry: Entry,
    written_bytes: Option<usize>,
}

#[derive(Default)]
struct Tail {
    held: BTreeMap<u64, Held>,
    /// How many of the held entries are written, and their bytes.
    written_count: usize,
    written_bytes: usize,
}

impl Tail {
    /// Takes a held entry that leaves out of the written count.
    fn uncount(&mut self, held: &Held) {
        if let Some(bytes) = held.written_bytes {
            self.written_count -= 1;
            self.written_bytes -= bytes;
        }
    }

    /// Lets go of written entries from the low end while more are kept than allowed.
    fn trim(&mut self) {
        self.drop_written_while(|tail, _| {
            tail.written_count > WRITTEN_KEPT_MAX || tail.written_bytes > WRITTEN_KEPT_BYTES_MAX
        });
    }

    /// Lets go of the lowest entry while it is written and `more(self, its index)`
    /// holds; an unwritten entry stops it, so the entries held stay contiguous.
    fn drop_written_while(&mut self, more: impl Fn(&Self, u64) -> bool) {
        while let Some((&index, held)) = self.held.first_key_value()
            && held.written_bytes.is_some()
            && more(self, index)
        {
            if let Some((_, held)) = self.held.pop_first() {
                self.uncount(&held);
            }
        }
    }
}

/// The newest entries of the log; clones share them.
#[derive(Clone, Default)]
pub(crate) struct LogTail {
    tail: Arc<Mutex<Tail>>,
}

impl LogTail {
    fn lock(&self) -> MutexGuard<'_, Tail> {
        self.tail.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds copies of `entries`, appended after the entries held (or replacing those
    /// from the same index on, after a truncation).
    pub(crate) fn insert(&self, entries: &[Entry]) {
        let mut tail = self.lock();
        for entry in entries {
            let held = Held {
                entry: entry.clone(),
                written_bytes: None,
            };
            if let Some(replaced) = tail.held.insert(entry.log_id().index, held) {
                tail.uncount(&replaced);
            }
        }
    }

    /// Marks entries as written to RocksDB, each with its encoded size; an entry that
    /// a truncation replaced meanwhile (same index, another log id) stays unwritten.
    pub(crate) fn written(&self, written: &[(LogId, usize)]) {
        let mut tail = self.lock();
        for (log_id, bytes) in written {
            let Some(held) = tail.held.get_mut(&log_id.index) else {
                continue;
            };
            if held.entry.log_id() != *log_id || held.written_bytes.is_some() {
                continue;
            }
            held.written_bytes = Some(*bytes);
            tail.written_count += 1;
            tail.written_bytes += bytes;
        }
        tail.trim();
    }

    /// Drops the entries from index `first` on (a truncation of the log).
    pub(crate) fn truncate_from(&self, first: u64) {
        let mut tail = self.lock();
        let removed = tail.held.split_off(&first);
        for held in removed.values() {
            tail.uncount(held);
        }
    }

    /// Drops the written entries up to index `last` (a purge of the log).
    pub(crate) fn purge_through(&self, last: u64) {
        self.lock().drop_written_while(|_, index| index <= last);
    }

    /// The log id of the last entry held.
    pub(crate) fn last_log_id(&self) -> Option<LogId> {
        self.lock()
            .held
            .values()
            .next_back()
            .map(|h| h.entry.log_id())
    }

    /// The lowest index held (everything below it is in RocksDB) and copies of the
    /// held entries from `start` up to `end_exclusive`, at most `limit`.
    pub(crate) fn read(
        &self,
        start: u64,
        end_exclusive: Option<u64>,
        limit: usize,
    ) -> (Option<u64>, Vec<Entry>) {
        let tail = self.lock();
        let first = tail.held.keys().next().copied();
        let entries = tail
            .held
            .range(start..)
            .take_while(|(index, _)| end_exclusive.is_none_or(|end| **index < end))
            .take(limit)
            .map(|(_, held)| held.entry.clone())
            .collect();
        (first, entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_entries::{blanks, log_id};

    fn held_indexes(tail: &LogTail) -> Vec<u64> {
        tail.read(0, None, usize::MAX)
            .1
            .iter()
            .map(|e| e.log_id().index)
            .collect()
    }

    fn mark_written(tail: &LogTail, entries: &[Entry], bytes: usize) {
        let written: Vec<_> = entries.iter().map(|e| (e.log_id(), bytes)).collect();
        tail.written(&written);
    }

    #[test]
    fn unwritten_entries_stay_however_many_there_are() {
        let tail = LogTail::default();
        let count = WRITTEN_KEPT_MAX as u64 + 10;
        tail.insert(&blanks(1, 0..count));
        assert_eq!(held_indexes(&tail), (0..count).collect::<Vec<_>>());
    }

    #[test]
    fn written_entries_leave_from_the_low_end_past_the_count_bound() {
        let tail = LogTail::default();
        let count = WRITTEN_KEPT_MAX as u64 + 10;
        let entries = blanks(1, 0..count + 5);
        tail.insert(&entries);
        // The last five stay unwritten.
        mark_written(&tail, &entries[..count as usize], 10);
        let held = held_indexes(&tail);
        assert_eq!(held.first(), Some(&10));
        assert_eq!(held.last(), Some(&(count + 4)));
        assert_eq!(held.len(), WRITTEN_KEPT_MAX + 5, "contiguous, none lost");
        assert_eq!(tail.read(0, None, 1).0, Some(10));
    }

    #[test]
    fn written_entries_leave_past_the_byte_bound() {
        let tail = LogTail::default();
        let entries = blanks(1, 0..4);
        tail.insert(&entries);
        mark_written(&tail, &entries, WRITTEN_KEPT_BYTES_MAX / 2);
        assert_eq!(held_indexes(&tail), vec![2, 3]);
    }

    #[test]
    fn an_unwritten_entry_blocks_trimming_above_it() {
        let tail = LogTail::default();
        let entries = blanks(1, 0..4);
        tail.insert(&entries);
        // Entry 0 is not marked: nothing above it may leave, or the log had a hole.
        mark_written(&tail, &entries[1..], WRITTEN_KEPT_BYTES_MAX);
        assert_eq!(held_indexes(&tail), vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_replaced_entry_is_not_marked_by_the_old_write() {
        let tail = LogTail::default();
        let old = blanks(1, 0..3);
        tail.insert(&old);
        tail.truncate_from(1);
        let new = blanks(2, 1..3);
        tail.insert(&new);
        // The writer reports the old term's entries written, the replaced ones as
        // large: had they counted, the byte bound would push entries 0 and 1 out.
        mark_written(&tail, &old[..1], 1);
        mark_written(&tail, &old[1..], WRITTEN_KEPT_BYTES_MAX);
        let held = tail.read(0, None, usize::MAX).1;
        let ids: Vec<_> = held.iter().map(|e| e.log_id()).collect();
        assert_eq!(ids, vec![log_id(1, 0), log_id(2, 1), log_id(2, 2)]);
    }

    #[test]
    fn a_purge_drops_written_entries_through_its_index() {
        let tail = LogTail::default();
        let entries = blanks(1, 0..6);
        tail.insert(&entries);
        mark_written(&tail, &entries[..4], 10);
        tail.purge_through(4);
        // Entry 4 is not written yet, so it stays, with all after it.
        assert_eq!(held_indexes(&tail), vec![4, 5]);
        assert_eq!(tail.last_log_id(), Some(log_id(1, 5)));
    }
}
