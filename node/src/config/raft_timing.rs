//! `RaftTiming`: this node's Raft timers, snapshot policy and RPC timeout.

use serde::Deserialize;

use super::error::ConfigError;

/// The shortest heartbeat interval accepted: faster only burns CPU and bandwidth.
pub const HEARTBEAT_MS_MIN: u64 = 10;
/// The longest election timeout accepted: longer would leave the fleet leaderless
/// for over a minute after a failure.
pub const ELECTION_TIMEOUT_MS_MAX: u64 = 60_000;
/// The longest RPC timeout accepted.
pub const RPC_TIMEOUT_MS_MAX: u64 = 60_000;

/// The `[raft]` section.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RaftTiming {
    /// How often the leader sends heartbeats, in ms. Must be below
    /// `election_timeout_min_ms`, so followers hear from a live leader in time.
    pub heartbeat_ms: u64,
    /// The shortest time a follower waits without a heartbeat before it starts an
    /// election, in ms.
    pub election_timeout_min_ms: u64,
    /// The longest such wait, in ms; each election picks a random time in between so
    /// two followers rarely stand at once.
    pub election_timeout_max_ms: u64,
    /// Build a snapshot (and purge the log before it) after at least this many log
    /// entries, and once the log since the last snapshot is as large as that snapshot
    /// (so snapshots of a large state stay rare; see `runtime::snapshot_pacer`).
    pub snapshot_every_logs: u64,
    /// How many log entries before a snapshot are kept when the log is purged, so a
    /// follower slightly behind catches up from the log rather than a snapshot.
    pub logs_kept_after_snapshot: u64,
    /// How long one Raft RPC to a peer may take, in ms.
    pub rpc_timeout_ms: u64,
}

impl Default for RaftTiming {
    fn default() -> Self {
        Self {
            heartbeat_ms: 100,
            election_timeout_min_ms: 200,
            election_timeout_max_ms: 400,
            snapshot_every_logs: 5_000,
            logs_kept_after_snapshot: 1_000,
            rpc_timeout_ms: 1_000,
        }
    }
}

impl RaftTiming {
    /// Checks the timers' ranges and their order.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.heartbeat_ms < HEARTBEAT_MS_MIN {
            return Err(ConfigError::invalid(
                "raft.heartbeat_ms",
                format!(
                    "{} is below the minimum of {HEARTBEAT_MS_MIN}",
                    self.heartbeat_ms
                ),
            ));
        }
        if self.heartbeat_ms >= self.election_timeout_min_ms {
            return Err(ConfigError::NotBelow {
                key: "raft.heartbeat_ms",
                value: self.heartbeat_ms,
                bound_key: "raft.election_timeout_min_ms",
                bound: self.election_timeout_min_ms,
            });
        }
        if self.election_timeout_min_ms >= self.election_timeout_max_ms {
            return Err(ConfigError::NotBelow {
                key: "raft.election_timeout_min_ms",
                value: self.election_timeout_min_ms,
                bound_key: "raft.election_timeout_max_ms",
                bound: self.election_timeout_max_ms,
            });
        }
        if self.election_timeout_max_ms > ELECTION_TIMEOUT_MS_MAX {
            return Err(ConfigError::invalid(
                "raft.election_timeout_max_ms",
                format!(
                    "{} is above the maximum of {ELECTION_TIMEOUT_MS_MAX}",
                    self.election_timeout_max_ms
                ),
            ));
        }
        if self.snapshot_every_logs == 0 {
            return Err(ConfigError::invalid(
                "raft.snapshot_every_logs",
                "must be at least 1",
            ));
        }
        if self.rpc_timeout_ms == 0 || self.rpc_timeout_ms > RPC_TIMEOUT_MS_MAX {
            return Err(ConfigError::invalid(
                "raft.rpc_timeout_ms",
                format!(
                    "{} is not between 1 and {RPC_TIMEOUT_MS_MAX}",
                    self.rpc_timeout_ms
                ),
            ));
        }
        Ok(())
    }
}
