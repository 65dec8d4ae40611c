//! `MessageRelay`: messages sent to an agent session on another machine (S1).
//!
//! The gateway's own `sessions_send` cannot cross machines. A message to a session is
//! committed here, then the node that owns the session hands it to its local gateway
//! and commits the result: `delivered`, or `queued` in the session's inbox while the
//! gateway is unreachable, or `failed` with the reason. The sender reads that status.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::error::RuleViolation;
use super::key_index::KeyIndex;
use super::limits::{BODY_BYTES_MAX, NAME_BYTES_MAX, check_size, check_text};
use super::node_name::NodeName;
use super::scan_mark::mark_after_change;

/// A relayed message's id: `m-3`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct MessageId(pub u64);

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "m-{}", self.0)
    }
}

/// Where a relayed message is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MessageStatus {
    /// Committed; the owning node has not reported yet.
    Sent,
    /// The owner's gateway accepted it.
    Delivered,
    /// The gateway was unreachable; it waits in the session's inbox.
    Queued { reason: String },
    /// The gateway refused it.
    Failed { reason: String },
}

/// One message to one session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayedMessage {
    pub id: MessageId,
    /// Who sent it (`operator` or a node).
    pub from: String,
    pub to_session: String,
    /// The node that owns the session and must deliver.
    pub to_node: NodeName,
    pub body: String,
    pub request_id: String,
    pub sent_at_ms: u64,
    pub status: MessageStatus,
    pub updated_at_ms: u64,
}

impl RelayedMessage {
    /// Whether it waits in its owner's inbox: sent, or queued at the gateway.
    pub fn is_waiting(&self) -> bool {
        matches!(
            self.status,
            MessageStatus::Sent | MessageStatus::Queued { .. }
        )
    }
}

/// All relayed messages.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StoredMessageRelay")]
pub struct MessageRelay {
    next_id: u64,
    pub messages: BTreeMap<MessageId, RelayedMessage>,
    /// Every message before this one is delivered or failed, so in no inbox: `inbox`
    /// starts here and costs what still waits, not the whole history.
    waiting_from: MessageId,
    /// Sender → idempotency key → their message with it; rebuilt when decoded.
    #[serde(skip_serializing)]
    keyed: KeyIndex<MessageId>,
}

/// What a snapshot holds of a [`MessageRelay`]: the key index is rebuilt from the
/// messages, and a snapshot without `waiting_from` scans every inbox from the first.
#[derive(Deserialize)]
struct StoredMessageRelay {
    next_id: u64,
    messages: BTreeMap<MessageId, RelayedMessage>,
    #[serde(default)]
    waiting_from: MessageId,
}

impl From<StoredMessageRelay> for MessageRelay {
    fn from(stored: StoredMessageRelay) -> Self {
        let mut keyed = KeyIndex::default();
        for message in stored.messages.values() {
            keyed.insert(&message.from, &message.request_id, message.id);
        }
        MessageRelay {
            next_id: stored.next_id,
            messages: stored.messages,
            waiting_from: stored.waiting_from,
            keyed,
        }
    }
}

impl MessageRelay {
    /// Commits a message; a repeat with the same sender and idempotency key returns the first.
    pub fn send(
        &mut self,
        from: String,
        to_session: &str,
        to_node: NodeName,
        body: &str,
        request_id: &str,
        now: u64,
    ) -> Result<(&RelayedMessage, bool), RuleViolation> {
        check_text("request_id", request_id, NAME_BYTES_MAX)?;
        if let Some(id) = self.keyed.get(&from, request_id) {
            let existing = &self.messages[&id];
            if existing.body != body || existing.to_session != to_session {
                return Err(RuleViolation::IdempotencyConflict {
                    key: request_id.into(),
                    what: "message".into(),
                });
            }
            return Ok((existing, false));
        }
        check_size("body", body.as_bytes(), BODY_BYTES_MAX)?;
        check_text("body", body, BODY_BYTES_MAX)?;
        self.next_id += 1;
        let id = MessageId(self.next_id);
        self.keyed.insert(&from, request_id, id);
        self.messages.insert(
            id,
            RelayedMessage {
                id,
                from,
                to_session: to_session.into(),
                to_node,
                body: body.into(),
                request_id: request_id.into(),
                sent_at_ms: now,
                status: MessageStatus::Sent,
                updated_at_ms: now,
            },
        );
        Ok((&self.messages[&id], true))
    }

    /// Commits the owning node's report on a message.
    pub fn report(
        &mut self,
        node: &NodeName,
        id: MessageId,
        status: MessageStatus,
        now: u64,
    ) -> Result<&RelayedMessage, RuleViolation> {
        let message = self
            .messages
            .get_mut(&id)
            .ok_or_else(|| RuleViolation::UnknownMessage { id: id.to_string() })?;
        if &message.to_node != node {
            return Err(RuleViolation::Unauthorized {
                actor: format!("node {node}"),
                action: format!("report on message {id}"),
                rule: format!(
                    "only {}, which owns session {}, delivers it",
                    message.to_node, message.to_session
                ),
            });
        }
        if message.status != MessageStatus::Delivered {
            message.status = status;
            message.updated_at_ms = now;
        }
        // A report can put a failed message back in its inbox (queued again).
        self.waiting_from = mark_after_change(
            &self.messages,
            self.waiting_from,
            id,
            MessageId(self.next_id + 1),
            |message| !message.is_waiting(),
        );
        Ok(&self.messages[&id])
    }

    /// Messages waiting in the inbox of `node`'s sessions.
    pub fn inbox<'a>(
        &'a self,
        node: &'a NodeName,
    ) -> impl Iterator<Item = &'a RelayedMessage> + 'a {
        self.messages
            .range(self.waiting_from..)
            .map(|(_, message)| message)
            .filter(move |m| &m.to_node == node && m.is_waiting())
    }
}
