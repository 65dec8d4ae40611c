//! `HttpMessage`: the HTTP request one notification becomes for one HTTP sink, built
//! without any I/O so its shape can be checked on its own.
//!
//! Per kind:
//! - ntfy: `POST {url}/{topic}`, the text as a plain body, headers `Title` and
//!   `Tags: fleet`, and `Authorization: Bearer` when a token is set;
//! - Discord: `POST url` with an embed (`title`, `description`), because an embed's
//!   description holds 4096 characters where a plain message holds 2000, and the
//!   text is never cut;
//! - Slack: `POST url` with `{"text": "*title*\ntext"}`;
//! - webhook: `POST url` with the generic [`NotificationPayload`], and
//!   `Authorization: Bearer` when a token is set.
//!
//! Every one carries `Idempotency-Key` (the notification's key, the same on every
//! attempt) and `User-Agent: fleetd/<version>`.

use base64::Engine;
use serde_json::json;

use super::payload::NotificationPayload;
use super::sink_config::SinkKind;
use crate::config::SecretToken;
use crate::state::outbox::Notification;

/// The `User-Agent` every HTTP sink is sent.
pub const USER_AGENT: &str = concat!("fleetd/", env!("CARGO_PKG_VERSION"));
/// The tag ntfy shows on every fleet notification.
pub const NTFY_TAGS: &str = "fleet";
/// The longest embed title Discord accepts; a longer title goes into the description.
pub const DISCORD_EMBED_TITLE_CHARS_MAX: usize = 256;

/// One HTTP request to send: always a `POST`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpMessage {
    /// Where to send it. For Discord and Slack it contains their secret: never log it.
    pub url: String,
    /// Headers other than `Authorization`, in the order they are sent.
    pub headers: Vec<(&'static str, String)>,
    /// Sent as `Authorization: Bearer <token>` and marked sensitive.
    pub bearer_token: Option<SecretToken>,
    /// The body's `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl HttpMessage {
    /// The request for `notification` at a sink of `kind`; `None` for a command sink.
    pub fn for_sink(kind: &SinkKind, notification: &Notification) -> Option<Self> {
        let mut headers = vec![
            ("Idempotency-Key", notification.idempotency_key.clone()),
            ("User-Agent", USER_AGENT.to_owned()),
        ];
        let message = match kind {
            SinkKind::Ntfy {
                url, topic, token, ..
            } => {
                headers.push(("Title", header_text(&notification.title)));
                headers.push(("Tags", NTFY_TAGS.to_owned()));
                Self {
                    url: format!("{}/{topic}", url.trim_end_matches('/')),
                    headers,
                    bearer_token: token.clone(),
                    content_type: "text/plain; charset=utf-8",
                    body: notification.text.clone().into_bytes(),
                }
            }
            SinkKind::Discord { url } => Self::json(url, headers, discord_body(notification)),
            SinkKind::Slack { url } => Self::json(url, headers, slack_body(notification)),
            SinkKind::Webhook { url, token, .. } => Self {
                url: url.clone(),
                headers,
                bearer_token: token.clone(),
                content_type: "application/json",
                body: NotificationPayload::of(notification).to_json(),
            },
            SinkKind::Command { .. } => return None,
        };
        Some(message)
    }

    fn json(url: &str, headers: Vec<(&'static str, String)>, body: serde_json::Value) -> Self {
        Self {
            url: url.to_owned(),
            headers,
            bearer_token: None,
            content_type: "application/json",
            body: body.to_string().into_bytes(),
        }
    }
}

/// Discord's body: an embed, with no mentions parsed so that a topic containing
/// `@everyone` cannot ping a channel.
fn discord_body(notification: &Notification) -> serde_json::Value {
    let embed = if notification.title.chars().count() <= DISCORD_EMBED_TITLE_CHARS_MAX {
        json!({ "title": notification.title, "description": notification.text })
    } else {
        // Discord refuses a longer embed title; the whole title goes first into the
        // description instead, so nothing is cut.
        json!({ "description": format!("**{}**\n\n{}", notification.title, notification.text) })
    };
    json!({ "embeds": [embed], "allowed_mentions": { "parse": [] } })
}

/// Slack's body. Slack reads `&`, `<` and `>` as markup (`<!channel>` pings
/// everyone), so they are escaped as Slack documents.
fn slack_body(notification: &Notification) -> serde_json::Value {
    json!({
        "text": format!(
            "*{}*\n{}",
            slack_escape(&notification.title),
            slack_escape(&notification.text)
        )
    })
}

fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A header value for free text. HTTP header values are visible ASCII; other text
/// (a topic in German, an em dash, a newline) is sent as an RFC 2047 encoded word,
/// which ntfy decodes. Text that already looks like an encoded word is encoded too,
/// so it arrives as written.
pub fn header_text(text: &str) -> String {
    let plain = text.chars().all(|c| c == ' ' || c.is_ascii_graphic()) && !text.contains("=?");
    if plain {
        text.to_owned()
    } else {
        format!(
            "=?UTF-8?B?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text)
        )
    }
}
