//! Relaying one message to this node's agent gateway: the runtime side of
//! [`Duty::RelayMessage`](crate::state::Duty::RelayMessage).
//!
//! Before each attempt the message is read through the leader (a linearizable read),
//! so a node that restarts behind its own reports does not hand the gateway a
//! message it already delivered. Each attempt's outcome is committed when it changes
//! the message's status; a message the gateway could not take waits in the inbox and
//! is tried again with backoff until the gateway takes it. The gateway also gets the
//! message id as its idempotency key, the same on every attempt.

use std::time::Duration;

use super::duty_runner::Finished;
use super::fleet_node::FleetNode;
use crate::api::query::{Query, QueryAnswer};
use crate::gateway::{GatewayConfig, HookOutcome, post_message};
use crate::state::relay::{MessageId, MessageStatus, RelayedMessage};
use crate::state::{Actor, Request};

/// The first wait before a queued message is tried again; it doubles up to the max.
const REQUEUE_FIRST: Duration = Duration::from_secs(1);
const REQUEUE_MAX: Duration = Duration::from_secs(30);
/// How long a failed read or commit waits before the duty is tried again.
const RETRY_LATER: Duration = Duration::from_secs(1);

/// Hands message `id` to the gateway until it is delivered or refused.
pub async fn relay_message(
    node: &FleetNode,
    gateway: &GatewayConfig,
    http: &reqwest::Client,
    id: MessageId,
) -> Finished {
    let mut wait = REQUEUE_FIRST;
    loop {
        let message = match still_owed(node, id).await {
            Ok(Some(message)) => message,
            Ok(None) => return Finished::Settled,
            Err(error) => {
                tracing::warn!(message = %id, %error, "cannot confirm the message is still to deliver");
                tokio::time::sleep(RETRY_LATER).await;
                return Finished::TryAgain;
            }
        };
        let agent = node.state.read(|state| {
            state
                .sessions
                .sessions
                .get(&message.to_session)
                .and_then(|session| session.agent.clone())
        });
        let outcome = post_message(gateway, http, &node.fleet, &message, agent.as_deref()).await;
        let status = match &outcome {
            HookOutcome::Delivered => MessageStatus::Delivered,
            HookOutcome::Unreachable { reason } => MessageStatus::Queued {
                reason: reason.clone(),
            },
            HookOutcome::Refused { reason } => MessageStatus::Failed {
                reason: reason.clone(),
            },
        };
        tracing::info!(message = %id, session = %message.to_session, ?status, "relayed message attempt");
        if status != message.status {
            let request = Request::ReportMessage {
                message: id,
                status: status.clone(),
            };
            match node.propose(Actor::Node(node.name.clone()), request).await {
                Ok(committed) => {
                    if let Err(violation) = committed.result {
                        tracing::warn!(message = %id, rule = %violation, "message report refused");
                        return Finished::Settled;
                    }
                }
                Err(error) => {
                    tracing::warn!(message = %id, %error, "could not report on a message");
                    tokio::time::sleep(RETRY_LATER).await;
                    return Finished::TryAgain;
                }
            }
        }
        match status {
            MessageStatus::Queued { .. } if gateway.hook_url.is_some() => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(REQUEUE_MAX);
            }
            // Without a hook nothing can change until the node restarts with one:
            // the message waits in the inbox for `fleetctl inbox`.
            _ => return Finished::Settled,
        }
    }
}

/// The message, if it is still this node's to deliver — asked of the leader.
async fn still_owed(
    node: &FleetNode,
    id: MessageId,
) -> Result<Option<RelayedMessage>, crate::api::error::ApiError> {
    let (answer, _) = node
        .read(&Query::Message { id }, true, 0, Duration::ZERO)
        .await?;
    Ok(match answer {
        Ok(QueryAnswer::Message(message))
            if message.to_node == node.name
                && matches!(
                    message.status,
                    MessageStatus::Sent | MessageStatus::Queued { .. }
                ) =>
        {
            Some(*message)
        }
        _ => None,
    })
}
