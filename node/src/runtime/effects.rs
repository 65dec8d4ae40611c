//! The effect executor: receives the effects of every applied command.
//!
//! Each effect names the node that must act on it; this node acts only on its own.
//! Executors for deliberation inputs, notes files, notifications, message delivery
//! and leadership transfer plug in here; effects without an executor are logged, so
//! nothing is silently dropped.

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
