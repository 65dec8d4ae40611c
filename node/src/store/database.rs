//! The RocksDB database under a node's store: its column families, how it is opened,
//! and the few helpers both stores use (typed reads, synced and unsynced writes,
//! blocking work off the async runtime).
//!
//! One database holds everything, so a write that touches two column families (a
//! purge records the purge point and deletes the entries) is one atomic `WriteBatch`.
//! Every write that Raft's safety depends on is durable before Raft counts on it:
//! votes and purges go through [`write_synced`], which fsyncs RocksDB's
//! write-ahead log before it returns; appended entries and truncations are written
//! with [`write_unsynced`] by the `LogWriter`, which reports them done after its fsync.

use std::path::Path;
use std::sync::Arc;

use rocksdb::{ColumnFamily, ColumnFamilyDescriptor, DB, Options, WriteBatch, WriteOptions};
use serde::de::DeserializeOwned;

use super::error::StoreError;

/// Log entries: key = big-endian `u64` index (so RocksDB's byte order is index
/// order), value = JSON of the openraft entry.
pub(crate) const CF_LOG: &str = "log";
/// Raft's own records beside the log: the vote, the committed log id and the last
/// purged log id, each JSON under its own key.
pub(crate) const CF_META: &str = "meta";
/// Where an earlier build kept the current snapshot (its metadata and its state
/// bytes); read until the first snapshot file replaces it (see `snapshot_file`).
pub(crate) const CF_SNAPSHOT: &str = "snapshot";

const COLUMN_FAMILIES: [&str; 3] = [CF_LOG, CF_META, CF_SNAPSHOT];

/// How many spent write-ahead log files RocksDB keeps to write over again. An fsync
/// after an append into a new file must also record the file's new size (an ext4
/// journal commit, or an inode write where ext4 has no journal: RocksDB preallocates
/// log files beyond their end); one into a recycled file, already that long, syncs the
/// data only: 0.13 ms instead of 0.19 ms for a 300-byte append here. Only a spent file
/// is recycled, so the first two files after a start are new ones.
const WAL_FILES_RECYCLED: usize = 4;

/// The write-ahead log size at which RocksDB flushes the memtables that hold its
/// oldest file, so that the file is spent and recycled soon rather than after 64 MiB.
const WAL_TOTAL_BYTES_MAX: u64 = 4 * 1024 * 1024;

/// Opens (creating if needed) the database at `dir` with the store's column families.
pub(crate) fn open(dir: &Path) -> Result<Arc<DB>, StoreError> {
    std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDirectory {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut options = Options::default();
    options.create_if_missing(true);
    options.create_missing_column_families(true);
    options.set_recycle_log_file_num(WAL_FILES_RECYCLED);
    options.set_max_total_wal_size(WAL_TOTAL_BYTES_MAX);
    let families = COLUMN_FAMILIES
        .iter()
        .map(|name| ColumnFamilyDescriptor::new(*name, Options::default()));
    let db =
        DB::open_cf_descriptors(&options, dir, families).map_err(|source| StoreError::Open {
            path: dir.to_path_buf(),
            source,
        })?;
    Ok(Arc::new(db))
}

/// The handle of column family `name`.
pub(crate) fn column_family<'db>(
    db: &'db DB,
    name: &'static str,
) -> Result<&'db ColumnFamily, StoreError> {
    db.cf_handle(name)
        .ok_or(StoreError::MissingColumnFamily { name })
}

/// Reads and decodes the JSON value under `key` in `column_family`.
pub(crate) fn read_json<T: DeserializeOwned>(
    db: &DB,
    column_family_name: &'static str,
    key: &str,
) -> Result<Option<T>, StoreError> {
    let family = column_family(db, column_family_name)?;
    let bytes = db
        .get_pinned_cf(family, key)
        .map_err(|source| StoreError::Read {
            column_family: column_family_name,
            what: format!("`{key}`"),
            source,
        })?;
    bytes
        .map(|bytes| {
            serde_json::from_slice(&bytes).map_err(|source| StoreError::Decode {
                column_family: column_family_name,
                what: format!("`{key}`"),
                source,
            })
        })
        .transpose()
}

/// Encodes `value` as JSON for storage.
pub(crate) fn to_json<T: serde::Serialize>(value: &T, what: &str) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(|source| StoreError::Encode {
        what: what.to_string(),
        source,
    })
}

/// Writes `batch` and fsyncs the write-ahead log before returning, so the write
/// survives `kill -9` and power loss once this returns `Ok`.
pub(crate) fn write_synced(
    db: &DB,
    batch: WriteBatch,
    column_families: &'static str,
    what: impl FnOnce() -> String,
) -> Result<(), StoreError> {
    let mut options = WriteOptions::default();
    options.set_sync(true);
    db.write_opt(batch, &options)
        .map_err(|source| StoreError::Write {
            column_families,
            what: what(),
            source,
        })
}

/// Writes `batch` into RocksDB's memtable and write-ahead log without an fsync: the
/// write is readable at once and survives `kill -9` (it is in the kernel's page cache),
/// and the next fsync of the log (any synced write, or the `LogWriter`'s) makes it
/// survive power loss too.
pub(crate) fn write_unsynced(
    db: &DB,
    batch: WriteBatch,
    column_families: &'static str,
    what: impl FnOnce() -> String,
) -> Result<(), StoreError> {
    db.write(batch).map_err(|source| StoreError::Write {
        column_families,
        what: what(),
        source,
    })
}

/// Runs a blocking RocksDB operation (an fsync takes milliseconds) on tokio's blocking
/// pool and waits for it, so the async runtime's workers never stall on the disk while
/// the caller still sees the write complete before it goes on (writes stay serialised).
pub(crate) async fn run_blocking<T, F>(what: &'static str, operation: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, StoreError> + Send + 'static,
{
    tokio::task::spawn_blocking(operation)
        .await
        .map_err(|source| StoreError::Task {
            what: what.to_string(),
            source,
        })?
}
