//! A harness for tests against real `fleetd` processes on loopback: a fleet made with
//! `fleetctl init`, nodes started, killed (`SIGKILL`), paused and restarted as an
//! operator would, and a gRPC client that talks to any node with the operator token.
//!
//! # Layout
//! - [`process_fleet`]: `ProcessFleet`, the processes and their files.
//! - [`client`]: `TestClient`, writes and reads through the client API.
//! - [`bare_grpc`]: `BareGrpcClient`, unary calls straight on one HTTP/2 connection,
//!   the write bench's load generator.
//! - [`container_fleet`]: `ContainerFleet`, one `fleetd` per Docker container on
//!   networks of the test's own, to cut a node off or freeze it; [`fleetd_image`] and
//!   [`docker`] beneath it.
//! - [`etcd`]: the part of etcd's v3 API the benchmarks drive, and `EtcdCluster`, three
//!   etcd members on loopback.
//! - [`jitter_relay`]: `JitterRelay`, a UDP relay that delays every datagram, for
//!   jittered latency between nodes.
//! - [`latency`]: `LatencyRun`, concurrent clients and their latency percentiles.
//! - [`disk_probe`]: the disk's `fdatasync` timed in a burst before and after the runs
//!   and, by `DiskProbe`, during one.
//! - [`memory_probe`]: `MemoryProbe`, the host's memory latency timed during a run.
//! - [`sampler`]: `Sampler`, the thread beneath both probes.

pub mod bare_grpc;
pub mod client;
pub mod container_fleet;
pub mod disk_probe;
pub mod docker;
pub mod etcd;
pub mod fleetd_image;
pub mod jitter_relay;
pub mod latency;
pub mod memory_probe;
pub mod process_fleet;
pub mod running_fleetctl;
pub mod sampler;

pub use client::TestClient;
pub use process_fleet::ProcessFleet;
pub use running_fleetctl::RunningFleetctl;

/// Defines, for each async test function `name(transport: &str) -> Result<()>` of the
/// calling file, the tests `over_quic::name` and `over_grpc::name`.
#[macro_export]
macro_rules! over_both_transports {
    ($($test:ident),* $(,)?) => {
        mod over_quic {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() -> anyhow::Result<()> {
                    super::$test("quic").await
                }
            )*
        }
        mod over_grpc {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() -> anyhow::Result<()> {
                    super::$test("grpc").await
                }
            )*
        }
    };
}
