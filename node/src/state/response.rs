//! `Response`: what a successfully applied command returns to its caller.

use serde::{Deserialize, Serialize};

use super::artifacts::Artifact;
use super::bulletin::BulletinItem;
use super::capabilities::CapabilityManifest;
use super::deliberation::Deliberation;
use super::drill_report::DrillReport;
use super::event_log::Event;
use super::node_name::NodeName;
use super::outbox::{Notification, NotificationId};
use super::relay::RelayedMessage;
use super::roles::Roles;
use super::router::Route;
use super::sessions::AgentSession;

/// The result of a command that was applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// Nothing to return beyond success.
    Done,
    /// The roles after a membership or health change.
    Roles(Roles),
    /// A deliberation; `repeated` is true when an earlier request (same idempotency key
    /// or the same open topic) already created it and this call joined it.
    Deliberation {
        deliberation: Box<Deliberation>,
        repeated: bool,
    },
    /// An urgent question skipped deliberation (D5): the responder answers.
    Bypassed {
        route: Route,
    },
    /// The notes were confirmed; `by` wrote them.
    NotesConfirmed {
        by: NodeName,
    },
    Notification(Box<Notification>),
    Session(AgentSession),
    /// A relayed message; `repeated` for a retry of an earlier send.
    Message {
        message: Box<RelayedMessage>,
        repeated: bool,
    },
    /// An event; `repeated` for a retry with the same idempotency key or a repeated claim.
    Event {
        event: Box<Event>,
        repeated: bool,
    },
    /// An artifact was stored (the content is not echoed back).
    ArtifactStored {
        sha256: String,
        size: usize,
        repeated: bool,
    },
    Bulletin(Box<BulletinItem>),
    /// How many bulletin items were archived.
    Archived {
        count: usize,
    },
    Capabilities(Box<CapabilityManifest>),
    /// A drill report as recorded, with its notification.
    Drill {
        report: Box<DrillReport>,
        notification: NotificationId,
    },
}

impl Response {
    /// The stored artifact's summary, for callers that only need the hash.
    pub fn artifact_summary(artifact: &Artifact, repeated: bool) -> Self {
        Self::ArtifactStored {
            sha256: artifact.sha256.clone(),
            size: artifact.content.len(),
            repeated,
        }
    }
}
