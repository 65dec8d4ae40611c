//! `Command`: one write to the fleet state, as it is replicated in the Raft log.
//!
//! A command carries everything its outcome depends on: the leader's timestamp
//! (`at_ms`, injected when the leader proposes it — the state machine never reads a
//! clock), the authenticated actor, and the request. Applying the same commands in the
//! same order therefore gives the same state on every node.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::actor::Actor;
use super::bulletin::Recipient;
use super::deliberation::{DeliberationId, Submission};
use super::drill_report::DrillReport;
use super::event_log::{EventStatus, NewEvent};
use super::node_name::NodeName;
use super::outbox::{DeliveryResult, NotificationId};
use super::relay::{MessageId, MessageStatus};
use super::settings::FleetSettings;
use super::tier::Tier;

/// A replicated write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    /// The leader's clock when it proposed the command, in ms since the Unix epoch.
    pub at_ms: u64,
    /// Who the command acts as.
    pub actor: Actor,
    pub request: Request,
}

/// What to open a deliberation with (D1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenDeliberation {
    pub topic: String,
    /// `None`: classified from the topic's words.
    pub tier: Option<Tier>,
    /// Allowed stances; empty for free text.
    pub options: Vec<String>,
    /// `None`: every healthy member.
    pub participants: Option<Vec<NodeName>>,
    /// Phase length; `None`: the fleet's `phase_ms`.
    pub phase_ms: Option<u64>,
    /// Time-sensitive: skip deliberation, name the responder (D5 emergency bypass).
    pub urgent: bool,
    /// Idempotency key: opening again with it returns the same deliberation.
    pub request_id: String,
}

/// Every kind of write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Creates the fleet (K4). Operator only, once.
    Bootstrap(FleetSettings),
    /// Adds a member at the end of both chains (K4). Operator only.
    AddNode {
        node: NodeName,
        specialties: Vec<String>,
    },
    /// Removes a member (K4). Operator only.
    RemoveNode {
        node: NodeName,
    },
    /// Sets a node's specialties (R3). The node itself or the operator.
    SetSpecialties {
        node: NodeName,
        specialties: Vec<String>,
    },
    /// The leader's view of which members are healthy; roles follow (R1, R2).
    ReportHealth {
        healthy: BTreeSet<NodeName>,
    },
    /// Moves time on: phase deadlines, failbacks, session expiry. Leader only.
    Tick,

    OpenDeliberation(OpenDeliberation),
    /// A participant's input (D2). The node is the actor's own node.
    Submit {
        deliberation: DeliberationId,
        submission: Submission,
    },
    /// Ends a deliberation at once with the operator's decision (D5).
    Override {
        deliberation: DeliberationId,
        decision: String,
        reason: String,
    },
    /// The note-taker wrote the notes file (D7).
    NotesWritten {
        deliberation: DeliberationId,
        epoch: u64,
    },
    /// The primary's result of delivering a notification to one sink (D8).
    RecordDelivery {
        notification: NotificationId,
        sink: String,
        result: DeliveryResult,
        epoch: u64,
    },

    /// Publishes or refreshes one of the actor node's sessions (S1).
    PublishSession {
        key: String,
        agent: Option<String>,
        status: String,
    },
    /// Relays a message to a session, possibly on another machine (S1).
    SendMessage {
        to_session: String,
        body: String,
        request_id: String,
    },
    /// The owning node's report on a relayed message (S1).
    ReportMessage {
        message: MessageId,
        status: MessageStatus,
    },

    /// Appends an event (S2).
    AppendEvent(NewEvent),
    /// Acknowledges an event with a new event (S2).
    AckEvent {
        event: u64,
        status: EventStatus,
        body: String,
    },
    /// Stores an artifact by its sha256 (S2).
    PutArtifact {
        sha256: String,
        media_type: String,
        metadata: BTreeMap<String, String>,
        #[serde(with = "super::artifacts::base64_bytes")]
        content: Vec<u8>,
    },

    /// Posts a bulletin item (S3).
    PostBulletin {
        to: Recipient,
        subject: String,
        body: String,
    },
    /// Acknowledges a bulletin item as the actor's node (S3).
    AckBulletin {
        id: String,
    },
    /// Archives items posted before a time (S3). Operator only.
    ArchiveBulletin {
        before_ms: u64,
    },

    /// Publishes the actor node's CAPABILITIES.md (S4).
    PublishCapabilities {
        markdown: String,
    },

    /// A write that changes nothing but must be committed: proof that the fleet takes
    /// writes (the failover drill's probe). The operator or a node.
    Probe,
    /// Records a failover drill's report and announces it (R4). Operator only.
    RecordDrill(DrillReport),
}

impl Request {
    /// A short name for logs and authorization messages.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Bootstrap(_) => "bootstrap the fleet",
            Self::AddNode { .. } => "add a node",
            Self::RemoveNode { .. } => "remove a node",
            Self::SetSpecialties { .. } => "set specialties",
            Self::ReportHealth { .. } => "report health",
            Self::Tick => "move time on",
            Self::OpenDeliberation(_) => "open a deliberation",
            Self::Submit { .. } => "submit a position",
            Self::Override { .. } => "override a deliberation",
            Self::NotesWritten { .. } => "confirm notes",
            Self::RecordDelivery { .. } => "record a notification delivery",
            Self::PublishSession { .. } => "publish a session",
            Self::SendMessage { .. } => "send a message",
            Self::ReportMessage { .. } => "report on a message",
            Self::AppendEvent(_) => "append an event",
            Self::AckEvent { .. } => "acknowledge an event",
            Self::PutArtifact { .. } => "store an artifact",
            Self::PostBulletin { .. } => "post to the bulletin",
            Self::AckBulletin { .. } => "acknowledge a bulletin item",
            Self::ArchiveBulletin { .. } => "archive the bulletin",
            Self::PublishCapabilities { .. } => "publish capabilities",
            Self::Probe => "probe",
            Self::RecordDrill(_) => "record a drill",
        }
    }

    /// Whether committing this request twice has the effect of committing it once:
    /// it carries an idempotency key the state answers a repeat by, or it names its
    /// content by hash, or it changes nothing. Such a request may be sent again when
    /// whether it committed is unknown.
    pub fn is_idempotent(&self) -> bool {
        match self {
            Self::OpenDeliberation(_)
            | Self::Submit { .. }
            | Self::SendMessage { .. }
            | Self::PutArtifact { .. }
            | Self::Probe => true,
            Self::AppendEvent(event) => event.request_id.is_some(),
            _ => false,
        }
    }
}
