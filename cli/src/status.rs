//! `fleetctl status`: every node's own view, side by side (like `etcdctl endpoint
//! status -w table`), with the leader, the roles and a plain sentence when the fleet
//! has no quorum.

use std::collections::BTreeMap;

use anyhow::Result;
use fleet_proto::api as wire;
use serde::Serialize;

use crate::connection::Connection;

/// One row of the status table.
#[derive(Debug, Serialize)]
pub struct MemberRow {
    pub name: String,
    pub endpoint: String,
    pub reachable: bool,
    pub raft_state: String,
    pub term: u64,
    pub last_log_index: u64,
    pub last_applied: u64,
    pub healthy: bool,
    pub transport: String,
    pub roles: Vec<String>,
    pub error: Option<String>,
}

/// The fleet as the nodes see it.
#[derive(Debug, Serialize)]
pub struct FleetStatus {
    pub leader: String,
    pub term: u64,
    pub primary: String,
    pub note_taker: String,
    pub epoch: u64,
    pub quorum: bool,
    pub problem: String,
    pub members: Vec<MemberRow>,
}

/// Collects every node's status into one picture.
pub async fn collect(connection: &Connection) -> FleetStatus {
    let statuses = connection.statuses().await;
    let answering: Vec<&wire::StatusReply> = statuses
        .iter()
        .filter_map(|(_, _, s)| s.as_ref().ok())
        .collect();
    // The view of the node in the highest term that knows a leader wins.
    let view = answering
        .iter()
        .filter(|s| !s.leader.is_empty())
        .max_by_key(|s| s.term)
        .or_else(|| answering.iter().max_by_key(|s| s.term))
        .copied();
    let leader_view = view
        .and_then(|v| answering.iter().find(|s| s.node == v.leader))
        .copied();
    let roles_view = leader_view.or(view);
    let mut members = Vec::new();
    for (name, endpoint, result) in &statuses {
        let own = result
            .as_ref()
            .ok()
            .and_then(|s| s.members.iter().find(|m| &m.name == name));
        let seen_by_leader = leader_view.and_then(|v| v.members.iter().find(|m| &m.name == name));
        let mut roles = Vec::new();
        if let Some(view) = roles_view {
            if &view.primary == name {
                roles.push("primary".to_string());
            }
            if &view.note_taker == name {
                roles.push("note-taker".to_string());
            }
        }
        members.push(MemberRow {
            name: name.clone(),
            endpoint: endpoint.clone(),
            reachable: result.is_ok(),
            raft_state: own.map_or_else(|| "unreachable".into(), |m| m.raft_state.clone()),
            term: own.map_or(0, |m| m.term),
            last_log_index: own.map_or(0, |m| m.last_log_index),
            last_applied: own.map_or(0, |m| m.applied_index),
            healthy: result.is_ok() && seen_by_leader.is_some_and(|m| m.healthy),
            transport: seen_by_leader
                .map(|m| m.transport.clone())
                .unwrap_or_default(),
            roles,
            error: result.as_ref().err().cloned(),
        });
    }
    let reachable = members.iter().filter(|m| m.reachable).count();
    let unreachable: Vec<&str> = members
        .iter()
        .filter(|m| !m.reachable)
        .map(|m| m.name.as_str())
        .collect();
    let quorum = leader_view.is_some_and(|v| v.quorum);
    let problem = if quorum {
        String::new()
    } else {
        let mut sentence = format!(
            "no quorum: {reachable} of {} voters reachable",
            members.len()
        );
        if !unreachable.is_empty() {
            sentence.push_str(&format!(" (unreachable: {})", unreachable.join(", ")));
        }
        sentence.push_str("; nothing can be committed and no node acts as primary");
        sentence
    };
    FleetStatus {
        leader: if quorum {
            leader_view.map(|v| v.node.clone()).unwrap_or_default()
        } else {
            String::new()
        },
        term: view.map_or(0, |v| v.term),
        primary: if quorum {
            roles_view.map(|v| v.primary.clone()).unwrap_or_default()
        } else {
            String::new()
        },
        note_taker: if quorum {
            roles_view.map(|v| v.note_taker.clone()).unwrap_or_default()
        } else {
            String::new()
        },
        epoch: roles_view.map_or(0, |v| v.epoch),
        quorum,
        problem,
        members,
    }
}

/// Renders the status as a table.
pub fn table(status: &FleetStatus) -> String {
    let headers = [
        "NAME",
        "ENDPOINT",
        "RAFT STATE",
        "TERM",
        "LAST INDEX",
        "APPLIED",
        "HEALTHY",
        "TRANSPORT",
        "ROLES",
    ];
    let rows: Vec<[String; 9]> = status
        .members
        .iter()
        .map(|m| {
            [
                m.name.clone(),
                m.endpoint.clone(),
                m.raft_state.clone(),
                m.term.to_string(),
                m.last_log_index.to_string(),
                m.last_applied.to_string(),
                if m.healthy { "yes" } else { "no" }.to_string(),
                if m.transport.is_empty() {
                    "-".into()
                } else {
                    m.transport.clone()
                },
                if m.roles.is_empty() {
                    "-".into()
                } else {
                    m.roles.join(", ")
                },
            ]
        })
        .collect();
    let mut out = crate::output::table_lines(&headers, &rows);
    out.push(String::new());
    if status.quorum {
        out.push(format!(
            "leader: {} · term {} · primary: {} · note-taker: {} · epoch {}",
            status.leader,
            status.term,
            or_none(&status.primary),
            or_none(&status.note_taker),
            status.epoch
        ));
    } else {
        out.push(status.problem.clone());
    }
    let errors: BTreeMap<&str, &str> = status
        .members
        .iter()
        .filter_map(|m| m.error.as_deref().map(|e| (m.name.as_str(), e)))
        .collect();
    for (name, error) in errors {
        out.push(format!("{name}: {error}"));
    }
    out.join("\n")
}

fn or_none(name: &str) -> &str {
    if name.is_empty() { "none" } else { name }
}

/// Runs `fleetctl status`; fails (exit 1) when there is no quorum, so scripts notice.
pub async fn run(connection: &Connection, json: bool) -> Result<bool> {
    let status = collect(connection).await;
    if json {
        println!("{}", serde_json::to_string_pretty(&status)?);
    } else {
        println!("{}", table(&status));
    }
    Ok(status.quorum)
}
