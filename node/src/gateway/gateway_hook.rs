//! `HookOutcome` and [`post_message`]: one attempt to hand a relayed message to the
//! local agent gateway's inbound hook.
//!
//! The request has the shape of the gateway's agent hook: `POST` with a JSON body
//! `{"message", "name", "agentId", "sessionKey"}` and `Authorization: Bearer <token>`.
//! The fleet's message id travels as `Idempotency-Key`, the same on every attempt.
//! A 2xx is delivered; no answer, a 429 or a 5xx means the gateway is not there right
//! now (the message waits in the inbox and is tried again); any other status is a
//! refusal that another attempt cannot fix. Reasons name the gateway, never its URL.

use serde::Serialize;

use super::gateway_config::GatewayConfig;
use crate::state::relay::RelayedMessage;

/// The most of a refusal's response body quoted in its reason.
const BODY_QUOTE_BYTES_MAX: usize = 200;

/// What one attempt came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookOutcome {
    /// The gateway accepted the message.
    Delivered,
    /// The gateway could not be reached or asked for later.
    Unreachable { reason: String },
    /// The gateway refused the message.
    Refused { reason: String },
}

/// The hook's JSON body.
#[derive(Serialize)]
struct HookBody<'a> {
    message: &'a str,
    /// Who the message is from, as the gateway shows it.
    name: String,
    #[serde(rename = "agentId", skip_serializing_if = "Option::is_none")]
    agent_id: Option<&'a str>,
    #[serde(rename = "sessionKey")]
    session_key: &'a str,
}

/// Posts `message` (for `agent`, the session's agent id if it published one) to the
/// gateway hook of `config`; `fleet` scopes the idempotency key.
pub async fn post_message(
    config: &GatewayConfig,
    http: &reqwest::Client,
    fleet: &str,
    message: &RelayedMessage,
    agent: Option<&str>,
) -> HookOutcome {
    let Some(url) = &config.hook_url else {
        return HookOutcome::Unreachable {
            reason: format!(
                "{} has no gateway hook configured ([gateway] hook_url); held in the inbox",
                message.to_node
            ),
        };
    };
    let body = HookBody {
        message: &message.body,
        name: format!("fleet: {}", message.from),
        agent_id: agent,
        session_key: &message.to_session,
    };
    let mut request = http
        .post(url)
        .timeout(config.timeout())
        .header("Idempotency-Key", format!("{fleet}:{}", message.id))
        .json(&body);
    if let Some(token) = &config.token {
        request = request.bearer_auth(token.expose());
    }
    let gateway = format!("the gateway of {}", message.to_node);
    match request.send().await {
        Err(error) if error.is_timeout() => HookOutcome::Unreachable {
            reason: format!("{gateway} did not answer within {:?}", config.timeout()),
        },
        Err(error) if error.is_connect() => HookOutcome::Unreachable {
            reason: format!("{gateway} is not reachable (connection refused or no route)"),
        },
        Err(error) => HookOutcome::Unreachable {
            reason: format!("{gateway}: {}", error.without_url()),
        },
        Ok(response) => {
            let status = response.status();
            if status.is_success() {
                return HookOutcome::Delivered;
            }
            let text = response.text().await.unwrap_or_default();
            let quoted = if text.is_empty() || text.len() > BODY_QUOTE_BYTES_MAX {
                String::new()
            } else {
                format!(": {}", text.trim())
            };
            let reason = format!("{gateway} answered {status}{quoted}");
            if status.as_u16() == 429 || status.is_server_error() {
                HookOutcome::Unreachable { reason }
            } else {
                HookOutcome::Refused { reason }
            }
        }
    }
}
