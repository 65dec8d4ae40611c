//! The node runtime: everything around the pure state machine that does I/O.
//!
//! # Layout
//! - [`fleet_node`]: `FleetNode` — propose (stamped with the leader's clock, forwarded
//!   by followers), read, status, membership.
//! - [`forwarder`]: follower-to-leader forwarding over the client API.
//! - [`driver`]: the leader's ticks that move the state's time on.
//! - [`effects`]: logs the effects of applied commands.
//! - [`duty_runner`]: carries out this node's duties read off the state — its agent's
//!   inputs, notes files, notification deliveries as primary, relayed messages.
//! - [`message_relay`]: hands one relayed message to the local gateway and reports it.
//! - [`health`]: the leader's health monitor; leadership follows the primary.
//! - [`snapshot_pacer`]: when this node snapshots: after `snapshot_every_logs`
//!   entries and once the log since the last snapshot is as large as that snapshot.
//! - [`spin_window`]: keeps the CPUs awake for a moment after a lone log write, so a
//!   write's hand-offs do not wait for halted CPUs.
//! - [`cpu_latency_request`]: the process's request to the kernel's CPU latency QoS,
//!   which the window holds where it may.
//! - [`succession`]: the successor stands as soon as a silent leader's lease ends.
//! - [`start`](mod@start): wiring a node from its config: store, Raft, transports,
//!   API server.

pub mod cpu_latency_request;
pub mod driver;
pub mod duty_runner;
pub mod effects;
pub mod fleet_node;
pub mod forwarder;
pub mod health;
pub mod message_relay;
pub mod snapshot_pacer;
pub mod spin_window;
pub mod start;
pub mod succession;

pub use fleet_node::FleetNode;
pub use start::{RunningNode, start};
