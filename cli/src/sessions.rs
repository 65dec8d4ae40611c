//! `fleetctl sessions` and `fleetctl sessions publish`: the agents' sessions every node
//! publishes (S1).
//!
//! A node publishes its gateway's sessions (`beast-main`, …) as itself (`--node NAME`);
//! the fleet keeps each one for the fleet's `session_ttl_ms` after it was last
//! published, so the sessions of a node that goes silent drop out of the list on their
//! own. The list shows each session's last activity as an age.

use anyhow::{Result, anyhow, bail};
use clap::{Args, Subcommand};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::sessions::AgentSession;
use fleet_node::state::{Request, Response, RuleViolation};

use crate::connection::Connection;
use crate::deliberations::{ago, now_ms};
use crate::output::{OutputFormat, table_lines};

/// `fleetctl sessions`: the live sessions, or `publish` one.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub command: Option<SessionsCommand>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Publish or refresh one of this node's sessions (as the node: `--node NAME`).
    Publish {
        /// The session key, unique in the fleet, e.g. `beast-main`.
        key: String,
        /// The agent id inside the gateway.
        #[arg(long, value_name = "ID")]
        agent: Option<String>,
        /// Free-form status: `idle`, `busy`, …
        #[arg(long, default_value = "idle")]
        status: String,
    },
}

/// The sessions that have not expired, in key order.
pub async fn list_sessions(
    connection: &Connection,
) -> Result<Result<Vec<AgentSession>, RuleViolation>> {
    match connection.read(&Query::Sessions).await? {
        Ok(QueryAnswer::Sessions(sessions)) => Ok(Ok(sessions)),
        Ok(other) => bail!("unexpected answer to a sessions read: {other:?}"),
        Err(violation) => Ok(Err(violation)),
    }
}

/// Publishes (or refreshes) session `key` of the connection's node; the fleet refuses it
/// from the operator, and a key another live node holds.
pub async fn publish_session(
    connection: &Connection,
    key: &str,
    agent: Option<&str>,
    status: &str,
) -> Result<Result<AgentSession, RuleViolation>> {
    let request = Request::PublishSession {
        key: key.to_string(),
        agent: agent.map(str::to_string),
        status: status.to_string(),
    };
    match connection.write(&request).await? {
        Ok(Response::Session(session)) => Ok(Ok(session)),
        Ok(other) => bail!("unexpected answer to a session publish: {other:?}"),
        Err(violation) => Ok(Err(violation)),
    }
}

/// Runs `fleetctl sessions [publish]`.
pub async fn run(connection: &Connection, args: &SessionsArgs, output: OutputFormat) -> Result<()> {
    match &args.command {
        Some(SessionsCommand::Publish { key, agent, status }) => {
            let session = publish_session(connection, key, agent.as_deref(), status)
                .await?
                .map_err(|violation| anyhow!(violation))?;
            output.print(&session, |session| {
                println!(
                    "published {} on {} ({}); it expires in {} s unless published again",
                    session.key,
                    session.node,
                    session.status,
                    session
                        .expires_at_ms
                        .saturating_sub(session.last_activity_ms)
                        .div_ceil(1000)
                );
            })
        }
        None => {
            let sessions = list_sessions(connection)
                .await?
                .map_err(|violation| anyhow!(violation))?;
            output.print(&sessions, |sessions| {
                print!("{}", table(sessions, now_ms()))
            })
        }
    }
}

/// The sessions as a table: key, node, agent, status, last activity.
fn table(sessions: &[AgentSession], now: u64) -> String {
    if sessions.is_empty() {
        return "no live sessions\n".to_string();
    }
    let headers = ["KEY", "NODE", "AGENT", "STATUS", "LAST ACTIVITY"];
    let rows: Vec<[String; 5]> = sessions
        .iter()
        .map(|session| {
            [
                session.key.clone(),
                session.node.to_string(),
                session.agent.clone().unwrap_or_else(|| "-".to_string()),
                session.status.clone(),
                ago(session.last_activity_ms, now),
            ]
        })
        .collect();
    table_lines(&headers, &rows)
        .into_iter()
        .map(|line| line + "\n")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_node::state::NodeName;

    #[test]
    fn the_table_shows_the_last_activity_as_an_age() {
        let session = AgentSession {
            key: "5070-main".into(),
            node: NodeName::new("5070").unwrap(),
            agent: None,
            status: "idle".into(),
            last_activity_ms: 1_000,
            expires_at_ms: 91_000,
        };
        let printed = table(&[session], 13_000);
        let lines: Vec<&str> = printed.lines().collect();
        assert_eq!(lines[0], "KEY        NODE  AGENT  STATUS  LAST ACTIVITY");
        assert_eq!(lines[1], "5070-main  5070  -      idle    12 s ago");
        assert_eq!(table(&[], 0), "no live sessions\n");
    }
}
