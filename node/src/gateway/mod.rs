//! Handing relayed messages to this node's own agent gateway (SPEC S1).
//!
//! A message sent with `fleetctl send --to 5070-main` is committed to the fleet
//! state; the node that owns the session reads it off its duties and posts it to the
//! gateway's inbound hook. What the gateway said is committed back: delivered,
//! queued in the session's inbox while the gateway cannot be reached, or failed.
//!
//! # Layout
//! - [`gateway_config`]: `GatewayConfig`, the `[gateway]` table (hook URL, token).
//! - [`gateway_hook`]: `HookOutcome` and [`gateway_hook::post_message`], one attempt.

pub mod gateway_config;
pub mod gateway_hook;

pub use gateway_config::GatewayConfig;
pub use gateway_hook::{HookOutcome, post_message};
