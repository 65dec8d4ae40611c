//! Roles under jittered latency: a three-node loopback fleet whose Raft traffic (QUIC)
//! passes through relays that delay every datagram by a random 5–45 ms each way (so
//! round trips of 10–90 ms, reordered), for ten minutes with a write every 100 ms.
//! With the default config nothing is down, so there must be no election after the
//! first and no role change at all.
//!
//! Run: `cargo bench --workspace --bench jitter` after `cargo build --workspace
//! --release --bins` (optimised), or with `--profile dev` after `cargo build
//! --workspace --all-targets` (the debug build). `FLEET_BENCH_JITTER_SECS` sets the length
//! (default 600). Prints a Markdown table for `docs/benchmarks.md`.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::Request;
use fleet_tests::ProcessFleet;
use fleet_tests::jitter_relay::{Jitter, JitterRelay};

const NODES: [&str; 3] = ["beast", "5070", "mac"];
const JITTER: Jitter = Jitter {
    min: Duration::from_millis(5),
    max: Duration::from_millis(45),
};

/// Points the Raft addresses in Beast's `[peers]` (which `cluster init` commits as the
/// members' addresses) at a relay in front of each node.
async fn relay_raft_traffic(fleet: &ProcessFleet) -> Result<Vec<JitterRelay>> {
    let path = fleet.config_path("beast");
    let text = std::fs::read_to_string(&path)?;
    let mut config: toml::Table = toml::from_str(&text)?;
    let peers = config
        .get_mut("peers")
        .and_then(|p| p.as_table_mut())
        .context("beast's config has no [peers]")?;
    let mut relays = Vec::new();
    for (seed, node) in NODES.iter().enumerate() {
        let peer = peers
            .get_mut(*node)
            .and_then(|p| p.as_table_mut())
            .with_context(|| format!("no [peers.{node}]"))?;
        let raft: std::net::SocketAddr = peer
            .get("raft")
            .and_then(|r| r.as_str())
            .context("no raft address")?
            .parse()?;
        let relay = JitterRelay::start(raft, JITTER, 0x9e37_79b9 + seed as u64).await?;
        peer.insert("raft".into(), relay.address.to_string().into());
        relays.push(relay);
    }
    std::fs::write(&path, toml::to_string(&config)?)?;
    Ok(relays)
}

/// `(epoch, term)` as `node` sees them, the epoch read linearizably: a follower's own
/// state may not have applied the newest roles yet (with 10–90 ms round trips, a
/// plain read just after the bootstrap can see the epoch before the first roles).
async fn epoch_and_term(fleet: &ProcessFleet, node: &str) -> Result<(u64, u64)> {
    let mut client = fleet.client(node).await?;
    let epoch = match client.read(&Query::Overview, true, 0).await? {
        QueryAnswer::Overview { roles, .. } => roles.epoch,
        other => bail!("unexpected answer {other:?}"),
    };
    let term = client.status().await?.term;
    Ok((epoch, term))
}

fn main() -> Result<()> {
    let seconds: u64 = std::env::var("FLEET_BENCH_JITTER_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut fleet = ProcessFleet::init(&NODES)?;
        fleet.env.push(("FLEET_TRANSPORT".into(), "quic".into()));
        let _relays = relay_raft_traffic(&fleet).await?;
        fleet.start_all()?;
        fleet.bootstrap("beast")?;
        fleet.wait_for_status("beast primary and leader", Duration::from_secs(30), |s| {
            s["primary"] == "beast" && s["note_taker"] == "beast" && s["leader"] == "beast"
        })?;
        let (epoch_before, term_before) = epoch_and_term(&fleet, "beast").await?;
        let mut client = fleet.client("beast").await?;
        let started = Instant::now();
        let (mut writes, mut failed) = (0u64, 0u64);
        let mut latencies = Vec::new();
        while started.elapsed() < Duration::from_secs(seconds) {
            let sent = Instant::now();
            match client.write(&Request::Probe, false).await {
                Ok((Ok(_), _)) => latencies.push(sent.elapsed()),
                _ => failed += 1,
            }
            writes += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (epoch_after, term_after) = epoch_and_term(&fleet, "5070").await?;
        latencies.sort();
        let p50 = latencies
            .get(latencies.len() / 2)
            .copied()
            .unwrap_or_default();
        println!("| run | writes | failed | write p50 ms | role changes | elections |");
        println!("|---|---|---|---|---|---|");
        println!(
            "| {seconds} s, 5–45 ms each way | {writes} | {failed} | {:.1} | {} | {} |",
            p50.as_secs_f64() * 1000.0,
            epoch_after - epoch_before,
            term_after - term_before
        );
        Ok(())
    })
}
