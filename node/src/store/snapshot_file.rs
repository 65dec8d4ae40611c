//! `SnapshotFile`: the node's current snapshot, in a file of its own beside the
//! RocksDB database rather than inside it.
//!
//! A snapshot is the whole state: megabytes, growing with the event log. Written into
//! RocksDB it went through the write-ahead log that the Raft log's fsyncs share (so the
//! next append's fsync carried it), then into a memtable, a table file and later
//! compactions, each a copy of its own. A file is written once, in one sequential
//! write, and its fsync is its own.
//!
//! *Crash safety:* the snapshot is written to `snapshot.tmp`, fsynced, renamed over
//! `snapshot`, and the directory fsynced before [`SnapshotFile::write`] returns, so
//! the file found after a crash is the old snapshot or the new one, whole. A
//! `snapshot.tmp` found on open is what a crash left behind and is removed.
//!
//! *Layout:* one header line of JSON, `{"format":1,"meta":…,"data_bytes":N,
//! "crc32":C}`, then the `N` bytes of the snapshot's data
//! ([`state::Snapshot`](crate::state::Snapshot)'s encoding). A file whose data is not
//! `N` bytes long or does not match the CRC-32 is refused as damaged, naming the file.
//! (RocksDB ignores files in its directory that it did not name itself.)

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use openraft::type_config::alias::{SnapshotMetaOf, SnapshotOf};
use serde::{Deserialize, Serialize};

use super::error::StoreError;
use crate::raft::FleetRaft;

type SnapshotMeta = SnapshotMetaOf<FleetRaft>;
type StoredSnapshot = SnapshotOf<FleetRaft, Vec<u8>>;

/// The layout of the file this build writes and reads.
pub const SNAPSHOT_FILE_FORMAT: u32 = 1;

/// The current snapshot's file name in the store's directory.
pub const SNAPSHOT_FILE_NAME: &str = "snapshot";

/// Where a snapshot is written before it is renamed into place.
const TEMPORARY_FILE_NAME: &str = "snapshot.tmp";

/// The longest header line read: the metadata is a log id and a membership of a few
/// members, far below this; a longer line is a damaged file, not a header.
const HEADER_BYTES_MAX: u64 = 1024 * 1024;

/// The header line.
#[derive(Serialize, Deserialize)]
struct Header {
    format: u32,
    meta: SnapshotMeta,
    data_bytes: u64,
    crc32: u32,
}

/// The snapshot file of one store directory.
pub(crate) struct SnapshotFile {
    dir: PathBuf,
}

impl SnapshotFile {
    /// The snapshot file in `dir`, removing a temporary file a crash left there.
    pub(crate) fn open(dir: &Path) -> Result<Self, StoreError> {
        let file = Self {
            dir: dir.to_path_buf(),
        };
        let temporary = file.temporary_path();
        match std::fs::remove_file(&temporary) {
            Ok(()) => {
                tracing::warn!(path = %temporary.display(), "removed a snapshot a crash left half-written")
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(file.error(temporary, "remove", source)),
        }
        Ok(file)
    }

    /// The path of the current snapshot.
    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join(SNAPSHOT_FILE_NAME)
    }

    fn temporary_path(&self) -> PathBuf {
        self.dir.join(TEMPORARY_FILE_NAME)
    }

    fn error(&self, path: PathBuf, action: &'static str, source: io::Error) -> StoreError {
        StoreError::SnapshotFile {
            path,
            action,
            source,
        }
    }

    fn damaged(&self, why: impl std::fmt::Display) -> StoreError {
        StoreError::Corrupt {
            what: format!("the snapshot file {} {why}", self.path().display()),
        }
    }

    /// The stored snapshot, or `None` when there is no file.
    pub(crate) fn read(&self) -> Result<Option<StoredSnapshot>, StoreError> {
        let path = self.path();
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(self.error(path, "open", source)),
        };
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        (&mut reader)
            .take(HEADER_BYTES_MAX)
            .read_until(b'\n', &mut line)
            .map_err(|source| self.error(path.clone(), "read", source))?;
        if line.pop() != Some(b'\n') {
            return Err(self.damaged("has no header line"));
        }
        let header: Header = serde_json::from_slice(&line)
            .map_err(|e| self.damaged(format_args!("has a header that cannot be read: {e}")))?;
        if header.format != SNAPSHOT_FILE_FORMAT {
            return Err(self.damaged(format_args!(
                "is of format {}; this build reads format {SNAPSHOT_FILE_FORMAT}",
                header.format
            )));
        }
        let mut data = Vec::with_capacity(usize::try_from(header.data_bytes).unwrap_or(0));
        reader
            .read_to_end(&mut data)
            .map_err(|source| self.error(path, "read", source))?;
        if data.len() as u64 != header.data_bytes {
            return Err(self.damaged(format_args!(
                "holds {} bytes of data where its header says {}",
                data.len(),
                header.data_bytes
            )));
        }
        let crc32 = crc32fast::hash(&data);
        if crc32 != header.crc32 {
            return Err(self.damaged(format_args!(
                "fails its checksum (CRC-32 {crc32:08x}, header {:08x})",
                header.crc32
            )));
        }
        Ok(Some(StoredSnapshot {
            meta: header.meta,
            snapshot: data,
        }))
    }

    /// Replaces the stored snapshot with `meta` and `data`, durably: when this returns
    /// `Ok`, a crash or power loss finds this snapshot.
    pub(crate) fn write(&self, meta: &SnapshotMeta, data: &[u8]) -> Result<(), StoreError> {
        let header = Header {
            format: SNAPSHOT_FILE_FORMAT,
            meta: meta.clone(),
            data_bytes: data.len() as u64,
            crc32: crc32fast::hash(data),
        };
        let mut line = serde_json::to_vec(&header).map_err(|source| StoreError::Encode {
            what: "the snapshot file's header".into(),
            source,
        })?;
        line.push(b'\n');
        let temporary = self.temporary_path();
        let write = |file: &mut File| {
            file.write_all(&line)?;
            file.write_all(data)?;
            file.sync_data()
        };
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temporary)
            .and_then(|mut file| write(&mut file))
            .map_err(|source| self.error(temporary.clone(), "write", source))?;
        std::fs::rename(&temporary, self.path())
            .map_err(|source| self.error(self.path(), "rename into place", source))?;
        File::open(&self.dir)
            .and_then(|dir| dir.sync_all())
            .map_err(|source| self.error(self.dir.clone(), "sync the directory of", source))
    }
}

#[cfg(test)]
mod tests {
    use openraft::StoredMembership;
    use openraft::type_config::alias::LogIdOf;
    use openraft::vote::RaftLeaderIdExt;

    use super::*;

    fn meta(index: u64) -> SnapshotMeta {
        let leader = <FleetRaft as openraft::RaftTypeConfig>::LeaderId::new_committed(2, 1);
        SnapshotMeta {
            last_log_id: Some(LogIdOf::<FleetRaft>::new(leader, index)),
            last_membership: StoredMembership::default(),
        }
    }

    #[test]
    fn a_written_snapshot_reads_back_and_a_later_one_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = SnapshotFile::open(dir.path()).unwrap();
        assert!(file.read().unwrap().is_none(), "no file yet");

        file.write(&meta(7), b"{\"state\":1}").unwrap();
        file.write(&meta(9), b"{\"state\":2}").unwrap();

        let stored = SnapshotFile::open(dir.path())
            .unwrap()
            .read()
            .unwrap()
            .unwrap();
        assert_eq!(stored.meta, meta(9));
        assert_eq!(stored.snapshot, b"{\"state\":2}");
        assert!(!dir.path().join(TEMPORARY_FILE_NAME).exists());
    }

    #[test]
    fn a_half_written_temporary_file_is_removed_and_the_last_snapshot_kept() {
        let dir = tempfile::tempdir().unwrap();
        SnapshotFile::open(dir.path())
            .unwrap()
            .write(&meta(3), b"whole")
            .unwrap();
        std::fs::write(dir.path().join(TEMPORARY_FILE_NAME), b"{\"format\":1,\"me").unwrap();

        let file = SnapshotFile::open(dir.path()).unwrap();

        assert!(!dir.path().join(TEMPORARY_FILE_NAME).exists());
        assert_eq!(file.read().unwrap().unwrap().snapshot, b"whole");
    }

    /// Writes a snapshot, lets `damage` change the file's bytes, and returns the error
    /// a read of it gives, which must name the file.
    fn read_after(damage: impl FnOnce(&mut Vec<u8>)) -> String {
        let dir = tempfile::tempdir().unwrap();
        let file = SnapshotFile::open(dir.path()).unwrap();
        file.write(&meta(5), b"{\"events\":[\"a\",\"b\"]}").unwrap();
        let mut bytes = std::fs::read(file.path()).unwrap();
        damage(&mut bytes);
        std::fs::write(file.path(), bytes).unwrap();
        let error = file.read().expect_err("a damaged file is refused");
        assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
        assert!(
            error
                .to_string()
                .contains(&file.path().display().to_string())
        );
        error.to_string()
    }

    #[test]
    fn a_damaged_file_is_refused_naming_what_is_wrong() {
        let flipped = read_after(|bytes| {
            let last = bytes.len() - 3;
            bytes[last] ^= 0x20;
        });
        assert!(flipped.contains("fails its checksum"), "{flipped}");

        let truncated = read_after(|bytes| bytes.truncate(bytes.len() - 4));
        assert!(truncated.contains("where its header says"), "{truncated}");

        let headless = read_after(|bytes| bytes.retain(|&b| b != b'\n'));
        assert!(headless.contains("no header line"), "{headless}");

        let other_format = read_after(|bytes| {
            let text = String::from_utf8(bytes.clone()).unwrap();
            *bytes = text
                .replacen("\"format\":1", "\"format\":7", 1)
                .into_bytes();
        });
        assert!(other_format.contains("is of format 7"), "{other_format}");
    }
}
