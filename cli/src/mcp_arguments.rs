//! The arguments of the `fleetctl mcp` tools, one struct per tool that takes any.
//!
//! Each struct is the JSON object a gateway's MCP client sends in `tools/call`; its
//! JSON schema (from the doc comments below) is what `tools/list` advertises. Unknown
//! keys are refused, so a misspelt optional argument is reported instead of ignored.
//! Values are checked by the fleet's own rules when the request is built or applied,
//! and a refusal names the field (`invalid status: …`).

use std::collections::BTreeMap;

use crate::events::FilterArgs;
use schemars::JsonSchema;
use serde::Deserialize;

/// `deliberate`: open a deliberation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliberateArguments {
    /// The question to deliberate.
    pub topic: String,
    /// 1: always deliberate; 2: only if the first positions conflict; 3: optional.
    /// Default: classified from the topic's words.
    pub tier: Option<u8>,
    /// The allowed stances: none for free text, or at least two.
    #[serde(default)]
    pub options: Vec<String>,
    /// The participating nodes (default: every healthy member).
    pub participants: Option<Vec<String>>,
    /// Length of each phase in seconds, decimals allowed (default: the fleet's setting).
    pub round_secs: Option<f64>,
    /// Time-sensitive: skip deliberation and name the responder (emergency bypass).
    #[serde(default)]
    pub urgent: bool,
}

/// `deliberation`: one deliberation by id.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliberationArguments {
    /// The deliberation's id, `d-3` or `3`.
    pub id: String,
}

/// `position`: this node's input to a deliberation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PositionArguments {
    /// The deliberation's id, `d-3` or `3`.
    pub id: String,
    /// The position; one of the deliberation's options when it has any.
    pub stance: String,
    /// How sure this node is: `low`, `medium` or `high`.
    pub confidence: String,
    /// One or two sentences: the position (round 1) or the rationale (round 2).
    pub summary: String,
    /// Key concerns or blockers.
    #[serde(default)]
    pub concerns: Vec<String>,
    /// The round the input is meant for (1 or 2); refused if the deliberation is
    /// elsewhere. Default: whatever phase it is in.
    pub round: Option<u8>,
}

/// `send`: a message to an agent session on any machine.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendArguments {
    /// The session key, e.g. `5070-main`.
    pub to: String,
    /// The message.
    pub message: String,
    /// How long to wait for the owning node's delivery report, in seconds (default 10).
    pub wait_secs: Option<u64>,
}

/// `sessions_publish`: publish or refresh one of this node's sessions.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionsPublishArguments {
    /// The session key, e.g. `beast-main`.
    pub key: String,
    /// The agent id inside the gateway, if any.
    pub agent: Option<String>,
    /// Free-form status, e.g. `idle` (default) or `busy`.
    pub status: Option<String>,
}

/// `inbox`: messages held for a node's sessions.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InboxArguments {
    /// Whose inbox (default: this node).
    pub of: Option<String>,
    /// Only messages to this session.
    pub session: Option<String>,
}

/// `events_append`: a new event in the fleet's event log.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsAppendArguments {
    /// The event type, e.g. `task.request` or `patch.ready`.
    pub event_type: String,
    /// The stream, e.g. `project/x`.
    pub stream: String,
    /// The room, e.g. `delegation` (default `general`).
    pub room: Option<String>,
    /// A node or agent name, or `*` for everyone (default `*`).
    pub to: Option<String>,
    /// Ties a conversation's events together.
    pub correlation_id: Option<String>,
    /// `open` (default), `claimed`, `applied`, `failed`, `blocked` or `superseded`.
    pub status: Option<String>,
    /// The body, kept verbatim (at most 256 KiB; larger is refused, never truncated).
    #[serde(default)]
    pub body: String,
    /// An idempotency key: appending again with it returns the first event (default:
    /// a fresh key, so only this call's own retries are deduplicated).
    pub request_id: Option<String>,
}

/// `events_list`: events after a cursor.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsListArguments {
    /// Which events (default: all).
    #[serde(default)]
    pub filter: FilterArgs,
    /// The cursor: only events with a greater id (default 0, from the start).
    #[serde(default)]
    pub since: u64,
    /// At most this many events (default 100, at most 1000).
    pub limit: Option<usize>,
}

/// `events_wait`: the next matching events, pushed as they are committed.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsWaitArguments {
    /// Which events (default: all).
    #[serde(default)]
    pub filter: FilterArgs,
    /// The cursor: wait for events with a greater id, usually the `next_since` of the
    /// previous read (default: the newest event now, so only new events).
    pub since: Option<u64>,
    /// How long to wait, in seconds (default 30, at most 300); no events when it passes.
    pub wait_secs: Option<u64>,
    /// At most this many events once some match (default 100, at most 1000).
    pub limit: Option<usize>,
}

/// `events_ack`: acknowledge an event with a new event.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsAckArguments {
    /// The id of the event acknowledged.
    pub event: u64,
    /// `claimed`, `applied`, `failed`, `blocked` or `superseded`. A request has at most
    /// one claimant.
    pub status: String,
    /// The acknowledgement's body.
    #[serde(default)]
    pub body: String,
}

/// `artifacts_put`: store content by its sha256.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactsPutArguments {
    /// The content as text; give this or `content_base64`.
    pub content: Option<String>,
    /// The content as standard base64, for binary data; give this or `content`.
    pub content_base64: Option<String>,
    /// The media type (default `text/plain` for `content`, `application/octet-stream`
    /// for `content_base64`).
    pub media_type: Option<String>,
    /// Free-form metadata: file name, correlation id, …
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// `artifacts_get`: one artifact, verified against its sha256.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactsGetArguments {
    /// The artifact's sha256, lowercase hex.
    pub sha256: String,
}

/// `bulletin_post`: an item on the bulletin board.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BulletinPostArguments {
    /// `all`, a node, or an agent name such as `infra`.
    pub to: String,
    /// The subject line.
    pub subject: String,
    /// The body.
    #[serde(default)]
    pub body: String,
}

/// `bulletin_list`: the bulletin board, with staleness.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BulletinListArguments {
    /// Only items for this name (and those for all).
    pub for_name: Option<String>,
    /// Include archived items.
    #[serde(default)]
    pub include_archived: bool,
}

/// `bulletin_ack`: acknowledge an item as this node.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BulletinAckArguments {
    /// The item's id, e.g. `b-7`.
    pub id: String,
}

/// `capabilities`: the published capability manifests.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapabilitiesArguments {
    /// Only this node's manifest (default: every node's).
    pub node: Option<String>,
}

/// `capabilities_publish`: this node's CAPABILITIES.md.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapabilitiesPublishArguments {
    /// The markdown, with the sections `I Can Do`, `I've Learned` and `I Need From
    /// Others` as bullet lists.
    pub markdown: String,
}

/// `route`: who should answer a question, and whether it needs a deliberation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteArguments {
    /// The question.
    pub question: String,
    /// Time-sensitive: the responder answers now, without deliberation.
    #[serde(default)]
    pub urgent: bool,
}
