//! `fleetctl roles watch`: prints the roles (primary, note-taker, epoch) and then every
//! change as it is committed, until Ctrl-C. Each read waits on the node until it has
//! applied a newer command, so a change shows as soon as the node applies it; when a
//! node stops answering, the watch moves to the next one.

use std::time::Duration;

use anyhow::{Result, bail};
use fleet_node::api::query::{Query, QueryAnswer};
use serde::Serialize;

use crate::connection::Connection;

/// How long one read waits for the node to apply something new.
const WAIT: Duration = Duration::from_secs(10);

/// One committed state of the roles.
#[derive(Debug, PartialEq, Eq, Serialize)]
struct RolesLine {
    epoch: u64,
    primary: String,
    note_taker: String,
    /// The fleet's clock when the roles were read, in ms since the Unix epoch.
    at_ms: u64,
}

/// Runs until interrupted; fails only when no node answers.
pub async fn watch(connection: &Connection, json: bool) -> Result<()> {
    let nodes: Vec<String> = match &connection.via {
        Some(node) => vec![node.clone()],
        None => connection
            .endpoints
            .iter()
            .map(|(name, _)| name.clone())
            .collect(),
    };
    let mut last_epoch = None;
    let mut applied = 0;
    let mut failures = 0;
    let mut turn = 0;
    loop {
        let node = &nodes[turn % nodes.len()];
        match connection
            .read_from(node, &Query::Overview, applied + 1, WAIT)
            .await
        {
            Ok((
                Ok(QueryAnswer::Overview {
                    roles, clock_ms, ..
                }),
                index,
            )) => {
                failures = 0;
                applied = index;
                if last_epoch != Some(roles.epoch) {
                    last_epoch = Some(roles.epoch);
                    let line = RolesLine {
                        epoch: roles.epoch,
                        primary: roles.primary().map(ToString::to_string).unwrap_or_default(),
                        note_taker: roles
                            .note_taker()
                            .map(ToString::to_string)
                            .unwrap_or_default(),
                        at_ms: clock_ms,
                    };
                    print(&line, json)?;
                }
            }
            Ok((other, _)) => bail!("unexpected answer from {node}: {other:?}"),
            Err(error) => {
                failures += 1;
                if failures > 3 * nodes.len() {
                    bail!("no node answers: {error}");
                }
                eprintln!("fleetctl: {error}; trying the next node");
                // Another node may not have applied as far yet: start from its index.
                applied = 0;
                turn += 1;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

fn print(line: &RolesLine, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(line)?);
    } else {
        let or_none = |name: &str| {
            if name.is_empty() {
                "none".to_string()
            } else {
                name.to_string()
            }
        };
        println!(
            "epoch {}: primary {}, note-taker {}",
            line.epoch,
            or_none(&line.primary),
            or_none(&line.note_taker)
        );
    }
    Ok(())
}
