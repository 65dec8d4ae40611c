//! `fleetctl events append|list|wait|ack`: the coordination event log of seed 004 (S2).
//!
//! Events are append-only and verbatim: the author is always the authenticated caller
//! (`--node NAME`, else the operator), an acknowledgement is a new event, and a body
//! past the fleet's limit is refused, never cut. `wait` is held by the node until a
//! matching event is committed — the node re-reads on every applied command, so the
//! event arrives as it commits instead of on a polling interval — and exits with
//! [`WAIT_TIMEOUT_EXIT_CODE`] when none came in time. Every list names the cursor to
//! continue from (`next_since`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use fleet_node::api::query::{EVENTS_PER_READ_MAX, Query, QueryAnswer};
use fleet_node::runtime::fleet_node::READ_WAIT_MAX;
use fleet_node::state::event_log::{Event, EventFilter, EventStatus, NewEvent};
use fleet_node::state::limits::BODY_BYTES_MAX;
use fleet_node::state::{Request, Response, RuleViolation};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::connection::Connection;
use crate::deliberate::request_id;
use crate::deliberations::{ago, now_ms};
use crate::output::OutputFormat;

/// How long `events wait` waits by default (seed 004: waits cap at 5 minutes, then loop).
pub const WAIT_TIMEOUT_DEFAULT: &str = "300s";
/// The exit code of `events wait` when no matching event came in time.
pub const WAIT_TIMEOUT_EXIT_CODE: u8 = 2;
/// How many events a list returns unless `--limit` says otherwise.
pub const LIST_LIMIT_DEFAULT: usize = 100;
/// The room of an appended event unless `--room` names one.
pub const ROOM_DEFAULT: &str = "general";

/// `fleetctl events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    #[command(subcommand)]
    pub command: EventsCommand,
}

#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Append an event, authored by this node (`--node NAME`) or the operator.
    Append(AppendArgs),
    /// Events after a cursor that pass the filters, oldest first.
    List {
        #[command(flatten)]
        filter: FilterArgs,
        /// Only events after this id (0: from the start).
        #[arg(long, default_value_t = 0, value_name = "ID")]
        since: u64,
        /// At most this many events (1 to 1000).
        #[arg(long, default_value_t = LIST_LIMIT_DEFAULT, value_name = "N")]
        limit: usize,
    },
    /// Wait until an event after the cursor passes the filters, and print it; exits 2
    /// when none came within the timeout.
    Wait {
        #[command(flatten)]
        filter: FilterArgs,
        /// Only events after this id (default: the newest event now, so only new ones).
        #[arg(long, value_name = "ID")]
        since: Option<u64>,
        /// How long to wait: `300s`, `5m`, `1h`, `500ms` or plain seconds.
        #[arg(long, default_value = WAIT_TIMEOUT_DEFAULT, value_parser = parse_duration)]
        timeout: Duration,
        /// At most this many events once some match (1 to 1000).
        #[arg(long, default_value_t = LIST_LIMIT_DEFAULT, value_name = "N")]
        limit: usize,
    },
    /// Acknowledge an event with a new event; a request has one claimant, and a second
    /// claim is refused with the holder's name.
    Ack {
        /// The event to acknowledge.
        id: u64,
        /// claimed, applied, failed, blocked or superseded.
        #[arg(long, value_parser = parse_status, value_name = "STATUS")]
        status: EventStatus,
        #[command(flatten)]
        body: BodyArgs,
    },
}

/// `fleetctl events append`.
#[derive(Debug, Args)]
pub struct AppendArgs {
    /// The event type, e.g. `task.request`, `patch.ready`.
    #[arg(long = "type", value_name = "TYPE")]
    pub event_type: String,
    /// The stream, e.g. `project/fleet`.
    #[arg(long)]
    pub stream: String,
    /// The room, e.g. `delegation`.
    #[arg(long, default_value = ROOM_DEFAULT)]
    pub room: String,
    /// The node or agent it is for, or `*` for everyone.
    #[arg(long, default_value = "*", value_name = "NODE|*")]
    pub to: String,
    /// Ties a request to its replies and acks, e.g. `task_fix_ranking_7f3a`.
    #[arg(long, value_name = "ID")]
    pub correlation_id: Option<String>,
    /// open, claimed, applied, failed, blocked or superseded.
    #[arg(long, default_value = "open", value_parser = parse_status, value_name = "STATUS")]
    pub status: EventStatus,
    #[command(flatten)]
    pub body: BodyArgs,
    /// Idempotency key: appending again with it returns the first event (default: a
    /// fresh key, so only this command's own retries are deduplicated).
    #[arg(long, value_name = "KEY")]
    pub request_id: Option<String>,
}

/// The filters `list` and `wait` share, on the command line and as the MCP tools'
/// `filter` argument; an absent filter matches everything.
#[derive(Debug, Default, Args, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// Inline in each tool's schema: some gateways' models do not follow `$ref`.
#[schemars(inline)]
pub struct FilterArgs {
    /// Only events of this type.
    #[arg(long = "type", value_name = "TYPE")]
    pub event_type: Option<String>,
    /// Only events of this stream.
    #[arg(long)]
    pub stream: Option<String>,
    /// Only events in this room.
    #[arg(long)]
    pub room: Option<String>,
    /// Only events to this name (broadcasts to `*` included).
    #[arg(long, value_name = "NODE")]
    pub to: Option<String>,
    /// Only events by this author.
    #[arg(long, value_name = "NODE")]
    pub from: Option<String>,
    /// Only events with this correlation id.
    #[arg(long, value_name = "ID")]
    pub correlation_id: Option<String>,
}

impl FilterArgs {
    /// The filter as the fleet reads it.
    pub fn to_filter(&self) -> EventFilter {
        EventFilter {
            event_type: self.event_type.clone(),
            stream: self.stream.clone(),
            room: self.room.clone(),
            to: self.to.clone(),
            from: self.from.clone(),
            correlation_id: self.correlation_id.clone(),
        }
    }
}

/// A body given inline or read from a file, verbatim either way.
#[derive(Debug, Args)]
pub struct BodyArgs {
    /// The body, verbatim.
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Read the body from this file (`-` for stdin), verbatim.
    #[arg(long, value_name = "PATH")]
    pub body_file: Option<PathBuf>,
}

impl BodyArgs {
    /// The body (empty when neither flag is given). A file past [`BODY_BYTES_MAX`] is
    /// refused here with the fleet's own limit, before it is sent.
    pub fn read(&self) -> Result<Result<String, RuleViolation>> {
        match (&self.body, &self.body_file) {
            (Some(body), _) => Ok(Ok(body.clone())),
            (None, Some(path)) => read_body_file(path),
            (None, None) => Ok(Ok(String::new())),
        }
    }
}

/// Reads a body file (`-`: stdin) as UTF-8 text, refusing one past [`BODY_BYTES_MAX`].
pub fn read_body_file(path: &Path) -> Result<Result<String, RuleViolation>> {
    let bytes = if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("reading the body from stdin")?;
        bytes
    } else {
        let size = std::fs::metadata(path)
            .with_context(|| format!("cannot read the body file {}", path.display()))?
            .len();
        if let Some(violation) = too_large("body", size, BODY_BYTES_MAX) {
            return Ok(Err(violation));
        }
        std::fs::read(path)
            .with_context(|| format!("cannot read the body file {}", path.display()))?
    };
    if let Some(violation) = too_large("body", bytes.len() as u64, BODY_BYTES_MAX) {
        return Ok(Err(violation));
    }
    String::from_utf8(bytes).map(Ok).map_err(|_| {
        anyhow!(
            "the body in {} is not UTF-8 text; store binary content with `fleetctl artifacts put` and send its sha256",
            path.display()
        )
    })
}

/// The fleet's own refusal for a `field` of `size` bytes past `limit`, if it is.
pub fn too_large(field: &str, size: u64, limit: usize) -> Option<RuleViolation> {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    (size > limit).then(|| RuleViolation::TooLarge {
        field: field.to_string(),
        size,
        limit,
    })
}

/// Parses an event status for clap.
pub fn parse_status(text: &str) -> Result<EventStatus, String> {
    text.parse()
        .map_err(|violation: RuleViolation| violation.to_string())
}

/// Parses `300s`, `5m`, `1h`, `500ms` or plain seconds (`300`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like 300s, 5m, 1h, 500ms or 300"))?;
    let millis_per_unit = match unit.trim() {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}`: use ms, s, m or h"
            ));
        }
    };
    number
        .checked_mul(millis_per_unit)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("`{text}` is too long a duration"))
}

/// An event as a write returned it.
#[derive(Debug, Serialize)]
pub struct EventReceipt {
    pub event: Event,
    /// True when an earlier write returned this event: the same idempotency key, or the
    /// holder claiming again.
    pub repeated: bool,
}

/// Events read from a cursor.
#[derive(Debug, Serialize)]
pub struct EventPage {
    /// Matching events, oldest first.
    pub events: Vec<Event>,
    /// The newest event id the answering node held.
    pub last_id: u64,
    /// The cursor to continue from: `--since next_since` returns only what came after
    /// (or what did not fit under `--limit`).
    pub next_since: u64,
}

impl EventPage {
    fn new(events: Vec<Event>, last_id: u64, since: u64, limit: usize) -> Self {
        let next_since = if events.len() >= limit {
            events.last().map_or(since, |event| event.id)
        } else {
            last_id.max(since)
        };
        Self {
            events,
            last_id,
            next_since,
        }
    }
}

/// Appends `new` as the connection's actor (the author is never the caller's to set).
pub async fn append_event(
    connection: &Connection,
    new: NewEvent,
) -> Result<Result<EventReceipt, RuleViolation>> {
    receipt(connection.write(&Request::AppendEvent(new)).await?)
}

/// Acknowledges event `id` with `status` and `body`, as the connection's actor.
pub async fn ack_event(
    connection: &Connection,
    id: u64,
    status: EventStatus,
    body: &str,
) -> Result<Result<EventReceipt, RuleViolation>> {
    let request = Request::AckEvent {
        event: id,
        status,
        body: body.to_string(),
    };
    receipt(connection.write(&request).await?)
}

fn receipt(
    written: Result<Response, RuleViolation>,
) -> Result<Result<EventReceipt, RuleViolation>> {
    match written {
        Ok(Response::Event { event, repeated }) => Ok(Ok(EventReceipt {
            event: *event,
            repeated,
        })),
        Ok(other) => bail!("unexpected answer to an event write: {other:?}"),
        Err(violation) => Ok(Err(violation)),
    }
}

/// Events after `since` that pass `filter`, at most `limit`, read linearizably.
pub async fn list_events(
    connection: &Connection,
    filter: &EventFilter,
    since: u64,
    limit: usize,
) -> Result<Result<EventPage, RuleViolation>> {
    let limit = limit.clamp(1, EVENTS_PER_READ_MAX);
    let query = Query::Events {
        filter: filter.clone(),
        since,
        limit,
    };
    page(connection.read(&query).await?, since, limit)
}

/// Waits up to `timeout` for events after `since` (default: the newest event now) that
/// pass `filter`. The node holds each read until a matching event is applied; waits
/// longer than a node holds one read are made of several. An empty page means the
/// timeout passed; its `next_since` is where to wait from next.
pub async fn wait_for_events(
    connection: &Connection,
    filter: &EventFilter,
    since: Option<u64>,
    limit: usize,
    timeout: Duration,
) -> Result<Result<EventPage, RuleViolation>> {
    let deadline = Instant::now() + timeout;
    let limit = limit.clamp(1, EVENTS_PER_READ_MAX);
    let mut since = match since {
        Some(since) => since,
        None => match list_events(connection, filter, u64::MAX, 1).await? {
            Ok(page) => page.last_id,
            Err(violation) => return Ok(Err(violation)),
        },
    };
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let query = Query::Events {
            filter: filter.clone(),
            since,
            limit,
        };
        // Not linearizable: the answering node's own log is enough to wait on, and it
        // is woken by each command it applies.
        let answer = connection
            .read_until_ready(&query, false, left.min(READ_WAIT_MAX))
            .await?;
        let page = match page(answer, since, limit)? {
            Ok(page) => page,
            Err(violation) => return Ok(Err(violation)),
        };
        if !page.events.is_empty() || Instant::now() >= deadline {
            return Ok(Ok(page));
        }
        since = page.next_since;
    }
}

fn page(
    answer: Result<QueryAnswer, RuleViolation>,
    since: u64,
    limit: usize,
) -> Result<Result<EventPage, RuleViolation>> {
    match answer {
        Ok(QueryAnswer::Events { events, last_id }) => {
            Ok(Ok(EventPage::new(events, last_id, since, limit)))
        }
        Ok(other) => bail!("unexpected answer to an events read: {other:?}"),
        Err(violation) => Ok(Err(violation)),
    }
}

/// Runs `fleetctl events …`; `wait` exits [`WAIT_TIMEOUT_EXIT_CODE`] on timeout.
pub async fn run(
    connection: &Connection,
    args: &EventsArgs,
    output: OutputFormat,
) -> Result<ExitCode> {
    match &args.command {
        EventsCommand::Append(append) => {
            let body = append.body.read()?.map_err(|v| anyhow!(v))?;
            let new = NewEvent {
                event_type: append.event_type.clone(),
                stream: append.stream.clone(),
                room: append.room.clone(),
                to: append.to.clone(),
                correlation_id: append.correlation_id.clone(),
                status: append.status,
                body,
                request_id: Some(match &append.request_id {
                    Some(key) => key.clone(),
                    None => request_id()?,
                }),
            };
            let receipt = append_event(connection, new)
                .await?
                .map_err(|v| anyhow!(v))?;
            output.print(&receipt, |receipt| {
                let event = &receipt.event;
                let verb = if receipt.repeated {
                    "already appended with this request id:"
                } else {
                    "appended"
                };
                println!(
                    "{verb} event {} ({}, {} → {}, {})",
                    event.id, event.event_type, event.from, event.to, event.status
                );
            })?;
        }
        EventsCommand::Ack { id, status, body } => {
            let body = body.read()?.map_err(|v| anyhow!(v))?;
            let receipt = ack_event(connection, *id, *status, &body)
                .await?
                .map_err(|v| anyhow!(v))?;
            output.print(&receipt, |receipt| {
                let event = &receipt.event;
                if receipt.repeated {
                    println!(
                        "{} already holds the claim on event {id} (ack event {})",
                        event.from, event.id
                    );
                } else {
                    println!(
                        "event {} acknowledges event {id}: {} by {}",
                        event.id, event.status, event.from
                    );
                }
            })?;
        }
        EventsCommand::List {
            filter,
            since,
            limit,
        } => {
            let page = list_events(connection, &filter.to_filter(), *since, *limit)
                .await?
                .map_err(|v| anyhow!(v))?;
            output.print(&page, |page| {
                if page.events.is_empty() {
                    println!(
                        "no matching events after {since} (the log holds events 1 to {})",
                        page.last_id
                    );
                }
                print!("{}", event_lines(&page.events, now_ms()));
            })?;
        }
        EventsCommand::Wait {
            filter,
            since,
            timeout,
            limit,
        } => {
            let started = Instant::now();
            let page = wait_for_events(connection, &filter.to_filter(), *since, *limit, *timeout)
                .await?
                .map_err(|v| anyhow!(v))?;
            output.print(&page, |page| {
                print!("{}", event_lines(&page.events, now_ms()));
            })?;
            if page.events.is_empty() {
                eprintln!(
                    "fleetctl: no matching event within {:.1} s; wait again with --since {}",
                    started.elapsed().as_secs_f64(),
                    page.next_since
                );
                return Ok(ExitCode::from(WAIT_TIMEOUT_EXIT_CODE));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Each event as a heading line and its body, verbatim, indented under it.
pub fn event_lines(events: &[Event], now: u64) -> String {
    let mut out = String::new();
    for event in events {
        let mut heading = format!(
            "{}  {}  {}  {} → {}  stream {}  room {}",
            event.id,
            event.event_type,
            event.status,
            event.from,
            event.to,
            event.stream,
            event.room
        );
        if let Some(correlation_id) = &event.correlation_id {
            heading.push_str(&format!("  correlation {correlation_id}"));
        }
        if let Some(acked) = event.acks {
            heading.push_str(&format!("  acks {acked}"));
        }
        heading.push_str(&format!("  {}", ago(event.at_ms, now)));
        out.push_str(&heading);
        out.push('\n');
        for line in event.body.lines() {
            out.push_str("    ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_or_plain_seconds() {
        assert_eq!(parse_duration("300s"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("300"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3_600)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("5 parsecs").unwrap_err().contains("unit"));
        assert!(parse_duration("soon").is_err());
    }

    fn event(id: u64) -> Event {
        Event {
            id,
            at_ms: 0,
            event_type: "task.request".into(),
            stream: "project/x".into(),
            room: "delegation".into(),
            from: "mac".into(),
            to: "5070".into(),
            correlation_id: Some("task_x".into()),
            status: EventStatus::Open,
            body: "goal\nbranch main".into(),
            acks: None,
            request_id: None,
        }
    }

    #[test]
    fn the_cursor_moves_past_what_was_read() {
        // Fewer than the limit: everything up to the newest event was looked at.
        assert_eq!(EventPage::new(vec![event(3)], 9, 0, 10).next_since, 9);
        // A full page: continue after its last event.
        assert_eq!(
            EventPage::new(vec![event(3), event(5)], 9, 0, 2).next_since,
            5
        );
        // A cursor ahead of the log stays where it is.
        assert_eq!(EventPage::new(vec![], 4, 7, 10).next_since, 7);
    }

    #[test]
    fn bodies_are_printed_whole_under_their_heading() {
        let printed = event_lines(&[event(3)], 5_000);
        assert_eq!(
            printed,
            "3  task.request  open  mac → 5070  stream project/x  room delegation  correlation task_x  5 s ago\n    goal\n    branch main\n"
        );
    }

    #[test]
    fn an_oversized_count_is_the_fleets_own_refusal() {
        let violation = too_large("body", BODY_BYTES_MAX as u64 + 1, BODY_BYTES_MAX).unwrap();
        assert_eq!(violation.code(), "too_large");
        assert!(violation.to_string().contains("262144"), "{violation}");
        assert!(too_large("body", BODY_BYTES_MAX as u64, BODY_BYTES_MAX).is_none());
    }
}
