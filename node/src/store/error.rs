//! `StoreError`: every way the store (RocksDB and the snapshot file) can fail, naming
//! the path, the column family and the operation.
//!
//! Nothing here is a refusal a caller could act on: a store error means the node's
//! disk or its data is in trouble, and the node must stop rather than guess. The
//! openraft traits speak `std::io::Error`, so a `StoreError` converts into one (kind
//! `InvalidData` for damaged data, `Other` for everything else) and keeps its message.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::state::RuleViolation;

/// A failure of the store.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The store's directory could not be created.
    #[error("cannot create the store directory {}: {source}", .path.display())]
    CreateDirectory {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// RocksDB refused to open the database (locked by another process, damaged, no
    /// permission).
    #[error(
        "cannot open the RocksDB store at {}: {source} (is another fleetd using this directory?)",
        .path.display()
    )]
    Open {
        path: PathBuf,
        #[source]
        source: rocksdb::Error,
    },

    /// The database was opened without one of the store's column families.
    #[error("the RocksDB store has no column family `{name}`; it must be opened by `open_store`")]
    MissingColumnFamily { name: &'static str },

    /// A read from RocksDB failed.
    #[error("cannot read {what} from column family `{column_family}`: {source}")]
    Read {
        column_family: &'static str,
        what: String,
        #[source]
        source: rocksdb::Error,
    },

    /// A write to RocksDB failed; the operation did not happen.
    #[error("cannot write {what} (column families {column_families}): {source}")]
    Write {
        column_families: &'static str,
        what: String,
        #[source]
        source: rocksdb::Error,
    },

    /// A stored value is not what this build wrote there.
    #[error("{what} in column family `{column_family}` cannot be decoded: {source}")]
    Decode {
        column_family: &'static str,
        what: String,
        #[source]
        source: serde_json::Error,
    },

    /// The stored data breaks an invariant of the store (a hole in the log, a key that
    /// is not an index, an entry stored under another index).
    #[error("the store is damaged: {what}")]
    Corrupt { what: String },

    /// A value could not be encoded for storage.
    #[error("cannot encode {what}: {source}")]
    Encode {
        what: String,
        #[source]
        source: serde_json::Error,
    },

    /// A snapshot's state bytes could not be decoded (damaged or of an unknown format
    /// version).
    #[error("the snapshot {what} cannot be restored: {source}")]
    Snapshot {
        what: String,
        #[source]
        source: RuleViolation,
    },

    /// The snapshot file could not be opened, read, written or synced.
    #[error("cannot {action} the snapshot file {}: {source}", .path.display())]
    SnapshotFile {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: io::Error,
    },

    /// The log writer could not write or sync what it was given.
    #[error("the log writer: {reason}")]
    LogWriter { reason: String },

    /// A thread of the store could not be started.
    #[error("cannot start {what}: {source}")]
    Thread {
        what: &'static str,
        #[source]
        source: io::Error,
    },

    /// The blocking task that performed a RocksDB write panicked or was cancelled.
    #[error("the storage task for {what} did not finish: {source}")]
    Task {
        what: String,
        #[source]
        source: tokio::task::JoinError,
    },
}

impl From<StoreError> for io::Error {
    fn from(error: StoreError) -> Self {
        let kind = match &error {
            StoreError::Decode { .. }
            | StoreError::Corrupt { .. }
            | StoreError::Snapshot { .. } => io::ErrorKind::InvalidData,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, error)
    }
}
