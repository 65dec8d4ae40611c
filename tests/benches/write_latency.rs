//! Write latency and throughput of a three-node fleet on loopback, over QUIC and over
//! gRPC, side by side with etcd 3.4 (three members on loopback, default settings) in
//! the same run with the same client pattern: `clients` concurrent clients, each with
//! its own connection to the leader (connected, and one write made, before the
//! measured run), each writing one small record after another.
//!
//! Run: `make bench` (or `cargo bench --workspace --bench write_latency` after `cargo
//! build --workspace --release --bins`: an optimised build, as etcd's is). `FLEET_BENCH_WRITES` sets the writes
//! per run (default 10000); `FLEET_BENCH_CLIENTS` (say `64`) and `FLEET_BENCH_SYSTEMS`
//! (say `quic,etcd`; of `quic`, `grpc`, `etcd`) narrow a run down, for profiling.
//! `FLEET_BENCH_ROUNDS` (default 1) runs the whole selection that many times, the
//! systems in turn within each round, and adds Fleet's throughput and p50 over
//! etcd's in the same round, median and range over the rounds: on a shared host
//! whose speed drifts by tens of percent within minutes, a ratio of runs made side by
//! side says more than rows made minutes apart.
//! Prints a Markdown table for `docs/benchmarks.md`, with the CPU time the three
//! servers together and the clients spent per write: when both cores are busy, that
//! decides the throughput, and it varies less than wall-clock figures on a busy host;
//! and how long the disk took to `fdatasync` a small write before and after the runs.

use std::time::Duration;

use anyhow::{Result, bail};
use fleet_node::state::event_log::{EventStatus, NewEvent};
use fleet_node::state::{Request, Response};
use fleet_tests::etcd::{self, EtcdCluster, pb};
use fleet_tests::latency::{LatencyRun, fdatasync_latencies, percentile};
use fleet_tests::{ProcessFleet, TestClient};

const CONCURRENCY: [usize; 3] = [1, 16, 64];
const SYSTEMS: [&str; 3] = ["quic", "grpc", "etcd"];
const NODES: [&str; 3] = ["beast", "5070", "mac"];
/// How many `fdatasync` calls the disk is timed with, before and after the runs.
const DISK_SAMPLES: usize = 500;

fn record(client: usize, i: usize) -> Request {
    Request::AppendEvent(NewEvent {
        event_type: "bench.write".into(),
        stream: "bench".into(),
        room: "bench".into(),
        to: "*".into(),
        correlation_id: None,
        status: EventStatus::Open,
        body: format!("client {client} write {i} {}", "x".repeat(32)),
        // Each write carries its own idempotency key, as `fleetctl events append` sends.
        request_id: Some(format!("bench-{client}-{i}")),
    })
}

async fn fleet_runs(transport: &str, writes: usize) -> Result<Vec<LatencyRun>> {
    let mut fleet = ProcessFleet::init(&NODES)?;
    fleet.env.push(("FLEET_TRANSPORT".into(), transport.into()));
    fleet.start_all()?;
    fleet.bootstrap("beast")?;
    let leader = fleet.wait_for_leader(None, Duration::from_secs(15))?;
    let mut runs = Vec::new();
    let servers = fleet.pids();
    for clients in concurrency()? {
        let run = LatencyRun::measure(clients, writes, &servers, |c| {
            let (dir, leader) = (fleet.dir().to_path_buf(), leader.clone());
            async move {
                let client = TestClient::connect(&dir, &leader).await?;
                let write = move |i| {
                    let mut client = client.clone();
                    async move {
                        match client.write(&record(c, i), false).await? {
                            (Ok(Response::Event { .. }), _) => Ok(()),
                            (other, _) => bail!("write answered {other:?}"),
                        }
                    }
                };
                // Connects (TLS) outside the measured run, as etcd's client does.
                write(usize::MAX).await?;
                Ok(write)
            }
        })
        .await?;
        runs.push(run);
    }
    Ok(runs)
}

async fn etcd_runs(writes: usize) -> Result<Vec<LatencyRun>> {
    let cluster = EtcdCluster::start().await?;
    let leader = cluster.leader_url(Duration::from_secs(30)).await?;
    let mut runs = Vec::new();
    let servers = cluster.pids();
    for clients in concurrency()? {
        let leader = leader.clone();
        let run = LatencyRun::measure(clients, writes, &servers, |c| {
            let leader = leader.clone();
            async move {
                let client = pb::kv_client::KvClient::new(etcd::channel(&leader).await?);
                let write = move |i| {
                    let mut client = client.clone();
                    async move {
                        let value = format!("client {c} write {i} {}", "x".repeat(32));
                        client
                            .put(pb::PutRequest {
                                key: format!("bench/{c}/{i}").into_bytes(),
                                value: value.into_bytes(),
                            })
                            .await?;
                        Ok(())
                    }
                };
                // One write outside the measured run, like Fleet's client.
                write(usize::MAX).await?;
                Ok(write)
            }
        })
        .await?;
        runs.push(run);
    }
    Ok(runs)
}

/// The values listed, comma-separated, in the environment variable `name` (each one
/// of `all`), or all of `all` when it is not set.
fn listed<T>(name: &str, all: &[T]) -> Result<Vec<T>>
where
    T: std::str::FromStr + Clone + PartialEq,
{
    let Ok(list) = std::env::var(name) else {
        return Ok(all.to_vec());
    };
    list.split(',')
        .map(|item| match item.trim().parse::<T>() {
            Ok(value) if all.contains(&value) => Ok(value),
            _ => bail!("{name}: `{item}` is not one of the measured values"),
        })
        .collect()
}

fn concurrency() -> Result<Vec<usize>> {
    listed("FLEET_BENCH_CLIENTS", &CONCURRENCY)
}

fn row(round: usize, system: &str, run: &LatencyRun) -> String {
    let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
    format!(
        "| {round} | {system} | {} | {} | {} | {} | {:.0} | {:.0} | {:.0} |",
        run.clients,
        run.writes,
        ms(run.percentile(0.5)),
        ms(run.percentile(0.99)),
        run.throughput(),
        run.server_cpu_per_write_us(),
        run.client_cpu_per_write_us()
    )
}

/// One system's rows of one round.
struct Measured {
    system: String,
    round: usize,
    runs: Vec<LatencyRun>,
}

/// The median of `values` and their range, as `median (min–max)`.
fn spread(mut values: Vec<f64>) -> String {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    let median = if values.len().is_multiple_of(2) {
        (values[middle - 1] + values[middle]) / 2.0
    } else {
        values[middle]
    };
    format!(
        "{median:.2} ({:.2}–{:.2})",
        values[0],
        values[values.len() - 1]
    )
}

/// Per client count and Fleet transport, Fleet's throughput and p50 over etcd's in
/// the same round, across the rounds.
fn ratios(measured: &[Measured]) -> Vec<String> {
    let mut lines = Vec::new();
    let etcd: Vec<&Measured> = measured.iter().filter(|m| m.system == "etcd 3.4").collect();
    let fleets = measured.iter().filter(|m| m.system != "etcd 3.4");
    let mut systems: Vec<&str> = Vec::new();
    for fleet in fleets {
        if !systems.contains(&fleet.system.as_str()) {
            systems.push(&fleet.system);
        }
    }
    for system in systems {
        for (row, clients) in etcd
            .first()
            .map_or(&[][..], |e| &e.runs[..])
            .iter()
            .enumerate()
        {
            let pairs: Vec<(&LatencyRun, &LatencyRun)> = measured
                .iter()
                .filter(|m| m.system == system)
                .filter_map(|fleet| {
                    let etcd = etcd.iter().find(|e| e.round == fleet.round)?;
                    Some((&fleet.runs[row], &etcd.runs[row]))
                })
                .collect();
            if pairs.is_empty() {
                continue;
            }
            let throughput = pairs
                .iter()
                .map(|(f, e)| f.throughput() / e.throughput())
                .collect();
            let p50 = pairs
                .iter()
                .map(|(f, e)| f.percentile(0.5).as_secs_f64() / e.percentile(0.5).as_secs_f64())
                .collect();
            lines.push(format!(
                "| {system} | {} | {} | {} | {} |",
                clients.clients,
                pairs.len(),
                spread(throughput),
                spread(p50)
            ));
        }
    }
    lines
}

fn main() -> Result<()> {
    let writes: usize = std::env::var("FLEET_BENCH_WRITES")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(10_000);
    let rounds: usize = std::env::var("FLEET_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1)
        .max(1);
    // The clients run on two workers whatever `TOKIO_WORKER_THREADS` says.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let systems = listed("FLEET_BENCH_SYSTEMS", &SYSTEMS.map(String::from))?;
        let with_etcd = systems.iter().any(|s| s == "etcd");
        if with_etcd && !EtcdCluster::available() {
            eprintln!("etcd is not installed (Debian: apt-get install etcd-server); only Fleet was measured");
        }
        let mut order: Vec<&str> = ["quic", "grpc"]
            .into_iter()
            .filter(|t| systems.iter().any(|s| s == t))
            .collect();
        if with_etcd && EtcdCluster::available() {
            order.push("etcd");
        }
        let disk_before = fdatasync_latencies(DISK_SAMPLES)?;
        let mut measured = Vec::new();
        for round in 1..=rounds {
            // Each round runs the systems in turn, starting from the other end every
            // other round, so that neither always runs on the host as the other left it.
            let mut turn = order.clone();
            if round.is_multiple_of(2) {
                turn.reverse();
            }
            for system in turn {
                let (name, runs) = match system {
                    "etcd" => ("etcd 3.4".to_string(), etcd_runs(writes).await?),
                    transport => (format!("fleet ({transport})"), fleet_runs(transport, writes).await?),
                };
                for run in &runs {
                    eprintln!("{}", row(round, &name, run));
                }
                measured.push(Measured { system: name, round, runs });
            }
        }
        println!(
            "| round | system | clients | writes | p50 ms | p99 ms | writes/s | server CPU µs/write | client CPU µs/write |"
        );
        println!("|---|---|---|---|---|---|---|---|---|");
        for m in &measured {
            for run in &m.runs {
                println!("{}", row(m.round, &m.system, run));
            }
        }
        let disk_after = fdatasync_latencies(DISK_SAMPLES)?;
        let us = |samples: &[Duration], q| percentile(samples, q).as_micros();
        println!();
        println!(
            "Disk: `fdatasync` after a 300-byte write, median {} µs, p90 {} µs before the runs; median {} µs, p90 {} µs after.",
            us(&disk_before, 0.5),
            us(&disk_before, 0.9),
            us(&disk_after, 0.5),
            us(&disk_after, 0.9)
        );
        let ratios = ratios(&measured);
        if !ratios.is_empty() {
            println!();
            println!("Fleet over etcd in the same round, median (range) over the rounds:");
            println!();
            println!("| system | clients | rounds | throughput, Fleet / etcd | p50, Fleet / etcd |");
            println!("|---|---|---|---|---|");
            for line in ratios {
                println!("{line}");
            }
        }
        Ok(())
    })
}
