//! `fleet-node`: one node of a Fleet — the replicated state machine and, around it,
//! the runtime that serves it.
//!
//! # Layout
//! - [`state`]: the pure replicated state machine. Every protocol rule of the fleet
//!   (roles, deliberations, notifications, the agents' shared state) lives there and
//!   nowhere else; it reads no clock and does no I/O.
//! - [`raft`]: the openraft type configuration (`FleetRaft`) and peer description.
//! - [`api`]: the client API edge: authentication, the gRPC service, read queries.
//! - [`runtime`]: the running node: propose/forward, reads, status, driver, effects.
//! - [`store`]: RocksDB storage for Raft — the fsynced log and vote, the state machine
//!   store with its persisted snapshot, and the `StateHandle` for reads.
//! - [`transport`]: node-to-node RPC transports (QUIC, gRPC), carrying Raft payloads.
//! - [`identity`]: the fleet CA, node certificates (node name = identity) and the TLS
//!   configurations that admit only this fleet's nodes.
//! - [`agent`]: asking the node's own agent for a position (command, OpenAI-compatible
//!   gateway, or manual).
//! - [`notify`]: delivering operator notifications to sinks (ntfy, Discord, Slack,
//!   webhook, command), and a local webhook receiver.
//! - [`gateway`]: handing messages relayed to this node's sessions to its local
//!   agent gateway.
//! - [`config`]: the node's own configuration (`NodeConfig`): a TOML file plus
//!   `FLEET_*` environment overrides, validated at start.
//!
//! See `docs/ARCHITECTURE.md` for the code map and the invariants.

pub mod agent;
pub mod api;
pub mod config;
pub mod gateway;
pub mod identity;
pub mod notify;
pub mod raft;
pub mod runtime;
pub mod state;
pub mod store;
pub mod transport;
