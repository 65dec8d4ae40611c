//! `SessionDirectory`: the agents' sessions published by every node (S1).
//!
//! A node publishes its gateway's sessions (`beast-main`, …) with a status; a session
//! lives for `session_ttl_ms` after it was last published, so the sessions of a node
//! that goes silent expire on their own. Expiry is computed from the leader's clock
//! carried by commands, so every node agrees on which sessions are live.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::RuleViolation;
use super::limits::{NAME_BYTES_MAX, SESSIONS_PER_NODE_MAX, check_text};
use super::node_name::NodeName;

/// One agent session on one node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSession {
    /// The session key, e.g. `5070-main`; unique in the fleet.
    pub key: String,
    /// The node whose gateway holds the session.
    pub node: NodeName,
    /// The agent id inside the gateway, if given.
    pub agent: Option<String>,
    /// Free-form status: `idle`, `busy`, …
    pub status: String,
    /// When the node last published it.
    pub last_activity_ms: u64,
    /// When it expires unless published again.
    pub expires_at_ms: u64,
}

/// Every published session, by key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionDirectory {
    pub sessions: BTreeMap<String, AgentSession>,
}

impl SessionDirectory {
    /// Publishes or refreshes a session of `node`.
    pub fn publish(
        &mut self,
        node: &NodeName,
        key: &str,
        agent: Option<String>,
        status: &str,
        now: u64,
        ttl_ms: u64,
    ) -> Result<&AgentSession, RuleViolation> {
        check_session_key(key)?;
        check_text("status", status, NAME_BYTES_MAX)?;
        if let Some(agent) = &agent {
            check_text("agent", agent, NAME_BYTES_MAX)?;
        }
        match self.sessions.get(key) {
            Some(existing) if &existing.node != node && existing.expires_at_ms > now => {
                return Err(RuleViolation::SessionOwnedElsewhere {
                    key: key.into(),
                    owner: existing.node.to_string(),
                    node: node.to_string(),
                });
            }
            Some(_) => {}
            None => {
                let published = self.sessions.values().filter(|s| &s.node == node).count();
                if published >= SESSIONS_PER_NODE_MAX {
                    return Err(RuleViolation::invalid(
                        "session",
                        format!(
                            "{node} already publishes {published} sessions (limit {SESSIONS_PER_NODE_MAX})"
                        ),
                    ));
                }
            }
        }
        let session = AgentSession {
            key: key.into(),
            node: node.clone(),
            agent,
            status: status.trim().into(),
            last_activity_ms: now,
            expires_at_ms: now.saturating_add(ttl_ms),
        };
        self.sessions.insert(key.into(), session);
        Ok(&self.sessions[key])
    }

    /// The live session `key`, or an error listing the live keys.
    pub fn live(&self, key: &str, now: u64) -> Result<&AgentSession, RuleViolation> {
        self.sessions
            .get(key)
            .filter(|s| s.expires_at_ms > now)
            .ok_or_else(|| {
                let live: Vec<&str> = self.live_sessions(now).map(|s| s.key.as_str()).collect();
                RuleViolation::UnknownSession {
                    key: key.into(),
                    hint: if live.is_empty() {
                        " (no session is live)".into()
                    } else {
                        format!(" (live: {})", live.join(", "))
                    },
                }
            })
    }

    /// Sessions that have not expired at `now`.
    pub fn live_sessions(&self, now: u64) -> impl Iterator<Item = &AgentSession> {
        self.sessions
            .values()
            .filter(move |s| s.expires_at_ms > now)
    }

    /// Drops expired sessions; returns how many.
    pub fn expire(&mut self, now: u64) -> usize {
        let before = self.sessions.len();
        self.sessions.retain(|_, s| s.expires_at_ms > now);
        before - self.sessions.len()
    }

    /// Drops every session of a node that left the fleet.
    pub fn forget_node(&mut self, node: &NodeName) {
        self.sessions.retain(|_, s| &s.node != node);
    }

    /// The earliest expiry, so the driver can tick then.
    pub fn next_expiry_ms(&self) -> Option<u64> {
        self.sessions.values().map(|s| s.expires_at_ms).min()
    }
}

fn check_session_key(key: &str) -> Result<(), RuleViolation> {
    let ok = !key.is_empty()
        && key.len() <= NAME_BYTES_MAX
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if ok {
        Ok(())
    } else {
        Err(RuleViolation::invalid(
            "session key",
            format!(
                "`{key}` must be 1 to {NAME_BYTES_MAX} characters of letters, digits, `-`, `_`, `.` and `:`"
            ),
        ))
    }
}
