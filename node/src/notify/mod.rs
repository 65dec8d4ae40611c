//! Operator notifications: delivering the replicated outbox to sinks (SPEC D8).
//!
//! A notification enters the replicated `state::outbox::Outbox` in the same command
//! as the change it announces. The *primary* delivers it to every sink configured on
//! it (`[[notify]]` in its node config): the runtime's delivery loop calls
//! [`attempt`](fn@attempt) for one notification at one sink, commits the outcome
//! through Raft as `RecordDelivery`, and asks [`RetryPolicy`] when to try again. This
//! module does no bookkeeping of its own; what was delivered is only ever what the
//! fleet state says.
//!
//! Delivery is *at least once*: a primary can fail between a sink's acknowledgement
//! and the commit of that result, and the next primary sends again. Every attempt
//! for one notification therefore carries the same idempotency key
//! (`Idempotency-Key` on HTTP, `FLEET_IDEMPOTENCY_KEY` for commands, and
//! `idempotency_key` in the JSON), so a receiver can drop repeats. Only a 2xx, or a
//! command's exit status 0, counts as delivered; redirects are not followed.
//!
//! # Layout
//! - [`sink_config`]: `SinkConfig` and `SinkKind` from `[[notify]]`; `validate_all`,
//!   `resolve_against` (token files, relative programs).
//! - [`attempt`](mod@attempt): `Attempt`, the one-attempt function `attempt()`,
//!   `http_client()`.
//! - [`http_message`]: the request each HTTP kind (ntfy, Discord, Slack, webhook)
//!   is sent.
//! - [`payload`]: `NotificationPayload`, the generic JSON for webhooks and commands.
//! - [`command_sink`]: running a local program as a sink.
//! - [`retry_policy`]: `RetryPolicy`, exponential backoff and giving up.
//! - [`retry_after`]: reading a `Retry-After` header.
//! - [`webhook_receiver`], [`received_request`]: a local HTTP receiver that records
//!   requests and answers with scripted statuses, for `fleetctl demo` and tests.

pub mod attempt;
pub mod command_sink;
pub mod http_message;
pub mod payload;
pub mod received_request;
pub mod retry_after;
pub mod retry_policy;
pub mod sink_config;
pub mod webhook_receiver;

pub use attempt::{Attempt, attempt, http_client};
pub use command_sink::CommandSink;
pub use http_message::HttpMessage;
pub use payload::NotificationPayload;
pub use received_request::ReceivedRequest;
pub use retry_after::{RETRY_AFTER_MAX, parse_retry_after};
pub use retry_policy::RetryPolicy;
pub use sink_config::{SinkConfig, SinkKind, resolve_all, validate_all};
pub use webhook_receiver::WebhookReceiver;
