//! `Snapshot`: the versioned encoding of the whole [`FleetState`] for Raft snapshots
//! and for backup and restore.
//!
//! The encoding is JSON with a format version beside the state. A build refuses a
//! snapshot of a version it does not know, rather than misreading it.

use serde::{Deserialize, Serialize};

use super::error::RuleViolation;
use super::fleet_state::FleetState;

/// The snapshot format this build writes and reads.
pub const SNAPSHOT_FORMAT_VERSION: u32 = 1;

/// A snapshot as stored.
#[derive(Serialize, Deserialize)]
pub struct Snapshot {
    pub format_version: u32,
    pub state: FleetState,
}

#[derive(Deserialize)]
struct VersionOnly {
    format_version: u32,
}

impl Snapshot {
    /// Encodes `state` at the current format version.
    pub fn encode(state: &FleetState) -> Vec<u8> {
        Self::encode_with_capacity(state, 0)
    }

    /// Encodes `state` into a buffer made with room for `capacity` bytes. A buffer
    /// that grows as it fills copies what it holds at every doubling, and for a
    /// multi-MiB snapshot each new block is fresh memory the kernel must zero first;
    /// one made large enough at the start is written once.
    pub fn encode_with_capacity(state: &FleetState, capacity: usize) -> Vec<u8> {
        #[derive(Serialize)]
        struct Borrowed<'a> {
            format_version: u32,
            state: &'a FleetState,
        }
        let mut buffer = Vec::with_capacity(capacity);
        serde_json::to_writer(
            &mut buffer,
            &Borrowed {
                format_version: SNAPSHOT_FORMAT_VERSION,
                state,
            },
        )
        .expect("the fleet state always serialises");
        buffer
    }

    /// Decodes a snapshot, refusing unknown versions and damaged bytes.
    pub fn decode(bytes: &[u8]) -> Result<FleetState, RuleViolation> {
        let corrupt = |e: serde_json::Error| RuleViolation::CorruptSnapshot {
            reason: e.to_string(),
        };
        let version: VersionOnly = serde_json::from_slice(bytes).map_err(corrupt)?;
        if version.format_version != SNAPSHOT_FORMAT_VERSION {
            return Err(RuleViolation::UnsupportedSnapshotVersion {
                found: version.format_version,
                supported: SNAPSHOT_FORMAT_VERSION,
            });
        }
        let snapshot: Snapshot = serde_json::from_slice(bytes).map_err(corrupt)?;
        Ok(snapshot.state)
    }
}
