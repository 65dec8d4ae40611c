//! Raft glue: the openraft type configuration and the peer description.
//!
//! # Layout
//! - [`type_config`]: `FleetRaft`, `CommandOutcome`, `node_id`.
//! - [`peer`]: `Peer`, a member's name and addresses.
//! - [`commit_piggyback`]: `piggyback_commits`, a new commit index carried by the
//!   next append rather than a round trip of its own.
//! - [`network`]: `FleetNetwork`, openraft's network over a transport client per peer.
//! - [`rpc_handler`]: `RaftRpcHandler`, serving incoming Raft RPCs from any transport.
//! - [`leader_contact`]: `LeaderContact`, when a leader last reached this node.
//! - [`wire`]: encodings openraft has no serde form for (a whole snapshot).

pub mod commit_piggyback;
pub mod leader_contact;
pub mod network;
pub mod peer;
pub mod rpc_handler;
pub mod type_config;
pub mod wire;

pub use leader_contact::LeaderContact;
pub use peer::Peer;
pub use type_config::{CommandOutcome, FleetRaft, node_id};
