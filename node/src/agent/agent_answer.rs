//! `AgentAnswer`: the input an agent gives back, and the checks it must pass.
//!
//! An agent's answer is checked here, before it is submitted, against the same rules
//! the replicated state applies to a submission (non-empty stance and summary, one
//! of the options when there are options, the size limits). An answer the state
//! would refuse is malformed now, with a reason the operator can read, instead of a
//! refusal later from the leader.

use serde::{Deserialize, Serialize};

use super::agent_error::AgentError;
use super::confidence_text;
use crate::state::deliberation::stance_key;
use crate::state::limits::{
    CONCERN_BYTES_MAX, CONCERNS_MAX, STANCE_BYTES_MAX, SUMMARY_BYTES_MAX, check_text,
};
use crate::state::{Confidence, Submission};

/// A position as an agent gives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentAnswer {
    /// The stance: one of the options when the deliberation has options.
    pub stance: String,
    /// `low`, `medium` or `high`, in any case.
    #[serde(with = "confidence_text")]
    pub confidence: Confidence,
    /// 1–2 sentences: the position (round 1) or its rationale (round 2).
    pub summary: String,
    /// Key concerns or blockers; may be left out when there are none.
    #[serde(default)]
    pub concerns: Vec<String>,
}

impl AgentAnswer {
    /// Checks the answer against the deliberation's `options` and the state's limits
    /// and returns it tidied: text trimmed, blank concerns dropped, the stance in the
    /// option's own spelling.
    pub fn validated(mut self, options: &[String]) -> Result<Self, AgentError> {
        let malformed =
            |error: crate::state::RuleViolation| AgentError::malformed(error.to_string());
        check_text("stance", &self.stance, STANCE_BYTES_MAX).map_err(malformed)?;
        check_text("summary", &self.summary, SUMMARY_BYTES_MAX).map_err(malformed)?;
        self.stance = self.stance.trim().to_string();
        self.summary = self.summary.trim().to_string();
        if !options.is_empty() {
            // The state compares stances by `stance_key` (case, spacing, end
            // punctuation); the same comparison here accepts exactly what it accepts.
            let key = stance_key(&self.stance);
            let Some(option) = options.iter().find(|option| stance_key(option) == key) else {
                return Err(AgentError::malformed(format!(
                    "stance `{}` is not one of the options ({})",
                    self.stance,
                    options.join(", ")
                )));
            };
            self.stance = option.clone();
        }
        // Models sometimes fill an empty list with `""`; that is no concern, and
        // the state would refuse it as blank, so it is dropped rather than fatal.
        self.concerns = self
            .concerns
            .iter()
            .map(|concern| concern.trim().to_string())
            .filter(|concern| !concern.is_empty())
            .collect();
        if self.concerns.len() > CONCERNS_MAX {
            return Err(AgentError::malformed(format!(
                "{} concerns given; at most {CONCERNS_MAX}",
                self.concerns.len()
            )));
        }
        for concern in &self.concerns {
            check_text("concern", concern, CONCERN_BYTES_MAX).map_err(malformed)?;
        }
        Ok(self)
    }

    /// The submission for the round the agent was asked in (`InputRequest::round`),
    /// with idempotency key `request_id`. Naming the round makes the state refuse an
    /// answer that arrives after its phase ended instead of counting it in the next
    /// one; the runtime derives `request_id` from deliberation, node and phase so a
    /// retry is not counted twice.
    pub fn into_submission(self, round: Option<u8>, request_id: String) -> Submission {
        Submission {
            round,
            stance: self.stance,
            confidence: self.confidence,
            summary: self.summary,
            concerns: self.concerns,
            request_id,
        }
    }
}
