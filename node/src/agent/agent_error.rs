//! `AgentError`: why the local agent gave no usable input, and what that means.
//!
//! Every variant ends the same way for the deliberation: the bot abstains for this
//! phase (seed 002: silence is abstention). The variants differ in what the operator
//! can do about it, so each message says what happened.

/// Why asking the local agent produced no input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// The adapter is `manual`: there is no program or gateway to ask. The runtime
    /// waits for a person or the agent itself to run `fleetctl position` instead.
    #[error(
        "the agent adapter is manual, so nothing was asked; submit with `fleetctl position` before the deadline or the bot abstains for this phase"
    )]
    Manual,

    /// The agent did not answer before the phase deadline (less the answer margin).
    #[error("the agent did not answer within {waited_ms} ms; the bot abstains for this phase")]
    Late {
        /// How long we waited.
        waited_ms: u64,
    },

    /// The agent answered, but not with a usable position.
    #[error("the agent's answer is malformed: {reason}; the bot abstains for this phase")]
    Malformed {
        /// What was wrong with the answer.
        reason: String,
    },

    /// The agent could not be asked, or it reported a failure.
    #[error("asking the agent failed: {reason}; the bot abstains for this phase")]
    Failed {
        /// What failed: the program's exit and last stderr line, the HTTP status, …
        reason: String,
    },
}

impl AgentError {
    /// Shorthand for [`AgentError::Malformed`].
    pub fn malformed(reason: impl Into<String>) -> Self {
        Self::Malformed {
            reason: reason.into(),
        }
    }

    /// Shorthand for [`AgentError::Failed`].
    pub fn failed(reason: impl Into<String>) -> Self {
        Self::Failed {
            reason: reason.into(),
        }
    }
}

/// At most `max_chars` characters of `text`, trimmed, with `…` when cut, so an error
/// can quote what the agent said without carrying all of it.
pub(crate) fn excerpt(text: &str, max_chars: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
