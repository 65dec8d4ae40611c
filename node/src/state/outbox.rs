//! `Outbox`: the replicated queue of operator notifications (D8).
//!
//! A notification is committed with the state change it announces (a deliberation
//! opened, a decision reached), so it cannot be lost by a crash between the change and
//! the delivery. The primary delivers; each attempt's result is committed per sink.
//! Every attempt for one notification carries the same idempotency key, so a
//! receiver can drop repeats; once a sink's delivery is committed, no later primary
//! sends it to that sink again.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::deliberation::DeliberationId;
use super::error::RuleViolation;
use super::limits::{NAME_BYTES_MAX, check_text};
use super::scan_mark::mark_after_change;

/// A notification's id: `n-4`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct NotificationId(pub u64);

impl fmt::Display for NotificationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n-{}", self.0)
    }
}

/// What a notification announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NotificationKind {
    /// A deliberation started.
    DeliberationStarted,
    /// A deliberation was decided.
    DeliberationDecided,
    /// A failover drill finished (R4).
    DrillCompleted,
}

impl NotificationKind {
    fn suffix(self) -> &'static str {
        match self {
            Self::DeliberationStarted => "started",
            Self::DeliberationDecided => "decided",
            Self::DrillCompleted => "completed",
        }
    }
}

/// The result of one delivery attempt to one sink.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeliveryResult {
    /// The sink acknowledged (a 2xx, or the command exited 0).
    Delivered,
    /// The attempt failed; `permanent` means retrying cannot help (a 4xx other than 429).
    Failed { error: String, permanent: bool },
}

/// Delivery state of one notification at one sink.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkDelivery {
    /// Attempts committed so far.
    pub attempts: u32,
    /// When the sink acknowledged it.
    pub delivered_at_ms: Option<u64>,
    /// The last failure, verbatim.
    pub last_error: Option<String>,
    /// Whether delivery was given up as permanently failed.
    pub gave_up: bool,
}

impl SinkDelivery {
    /// Whether this sink needs no more attempts.
    pub fn is_settled(&self) -> bool {
        self.delivered_at_ms.is_some() || self.gave_up
    }
}

/// One notification to the operator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notification {
    pub id: NotificationId,
    pub kind: NotificationKind,
    pub deliberation: Option<DeliberationId>,
    /// The same on every attempt: `<fleet>:<deliberation>:<kind>`.
    pub idempotency_key: String,
    /// A one-line title.
    pub title: String,
    /// The message, following seed 002's templates.
    pub text: String,
    pub created_at_ms: u64,
    /// Delivery per sink name.
    pub deliveries: BTreeMap<String, SinkDelivery>,
}

impl Notification {
    /// Whether every one of `sinks` is settled for this notification.
    pub fn is_settled_for<'a>(&self, sinks: impl IntoIterator<Item = &'a str>) -> bool {
        sinks.into_iter().all(|sink| {
            self.deliveries
                .get(sink)
                .is_some_and(SinkDelivery::is_settled)
        })
    }
}

/// All notifications, in creation order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outbox {
    next_id: u64,
    pub notifications: BTreeMap<NotificationId, Notification>,
    /// Per sink with a recorded delivery: every notification before this one is
    /// settled for it, so `pending` starts there and costs what is unsettled, not the
    /// whole history. A sink with nothing recorded starts at the first notification.
    #[serde(default)]
    settled_below: BTreeMap<String, NotificationId>,
}

impl Outbox {
    /// Queues a notification about a deliberation; returns its id.
    pub fn push(
        &mut self,
        fleet: &str,
        kind: NotificationKind,
        deliberation: DeliberationId,
        title: String,
        text: String,
        now: u64,
    ) -> NotificationId {
        let key = format!("{fleet}:{deliberation}:{}", kind.suffix());
        self.insert(kind, Some(deliberation), key, title, text, now)
    }

    /// Queues the report of failover drill `drill`; returns its id.
    pub fn push_drill(
        &mut self,
        fleet: &str,
        drill: u64,
        title: String,
        text: String,
        now: u64,
    ) -> NotificationId {
        let kind = NotificationKind::DrillCompleted;
        let key = format!("{fleet}:drill-{drill}:{}", kind.suffix());
        self.insert(kind, None, key, title, text, now)
    }

    fn insert(
        &mut self,
        kind: NotificationKind,
        deliberation: Option<DeliberationId>,
        idempotency_key: String,
        title: String,
        text: String,
        now: u64,
    ) -> NotificationId {
        self.next_id += 1;
        let id = NotificationId(self.next_id);
        self.notifications.insert(
            id,
            Notification {
                id,
                kind,
                deliberation,
                idempotency_key,
                title,
                text,
                created_at_ms: now,
                deliveries: BTreeMap::new(),
            },
        );
        id
    }

    /// Commits the result of one attempt at one sink. A result for a sink that is
    /// already delivered changes nothing, so a late report cannot undo a delivery.
    pub fn record(
        &mut self,
        id: NotificationId,
        sink: &str,
        result: DeliveryResult,
        now: u64,
    ) -> Result<&Notification, RuleViolation> {
        check_text("sink", sink, NAME_BYTES_MAX)?;
        let notification = self
            .notifications
            .get_mut(&id)
            .ok_or_else(|| RuleViolation::UnknownNotification { id: id.to_string() })?;
        let delivery = notification.deliveries.entry(sink.to_string()).or_default();
        if delivery.delivered_at_ms.is_none() {
            delivery.attempts += 1;
            match result {
                DeliveryResult::Delivered => delivery.delivered_at_ms = Some(now),
                DeliveryResult::Failed { error, permanent } => {
                    delivery.last_error = Some(error);
                    delivery.gave_up = permanent;
                }
            }
        }
        // A transient failure after a permanent one opens the delivery again.
        let mark = mark_after_change(
            &self.notifications,
            self.settled_below.get(sink).copied().unwrap_or_default(),
            id,
            NotificationId(self.next_id + 1),
            |notification| notification.is_settled_for([sink]),
        );
        self.settled_below.insert(sink.to_string(), mark);
        Ok(&self.notifications[&id])
    }

    /// Notifications not yet settled for every one of `sinks`, oldest first.
    pub fn pending<'a>(
        &'a self,
        sinks: &'a [String],
    ) -> impl Iterator<Item = &'a Notification> + 'a {
        // With no sinks, every notification is settled for all of them.
        let from = sinks
            .iter()
            .map(|sink| self.settled_below.get(sink).copied().unwrap_or_default())
            .min()
            .unwrap_or(NotificationId(u64::MAX));
        self.notifications
            .range(from..)
            .map(|(_, notification)| notification)
            .filter(move |n| !n.is_settled_for(sinks.iter().map(String::as_str)))
    }
}
