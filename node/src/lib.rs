//! `fleet-node`: one node of a Fleet — the replicated state machine and, around it,
//! the runtime that serves it.
//!
//! # Layout
//! - [`state`]: the pure replicated state machine. Every protocol rule of the fleet
//!   (roles, deliberations, notifications, the agents' shared state) lives there and
//!   nowhere else; it reads no clock and does no I/O.
//!
//! See `docs/ARCHITECTURE.md` for the code map and the invariants.

pub mod state;
