//! The replicated state machine of the fleet: every protocol rule, and nothing else.
//!
//! This module is pure. It reads no clock (the leader's timestamp travels in each
//! [`Command`]), touches no file, socket or runtime, and owns no randomness. Given
//! the same commands in the same order, every node reaches the same [`FleetState`],
//! the same responses and the same [`Effect`]s. Raft makes the order the same; the
//! node runtime carries the effects out. The rules are therefore tested here, fast and
//! exhaustively, without a cluster.
//!
//! # Layout
//! - [`fleet_state`]: `FleetState::apply`, the dispatcher, and the cross-part rules
//!   (notes on decision, notifications, reassignment on failover).
//! - [`roles`]: primary and note-taker, epochs, failback hold (R1, R2).
//! - [`deliberation`]: phases, limits, consensus and hierarchy decisions (D1–D6, D9).
//! - [`router`] and [`tier`]: the responder for a question and whether to deliberate
//!   (R3, D5, D6, S4).
//! - [`notes`] and [`outbox`]: the notes file and the operator's notifications (D7, D8).
//! - [`sessions`], [`relay`], [`event_log`], [`artifacts`], [`bulletin`],
//!   [`capabilities`]: the agents' shared state (S1–S4).
//! - [`duties`]: what each node must still do (speak, write notes, deliver), read
//!   off the state so it survives restarts and failovers.
//! - [`command`], [`effect`], [`response`], [`error`]: what goes in and comes out.
//! - [`snapshot`]: the versioned encoding for Raft snapshots and backups.
//! - `scan_mark` and `key_index`: where the scans that run with every command start,
//!   and an author's earlier use of an idempotency key, so that neither costs more as
//!   the history grows.

pub mod actor;
pub mod artifacts;
pub mod bulletin;
pub mod capabilities;
pub mod command;
pub mod deliberation;
pub mod drill_report;
pub mod duties;
pub mod effect;
pub mod error;
pub mod event_log;
pub mod fleet_state;
mod key_index;
pub mod limits;
pub mod node_name;
pub mod notes;
pub mod outbox;
pub mod relay;
pub mod response;
pub mod roles;
pub mod router;
mod scan_mark;
pub mod sessions;
pub mod settings;
pub mod snapshot;
pub mod tier;

pub use actor::Actor;
pub use command::{Command, OpenDeliberation, Request};
pub use deliberation::{Confidence, DecidedBy, Deliberation, DeliberationId, Phase, Submission};
pub use drill_report::DrillReport;
pub use duties::Duty;
pub use effect::Effect;
pub use error::RuleViolation;
pub use fleet_state::{Applied, FleetState};
pub use node_name::NodeName;
pub use response::Response;
pub use roles::Role;
pub use settings::FleetSettings;
pub use snapshot::Snapshot;
pub use tier::Tier;
