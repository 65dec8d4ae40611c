//! Raft glue: the openraft type configuration and the peer description.
//!
//! # Layout
//! - [`type_config`]: `FleetRaft`, `CommandOutcome`, `node_id`.
//! - [`peer`]: `Peer`, a member's name and addresses.
//! - [`log_entry`]: `LogEntry`, a log entry that carries its JSON once encoded.
//! - `capped_buffer`: `CappedBuffer`, what messages and entries are encoded into.
//! - [`commit_piggyback`]: `piggyback_commits`, a new commit index carried by the
//!   next append rather than a round trip of its own.
//! - [`network`]: `FleetNetwork`, openraft's network over a transport client per peer.
//! - [`rpc_handler`]: `RaftRpcHandler`, serving incoming Raft RPCs from any transport.
//! - [`leader_contact`]: `LeaderContact`, when a leader last reached this node.
//! - [`wire`]: encodings beyond openraft's serde forms (an append that copies its
//!   entries' JSON, a whole snapshot).

pub(crate) mod append_reader;
pub(crate) mod capped_buffer;
pub mod commit_piggyback;
pub mod leader_contact;
pub mod log_entry;
pub mod network;
pub mod peer;
pub mod rpc_handler;
pub mod type_config;
pub mod wire;

pub use leader_contact::LeaderContact;
pub use log_entry::LogEntry;
pub use peer::Peer;
pub use type_config::{CommandOutcome, FleetRaft, node_id};
