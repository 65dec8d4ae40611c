//! A harness for tests against real `fleetd` processes on loopback: a fleet made with
//! `fleetctl init`, nodes started, killed (`SIGKILL`), paused and restarted as an
//! operator would, and a gRPC client that talks to any node with the operator token.
//!
//! # Layout
//! - [`process_fleet`]: `ProcessFleet`, the processes and their files.
//! - [`client`]: `TestClient`, writes and reads through the client API.
//! - [`etcd`]: the part of etcd's v3 API the benchmarks drive, and `EtcdCluster`, three
//!   etcd members on loopback.
//! - [`jitter_relay`]: `JitterRelay`, a UDP relay that delays every datagram, for
//!   jittered latency between nodes.
//! - [`latency`]: `LatencyRun`, concurrent clients and their latency percentiles.
//! - [`disk_probe`]: the disk's `fdatasync` timed in a burst before and after the runs
//!   and, by `DiskProbe`, during one.

pub mod client;
pub mod disk_probe;
pub mod etcd;
pub mod jitter_relay;
pub mod latency;
pub mod process_fleet;
pub mod running_fleetctl;

pub use client::TestClient;
pub use process_fleet::ProcessFleet;
pub use running_fleetctl::RunningFleetctl;
