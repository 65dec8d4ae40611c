//! Failover time of a three-node fleet on loopback with the default config, side by
//! side with etcd 3.4 (three members on loopback, default settings) in the same run.
//!
//! Fleet: `kill -9` of the primary once it is also the Raft leader → a new primary
//! committed and a write accepted by the survivors; then the node restarts and the
//! time until both roles are back on it is the failback (it includes the fleet's
//! failback hold, 10 s by default). etcd: `kill -9` of the leader → the first write
//! accepted by a surviving member; the member restarts before the next round.
//! Fleet answers a write it cannot commit at once (no leader yet), so it is retried
//! every 10 ms on each survivor; etcd holds such a put until its request timeout, so a
//! new put is started every 10 ms and the first to succeed counts.
//!
//! Run: `make bench-failover` (or `cargo bench --workspace --bench failover` after
//! `cargo build --workspace --release --bins`; with `--profile dev` after `cargo build
//! --workspace --all-targets` it measures the debug build). `FLEET_BENCH_KILLS` sets
//! the kills per system (default 20); `FLEET_BENCH_ONLY=fleet|etcd` measures one. Prints a Markdown table for `docs/benchmarks.md`.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::Request;
use fleet_tests::etcd::{self, EtcdCluster, pb};
use fleet_tests::{ProcessFleet, TestClient};

const NODES: [&str; 3] = ["beast", "5070", "mac"];
/// How often a survivor is asked again.
const RETRY: Duration = Duration::from_millis(10);
/// A generous bound on one failover or failback.
const BOUND: Duration = Duration::from_secs(60);

/// Durations, sorted on demand.
struct Samples(Vec<Duration>);

impl Samples {
    fn percentile(&self, quantile: f64) -> Duration {
        let mut sorted = self.0.clone();
        sorted.sort();
        let rank = ((sorted.len() as f64) * quantile).ceil() as usize;
        sorted[rank.saturating_sub(1).min(sorted.len() - 1)]
    }
}

/// The roles as `node` has applied them.
async fn roles(client: &mut TestClient) -> Result<(Option<String>, Option<String>, u64)> {
    match client.read(&Query::Overview, false, 0).await? {
        QueryAnswer::Overview { roles, .. } => Ok((
            roles.primary().map(ToString::to_string),
            roles.note_taker().map(ToString::to_string),
            roles.epoch,
        )),
        other => bail!("unexpected answer {other:?}"),
    }
}

async fn wait_for_roles(fleet: &ProcessFleet, primary: &str, note_taker: &str) -> Result<()> {
    let deadline = Instant::now() + BOUND;
    while Instant::now() < deadline {
        if let Ok(mut client) = fleet.client("5070").await
            && let Ok((Some(p), Some(n), _)) = roles(&mut client).await
            && p == primary
            && n == note_taker
        {
            return Ok(());
        }
        tokio::time::sleep(RETRY).await;
    }
    bail!("roles did not become {primary}/{note_taker} within {BOUND:?}")
}

/// Waits until `node` leads (leadership follows the primary a moment after the roles).
async fn wait_for_leader(fleet: &ProcessFleet, node: &str) -> Result<()> {
    let deadline = Instant::now() + BOUND;
    while Instant::now() < deadline {
        if let Ok(mut client) = fleet.client("5070").await
            && let Ok(status) = client.status().await
            && status.leader == node
        {
            return Ok(());
        }
        tokio::time::sleep(RETRY).await;
    }
    bail!("{node} did not lead within {BOUND:?}")
}

/// One kill of the primary: (failover, failback after restart).
async fn fleet_round(fleet: &mut ProcessFleet) -> Result<(Duration, Duration)> {
    wait_for_roles(fleet, "beast", "beast").await?;
    wait_for_leader(fleet, "beast").await?;
    let mut survivors = vec![fleet.client("5070").await?, fleet.client("mac").await?];
    let (_, _, epoch) = roles(&mut survivors[0]).await?;
    fleet.kill("beast")?;
    let killed = Instant::now();
    // A new primary committed…
    'roles: loop {
        for client in &mut survivors {
            if let Ok((Some(primary), _, now)) = roles(client).await
                && primary != "beast"
                && now > epoch
            {
                break 'roles;
            }
        }
        if killed.elapsed() > BOUND {
            bail!("no new primary within {BOUND:?}");
        }
        tokio::time::sleep(RETRY).await;
    }
    // …and a write accepted.
    'write: loop {
        for client in &mut survivors {
            if let Ok((Ok(_), _)) = client.write(&Request::Probe, false).await {
                break 'write;
            }
        }
        if killed.elapsed() > BOUND {
            bail!("no write accepted within {BOUND:?}");
        }
        tokio::time::sleep(RETRY).await;
    }
    let failover = killed.elapsed();
    fleet.start("beast")?;
    let restarted = Instant::now();
    wait_for_roles(fleet, "beast", "beast").await?;
    Ok((failover, restarted.elapsed()))
}

async fn fleet_failovers(kills: usize) -> Result<(Samples, Samples)> {
    let mut fleet = ProcessFleet::init(&NODES)?;
    fleet.start_all()?;
    fleet.bootstrap("beast")?;
    let mut failovers = Vec::new();
    let mut failbacks = Vec::new();
    for round in 0..kills {
        let (failover, failback) = fleet_round(&mut fleet)
            .await
            .with_context(|| format!("round {round}: {}", fleet.log("5070")))?;
        eprintln!(
            "fleet kill {round}: failover {} ms, failback {} ms",
            failover.as_millis(),
            failback.as_millis()
        );
        failovers.push(failover);
        failbacks.push(failback);
    }
    Ok((Samples(failovers), Samples(failbacks)))
}

async fn etcd_failovers(kills: usize) -> Result<Samples> {
    let mut cluster = EtcdCluster::start().await?;
    let mut failovers = Vec::new();
    for round in 0..kills {
        let leader = cluster.leader_url(BOUND).await?;
        let member = cluster
            .client_urls
            .iter()
            .position(|url| *url == leader)
            .context("leader is not a member")?;
        let mut survivors = Vec::new();
        for url in cluster.client_urls.iter().filter(|url| **url != leader) {
            survivors.push(pb::kv_client::KvClient::new(etcd::channel(url).await?));
        }
        cluster.kill_member(member)?;
        let killed = Instant::now();
        // etcd holds a put made while it has no leader until its request timeout
        // (seconds), so a put is started every RETRY, alternating the survivors, each
        // left to finish; the first to succeed is the first write accepted.
        let mut puts = tokio::task::JoinSet::new();
        let mut tick = tokio::time::interval(RETRY);
        let mut attempt = 0usize;
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    let mut client = survivors[attempt % survivors.len()].clone();
                    let put = pb::PutRequest {
                        key: format!("failover/{round}/{attempt}").into_bytes(),
                        value: b"probe".to_vec(),
                    };
                    puts.spawn(async move { client.put(put).await });
                    attempt += 1;
                }
                Some(put) = puts.join_next() => {
                    if matches!(put, Ok(Ok(_))) {
                        break;
                    }
                }
            }
            if killed.elapsed() > BOUND {
                bail!("etcd accepted no write within {BOUND:?}");
            }
        }
        puts.abort_all();
        let failover = killed.elapsed();
        eprintln!("etcd kill {round}: failover {} ms", failover.as_millis());
        failovers.push(failover);
        cluster.start_member(member)?;
        // Let it rejoin before the next kill, so each round starts from three members.
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    Ok(Samples(failovers))
}

fn ms(duration: Duration) -> String {
    format!("{}", duration.as_millis())
}

fn main() -> Result<()> {
    let kills: usize = std::env::var("FLEET_BENCH_KILLS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(20);
    let only = std::env::var("FLEET_BENCH_ONLY").unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut rows = Vec::new();
        if only != "etcd" {
            let (failover, failback) = fleet_failovers(kills).await?;
            rows.push(format!(
                "| fleet | {kills} | {} | {} | {} | {} |",
                ms(failover.percentile(0.5)),
                ms(failover.percentile(0.99)),
                ms(failback.percentile(0.5)),
                ms(failback.percentile(0.99)),
            ));
        }
        if only != "fleet" {
            if EtcdCluster::available() {
                let etcd = etcd_failovers(kills).await?;
                rows.push(format!(
                    "| etcd 3.4 | {kills} | {} | {} | – | – |",
                    ms(etcd.percentile(0.5)),
                    ms(etcd.percentile(0.99)),
                ));
            } else {
                eprintln!(
                    "etcd is not installed (Debian: apt-get install etcd-server); only Fleet was measured"
                );
            }
        }
        println!(
            "| system | kills | failover p50 ms | failover p99 ms | failback p50 ms | failback p99 ms |"
        );
        println!("|---|---|---|---|---|---|");
        for row in rows {
            println!("{row}");
        }
        Ok(())
    })
}
