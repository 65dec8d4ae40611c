//! `BulletinBoard`: the fleet's bulletin board of seed 000 (S3).
//!
//! Items read `[Source → Target|All] Subject`. Each target acknowledges for itself; an
//! item addressed to all is acknowledged when every member has. An item still
//! unacknowledged `bulletin_stale_ms` (48 h) after it was posted is flagged stale in
//! listings. Archiving moves items out of the listing without deleting them.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::error::RuleViolation;
use super::limits::{BODY_BYTES_MAX, NAME_BYTES_MAX, SUBJECT_BYTES_MAX, check_size, check_text};
use super::node_name::NodeName;

/// Who an item is for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Recipient {
    /// Every member.
    All,
    /// One node, or an agent/mindset name (`infra`) acknowledged by whichever node acts for it.
    Named(String),
}

impl Recipient {
    /// Parses `all` or a name.
    pub fn parse(text: &str) -> Result<Self, RuleViolation> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("all") || text == "*" {
            return Ok(Self::All);
        }
        check_text("to", text, NAME_BYTES_MAX)?;
        Ok(Self::Named(text.to_ascii_lowercase()))
    }
}

impl fmt::Display for Recipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("All"),
            Self::Named(name) => f.write_str(name),
        }
    }
}

/// One bulletin item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulletinItem {
    /// `b-7`.
    pub id: String,
    pub from: String,
    pub to: Recipient,
    pub subject: String,
    pub body: String,
    pub posted_at_ms: u64,
    /// Acknowledgements by node name.
    pub acks: BTreeMap<String, u64>,
    pub archived: bool,
}

impl BulletinItem {
    /// The seed's heading: `[PA → Infra] Subject`.
    pub fn heading(&self) -> String {
        format!("[{} → {}] {}", self.from, self.to, self.subject)
    }

    /// Whether every target has acknowledged it.
    pub fn is_acknowledged(&self, members: &[NodeName]) -> bool {
        match &self.to {
            Recipient::All => members.iter().all(|m| self.acks.contains_key(m.as_str())),
            Recipient::Named(_) => !self.acks.is_empty(),
        }
    }

    /// Whether it is unacknowledged and older than `stale_ms` at `now`.
    pub fn is_stale(&self, members: &[NodeName], now: u64, stale_ms: u64) -> bool {
        !self.is_acknowledged(members) && now.saturating_sub(self.posted_at_ms) >= stale_ms
    }

    /// Whether it is addressed to `name` (directly or through All).
    pub fn is_for(&self, name: &str) -> bool {
        match &self.to {
            Recipient::All => true,
            Recipient::Named(target) => target == name,
        }
    }
}

/// The board.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulletinBoard {
    next_id: u64,
    pub items: BTreeMap<String, BulletinItem>,
}

impl BulletinBoard {
    /// Posts an item.
    pub fn post(
        &mut self,
        from: String,
        to: Recipient,
        subject: &str,
        body: &str,
        now: u64,
    ) -> Result<&BulletinItem, RuleViolation> {
        check_text("subject", subject, SUBJECT_BYTES_MAX)?;
        check_size("body", body.as_bytes(), BODY_BYTES_MAX)?;
        self.next_id += 1;
        let id = format!("b-{}", self.next_id);
        self.items.insert(
            id.clone(),
            BulletinItem {
                id: id.clone(),
                from,
                to,
                subject: subject.trim().into(),
                body: body.into(),
                posted_at_ms: now,
                acks: BTreeMap::new(),
                archived: false,
            },
        );
        Ok(&self.items[&id])
    }

    /// Acknowledges item `id` as `node`. A node may acknowledge items addressed to all,
    /// to itself, or to a name that is not another member (an agent on its machine).
    pub fn ack(
        &mut self,
        node: &NodeName,
        members: &[NodeName],
        id: &str,
        now: u64,
    ) -> Result<&BulletinItem, RuleViolation> {
        let item = self
            .items
            .get_mut(id)
            .ok_or_else(|| RuleViolation::UnknownBulletin { id: id.into() })?;
        let addressed = match &item.to {
            Recipient::All => true,
            Recipient::Named(target) => {
                target == node.as_str() || !members.iter().any(|m| m.as_str() == target)
            }
        };
        if !addressed {
            return Err(RuleViolation::NotABulletinTarget {
                id: id.into(),
                target: item.to.to_string(),
                node: node.to_string(),
            });
        }
        item.acks.entry(node.to_string()).or_insert(now);
        Ok(item)
    }

    /// Archives every item posted before `before_ms`; returns how many were archived.
    pub fn archive(&mut self, before_ms: u64) -> usize {
        let mut archived = 0;
        for item in self.items.values_mut() {
            if !item.archived && item.posted_at_ms < before_ms {
                item.archived = true;
                archived += 1;
            }
        }
        archived
    }
}
