//! `fleetctl cluster init` and `fleetctl member add|remove` (K4): bootstrap a fleet from
//! the configured peers, add a node (learner, then voter once caught up), remove one.

use std::path::Path;

use anyhow::{Context, Result};
use fleet_proto::api as wire;
use fleet_proto::api::membership_request::Change;

use crate::connection::Connection;

/// Bootstraps the fleet through the `--node` (or first) endpoint, with the fleet
/// settings of `settings` (a `config/fleet.toml`) or the defaults.
pub async fn init(
    connection: &Connection,
    settings: Option<&Path>,
) -> Result<wire::MembershipReply> {
    let settings_toml = match settings {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
        }
        None => String::new(),
    };
    let first = connection
        .via
        .clone()
        .or_else(|| connection.endpoints.first().map(|(name, _)| name.clone()))
        .context("the fleetctl config lists no endpoint")?;
    let via = Connection::new(
        connection.endpoints.clone(),
        connection.ca_pem().to_string(),
        connection.token().to_string(),
        Some(first),
    )?;
    via.change_membership(Change::Init(wire::InitCluster { settings_toml }))
        .await
}

/// Adds `name` reachable at `api` and `raft`.
pub async fn add(
    connection: &Connection,
    name: &str,
    api: &str,
    raft: &str,
) -> Result<wire::MembershipReply> {
    connection
        .change_membership(Change::Add(wire::AddMember {
            name: name.into(),
            api_addr: api.into(),
            raft_addr: raft.into(),
        }))
        .await
}

/// Removes `name`.
pub async fn remove(connection: &Connection, name: &str) -> Result<wire::MembershipReply> {
    connection
        .change_membership(Change::Remove(wire::RemoveMember { name: name.into() }))
        .await
}

/// Prints a membership reply.
pub fn print(reply: &wire::MembershipReply, json: bool) -> Result<()> {
    if json {
        let value = serde_json::json!({
            "message": reply.message,
            "voters": reply.voters,
            "learners": reply.learners,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!("{}", reply.message);
        println!("voters: {}", reply.voters.join(", "));
        if !reply.learners.is_empty() {
            println!("learners: {}", reply.learners.join(", "));
        }
    }
    Ok(())
}
