//! Write latency and throughput of a three-node fleet on loopback, over QUIC and over
//! gRPC, side by side with etcd 3.4 (three members on loopback, default settings) in
//! the same run with the same client pattern: `clients` concurrent clients, each with
//! its own connection to the leader (connected, and one write made, before the
//! measured run), each writing one small record after another.
//!
//! Run: `make bench` (or `cargo bench --workspace --bench write_latency` after `cargo
//! build --workspace --release --bins`: an optimised build, as etcd's is). A row has
//! `FLEET_BENCH_WRITES` writes (default 10000), or `FLEET_BENCH_WRITES_PER_CLIENT`
//! from each client (default 1000) when that is more; `FLEET_BENCH_CLIENTS` (say
//! `64`, or counts beyond the default 1, 16 and 64, up to 1024, to see where
//! throughput stops growing) and `FLEET_BENCH_SYSTEMS` (say `quic,etcd`; of `quic`,
//! `grpc`, `etcd`) narrow a run down, for profiling. The clients call through
//! `BareGrpcClient` (each call made from the client's own task on its HTTP/2
//! connection: the load generator's CPU is taken from the same two cores as the
//! servers'), or with `FLEET_BENCH_LOAD=tonic` through tonic's generated clients, as
//! `fleetctl` calls; the same for every system.
//! `FLEET_BENCH_ROUNDS` (default 1) runs the whole selection that many times and adds
//! Fleet's throughput and p50 over etcd's in the same round, median and range over the
//! rounds. Within a round every selected system runs at once (idle but for its
//! heartbeats while another is measured), and each client count is measured on each
//! system in turn, every other round from the other end, each row once the servers
//! of all of them are quiet: on a shared host whose speed drifts by tens of percent
//! within minutes, rows made seconds apart say more than rows made minutes apart.
//! Prints a Markdown table for `docs/benchmarks.md`, with the CPU time the three
//! servers together and the clients spent per write: when both cores are busy, that
//! decides the throughput, and it varies less than wall-clock figures on a busy host;
//! the share of the CPU the hypervisor took during the row (stolen time) and the
//! slowest `fdatasync` of a small write that a probe timed every 50 ms meanwhile: a
//! shared host's CPU and disk slow or stall every system on it now and then, so the
//! ratios are given once over every round and once over the rounds in which neither row
//! was disturbed so; the median time of one load of a chase through 24 MiB that another
//! probe timed every 100 ms: on a shared host the memory answers slower while other
//! tenants load it, and every process here runs slower with it; and how long the disk
//! took to `fdatasync` a small write before and after the runs.
//! `FLEET_BENCH_TIMELINE=DIR` also writes every row's writes in the order sent
//! (`DIR/round<R>-<system>-<clients>.csv`: when each was sent and how long it took),
//! the probes' samples (`…-disk.csv`: each `fdatasync`'s time and the host's stolen CPU
//! ticks so far; `…-memory.csv`: each chase's time per load), and each round's `fleetd`
//! logs (`DIR/round<R>/`), for a look at when slow writes came and what the nodes and
//! the host did then.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use fleet_node::state::event_log::{EventStatus, NewEvent};
use fleet_node::state::{Request, Response, RuleViolation};
use fleet_tests::client::{WRITE_PATH, bare_api_client, write_outcome, write_request};
use fleet_tests::disk_probe::{DiskProbe, fdatasync_latencies};
use fleet_tests::etcd::{self, EtcdCluster, pb};
use fleet_tests::latency::{LatencyRun, cpu_time, percentile};
use fleet_tests::memory_probe::{CHAIN_BYTES, MemoryProbe, PointerChain};
use fleet_tests::{ProcessFleet, TestClient};

const CONCURRENCY: [usize; 3] = [1, 16, 64];
/// The fewest writes each client makes in a row (`FLEET_BENCH_WRITES_PER_CLIENT`):
/// 10,000 writes from 64 clients take under a second on a fast host, and a second's
/// row swings with whatever else that second held (a snapshot, a busy neighbour).
const WRITES_PER_CLIENT: usize = 1000;
/// The most clients `FLEET_BENCH_CLIENTS` may ask for (each holds a connection).
const CLIENTS_MAX: usize = 1024;
const SYSTEMS: [&str; 3] = ["quic", "grpc", "etcd"];
const NODES: [&str; 3] = ["beast", "5070", "mac"];
/// How many `fdatasync` calls the disk is timed with, before and after the runs.
const DISK_SAMPLES: usize = 500;
/// The most CPU time (percent of all CPUs) the hypervisor may take during a row for
/// the row to count as undisturbed: a second in which it takes a tenth slows every
/// process here, Fleet's and etcd's alike, by a third or more.
const STOLEN_QUIET_PERCENT: f64 = 2.0;
/// How often the disk is timed during a row (one `fdatasync` of a 300-byte write).
const DISK_PROBE_INTERVAL: Duration = Duration::from_millis(50);
/// The slowest timed `fdatasync` a row may see to count as undisturbed: the disk of a
/// shared host stalls now and then, for up to a second and more, and every commit of
/// every system on it waits meanwhile; outside a stall, one takes a few ms at most.
const DISK_STALL: Duration = Duration::from_millis(50);
/// How often the host's memory is timed during a row (a chase of 5,000 dependent
/// loads: 2.5 ms of one core's time at 500 ns a load).
const MEMORY_PROBE_INTERVAL: Duration = Duration::from_millis(100);

/// Whether neither the hypervisor (stolen CPU) nor a stalled disk slowed `run`.
fn undisturbed(run: &LatencyRun) -> bool {
    run.stolen_percent() <= STOLEN_QUIET_PERCENT
        && run.slowest_disk_sync.is_none_or(|sync| sync <= DISK_STALL)
}

/// Whether a Fleet write's `outcome` is the appended event it should be.
fn appended(outcome: Result<Response, RuleViolation>) -> Result<()> {
    match outcome {
        Ok(Response::Event { .. }) => Ok(()),
        other => bail!("write answered {other:?}"),
    }
}

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

/// A system started for one round: a Fleet over one transport, or etcd.
enum Cluster {
    Fleet {
        transport: String,
        fleet: ProcessFleet,
        leader: String,
    },
    Etcd {
        cluster: EtcdCluster,
        leader: String,
    },
}

impl Cluster {
    /// Starts `system` (`quic`, `grpc` or `etcd`) and waits for its leader.
    async fn start(system: &str) -> Result<Self> {
        if system == "etcd" {
            let cluster = EtcdCluster::start().await?;
            let leader = cluster.leader_url(Duration::from_secs(30)).await?;
            return Ok(Self::Etcd { cluster, leader });
        }
        let mut fleet = ProcessFleet::init(&NODES)?;
        fleet.env.push(("FLEET_TRANSPORT".into(), system.into()));
        fleet.start_all()?;
        fleet.bootstrap("beast")?;
        let leader = fleet.wait_for_leader(None, Duration::from_secs(15))?;
        Ok(Self::Fleet {
            transport: system.to_string(),
            fleet,
            leader,
        })
    }

    fn name(&self) -> String {
        match self {
            Self::Fleet { transport, .. } => format!("fleet ({transport})"),
            Self::Etcd { .. } => "etcd 3.4".to_string(),
        }
    }

    /// Copies each Fleet node's log into `dir` as `<transport>-<node>.log` (etcd's
    /// members log nowhere the bench keeps).
    fn keep_logs(&self, dir: &std::path::Path) -> Result<()> {
        if let Self::Fleet {
            transport, fleet, ..
        } = self
        {
            std::fs::create_dir_all(dir)?;
            for node in NODES {
                std::fs::write(dir.join(format!("{transport}-{node}.log")), fleet.log(node))?;
            }
        }
        Ok(())
    }

    fn pids(&self) -> Vec<u32> {
        match self {
            Self::Fleet { fleet, .. } => fleet.pids(),
            Self::Etcd { cluster, .. } => cluster.pids(),
        }
    }

    /// One row: `clients` clients, each with its own connection to the leader
    /// (connected, and one write made, before the measured run), `writes` in all,
    /// each client calling as `load` says.
    async fn measure(&self, clients: usize, writes: usize, load: Load) -> Result<LatencyRun> {
        let servers = self.pids();
        LatencyRun::measure(clients, writes, &servers, |c| async move {
            let mut write = self.writer(c, load).await?;
            // Connects (TLS for Fleet) and writes once outside the measured run.
            write(usize::MAX).await?;
            Ok(write)
        })
        .await
    }

    /// Client `c`'s writes to this system's leader, on a connection of its own.
    async fn writer(&self, c: usize, load: Load) -> Result<Writer> {
        Ok(match (self, load) {
            (Self::Fleet { fleet, leader, .. }, Load::Bare) => {
                let client = bare_api_client(fleet.dir(), leader).await?;
                Box::new(move |i| {
                    let client = client.clone();
                    Box::pin(async move {
                        let request = write_request(&record(c, i), false)?;
                        appended(write_outcome(client.call(WRITE_PATH, &request).await?)?)
                    }) as Write
                })
            }
            (Self::Fleet { fleet, leader, .. }, Load::Tonic) => {
                let client = TestClient::connect(fleet.dir(), leader).await?;
                Box::new(move |i| {
                    let mut client = client.clone();
                    Box::pin(async move { appended(client.write(&record(c, i), false).await?.0) })
                        as Write
                })
            }
            (Self::Etcd { leader, .. }, Load::Bare) => {
                let client = etcd::bare_client(leader).await?;
                Box::new(move |i| {
                    let client = client.clone();
                    Box::pin(async move {
                        let _: pb::PutResponse = client.call(etcd::PUT_PATH, &put(c, i)).await?;
                        Ok(())
                    }) as Write
                })
            }
            (Self::Etcd { leader, .. }, Load::Tonic) => {
                let client = pb::kv_client::KvClient::new(etcd::channel(leader).await?);
                Box::new(move |i| {
                    let mut client = client.clone();
                    Box::pin(async move {
                        client.put(put(c, i)).await?;
                        Ok(())
                    }) as Write
                })
            }
        })
    }
}

/// One write of a bench client, under way.
type Write = Pin<Box<dyn Future<Output = Result<()>> + Send>>;
/// A bench client: its write `i` (numbered from 0; `usize::MAX` before the run).
type Writer = Box<dyn FnMut(usize) -> Write + Send>;

/// How the bench's clients call the systems, the same for each: as `FLEET_BENCH_LOAD`
/// says, `bare` (the default) or `tonic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Load {
    /// [`BareGrpcClient`](fleet_tests::bare_grpc::BareGrpcClient): each call made
    /// from the client's own task on its HTTP/2 connection.
    Bare,
    /// tonic's generated clients over a `Channel`, as `fleetctl` calls a node.
    Tonic,
}

impl Load {
    fn from_env() -> Result<Self> {
        match std::env::var("FLEET_BENCH_LOAD").as_deref() {
            Err(_) | Ok("bare") => Ok(Self::Bare),
            Ok("tonic") => Ok(Self::Tonic),
            Ok(other) => bail!("FLEET_BENCH_LOAD is `{other}`: it must be `bare` or `tonic`"),
        }
    }
}

/// etcd's write `i` of client `c`: as large as Fleet's record's body.
fn put(c: usize, i: usize) -> pb::PutRequest {
    pb::PutRequest {
        key: format!("bench/{c}/{i}").into_bytes(),
        value: format!("client {c} write {i} {}", "x".repeat(32)).into_bytes(),
    }
}

/// The most CPU, in hundredths of a core, that the servers of every cluster of a round
/// may use together for a row to start: each idle cluster uses about 5 (its
/// heartbeats and timers), measured alike for Fleet and etcd.
const QUIET_CPU_PERCENT: u64 = 25;
/// How long the servers' CPU is looked at before a row, and how long a row waits for
/// the host to become quiet at most (then it starts anyway).
const QUIET_WINDOW: Duration = Duration::from_millis(500);
const QUIET_WAIT_MAX: Duration = Duration::from_secs(20);

/// Waits until the processes `pids` together use less than [`QUIET_CPU_PERCENT`] of a
/// core over a [`QUIET_WINDOW`], so that no row pays for work another system left
/// behind (a snapshot, a compaction, a collection of garbage).
async fn wait_until_quiet(pids: &[u32]) -> Result<()> {
    let started = std::time::Instant::now();
    loop {
        let before = cpu_time(pids)?;
        tokio::time::sleep(QUIET_WINDOW).await;
        let used = cpu_time(pids)?.saturating_sub(before);
        let percent = used.as_micros() * 100 / QUIET_WINDOW.as_micros();
        if percent < u128::from(QUIET_CPU_PERCENT) || started.elapsed() > QUIET_WAIT_MAX {
            return Ok(());
        }
    }
}

/// The systems to measure: those `FLEET_BENCH_SYSTEMS` lists, comma-separated (each
/// one of [`SYSTEMS`]), or else all of them.
fn systems() -> Result<Vec<String>> {
    let Ok(list) = std::env::var("FLEET_BENCH_SYSTEMS") else {
        return Ok(SYSTEMS.map(String::from).to_vec());
    };
    list.split(',')
        .map(|item| match item.trim() {
            system if SYSTEMS.contains(&system) => Ok(system.to_string()),
            _ => bail!(
                "FLEET_BENCH_SYSTEMS: `{item}` is not one of {}",
                SYSTEMS.join(", ")
            ),
        })
        .collect()
}

/// The client counts to measure: `FLEET_BENCH_CLIENTS`, any from 1 to
/// [`CLIENTS_MAX`], or else [`CONCURRENCY`].
fn concurrency() -> Result<Vec<usize>> {
    let Ok(list) = std::env::var("FLEET_BENCH_CLIENTS") else {
        return Ok(CONCURRENCY.to_vec());
    };
    list.split(',')
        .map(|item| match item.trim().parse::<usize>() {
            Ok(clients) if (1..=CLIENTS_MAX).contains(&clients) => Ok(clients),
            _ => {
                bail!("FLEET_BENCH_CLIENTS: `{item}` is not a client count from 1 to {CLIENTS_MAX}")
            }
        })
        .collect()
}

fn row(round: usize, system: &str, run: &LatencyRun) -> String {
    let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
    format!(
        "| {round} | {system} | {} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.1} | {} | {} |",
        run.clients,
        run.writes,
        ms(run.percentile(0.5)),
        ms(run.percentile(0.99)),
        run.throughput(),
        run.server_cpu_per_write_us(),
        run.client_cpu_per_write_us(),
        run.stolen_percent(),
        run.slowest_disk_sync.map_or_else(|| "-".to_string(), ms),
        run.memory_load
            .map_or_else(|| "-".to_string(), |load| load.as_nanos().to_string())
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
/// the same round, across the rounds; with `only_undisturbed`, across the rounds in
/// which both rows were [`undisturbed`].
fn ratios(measured: &[Measured], only_undisturbed: bool) -> Vec<String> {
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
                .filter(|(f, e)| !only_undisturbed || (undisturbed(f) && undisturbed(e)))
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

fn print_ratios(lines: Vec<String>) {
    println!();
    println!("| system | clients | rounds | throughput, Fleet / etcd | p50, Fleet / etcd |");
    println!("|---|---|---|---|---|");
    for line in lines {
        println!("{line}");
    }
}

/// A count from the environment variable `name`, or `default` when it is unset.
fn env_count(name: &str, default: usize) -> Result<usize> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(value) => match value.trim().parse::<usize>() {
            Ok(count) if count > 0 => Ok(count),
            _ => bail!("{name} is `{value}`: it must be a whole number above 0"),
        },
    }
}

/// The writes of a row of `clients` clients: at least `writes`, and at least
/// `writes_per_client` from each client.
fn row_writes(clients: usize, writes: usize, writes_per_client: usize) -> usize {
    writes.max(clients.saturating_mul(writes_per_client))
}

fn main() -> Result<()> {
    let writes = env_count("FLEET_BENCH_WRITES", 10_000)?;
    let writes_per_client = env_count("FLEET_BENCH_WRITES_PER_CLIENT", WRITES_PER_CLIENT)?;
    let rounds = env_count("FLEET_BENCH_ROUNDS", 1)?;
    // The clients run on two workers whatever `TOKIO_WORKER_THREADS` says.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let systems = systems()?;
        let load = Load::from_env()?;
        eprintln!("clients call through {load:?} (FLEET_BENCH_LOAD)");
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
        let timeline_dir = std::env::var_os("FLEET_BENCH_TIMELINE").map(std::path::PathBuf::from);
        if let Some(dir) = &timeline_dir {
            std::fs::create_dir_all(dir)?;
        }
        let disk_before = fdatasync_latencies(DISK_SAMPLES)?;
        let chain = Arc::new(PointerChain::new(CHAIN_BYTES));
        let mut measured = Vec::new();
        for round in 1..=rounds {
            // Every system of a round runs at once, and each client count is measured
            // on each in turn, so that the rows compared stand seconds apart on a host
            // whose speed drifts within minutes; every other round starts from the
            // other end, so that neither always runs on the host as the other left it.
            let mut turn = order.clone();
            if round.is_multiple_of(2) {
                turn.reverse();
            }
            let mut clusters = Vec::new();
            for system in turn {
                clusters.push(Cluster::start(system).await?);
            }
            let every_server: Vec<u32> = clusters.iter().flat_map(Cluster::pids).collect();
            let mut runs: Vec<Vec<LatencyRun>> = clusters.iter().map(|_| Vec::new()).collect();
            for clients in concurrency()? {
                let writes = row_writes(clients, writes, writes_per_client);
                for (cluster, runs) in clusters.iter().zip(&mut runs) {
                    wait_until_quiet(&every_server).await?;
                    let disk_probe = DiskProbe::start(DISK_PROBE_INTERVAL);
                    let memory_probe = MemoryProbe::start(chain.clone(), MEMORY_PROBE_INTERVAL);
                    let mut run = cluster.measure(clients, writes, load).await?;
                    let disk = disk_probe.finish()?;
                    let memory = memory_probe.finish()?;
                    run.slowest_disk_sync = Some(disk.slowest());
                    run.memory_load = Some(memory.median_load());
                    eprintln!("{}", row(round, &cluster.name(), &run));
                    if let Some(dir) = &timeline_dir {
                        let name = cluster.name().replace([' ', '(', ')'], "");
                        let stem = format!("round{round}-{name}-{clients}");
                        std::fs::write(dir.join(format!("{stem}.csv")), run.timeline_csv())?;
                        let disk = disk.csv(run.started_at);
                        std::fs::write(dir.join(format!("{stem}-disk.csv")), disk)?;
                        let memory = memory.csv(run.started_at);
                        std::fs::write(dir.join(format!("{stem}-memory.csv")), memory)?;
                    }
                    runs.push(run);
                }
            }
            if let Some(dir) = &timeline_dir {
                for cluster in &clusters {
                    cluster.keep_logs(&dir.join(format!("round{round}")))?;
                }
            }
            for (cluster, runs) in clusters.iter().zip(runs) {
                measured.push(Measured { system: cluster.name(), round, runs });
            }
        }
        println!(
            "| round | system | clients | writes | p50 ms | p99 ms | writes/s | server CPU µs/write | client CPU µs/write | CPU stolen % | slowest disk sync ms | memory load ns |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
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
        let every_round = ratios(&measured, false);
        if !every_round.is_empty() {
            println!();
            println!("Fleet over etcd in the same round, median (range) over the rounds:");
            print_ratios(every_round);
            println!();
            let quiet = ratios(&measured, true);
            if quiet.is_empty() {
                println!(
                    "In no round did both rows stay under {STOLEN_QUIET_PERCENT}% of the CPU lost to the hypervisor and every `fdatasync` under {} ms, so there are no quiet rounds to compare.",
                    DISK_STALL.as_millis()
                );
            } else {
                println!(
                    "The same over the rounds in which neither row lost over {STOLEN_QUIET_PERCENT}% of the CPU to the hypervisor nor saw an `fdatasync` over {} ms:",
                    DISK_STALL.as_millis()
                );
                print_ratios(quiet);
            }
        }
        Ok(())
    })
}
