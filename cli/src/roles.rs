//! `fleetctl roles watch`: prints the roles (primary, note-taker, epoch) and then every
//! change as it is committed, until Ctrl-C. Each read waits on the node until it has
//! applied a newer command, so a change shows as soon as the node applies it; when a
//! node stops answering, the watch moves to the next one.

use std::time::Duration;

use anyhow::{Result, bail};
use fleet_node::api::query::{Query, QueryAnswer};
use serde::Serialize;

use crate::connection::Connection;
use crate::node_watch::NodeWatch;

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
    let mut watch = NodeWatch::through_candidates(connection, Query::Overview);
    watch.verbose = true;
    let mut last_epoch = None;
    loop {
        match watch.next(WAIT).await? {
            Ok(QueryAnswer::Overview {
                roles, clock_ms, ..
            }) => {
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
            other => bail!("unexpected answer: {other:?}"),
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
