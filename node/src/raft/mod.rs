//! Raft glue: the openraft type configuration and the peer description.
//!
//! # Layout
//! - [`type_config`]: `FleetRaft`, `CommandOutcome`, `node_id`.
//! - [`peer`]: `Peer`, a member's name and addresses.
//! - [`network`]: `FleetNetwork`, openraft's network over a transport client per peer.
//! - [`rpc_handler`]: `RaftRpcHandler`, serving incoming Raft RPCs from any transport.
//! - [`wire`]: encodings openraft has no serde form for (a whole snapshot).

pub mod network;
pub mod peer;
pub mod rpc_handler;
pub mod type_config;
pub mod wire;

pub use peer::Peer;
pub use type_config::{CommandOutcome, FleetRaft, node_id};
