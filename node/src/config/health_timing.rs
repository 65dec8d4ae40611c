//! `HealthTiming`: how the leader judges the other members' health (R1).

use serde::Deserialize;

use super::error::ConfigError;

/// The `[health]` section.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HealthTiming {
    /// How often the leader looks at the members' acknowledgements, in ms.
    pub check_every_ms: u64,
    /// A member whose last acknowledgement of a heartbeat or an append is older than
    /// this is unhealthy, in ms. Must exceed `raft.heartbeat_ms`, so one late
    /// heartbeat does not count as a failure.
    pub unhealthy_after_ms: u64,
}

impl Default for HealthTiming {
    fn default() -> Self {
        Self {
            check_every_ms: 100,
            unhealthy_after_ms: 500,
        }
    }
}

impl HealthTiming {
    /// Checks the ranges, and that a member gets more than one heartbeat to answer.
    pub fn validate(&self, heartbeat_ms: u64) -> Result<(), ConfigError> {
        if self.check_every_ms == 0 {
            return Err(ConfigError::invalid(
                "health.check_every_ms",
                "must be at least 1",
            ));
        }
        if self.unhealthy_after_ms <= 2 * heartbeat_ms {
            return Err(ConfigError::invalid(
                "health.unhealthy_after_ms",
                format!(
                    "{} must be more than twice raft.heartbeat_ms ({heartbeat_ms}), or one late heartbeat would mark a node unhealthy",
                    self.unhealthy_after_ms
                ),
            ));
        }
        Ok(())
    }
}
