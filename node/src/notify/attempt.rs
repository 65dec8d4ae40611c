//! `Attempt`: the outcome of delivering one notification to one sink once, and
//! [`attempt`], which makes that one attempt.
//!
//! Only a 2xx (or a command's exit 0) counts as delivered. 429 and 5xx say "later",
//! as does a sink that cannot be reached or does not answer in time; any other
//! status (a 3xx, since redirects are not followed, or a 4xx) says the request
//! itself is wrong, so repeating it cannot help. Error texts name the sink, never its
//! URL: Discord and Slack webhook URLs carry their secret, and these texts are
//! replicated into the fleet state.

use std::error::Error as _;
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER};

use super::command_sink::CommandSink;
use super::http_message::{HttpMessage, USER_AGENT};
use super::retry_after::parse_retry_after;
use super::sink_config::{SinkConfig, SinkKind};
use crate::state::outbox::{DeliveryResult, Notification};

/// The longest response body quoted in an error. Longer bodies (an HTML error page)
/// are left out entirely rather than cut.
const BODY_QUOTE_BYTES_MAX: usize = 200;

/// The outcome of one attempt at one sink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// The sink acknowledged the notification.
    Delivered,
    /// It failed, and a later attempt may succeed.
    Retry {
        /// What went wrong, naming the sink.
        error: String,
        /// How long the sink asked to be left alone (`Retry-After`, at most an hour).
        retry_after: Option<Duration>,
    },
    /// It failed in a way another attempt with the same request cannot fix.
    Permanent {
        /// What went wrong, naming the sink.
        error: String,
    },
}

impl Attempt {
    /// The result to commit for this attempt. `give_up` turns a retryable failure
    /// into a final one (the retry policy ran out); a permanent failure is final
    /// anyway.
    pub fn to_delivery_result(&self, give_up: bool) -> DeliveryResult {
        match self {
            Self::Delivered => DeliveryResult::Delivered,
            Self::Retry { error, .. } => DeliveryResult::Failed {
                error: error.clone(),
                permanent: give_up,
            },
            Self::Permanent { error } => DeliveryResult::Failed {
                error: error.clone(),
                permanent: true,
            },
        }
    }
}

/// The HTTP client for [`attempt`]: never follows redirects (a redirect is reported
/// as a permanent failure instead, so a moved webhook is noticed and the body is
/// never re-sent to a host nobody configured), uses rustls, and identifies itself as
/// `fleetd/<version>`. Build it once and share it: it pools connections.
///
/// # Panics
/// Like `reqwest::Client::new`, if the TLS backend cannot be initialised, which
/// does not happen with the bundled rustls and its root certificates.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .use_rustls_tls()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(USER_AGENT)
        .build()
        .expect("a reqwest client with rustls and built-in roots can always be built")
}

/// Delivers `notification` to `sink` once, within the sink's `timeout_ms`. Never
/// retries by itself: the caller records the outcome and asks a `RetryPolicy` when
/// to try again.
pub async fn attempt(
    sink: &SinkConfig,
    notification: &Notification,
    http: &reqwest::Client,
) -> Attempt {
    let timeout = Duration::from_millis(sink.timeout_ms);
    if let SinkKind::Command { program, args } = &sink.kind {
        let command = CommandSink {
            name: &sink.name,
            program,
            args,
            timeout,
        };
        return command.deliver(notification).await;
    }
    match HttpMessage::for_sink(&sink.kind, notification) {
        Some(message) => send(&sink.name, message, timeout, http).await,
        None => Attempt::Permanent {
            error: format!(
                "sink {}: kind {} is not an HTTP sink",
                sink.name,
                sink.kind.name()
            ),
        },
    }
}

async fn send(
    name: &str,
    message: HttpMessage,
    timeout: Duration,
    http: &reqwest::Client,
) -> Attempt {
    let mut request = http
        .post(&message.url)
        .timeout(timeout)
        .header(CONTENT_TYPE, message.content_type)
        .body(message.body);
    for (header, value) in message.headers {
        request = request.header(header, value);
    }
    if let Some(token) = &message.bearer_token {
        let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", token.expose())) else {
            return Attempt::Permanent {
                error: format!(
                    "sink {name}: the token in token_file is not a valid HTTP header value"
                ),
            };
        };
        // Keeps the token out of any debug output of the request.
        value.set_sensitive(true);
        request = request.header(AUTHORIZATION, value);
    }
    let response = match request.send().await {
        Ok(response) => response,
        Err(error) => return request_failed(name, error, timeout),
    };
    let status = response.status();
    if status.is_success() {
        return Attempt::Delivered;
    }
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| parse_retry_after(value, SystemTime::now()));
    let quoted = match short_body(response).await {
        Some(body) => format!(": {body}"),
        None => String::new(),
    };
    if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        return Attempt::Retry {
            error: format!("sink {name}: HTTP {status}{quoted}"),
            retry_after,
        };
    }
    let hint = if status.is_redirection() {
        " (redirects are not followed; configure the final URL)"
    } else if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        " (check the sink's URL and token)"
    } else {
        ""
    };
    Attempt::Permanent {
        error: format!("sink {name}: HTTP {status}{hint}{quoted}"),
    }
}

/// The attempt's outcome when no response came back.
fn request_failed(name: &str, error: reqwest::Error, timeout: Duration) -> Attempt {
    // The URL goes: for Discord and Slack it is the secret.
    let error = error.without_url();
    if error.is_builder() {
        return Attempt::Permanent {
            error: format!(
                "sink {name}: cannot build the request: {}",
                error_chain(&error)
            ),
        };
    }
    let error = if error.is_timeout() {
        format!(
            "sink {name}: no answer within {} ms (timeout_ms)",
            timeout.as_millis()
        )
    } else if error.is_connect() {
        format!("sink {name}: cannot connect: {}", error_chain(&error))
    } else {
        format!("sink {name}: request failed: {}", error_chain(&error))
    };
    Attempt::Retry {
        error,
        retry_after: None,
    }
}

/// `error` and its sources, joined by `: `, with repeats dropped (hyper and reqwest
/// often wrap the same cause twice).
fn error_chain(error: &reqwest::Error) -> String {
    let mut parts: Vec<String> = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

/// The response body when it is short text, with whitespace runs collapsed, so that
/// an error like Discord's `{"message": "Invalid Webhook Token"}` is kept. Longer or
/// binary bodies give `None`: quoting them in part could mislead.
async fn short_body(mut response: reqwest::Response) -> Option<String> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) => break,
            // Part of a body is not quoted.
            Err(_) => return None,
        }
        if body.len() > BODY_QUOTE_BYTES_MAX {
            return None;
        }
    }
    let text = std::str::from_utf8(&body).ok()?;
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let printable = text.chars().all(|c| !c.is_control());
    (!text.is_empty() && printable).then_some(text)
}
