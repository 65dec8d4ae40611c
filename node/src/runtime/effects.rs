//! The effect log: records the effects of every applied command that concern this node.
//!
//! Effects say what a command changed; the work they imply is done elsewhere, from
//! what the state still owes rather than from the effect itself, so that a restart or
//! a failover cannot lose it: agent inputs, notes and notifications by the
//! [`duty_runner`](super::duty_runner), leadership transfer by the
//! [`health`](super::health) monitor. Logging them here keeps one structured line per
//! effect for the operator.

use tokio::sync::mpsc::UnboundedReceiver;

use crate::state::{Effect, NodeName};
use crate::store::AppliedEffects;

/// Runs until the store closes its side of the channel.
pub async fn run_effects(node: NodeName, mut effects: UnboundedReceiver<AppliedEffects>) {
    while let Some(batch) = effects.recv().await {
        for effect in batch.effects {
            let mine = match &effect {
                Effect::RequestInput { node: target, .. }
                | Effect::WriteNotes {
                    note_taker: target, ..
                }
                | Effect::DeliverMessage { node: target, .. } => target == &node,
                Effect::RolesChanged(_)
                | Effect::TransferLeadership { .. }
                | Effect::Decided { .. }
                | Effect::Notify { .. } => true,
            };
            if mine {
                tracing::info!(log_index = batch.log_index, effect = ?effect, "effect");
            }
        }
    }
}
