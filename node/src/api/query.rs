//! `Query`: the reads a client can make of the replicated state, answered purely from
//! a [`FleetState`] snapshot (no I/O, no clock: the caller passes `now_ms`).

use serde::{Deserialize, Serialize};

use crate::state::artifacts::Artifact;
use crate::state::bulletin::BulletinItem;
use crate::state::capabilities::CapabilityManifest;
use crate::state::deliberation::Deliberation;
use crate::state::event_log::{Event, EventFilter};
use crate::state::outbox::Notification;
use crate::state::relay::{MessageId, MessageStatus, RelayedMessage};
use crate::state::roles::Roles;
use crate::state::router::Route;
use crate::state::sessions::AgentSession;
use crate::state::{DeliberationId, FleetSettings, FleetState, NodeName, RuleViolation};

/// The most events one read returns.
pub const EVENTS_PER_READ_MAX: usize = 1_000;

/// A read of the fleet state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Query {
    /// Settings, roles and the state's clock.
    Overview,
    /// Deliberations, newest first.
    Deliberations {
        open_only: bool,
    },
    Deliberation {
        id: DeliberationId,
    },
    /// Who should answer a question and whether to deliberate.
    Route {
        question: String,
        urgent: bool,
    },
    /// Live sessions.
    Sessions,
    /// Messages waiting for a node's sessions.
    Inbox {
        node: NodeName,
    },
    /// One relayed message with its delivery status.
    Message {
        id: MessageId,
    },
    /// Events after `since` that pass `filter`.
    Events {
        filter: EventFilter,
        since: u64,
        limit: usize,
    },
    Artifact {
        sha256: String,
    },
    /// Bulletin items, optionally only those for a name, with staleness.
    Bulletin {
        for_name: Option<String>,
        include_archived: bool,
    },
    /// Capability manifests, of one node or all.
    Capabilities {
        node: Option<NodeName>,
    },
    /// The operator's notifications with their delivery state, and who delivers them.
    Outbox,
}

/// A bulletin item with its staleness at the time of the read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulletinListing {
    pub item: BulletinItem,
    pub acknowledged: bool,
    pub stale: bool,
}

/// The answer to a [`Query`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueryAnswer {
    Overview {
        settings: Option<FleetSettings>,
        roles: Roles,
        clock_ms: u64,
        applied_commands: u64,
    },
    Deliberations(Vec<Deliberation>),
    Deliberation(Box<Deliberation>),
    Route(Route),
    Sessions(Vec<AgentSession>),
    Inbox(Vec<RelayedMessage>),
    Message(Box<RelayedMessage>),
    Events {
        events: Vec<Event>,
        last_id: u64,
    },
    Artifact(Box<Artifact>),
    Bulletin(Vec<BulletinListing>),
    Capabilities(Vec<(NodeName, CapabilityManifest)>),
    Outbox {
        /// The primary, which delivers, and the epoch it delivers with.
        primary: Option<NodeName>,
        epoch: u64,
        notifications: Vec<Notification>,
    },
}

impl Query {
    /// Whether `answer` is worth returning to a caller that waits for news: an events
    /// read once a matching event exists, a message once its owner reported on it.
    /// Every other answer is ready at once.
    pub fn is_ready(answer: &QueryAnswer) -> bool {
        match answer {
            QueryAnswer::Events { events, .. } => !events.is_empty(),
            QueryAnswer::Message(message) => message.status != MessageStatus::Sent,
            _ => true,
        }
    }

    /// Answers the query from `state` as of `now_ms`.
    pub fn answer(&self, state: &FleetState, now_ms: u64) -> Result<QueryAnswer, RuleViolation> {
        Ok(match self {
            Self::Overview => QueryAnswer::Overview {
                settings: state.settings.as_deref().cloned(),
                roles: state.roles.clone(),
                clock_ms: state.clock_ms,
                applied_commands: state.applied_commands,
            },
            Self::Deliberations { open_only } => QueryAnswer::Deliberations(
                state
                    .deliberations
                    .values()
                    .rev()
                    .filter(|d| !open_only || d.is_open())
                    .cloned()
                    .collect(),
            ),
            Self::Deliberation { id } => {
                QueryAnswer::Deliberation(Box::new(state.deliberation(*id)?.clone()))
            }
            Self::Route { question, urgent } => QueryAnswer::Route(state.route(question, *urgent)?),
            Self::Sessions => {
                QueryAnswer::Sessions(state.sessions.live_sessions(now_ms).cloned().collect())
            }
            Self::Inbox { node } => QueryAnswer::Inbox(state.relay.inbox(node).cloned().collect()),
            Self::Message { id } => QueryAnswer::Message(Box::new(
                state
                    .relay
                    .messages
                    .get(id)
                    .cloned()
                    .ok_or_else(|| RuleViolation::UnknownMessage { id: id.to_string() })?,
            )),
            Self::Events {
                filter,
                since,
                limit,
            } => QueryAnswer::Events {
                events: state
                    .events
                    .since(*since, filter, (*limit).clamp(1, EVENTS_PER_READ_MAX))
                    .cloned()
                    .collect(),
                last_id: state.events.last_id(),
            },
            Self::Artifact { sha256 } => {
                QueryAnswer::Artifact(Box::new(state.artifacts.get(sha256)?.clone()))
            }
            Self::Bulletin {
                for_name,
                include_archived,
            } => {
                let settings = state.settings()?;
                QueryAnswer::Bulletin(
                    state
                        .bulletin
                        .items
                        .values()
                        .filter(|item| *include_archived || !item.archived)
                        .filter(|item| for_name.as_deref().is_none_or(|name| item.is_for(name)))
                        .map(|item| BulletinListing {
                            acknowledged: item.is_acknowledged(&settings.hierarchy),
                            stale: item.is_stale(
                                &settings.hierarchy,
                                now_ms,
                                settings.bulletin_stale_ms,
                            ),
                            item: item.clone(),
                        })
                        .collect(),
                )
            }
            Self::Capabilities { node } => QueryAnswer::Capabilities(
                state
                    .capabilities
                    .iter()
                    .filter(|(name, _)| node.as_ref().is_none_or(|n| n == *name))
                    .map(|(name, manifest)| (name.clone(), manifest.clone()))
                    .collect(),
            ),
            Self::Outbox => QueryAnswer::Outbox {
                primary: state.roles.primary().cloned(),
                epoch: state.roles.epoch,
                notifications: state.outbox.notifications.values().cloned().collect(),
            },
        })
    }
}
