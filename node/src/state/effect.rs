//! `Effect`: what applying a command asks the node runtime to do.
//!
//! The state machine decides; the runtime acts. Every node applies every command and
//! sees every effect; each effect names the node that must act on it, and the runtime
//! of that node carries it out (and commits the result as a new command where the
//! protocol needs one: notes written, a delivery recorded, a message reported).

use serde::{Deserialize, Serialize};

use super::deliberation::{DeliberationId, Phase};
use super::node_name::NodeName;
use super::outbox::NotificationId;
use super::relay::MessageId;
use super::roles::RoleChange;

/// One thing for the runtime to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Effect {
    /// Roles changed; watchers are told, the new holders take over.
    RolesChanged(RoleChange),
    /// The Raft leader should hand leadership to the new primary once it is caught up.
    TransferLeadership { to: NodeName },
    /// `node` should ask its agent for input to `deliberation` in `phase` before `deadline_ms`.
    RequestInput {
        deliberation: DeliberationId,
        node: NodeName,
        phase: Phase,
        deadline_ms: u64,
    },
    /// A deliberation was decided.
    Decided { deliberation: DeliberationId },
    /// `note_taker` should write the notes file at `path` and confirm with `epoch`.
    WriteNotes {
        deliberation: DeliberationId,
        note_taker: NodeName,
        epoch: u64,
        path: String,
    },
    /// The primary should deliver a notification to its sinks.
    Notify { notification: NotificationId },
    /// `node` owns the session and should hand the message to its gateway.
    DeliverMessage { message: MessageId, node: NodeName },
}
