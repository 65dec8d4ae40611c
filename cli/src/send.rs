//! `fleetctl send` and `fleetctl inbox`: messages to an agent session on any machine
//! of the fleet (S1).
//!
//! A message is committed first; the node that owns the session then hands it to its
//! local gateway and commits what happened. `send` waits for that report, so the
//! sender learns `delivered`, `queued` (held in the session's inbox while the gateway
//! is unreachable) or `failed` with the reason — not merely that it was written.

use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::relay::{MessageStatus, RelayedMessage};
use fleet_node::state::{NodeName, Request, Response, RuleViolation};
use serde::Serialize;

use crate::connection::Connection;
use crate::deliberate::request_id;
use crate::output::OutputFormat;

/// How long `send` waits for the owning node's report by default.
pub const REPORT_WAIT: Duration = Duration::from_secs(10);

/// `fleetctl send --to SESSION MESSAGE`.
#[derive(Debug, Args)]
pub struct SendArgs {
    /// The session key, e.g. `5070-main`.
    #[arg(long, value_name = "SESSION")]
    pub to: String,
    /// The message.
    pub message: String,
    /// How long to wait for the owning node's report, in seconds.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub wait_secs: u64,
}

/// `fleetctl inbox`: messages held for this node's sessions.
#[derive(Debug, Args)]
pub struct InboxArgs {
    /// Whose inbox (default: the node of `--node`).
    #[arg(long, value_name = "NODE")]
    pub of: Option<String>,
    /// Only messages to this session.
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
}

/// What `send` reports.
#[derive(Debug, Serialize)]
pub struct SendReport {
    pub id: String,
    pub to_session: String,
    pub to_node: String,
    /// `delivered`, `queued`, `failed`, or `sent` when no report came in time.
    pub status: &'static str,
    pub reason: Option<String>,
}

impl SendReport {
    fn of(message: &RelayedMessage) -> Self {
        let (status, reason) = match &message.status {
            MessageStatus::Sent => ("sent", None),
            MessageStatus::Delivered => ("delivered", None),
            MessageStatus::Queued { reason } => ("queued", Some(reason.clone())),
            MessageStatus::Failed { reason } => ("failed", Some(reason.clone())),
        };
        Self {
            id: message.id.to_string(),
            to_session: message.to_session.clone(),
            to_node: message.to_node.to_string(),
            status,
            reason,
        }
    }
}

/// Commits a message to `to_session` and waits up to `wait` for the owning node's
/// report. The outer error is "the fleet could not be reached"; the inner one is the
/// rule the message was refused by (an unknown session, an oversized body).
pub async fn send_and_wait(
    connection: &Connection,
    to_session: &str,
    body: &str,
    wait: Duration,
) -> Result<Result<SendReport, RuleViolation>> {
    let request = Request::SendMessage {
        to_session: to_session.to_string(),
        body: body.to_string(),
        request_id: request_id()?,
    };
    let message = match connection.write(&request).await? {
        Ok(Response::Message { message, .. }) => message,
        Ok(other) => bail!("unexpected answer to a send: {other:?}"),
        Err(violation) => return Ok(Err(violation)),
    };
    let query = Query::Message { id: message.id };
    // Linearizable: the node asked may not have applied the send yet.
    match connection.read_until_ready(&query, true, wait).await? {
        Ok(QueryAnswer::Message(reported)) => Ok(Ok(SendReport::of(&reported))),
        Ok(other) => bail!("unexpected answer to a message read: {other:?}"),
        Err(violation) => Ok(Err(violation)),
    }
}

/// Runs `fleetctl send`; fails only when the gateway refused the message. A message
/// whose owner has not reported yet (its node is down) is committed and will be
/// delivered when that node returns, so it is not a failure: sending again would
/// send it twice.
pub async fn run(connection: &Connection, args: &SendArgs, output: OutputFormat) -> Result<bool> {
    let wait = Duration::from_secs(args.wait_secs);
    let report = send_and_wait(connection, &args.to, &args.message, wait).await??;
    output.print(&report, |report| {
        let mut line = format!(
            "{} to {} on {}: {}",
            report.id, report.to_session, report.to_node, report.status
        );
        if let Some(reason) = &report.reason {
            line.push_str(&format!(" ({reason})"));
        }
        if report.status == "sent" {
            line.push_str(" — the owning node has not reported yet");
        }
        println!("{line}");
    })?;
    Ok(report.status != "failed")
}

/// The messages held for a node's sessions.
pub async fn inbox(
    connection: &Connection,
    node: &str,
    session: Option<&str>,
) -> Result<Result<Vec<RelayedMessage>, RuleViolation>> {
    let node = NodeName::new(node.to_string())?;
    match connection.read(&Query::Inbox { node }).await? {
        Ok(QueryAnswer::Inbox(messages)) => Ok(Ok(messages
            .into_iter()
            .filter(|m| session.is_none_or(|s| m.to_session == s))
            .collect())),
        Ok(other) => bail!("unexpected answer to an inbox read: {other:?}"),
        Err(violation) => Ok(Err(violation)),
    }
}

/// Runs `fleetctl inbox`.
pub async fn run_inbox(
    connection: &Connection,
    args: &InboxArgs,
    output: OutputFormat,
) -> Result<()> {
    let Some(node) = args.of.as_deref().or(connection.via.as_deref()) else {
        bail!("whose inbox? pass --of NODE, or --node NAME to act as that node");
    };
    let messages = inbox(connection, node, args.session.as_deref()).await??;
    output.print(&messages, |messages| {
        println!("{} message(s) held for {node}", messages.len());
        for message in messages {
            println!(
                "{}  {} → {}  {}",
                message.id, message.from, message.to_session, message.body
            );
        }
    })
}
