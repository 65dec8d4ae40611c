//! `Duty`: what one node owes the fleet right now, read off the replicated state.
//!
//! Effects say what changed; duties say what is still to do. The node runtime acts on
//! duties, not on effects, because a duty survives what an effect does not: a node
//! that restarts, a primary that fails over mid-delivery, a note-taker that was down
//! when the decision came. Each is a pure function of the state and the node's name,
//! so every node can tell what every other node owes, and a duty disappears from the
//! list exactly when the state records it as done.

use serde::{Deserialize, Serialize};

use super::deliberation::{DeliberationId, Phase};
use super::fleet_state::FleetState;
use super::limits::INPUTS_PER_BOT_MAX;
use super::node_name::NodeName;
use super::outbox::NotificationId;
use super::relay::MessageId;

/// One thing a node must still do.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Duty {
    /// Give an input to `deliberation` in `phase` (ask the local agent) before `deadline_ms`.
    Speak {
        deliberation: DeliberationId,
        phase: Phase,
        deadline_ms: u64,
    },
    /// Write the notes of a decided deliberation to `path` in the agent workspace and
    /// confirm with `epoch` (D7).
    WriteNotes {
        deliberation: DeliberationId,
        epoch: u64,
        path: String,
    },
    /// As primary of `epoch`, deliver `notification` to the local sink `sink` (D8).
    Deliver {
        notification: NotificationId,
        sink: String,
        epoch: u64,
    },
    /// Hand `message`, sent to one of this node's sessions, to the local gateway, and
    /// report what happened (S1). Owed while it is sent or queued.
    RelayMessage { message: MessageId },
}

impl FleetState {
    /// Everything `node` must still do; `sinks` are the notification sinks it has.
    pub fn duties_of(&self, node: &NodeName, sinks: &[String]) -> Vec<Duty> {
        let mut duties = Vec::new();
        for deliberation in self.unfinished_deliberations() {
            if deliberation.is_open()
                && deliberation.expected_speakers(&self.roles).contains(node)
                && !deliberation.spoke_in(node, deliberation.phase)
                && deliberation.inputs_of(node) < INPUTS_PER_BOT_MAX
            {
                duties.push(Duty::Speak {
                    deliberation: deliberation.id,
                    phase: deliberation.phase,
                    deadline_ms: deliberation.phase_deadline_ms,
                });
            }
            if deliberation.notes.written_by.is_none()
                && let Some((assigned, epoch)) = &deliberation.notes.assigned
                && assigned == node
            {
                duties.push(Duty::WriteNotes {
                    deliberation: deliberation.id,
                    epoch: *epoch,
                    path: deliberation.notes.path.clone(),
                });
            }
        }
        if self.roles.primary() == Some(node) {
            for notification in self.outbox.pending(sinks) {
                for sink in sinks {
                    let settled = notification
                        .deliveries
                        .get(sink)
                        .is_some_and(|d| d.is_settled());
                    if !settled {
                        duties.push(Duty::Deliver {
                            notification: notification.id,
                            sink: sink.clone(),
                            epoch: self.roles.epoch,
                        });
                    }
                }
            }
        }
        duties.extend(self.relay.inbox(node).map(|message| Duty::RelayMessage {
            message: message.id,
        }));
        duties
    }
}
