//! `DrillReport`: the result of a failover drill (R4), as the fleet records it.
//!
//! `fleetctl drill failover` measures from outside: it cuts the target off, watches
//! the roles move and come back, and commits this report. The state keeps the latest
//! reports and announces each one to the operator like a decision.

use serde::{Deserialize, Serialize};

use super::error::RuleViolation;
use super::limits::{CONCERN_BYTES_MAX, check_text};
use super::node_name::NodeName;

/// How many drill reports the state keeps; older ones are dropped first.
pub const DRILL_REPORTS_KEPT: usize = 100;
/// The most problems one report may list.
pub const DRILL_PROBLEMS_MAX: usize = 10;

/// What a failover drill found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrillReport {
    /// Assigned when committed: 1, 2, …
    #[serde(default)]
    pub id: u64,
    /// The node that was cut off.
    pub target: NodeName,
    /// How long it stayed cut off.
    pub down_ms: u64,
    /// Every check passed: new roles, a probe write, the roles back.
    pub ok: bool,
    /// From the cut to a new primary and note-taker committed.
    pub failover_ms: Option<u64>,
    /// From the target's return to both roles back on it.
    pub failback_ms: Option<u64>,
    pub new_primary: Option<NodeName>,
    pub new_note_taker: Option<NodeName>,
    /// A write was committed while the target was away.
    pub probe_write: bool,
    /// Role changes (epochs) during the whole drill.
    pub role_changes: u64,
    /// What went wrong, in sentences.
    pub problems: Vec<String>,
    /// When it was committed (the leader's clock).
    #[serde(default)]
    pub recorded_at_ms: u64,
}

impl DrillReport {
    /// Refuses a report that lists too much or too long a problem.
    pub fn validate(&self) -> Result<(), RuleViolation> {
        if self.problems.len() > DRILL_PROBLEMS_MAX {
            return Err(RuleViolation::invalid(
                "problems",
                format!(
                    "{} given; at most {DRILL_PROBLEMS_MAX}",
                    self.problems.len()
                ),
            ));
        }
        for problem in &self.problems {
            check_text("problem", problem, CONCERN_BYTES_MAX)?;
        }
        Ok(())
    }

    /// The notification's one-line title.
    pub fn title(&self) -> String {
        let verdict = if self.ok { "passed" } else { "FAILED" };
        format!("Fleet failover drill {verdict}: {}", self.target)
    }

    /// The notification's text.
    pub fn text(&self) -> String {
        let ms =
            |value: Option<u64>| value.map_or_else(|| "not reached".into(), |v| format!("{v} ms"));
        let name =
            |node: &Option<NodeName>| node.as_ref().map_or("none", NodeName::as_str).to_string();
        let mut text = format!(
            "Target: {} (cut off for {} ms)\nFailover: {} (primary {}, note-taker {})\nProbe write while away: {}\nFailback: {}\nRole changes: {}",
            self.target,
            self.down_ms,
            ms(self.failover_ms),
            name(&self.new_primary),
            name(&self.new_note_taker),
            if self.probe_write {
                "committed"
            } else {
                "failed"
            },
            ms(self.failback_ms),
            self.role_changes,
        );
        for problem in &self.problems {
            text.push_str("\nProblem: ");
            text.push_str(problem);
        }
        text
    }
}
