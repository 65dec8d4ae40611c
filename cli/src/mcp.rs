//! `fleetctl mcp` (A2): the fleet's verbs as MCP tools over stdio, so an agent
//! gateway's MCP client can call them. `FleetToolServer` is the server and its tools.
//!
//! The server speaks JSON-RPC 2.0 on stdin and stdout (one message per line, rmcp's
//! stdio transport). Stdout is that channel and nothing else: logs go to stderr
//! (`RUST_LOG` sets the level, warnings by default).
//!
//! Every tool acts through the one [`Connection`] the global options describe. In
//! deployment the machine's `fleetctl.toml` points at the local fleetd with this
//! node's agent token, so each write acts as this node and nothing else; in a dev
//! fleet `--node NAME` does the same with the operator token.
//!
//! *API Boundary:* a tool's result is JSON text. A refusal by the fleet's rules is a
//! tool error whose JSON names the rule (`{"rule": "already_claimed", "message": …}`);
//! a fleet that cannot be reached is a tool error too (`{"error": …}`), so the agent
//! reads why and can act on it. Malformed arguments are tool errors naming the field;
//! only a call the server cannot route (an unknown tool) is a JSON-RPC error.

use std::str::FromStr;
use std::time::Duration;

use anyhow::{Context, anyhow};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::runtime::fleet_node::READ_WAIT_MAX;
use fleet_node::state::event_log::{EventStatus, NewEvent};
use fleet_node::state::{
    Confidence, DeliberationId, NodeName, OpenDeliberation, Request, Response, RuleViolation,
    Submission, Tier,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, IntoContents, ServerCapabilities, ServerInfo,
};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Serialize;
use serde_json::{Value, json};

use crate::connection::Connection;
use crate::deliberate::request_id;
use crate::deliberations::DeliberationReport;
use crate::mcp_arguments::*;
use crate::route_report::RouteReport;
use crate::send::{REPORT_WAIT, inbox, send_and_wait};
use crate::sessions::{list_sessions, publish_session};
use crate::{artifacts, bulletin, capabilities, events, status};

/// How long `events_wait` waits when the caller does not say.
const EVENTS_WAIT_DEFAULT: Duration = Duration::from_secs(30);
/// The media type of an artifact given as text, unless the caller names one.
const TEXT_MEDIA_TYPE: &str = "text/plain";
/// The status of a session published without one.
const SESSION_STATUS_DEFAULT: &str = "idle";
/// What the server tells the gateway's model about itself when it connects.
const INSTRUCTIONS: &str = "Tools of a Fleet: this machine's node in a Raft group of agent \
gateways. Every call acts as this node. Deliberate with the other nodes, relay messages to \
their sessions, coordinate through the event log, artifacts and bulletin board, and find who \
should answer a question. A refusal names the fleet rule that refused it.";

/// Serves the tools on stdin/stdout until the client closes the connection.
pub async fn run(connection: Connection) -> anyhow::Result<()> {
    log_to_stderr();
    let server = FleetToolServer::new(connection);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .context("the MCP client did not complete the initialize handshake")?;
    running.waiting().await?;
    Ok(())
}

/// Logs go to stderr: stdout carries the JSON-RPC messages.
fn log_to_stderr() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Another subscriber already installed is fine: it was installed on purpose.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init();
}

/// The MCP server: the fleet's verbs, each acting as the connection's node.
pub struct FleetToolServer {
    connection: Connection,
    tool_router: ToolRouter<Self>,
}

/// Why a tool gives no answer: a rule of the fleet refused the call (or its
/// arguments), or the fleet could not be reached. Both reach the agent as a tool
/// error, so it can read why.
enum ToolFailure {
    Refused(RuleViolation),
    Failed(anyhow::Error),
}

impl From<RuleViolation> for ToolFailure {
    fn from(violation: RuleViolation) -> Self {
        Self::Refused(violation)
    }
}

impl From<anyhow::Error> for ToolFailure {
    fn from(error: anyhow::Error) -> Self {
        Self::Failed(error)
    }
}

impl IntoContents for ToolFailure {
    fn into_contents(self) -> Vec<ContentBlock> {
        let report = match self {
            Self::Refused(violation) => json!({
                "rule": violation.code(),
                "message": violation.to_string(),
            }),
            Self::Failed(error) => json!({ "error": format!("{error:#}") }),
        };
        vec![ContentBlock::text(pretty(&report))]
    }
}

/// What every tool returns.
type ToolResult = Result<CallToolResult, ToolFailure>;

/// A successful result: `answer` as JSON text.
fn answer<T: Serialize>(answer: &T) -> ToolResult {
    let text = serde_json::to_string_pretty(answer)
        .map_err(|e| anyhow!("cannot encode the answer: {e}"))?;
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// The answer a response or query answer of an unexpected kind gets.
fn unexpected(what: &str, answer: impl std::fmt::Debug) -> ToolFailure {
    ToolFailure::Failed(anyhow!("unexpected answer to {what}: {answer:?}"))
}

impl FleetToolServer {
    /// A server whose tools act through `connection`.
    pub fn new(connection: Connection) -> Self {
        Self {
            connection,
            tool_router: Self::tool_router(),
        }
    }

    /// The node this server acts as: the `--node` one, else the only endpoint of the
    /// config (a machine's config names its own node alone).
    fn local_node(&self) -> Option<&str> {
        match (&self.connection.via, self.connection.endpoints.as_slice()) {
            (Some(node), _) => Some(node),
            (None, [(node, _)]) => Some(node),
            _ => None,
        }
    }

    /// Commits `request`; a refusal is the fleet's rule.
    async fn commit(&self, request: &Request) -> Result<Response, ToolFailure> {
        Ok(self.connection.write(request).await??)
    }

    /// Reads `query` linearizably; a refusal is the fleet's rule.
    async fn read(&self, query: &Query) -> Result<QueryAnswer, ToolFailure> {
        Ok(self.connection.read(query).await??)
    }
}

#[tool_router]
impl FleetToolServer {
    /// The fleet's status as every member sees it: Raft state, term, leader, primary,
    /// note-taker, health and whether there is a quorum (like `fleetctl status -o json`).
    #[tool]
    async fn status(&self) -> ToolResult {
        answer(&status::collect(&self.connection).await)
    }

    /// Opens a deliberation among the fleet's nodes and returns its id and state at
    /// once (it does not wait for the decision; read it later with `deliberation`).
    /// An urgent question skips deliberation and names the responder instead.
    #[tool]
    async fn deliberate(
        &self,
        Parameters(arguments): Parameters<DeliberateArguments>,
    ) -> ToolResult {
        let participants = arguments
            .participants
            .map(|names| {
                names
                    .iter()
                    .map(|name| NodeName::new(name.trim()))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        let phase_ms = arguments
            .round_secs
            .map(|secs| {
                if secs.is_finite() && secs > 0.0 {
                    // Whole milliseconds: the fleet checks the range and names its limits.
                    Ok((secs * 1000.0).round() as u64)
                } else {
                    Err(RuleViolation::invalid(
                        "round_secs",
                        format!("{secs} is not a positive number of seconds"),
                    ))
                }
            })
            .transpose()?;
        let request = Request::OpenDeliberation(OpenDeliberation {
            topic: arguments.topic,
            tier: arguments.tier.map(Tier::from_number).transpose()?,
            options: arguments.options,
            participants,
            phase_ms,
            urgent: arguments.urgent,
            request_id: request_id()?,
        });
        match self.commit(&request).await? {
            Response::Deliberation {
                deliberation,
                repeated,
            } => {
                let mut report = serde_json::to_value(DeliberationReport::new(&deliberation))
                    .map_err(|e| anyhow!("cannot encode: {e}"))?;
                report["joined"] = repeated.into();
                answer(&report)
            }
            Response::Bypassed { route } => {
                answer(&json!({ "bypassed": true, "route": RouteReport::of(&route) }))
            }
            other => Err(unexpected("opening a deliberation", other)),
        }
    }

    /// One deliberation in full: phase, deadline, participants, every position and
    /// abstention, and the outcome once decided.
    #[tool]
    async fn deliberation(
        &self,
        Parameters(arguments): Parameters<DeliberationArguments>,
    ) -> ToolResult {
        let id = DeliberationId::from_str(&arguments.id)?;
        match self.read(&Query::Deliberation { id }).await? {
            QueryAnswer::Deliberation(deliberation) => {
                answer(&DeliberationReport::new(&deliberation))
            }
            other => Err(unexpected("a deliberation read", other)),
        }
    }

    /// Gives this node's position to an open deliberation it participates in.
    #[tool]
    async fn position(&self, Parameters(arguments): Parameters<PositionArguments>) -> ToolResult {
        let request = Request::Submit {
            deliberation: DeliberationId::from_str(&arguments.id)?,
            submission: Submission {
                round: arguments.round,
                stance: arguments.stance,
                confidence: Confidence::from_str(&arguments.confidence)?,
                summary: arguments.summary,
                concerns: arguments.concerns,
                request_id: request_id()?,
            },
        };
        match self.commit(&request).await? {
            Response::Deliberation { deliberation, .. } => {
                answer(&DeliberationReport::new(&deliberation))
            }
            other => Err(unexpected("a position", other)),
        }
    }

    /// Relays a message to an agent session on any machine of the fleet and reports
    /// `delivered`, `queued` (held while that gateway is unreachable), `failed` with
    /// the reason, or `sent` when no report came in time.
    #[tool]
    async fn send(&self, Parameters(arguments): Parameters<SendArguments>) -> ToolResult {
        let wait = arguments
            .wait_secs
            .map_or(REPORT_WAIT, Duration::from_secs)
            .min(READ_WAIT_MAX);
        let report =
            send_and_wait(&self.connection, &arguments.to, &arguments.message, wait).await??;
        answer(&report)
    }

    /// The live agent sessions of every node.
    #[tool]
    async fn sessions(&self) -> ToolResult {
        answer(&list_sessions(&self.connection).await??)
    }

    /// Publishes or refreshes one of this node's sessions, so other machines can
    /// send to it; it expires unless published again.
    #[tool]
    async fn sessions_publish(
        &self,
        Parameters(arguments): Parameters<SessionsPublishArguments>,
    ) -> ToolResult {
        let session = publish_session(
            &self.connection,
            &arguments.key,
            arguments.agent.as_deref(),
            arguments
                .status
                .as_deref()
                .unwrap_or(SESSION_STATUS_DEFAULT),
        )
        .await??;
        answer(&session)
    }

    /// Messages held for a node's sessions (default: this node's) while its gateway
    /// was unreachable.
    #[tool]
    async fn inbox(&self, Parameters(arguments): Parameters<InboxArguments>) -> ToolResult {
        let Some(node) = arguments.of.as_deref().or(self.local_node()) else {
            return Err(RuleViolation::invalid(
                "of",
                "this server acts as no single node; name whose inbox to read",
            )
            .into());
        };
        answer(&inbox(&self.connection, node, arguments.session.as_deref()).await??)
    }

    /// Appends an event to the fleet's event log, authored by this node.
    #[tool]
    async fn events_append(
        &self,
        Parameters(arguments): Parameters<EventsAppendArguments>,
    ) -> ToolResult {
        let status = match arguments.status.as_deref() {
            Some(status) => EventStatus::from_str(status)?,
            None => EventStatus::Open,
        };
        let new = NewEvent {
            event_type: arguments.event_type,
            stream: arguments.stream,
            room: arguments
                .room
                .unwrap_or_else(|| events::ROOM_DEFAULT.to_string()),
            to: arguments.to.unwrap_or_else(|| "*".to_string()),
            correlation_id: arguments.correlation_id,
            status,
            body: arguments.body,
            request_id: Some(arguments.request_id.map_or_else(request_id, Ok)?),
        };
        answer(&events::append_event(&self.connection, new).await??)
    }

    /// Events after a cursor (`since`), oldest first, with `next_since`, the cursor to
    /// list or wait from next.
    #[tool]
    async fn events_list(
        &self,
        Parameters(arguments): Parameters<EventsListArguments>,
    ) -> ToolResult {
        let page = events::list_events(
            &self.connection,
            &arguments.filter.to_filter(),
            arguments.since,
            arguments.limit.unwrap_or(events::LIST_LIMIT_DEFAULT),
        )
        .await??;
        answer(&page)
    }

    /// Waits for events after a cursor (`since`); the fleet pushes them as they are
    /// committed, no polling. Returns no events when the wait passes, and `next_since`
    /// to wait from next.
    #[tool]
    async fn events_wait(
        &self,
        Parameters(arguments): Parameters<EventsWaitArguments>,
    ) -> ToolResult {
        let wait = arguments
            .wait_secs
            .map_or(EVENTS_WAIT_DEFAULT, Duration::from_secs)
            .min(READ_WAIT_MAX);
        let page = events::wait_for_events(
            &self.connection,
            &arguments.filter.to_filter(),
            arguments.since,
            arguments.limit.unwrap_or(events::LIST_LIMIT_DEFAULT),
            wait,
        )
        .await??;
        answer(&page)
    }

    /// Acknowledges an event with a new event by this node (claimed, applied, failed,
    /// blocked or superseded). A request has one claimant: a second claim is refused
    /// with the holder's name.
    #[tool]
    async fn events_ack(
        &self,
        Parameters(arguments): Parameters<EventsAckArguments>,
    ) -> ToolResult {
        let status = EventStatus::from_str(&arguments.status)?;
        let receipt =
            events::ack_event(&self.connection, arguments.event, status, &arguments.body).await??;
        answer(&receipt)
    }

    /// Stores an artifact under the sha256 of its content and returns the hash.
    /// Content is text (`content`) or base64 (`content_base64`); oversized content is
    /// refused, never truncated.
    #[tool]
    async fn artifacts_put(
        &self,
        Parameters(arguments): Parameters<ArtifactsPutArguments>,
    ) -> ToolResult {
        let (content, media_type_default) = match (arguments.content, arguments.content_base64) {
            (Some(text), None) => (text.into_bytes(), TEXT_MEDIA_TYPE),
            (None, Some(encoded)) => {
                let bytes = BASE64.decode(encoded.trim()).map_err(|e| {
                    RuleViolation::invalid("content_base64", format!("not standard base64: {e}"))
                })?;
                (bytes, artifacts::MEDIA_TYPE_DEFAULT)
            }
            (Some(_), Some(_)) => {
                return Err(RuleViolation::invalid(
                    "content",
                    "give `content` or `content_base64`, not both",
                )
                .into());
            }
            (None, None) => {
                return Err(RuleViolation::invalid(
                    "content",
                    "give `content` (text) or `content_base64` (binary)",
                )
                .into());
            }
        };
        let media_type = arguments
            .media_type
            .as_deref()
            .unwrap_or(media_type_default);
        let stored =
            artifacts::put_artifact(&self.connection, content, media_type, arguments.metadata)
                .await??;
        answer(&stored)
    }

    /// One artifact by sha256, its content verified against the hash before it is
    /// returned: as text in `content` when it is UTF-8, else in `content_base64`.
    #[tool]
    async fn artifacts_get(
        &self,
        Parameters(arguments): Parameters<ArtifactsGetArguments>,
    ) -> ToolResult {
        let artifact = artifacts::get_artifact(&self.connection, &arguments.sha256).await??;
        let size = artifact.content.len();
        let (content, content_base64) = match String::from_utf8(artifact.content) {
            Ok(text) => (Some(text), None),
            Err(error) => (None, Some(BASE64.encode(error.into_bytes()))),
        };
        answer(&json!({
            "sha256": artifact.sha256,
            "media_type": artifact.media_type,
            "metadata": artifact.metadata,
            "size": size,
            "put_by": artifact.put_by,
            "put_at_ms": artifact.put_at_ms,
            "content": content,
            "content_base64": content_base64,
        }))
    }

    /// Posts `[this node → target|All] subject` to the bulletin board.
    #[tool]
    async fn bulletin_post(
        &self,
        Parameters(arguments): Parameters<BulletinPostArguments>,
    ) -> ToolResult {
        let item = bulletin::post_bulletin(
            &self.connection,
            &arguments.to,
            &arguments.subject,
            &arguments.body,
        )
        .await??;
        answer(&item)
    }

    /// The bulletin board: each item with whether it is acknowledged and whether it
    /// is stale (unacknowledged for 48 h).
    #[tool]
    async fn bulletin_list(
        &self,
        Parameters(arguments): Parameters<BulletinListArguments>,
    ) -> ToolResult {
        let listings = bulletin::list_bulletin(
            &self.connection,
            arguments.for_name.as_deref(),
            arguments.include_archived,
        )
        .await??;
        answer(&listings)
    }

    /// Acknowledges a bulletin item addressed to this node (or to all).
    #[tool]
    async fn bulletin_ack(
        &self,
        Parameters(arguments): Parameters<BulletinAckArguments>,
    ) -> ToolResult {
        answer(&bulletin::ack_bulletin(&self.connection, &arguments.id).await??)
    }

    /// The published capability manifests (I Can Do / I've Learned / I Need From
    /// Others): every node's, or one node's.
    #[tool]
    async fn capabilities(
        &self,
        Parameters(arguments): Parameters<CapabilitiesArguments>,
    ) -> ToolResult {
        let manifests =
            capabilities::capabilities(&self.connection, arguments.node.as_deref()).await??;
        answer(&manifests)
    }

    /// Publishes this node's CAPABILITIES.md; routing uses it to find who should answer.
    #[tool]
    async fn capabilities_publish(
        &self,
        Parameters(arguments): Parameters<CapabilitiesPublishArguments>,
    ) -> ToolResult {
        let manifest =
            capabilities::publish_capabilities(&self.connection, &arguments.markdown).await??;
        answer(&manifest)
    }

    /// Names the node that should answer a question, its tier, and whether the
    /// question needs a deliberation.
    #[tool]
    async fn route(&self, Parameters(arguments): Parameters<RouteArguments>) -> ToolResult {
        let route =
            capabilities::route(&self.connection, &arguments.question, arguments.urgent).await??;
        answer(&RouteReport::of(&route))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for FleetToolServer {
    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("fleetctl", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}
