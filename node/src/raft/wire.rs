//! Encodings of Raft messages that have no serde form of their own in openraft:
//! the snapshot sent whole to a follower behind the purged log.

use openraft::type_config::alias::{SnapshotMetaOf, SnapshotOf, VoteOf};
use serde::{Deserialize, Serialize};

use super::type_config::FleetRaft;

/// A snapshot's bytes, as the state machine builds and installs it.
pub type SnapshotData = Vec<u8>;

/// A whole snapshot with the sender's vote, for `InstallSnapshot`.
#[derive(Serialize, Deserialize)]
pub struct SnapshotEnvelope {
    pub vote: VoteOf<FleetRaft>,
    pub meta: SnapshotMetaOf<FleetRaft>,
    #[serde(with = "crate::state::artifacts::base64_bytes")]
    pub data: Vec<u8>,
}

impl SnapshotEnvelope {
    /// Wraps a snapshot for sending.
    pub fn new(vote: VoteOf<FleetRaft>, snapshot: SnapshotOf<FleetRaft, SnapshotData>) -> Self {
        Self {
            vote,
            meta: snapshot.meta,
            data: snapshot.snapshot,
        }
    }

    /// Unwraps a received snapshot for installing.
    pub fn into_parts(self) -> (VoteOf<FleetRaft>, SnapshotOf<FleetRaft, SnapshotData>) {
        let snapshot = openraft::Snapshot {
            meta: self.meta,
            snapshot: self.data,
        };
        (self.vote, snapshot)
    }
}
