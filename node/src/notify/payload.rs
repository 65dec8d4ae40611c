//! `NotificationPayload`: the generic JSON form of a notification, sent to webhook
//! sinks and on a command sink's stdin.
//!
//! It is a stable wire shape of its own rather than the state's `Notification`
//! serialised: the state's types may change shape between versions (and carry the
//! per-sink delivery records, which are none of a receiver's business), while a
//! receiver's script should keep working.

use serde::{Deserialize, Serialize};

use crate::state::outbox::{Notification, NotificationKind};

/// One notification as receivers see it:
/// `{"id":"n-4","kind":"deliberation_started","deliberation":"d-1","idempotency_key":…,
/// "title":…,"text":…,"created_at_ms":…}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationPayload {
    /// The notification's id, like `n-4`.
    pub id: String,
    /// `deliberation_started`, `deliberation_decided` or `drill_completed`.
    pub kind: String,
    /// The deliberation it is about, like `d-1`, if any.
    pub deliberation: Option<String>,
    /// The same on every attempt, so a receiver can drop repeats.
    pub idempotency_key: String,
    /// A one-line title.
    pub title: String,
    /// The message.
    pub text: String,
    /// When the notification was created (the leader's clock), in ms since the epoch.
    pub created_at_ms: u64,
}

impl NotificationPayload {
    /// The payload of `notification`.
    pub fn of(notification: &Notification) -> Self {
        Self {
            id: notification.id.to_string(),
            kind: kind_name(notification.kind).to_owned(),
            deliberation: notification.deliberation.map(|id| id.to_string()),
            idempotency_key: notification.idempotency_key.clone(),
            title: notification.title.clone(),
            text: notification.text.clone(),
            created_at_ms: notification.created_at_ms,
        }
    }

    /// The payload as JSON bytes.
    pub fn to_json(&self) -> Vec<u8> {
        // Serialising a struct of strings and integers into memory cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// The wire name of a notification kind.
pub fn kind_name(kind: NotificationKind) -> &'static str {
    match kind {
        NotificationKind::DeliberationStarted => "deliberation_started",
        NotificationKind::DeliberationDecided => "deliberation_decided",
        NotificationKind::DrillCompleted => "drill_completed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_have_snake_case_wire_names() {
        assert_eq!(
            kind_name(NotificationKind::DeliberationStarted),
            "deliberation_started"
        );
        assert_eq!(
            kind_name(NotificationKind::DeliberationDecided),
            "deliberation_decided"
        );
        assert_eq!(
            kind_name(NotificationKind::DrillCompleted),
            "drill_completed"
        );
    }
}
