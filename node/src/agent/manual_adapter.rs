//! The `manual` adapter: nobody is asked.
//!
//! A node without a program or gateway to ask still takes part: a person or the
//! agent itself submits with `fleetctl position` before the deadline. Returning
//! [`AgentError::Manual`] at once tells the runtime to wait for that, not to retry.

use super::AgentAnswer;
use super::agent_error::AgentError;

/// Always [`AgentError::Manual`]: there is nothing to ask.
pub fn ask() -> Result<AgentAnswer, AgentError> {
    Err(AgentError::Manual)
}
