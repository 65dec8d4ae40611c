//! `EventLog`: the append-only coordination log of seed 004 (S2).
//!
//! Events carry a type (`task.request`, `patch.ready`…), a stream (`project/x`), a room,
//! the author (always the authenticated actor, never a field the caller sets), a target
//! node or `*`, a correlation id, a status and a verbatim body. An acknowledgement is a
//! new event that refers to the one it acknowledges; nothing is ever edited. Event ids
//! are consecutive from 1 and double as the cursor a reader waits from.
//!
//! *Invariant:* an appended event never changes. *Rule:* a request has at most one
//! claimant; a second claim is refused with the holder's name.
//!
//! The log never shrinks, so nothing an append does may grow with it: a repeated
//! idempotency key is found in a `KeyIndex` of (author, key), not by a scan of the
//! events. Nor may a copy of the state grow with it more than it must: each event is
//! held in an [`Arc`], so the copy a snapshot encodes shares the events, which never
//! change, instead of copying every string of every one.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::error::RuleViolation;
use super::key_index::KeyIndex;
use super::limits::{BODY_BYTES_MAX, NAME_BYTES_MAX, check_size, check_text};

/// The status an event carries (seed 004).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventStatus {
    Open,
    Claimed,
    Applied,
    Failed,
    Blocked,
    Superseded,
}

impl fmt::Display for EventStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Open => "open",
            Self::Claimed => "claimed",
            Self::Applied => "applied",
            Self::Failed => "failed",
            Self::Blocked => "blocked",
            Self::Superseded => "superseded",
        })
    }
}

impl FromStr for EventStatus {
    type Err = RuleViolation;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "open" => Ok(Self::Open),
            "claimed" => Ok(Self::Claimed),
            "applied" => Ok(Self::Applied),
            "failed" => Ok(Self::Failed),
            "blocked" => Ok(Self::Blocked),
            "superseded" => Ok(Self::Superseded),
            _ => Err(RuleViolation::invalid(
                "status",
                format!("`{s}` is not open, claimed, applied, failed, blocked or superseded"),
            )),
        }
    }
}

/// The fields a caller gives for a new event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewEvent {
    pub event_type: String,
    pub stream: String,
    pub room: String,
    /// A node or agent name, or `*` for everyone.
    pub to: String,
    pub correlation_id: Option<String>,
    pub status: EventStatus,
    pub body: String,
    /// Idempotency key: a repeat from the same author returns the first event.
    pub request_id: Option<String>,
}

/// One committed event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Consecutive from 1; the cursor.
    pub id: u64,
    pub at_ms: u64,
    pub event_type: String,
    pub stream: String,
    pub room: String,
    /// The authenticated author.
    pub from: String,
    pub to: String,
    pub correlation_id: Option<String>,
    pub status: EventStatus,
    pub body: String,
    /// For an acknowledgement: the event it acknowledges.
    pub acks: Option<u64>,
    pub request_id: Option<String>,
}

/// Which events a reader wants; empty fields match everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventFilter {
    pub event_type: Option<String>,
    pub stream: Option<String>,
    pub room: Option<String>,
    /// Matches events to this name and broadcasts to `*`.
    pub to: Option<String>,
    pub from: Option<String>,
    pub correlation_id: Option<String>,
}

impl EventFilter {
    /// Whether `event` passes the filter.
    pub fn matches(&self, event: &Event) -> bool {
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        eq(&self.event_type, &event.event_type)
            && eq(&self.stream, &event.stream)
            && eq(&self.room, &event.room)
            && eq(&self.from, &event.from)
            && self
                .to
                .as_deref()
                .is_none_or(|to| event.to == to || event.to == "*")
            && self
                .correlation_id
                .as_deref()
                .is_none_or(|c| event.correlation_id.as_deref() == Some(c))
    }
}

/// The log.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StoredEventLog")]
pub struct EventLog {
    events: Vec<Arc<Event>>,
    /// Request event id → (claimant, claiming ack id).
    claims: BTreeMap<u64, (String, u64)>,
    /// Author → idempotency key → the id of the newest event they appended with it.
    #[serde(skip_serializing)]
    keyed: KeyIndex<u64>,
}

/// What a snapshot holds of an [`EventLog`]: the key index is rebuilt from the events.
#[derive(Deserialize)]
struct StoredEventLog {
    events: Vec<Event>,
    claims: BTreeMap<u64, (String, u64)>,
}

impl From<StoredEventLog> for EventLog {
    fn from(stored: StoredEventLog) -> Self {
        let mut keyed = KeyIndex::default();
        for event in &stored.events {
            index_key(&mut keyed, event);
        }
        EventLog {
            events: stored.events.into_iter().map(Arc::new).collect(),
            claims: stored.claims,
            keyed,
        }
    }
}

/// Records `event`'s idempotency key, if it has one, as its author's newest use.
fn index_key(keyed: &mut KeyIndex<u64>, event: &Event) {
    if let Some(key) = &event.request_id {
        keyed.insert(&event.from, key, event.id);
    }
}

impl EventLog {
    /// The id of the newest event; 0 when empty.
    pub fn last_id(&self) -> u64 {
        self.events.len() as u64
    }

    /// The event with `id`.
    pub fn get(&self, id: u64) -> Result<&Event, RuleViolation> {
        id.checked_sub(1)
            .and_then(|index| self.events.get(index as usize))
            .map(Arc::as_ref)
            .ok_or(RuleViolation::UnknownEvent {
                id,
                last: self.last_id(),
            })
    }

    /// Events after `since` that pass `filter`, oldest first, at most `limit`.
    pub fn since<'a>(
        &'a self,
        since: u64,
        filter: &'a EventFilter,
        limit: usize,
    ) -> impl Iterator<Item = &'a Event> + 'a {
        let start = usize::try_from(since)
            .unwrap_or(usize::MAX)
            .min(self.events.len());
        self.events[start..]
            .iter()
            .map(Arc::as_ref)
            .filter(move |e| filter.matches(e))
            .take(limit)
    }

    /// Appends an event by `from`; a repeated idempotency key returns the first event.
    pub fn append(
        &mut self,
        from: &str,
        new: NewEvent,
        now: u64,
    ) -> Result<(&Event, bool), RuleViolation> {
        let repeat = new
            .request_id
            .as_deref()
            .and_then(|key| self.keyed.get(from, key));
        if let Some(id) = repeat {
            let existing = self.get(id)?;
            if existing.body != new.body || existing.event_type != new.event_type {
                return Err(RuleViolation::IdempotencyConflict {
                    key: new.request_id.unwrap_or_default(),
                    what: "event".into(),
                });
            }
            return Ok((existing, false));
        }
        self.push(from, new, None, now).map(|event| (event, true))
    }

    fn push(
        &mut self,
        from: &str,
        new: NewEvent,
        acks: Option<u64>,
        now: u64,
    ) -> Result<&Event, RuleViolation> {
        check_event_fields(&new)?;
        let event = Event {
            id: self.last_id() + 1,
            at_ms: now,
            event_type: new.event_type,
            stream: new.stream,
            room: new.room,
            from: from.into(),
            to: new.to,
            correlation_id: new.correlation_id,
            status: new.status,
            body: new.body,
            acks,
            request_id: new.request_id,
        };
        index_key(&mut self.keyed, &event);
        self.events.push(Arc::new(event));
        Ok(self.events.last().map(Arc::as_ref).expect("just pushed"))
    }

    /// Acknowledges event `id` with a new event by `from`. One claimant per request: a
    /// second `claimed` by someone else is refused; the holder's repeat returns its claim.
    pub fn ack(
        &mut self,
        from: &str,
        id: u64,
        status: EventStatus,
        body: String,
        now: u64,
    ) -> Result<(&Event, bool), RuleViolation> {
        let acked = self.get(id)?.clone();
        if status == EventStatus::Open {
            return Err(RuleViolation::invalid(
                "status",
                "an acknowledgement is claimed, applied, failed, blocked or superseded, not open",
            ));
        }
        if let Some((holder, ack)) = self.claims.get(&id) {
            if status == EventStatus::Claimed && holder == from {
                let ack = *ack;
                return Ok((self.get(ack)?, false));
            }
            if holder != from {
                return Err(RuleViolation::AlreadyClaimed {
                    event: id,
                    holder: holder.clone(),
                    ack: *ack,
                });
            }
        }
        let event_type = if acked.event_type.ends_with(".ack") {
            acked.event_type.clone()
        } else {
            format!("{}.ack", acked.event_type)
        };
        let new = NewEvent {
            event_type,
            stream: acked.stream,
            room: acked.room,
            to: acked.from,
            correlation_id: acked.correlation_id,
            status,
            body,
            request_id: None,
        };
        let ack_id = self.push(from, new, Some(id), now)?.id;
        if status == EventStatus::Claimed {
            self.claims.insert(id, (from.to_string(), ack_id));
        }
        Ok((self.get(ack_id)?, true))
    }

    /// Who holds the claim on request `id`, if anyone.
    pub fn claimant(&self, id: u64) -> Option<&str> {
        self.claims.get(&id).map(|(holder, _)| holder.as_str())
    }

    /// Every event, oldest first.
    pub fn events(&self) -> &[Arc<Event>] {
        &self.events
    }
}

fn check_event_fields(new: &NewEvent) -> Result<(), RuleViolation> {
    for (field, value) in [
        ("type", &new.event_type),
        ("stream", &new.stream),
        ("room", &new.room),
        ("to", &new.to),
    ] {
        check_text(field, value, NAME_BYTES_MAX)?;
    }
    if let Some(correlation_id) = &new.correlation_id {
        check_text("correlation_id", correlation_id, NAME_BYTES_MAX)?;
    }
    if let Some(request_id) = &new.request_id {
        check_text("request_id", request_id, NAME_BYTES_MAX)?;
    }
    check_size("body", new.body.as_bytes(), BODY_BYTES_MAX)
}
