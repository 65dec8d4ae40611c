//! Asking the node's own agent for a deliberation input (SPEC A1).
//!
//! When a phase starts, the state machine emits `Effect::RequestInput` for each
//! expected speaker; the runtime of that node builds an [`InputRequest`] from the
//! replicated deliberation, calls [`ask`] with the time it may wait (the phase
//! deadline less `answer_margin_ms`), and submits the [`AgentAnswer`] it gets. Any
//! [`AgentError`] means the bot abstains for this phase, unless someone submits by
//! hand with `fleetctl position` (the only way for the `manual` adapter).
//!
//! This module does I/O (processes, HTTP) but holds no state: each call stands alone,
//! so a failover or restart loses nothing but the call in flight.
//!
//! # Layout
//! - [`agent_config`]: `AgentConfig`, the `[agent]` table, with `resolve_against`
//!   and `validate`.
//! - [`input_request`]: `InputRequest`, what the agent is asked.
//! - [`agent_answer`]: `AgentAnswer`, what it answers, and its checks.
//! - [`agent_error`]: `AgentError`: manual, late, malformed, failed.
//! - [`command_adapter`], [`openai_adapter`] (with [`openai_prompt`]),
//!   [`manual_adapter`]: one per `adapter` value.
//! - [`confidence_text`]: `low`/`medium`/`high` as agents write them.

pub mod agent_answer;
pub mod agent_config;
pub mod agent_error;
pub mod command_adapter;
pub mod confidence_text;
pub mod input_request;
pub mod manual_adapter;
pub mod openai_adapter;
pub mod openai_prompt;

use std::time::Duration;

use tracing::instrument;

pub use agent_answer::AgentAnswer;
pub use agent_config::{AgentAdapter, AgentConfig};
pub use agent_error::AgentError;
pub use input_request::{InputRequest, PriorInput, RequestPhase};

/// Asks the configured agent for its input to `request`, waiting at most `wait`,
/// and returns the answer checked against the deliberation's options and limits.
///
/// `http` is shared so connections to the gateway are reused across phases; it needs
/// no timeout of its own, `wait` bounds the whole exchange.
#[instrument(skip_all, fields(
    node = %request.node,
    deliberation = %request.deliberation,
    phase = request.phase.name(),
    adapter = %config.adapter,
))]
pub async fn ask(
    config: &AgentConfig,
    http: &reqwest::Client,
    request: &InputRequest,
    wait: Duration,
) -> Result<AgentAnswer, AgentError> {
    let answer = match config.adapter {
        AgentAdapter::Manual => manual_adapter::ask(),
        AgentAdapter::Command => command_adapter::ask(config, request, wait).await,
        AgentAdapter::OpenAi => openai_adapter::ask(config, http, request, wait).await,
    }
    .and_then(|answer| answer.validated(&request.options));
    match &answer {
        Ok(answer) => tracing::debug!(stance = %answer.stance, "the agent answered"),
        Err(error) => tracing::debug!(error = %error, "the agent gave no input"),
    }
    answer
}

/// `duration` in whole milliseconds, saturating (a wait of centuries is not an error).
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
