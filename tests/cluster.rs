//! The cluster (SPEC K1–K4) with real `fleetd` processes on loopback, each test run
//! over QUIC and over gRPC: replication, `kill -9` of the leader without losing an
//! acknowledged write nor committing one answered "unavailable" (which tells the
//! caller to send it again), restart from RocksDB, snapshot install behind a purged log,
//! adding and removing a member, and refusing a certificate of another fleet; and,
//! over QUIC, a `kill -9` of every node once RocksDB recycles its log files.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::event_log::EventFilter;
use fleet_node::state::{Request, Response};
use fleet_proto::api as wire;
use fleet_tests::client::{
    WRITE_PATH, bare_api_client, keyed_append, unkeyed_append, write_outcome, write_request,
};
use fleet_tests::{ProcessFleet, TestClient};
use tokio::task::JoinHandle;
use tonic::Code;

const NODES: [&str; 3] = ["beast", "5070", "mac"];
const ELECTION_BOUND: Duration = Duration::from_secs(15);
/// At most this many writes are in flight across a kill.
const IN_FLIGHT_MAX: usize = 400;

fn append(body: &str) -> Request {
    keyed_append("cluster", body)
}

/// Writes `body` through the first node in `order` that accepts it.
async fn write_anywhere(fleet: &ProcessFleet, order: &[&str], body: &str) -> Result<u64> {
    let mut last = None;
    for node in order {
        let mut client = fleet.client(node).await?;
        match client.write(&append(body), false).await {
            Ok((Ok(Response::Event { .. }), index)) => return Ok(index),
            Ok((other, _)) => bail!("write of {body} answered {other:?}"),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("no node to write to")))
}

/// `node`'s own line of its status.
async fn own_status(client: &mut TestClient, node: &str) -> Result<wire::MemberStatus> {
    let status = client.status().await?;
    status
        .members
        .into_iter()
        .find(|m| m.name == node)
        .with_context(|| format!("{node} is not in its own status"))
}

fn started(transport: &str) -> Result<ProcessFleet> {
    let mut fleet = ProcessFleet::init(&NODES)?;
    fleet.env.push(("FLEET_TRANSPORT".into(), transport.into()));
    fleet.start_all()?;
    fleet
        .bootstrap("beast")
        .with_context(|| fleet.log("beast"))?;
    fleet.wait_for_leader(None, ELECTION_BOUND)?;
    Ok(fleet)
}

async fn writes_replicate_to_every_node(transport: &str) -> Result<()> {
    let fleet = started(transport)?;
    let mut last_index = 0;
    for (i, node) in NODES.iter().cycle().take(30).enumerate() {
        // Writes go to followers too: they are forwarded to the leader.
        let mut client = fleet.client(node).await?;
        let (result, index) = client.write(&append(&format!("w{i}")), false).await?;
        assert!(matches!(result, Ok(Response::Event { .. })), "{result:?}");
        last_index = last_index.max(index);
    }
    let expected: BTreeSet<String> = (0..30).map(|i| format!("w{i}")).collect();
    for node in NODES {
        let mut client = fleet.client(node).await?;
        assert_eq!(
            client.event_bodies(false, last_index).await?,
            expected,
            "{node} lacks writes"
        );
        // A linearizable read through a follower is forwarded to the leader.
        assert_eq!(
            client.event_bodies(true, 0).await?,
            expected,
            "a linearizable read through {node}"
        );
    }
    let status = fleet.fleetctl_json(&["status"])?;
    let members = status["members"].as_array().context("members")?;
    assert_eq!(members.len(), 3, "{status}");
    Ok(())
}

/// A run of writes close together: each commit rides on the next append (the leader
/// holds an append that would carry only a commit, `piggyback_commits`). The last
/// commit of the run has no append after it and must still reach every follower
/// within that hold (2 ms), not with the next heartbeat, which is 20 s away here.
async fn the_last_of_a_run_of_writes_reaches_every_follower_before_the_next_heartbeat(
    transport: &str,
) -> Result<()> {
    let mut fleet = ProcessFleet::init(&NODES)?;
    fleet.env.push(("FLEET_TRANSPORT".into(), transport.into()));
    for (key, value) in [
        ("FLEET_RAFT__HEARTBEAT_MS", "20000"),
        ("FLEET_RAFT__ELECTION_TIMEOUT_MIN_MS", "40000"),
        ("FLEET_RAFT__ELECTION_TIMEOUT_MAX_MS", "60000"),
        ("FLEET_HEALTH__UNHEALTHY_AFTER_MS", "45000"),
    ] {
        fleet.env.push((key.into(), value.into()));
    }
    fleet.start_all()?;
    fleet
        .bootstrap("beast")
        .with_context(|| fleet.log("beast"))?;
    let leader = fleet.wait_for_leader(None, ELECTION_BOUND)?;
    // Four writers at once, so that appends follow one another closely even in an
    // unoptimised build.
    let mut writers = tokio::task::JoinSet::new();
    for writer in 0..4 {
        let mut client = fleet.client(&leader).await?;
        writers.spawn(async move {
            for i in 0..10 {
                let body = format!("run{writer}-{i}");
                let (result, _) = client.write(&append(&body), false).await?;
                anyhow::ensure!(matches!(result, Ok(Response::Event { .. })), "{result:?}");
            }
            anyhow::Ok(())
        });
    }
    while let Some(written) = writers.join_next().await {
        written??;
    }
    let written = Instant::now();
    let run: BTreeSet<String> = (0..4)
        .flat_map(|writer| (0..10).map(move |i| format!("run{writer}-{i}")))
        .collect();
    // A safety bound far above the commit's few ms, and far below the heartbeat.
    let bound = Duration::from_secs(5);
    for node in NODES.iter().filter(|node| **node != leader) {
        let mut follower = fleet.client(node).await?;
        // Reads that do not wait: what the follower has applied by now.
        while !follower.event_bodies(false, 0).await?.is_superset(&run) {
            assert!(
                written.elapsed() < bound,
                "{node} had not applied every write of the run {bound:?} after the last"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    Ok(())
}

async fn killing_the_leader_keeps_every_acknowledged_write(transport: &str) -> Result<()> {
    let mut fleet = started(transport)?;
    let leader = fleet.wait_for_leader(None, ELECTION_BOUND)?;
    let mut acknowledged = BTreeSet::new();
    for i in 0..20 {
        let body = format!("before-{i}");
        write_anywhere(&fleet, &NODES, &body).await?;
        acknowledged.insert(body);
    }
    let survivors: Vec<&str> = NODES.iter().copied().filter(|n| *n != leader).collect();
    // Unkeyed writes through a follower, one after another, across the kill: some are
    // forwarded to the leader as it dies.
    let in_flight = InFlight::start(&fleet, survivors[0]).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    fleet.kill(&leader)?;
    let killed_at = Instant::now();
    let new_leader = fleet.wait_for_leader(Some(&leader), ELECTION_BOUND)?;
    assert_ne!(new_leader, leader);
    // Keep writing through the survivors; every acknowledged write must survive.
    let mut i = 0;
    while acknowledged.len() < 40 && killed_at.elapsed() < Duration::from_secs(30) {
        let body = format!("after-{i}");
        i += 1;
        if write_anywhere(&fleet, &survivors, &body).await.is_ok() {
            acknowledged.insert(body);
        }
    }
    assert_eq!(
        acknowledged.len(),
        40,
        "writes did not resume after the election"
    );
    let (in_flight_acknowledged, not_taken) = in_flight.stop().await?;
    acknowledged.extend(in_flight_acknowledged);
    let mut client = fleet.client(&new_leader).await?;
    let seen = client.event_bodies(true, 0).await?;
    let lost: Vec<_> = acknowledged.difference(&seen).collect();
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    // "Unavailable" tells a caller to send the write again: it must not have been taken.
    let taken: Vec<_> = not_taken.intersection(&seen).collect();
    assert!(
        taken.is_empty(),
        "writes answered UNAVAILABLE were committed: {taken:?}"
    );

    // The killed node restarts from its own RocksDB and catches up.
    fleet.start(&leader)?;
    let mut restarted = fleet.client(&leader).await?;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(seen) = restarted.event_bodies(false, 0).await
            && acknowledged.is_subset(&seen)
        {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "{leader} did not catch up after restart:\n{}",
                fleet.log(&leader)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// Unkeyed appends sent through one node, each after the last was answered, until
/// stopped (or [`IN_FLIGHT_MAX`] were sent).
struct InFlight {
    stop: Arc<AtomicBool>,
    writer: JoinHandle<Result<(BTreeSet<String>, BTreeSet<String>)>>,
}

impl InFlight {
    async fn start(fleet: &ProcessFleet, node: &str) -> Result<Self> {
        let mut client = fleet.client(node).await?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let writer = tokio::spawn(async move {
            let (mut acknowledged, mut not_taken) = (BTreeSet::new(), BTreeSet::new());
            // Paced and bounded, so that all of them stay within the first 1,000 events
            // that `TestClient::event_bodies` reads.
            for i in 0..IN_FLIGHT_MAX {
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                let body = format!("in-flight-{i}");
                match client
                    .send_write(&unkeyed_append("cluster", &body), false)
                    .await?
                {
                    Ok(_) => acknowledged.insert(body),
                    Err(status) if status.code() == Code::Unavailable => not_taken.insert(body),
                    // Forwarded as the leader died: it may or may not have committed.
                    Err(status) if status.code() == Code::Unknown => false,
                    Err(status) => bail!("{body} failed with {status:?}"),
                };
            }
            Ok((acknowledged, not_taken))
        });
        Ok(Self { stop, writer })
    }

    /// Stops the writes; gives the bodies of those acknowledged and of those answered
    /// UNAVAILABLE.
    async fn stop(self) -> Result<(BTreeSet<String>, BTreeSet<String>)> {
        self.stop.store(true, Ordering::Relaxed);
        self.writer.await?
    }
}

async fn a_node_behind_a_purged_log_receives_a_snapshot_and_restarts_from_it(
    transport: &str,
) -> Result<()> {
    let mut fleet = ProcessFleet::init(&NODES)?;
    fleet.env.push(("FLEET_TRANSPORT".into(), transport.into()));
    fleet
        .env
        .push(("FLEET_RAFT__SNAPSHOT_EVERY_LOGS".into(), "20".into()));
    fleet
        .env
        .push(("FLEET_RAFT__LOGS_KEPT_AFTER_SNAPSHOT".into(), "5".into()));
    fleet.start_all()?;
    fleet.bootstrap("beast")?;
    fleet.wait_for_leader(None, ELECTION_BOUND)?;
    fleet.kill("mac")?;
    // mac holds no entry that the other two did not have when it was killed.
    let mut mac_last = 0;
    for node in ["beast", "5070"] {
        let own = own_status(&mut fleet.client(node).await?, node).await?;
        mac_last = mac_last.max(own.last_log_index);
    }
    for i in 0..120 {
        write_anywhere(&fleet, &["beast", "5070"], &format!("s{i}")).await?;
    }
    let mut beast = fleet.client("beast").await?;
    let own = own_status(&mut beast, "beast").await?;
    assert!(
        own.snapshot_index > 20,
        "no snapshot was taken: {own:?}\n{}",
        fleet.log("beast")
    );
    // The leader purges its log after a snapshot in its own time (not while a
    // replication still reads the entries): mac must come back only once the entries
    // after its own are gone, or it may catch up from the log.
    let deadline = Instant::now() + Duration::from_secs(20);
    for filler in 0.. {
        let own = own_status(&mut beast, "beast").await?;
        if own.purged_index > mac_last {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "beast never purged its log past index {mac_last}: {own:?}\n{}",
                fleet.log("beast")
            );
        }
        // Writes go on meanwhile, so that snapshots and purges go on as well.
        write_anywhere(&fleet, &["beast", "5070"], &format!("filler{filler}")).await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    fleet.start("mac")?;
    let mut mac = fleet.client("mac").await?;
    let expected: BTreeSet<String> = (0..120).map(|i| format!("s{i}")).collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(seen) = mac.event_bodies(false, 0).await
            && expected.is_subset(&seen)
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("mac did not catch up:\n{}", fleet.log("mac"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let own = own_status(&mut mac, "mac").await?;
    assert!(
        own.snapshot_index > 0,
        "mac caught up without installing a snapshot: {own:?}"
    );
    // The installed snapshot is mac's own now, in its snapshot file: killed again, mac
    // restarts from that file and the log above it, with every write.
    let snapshot_file = fleet.dir().join("mac/data/raft/snapshot");
    assert!(snapshot_file.exists(), "no {}", snapshot_file.display());
    fleet.kill("mac")?;
    fleet.start("mac")?;
    let mut mac = fleet.client("mac").await?;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(seen) = mac.event_bodies(false, 0).await
            && expected.is_subset(&seen)
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("mac did not come back whole:\n{}", fleet.log("mac"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

async fn a_fourth_node_is_added_and_removed(transport: &str) -> Result<()> {
    let mut fleet = started(transport)?;
    let ports = fleet_tests::process_fleet::free_port_range(2).to_string();
    let output = fleet.fleetctl(&[
        "init",
        "--dir",
        fleet.dir().to_str().unwrap(),
        "--add",
        "dell",
        "--base-port",
        &ports,
    ])?;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    fleet.nodes.push("dell".into());
    fleet.start("dell")?;
    // The operator adds a node once it runs; wait until its API answers.
    let mut dell = fleet.client("dell").await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while dell.status().await.is_err() {
        if Instant::now() > deadline {
            bail!("dell did not start:\n{}", fleet.log("dell"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let config: toml::Value = toml::from_str(&std::fs::read_to_string(fleet.config_path("dell"))?)?;
    let api = config["advertise_api"]
        .as_str()
        .context("advertise_api")?
        .to_string();
    let raft = config["advertise_raft"]
        .as_str()
        .context("advertise_raft")?
        .to_string();
    let added = fleet
        .fleetctl_json(&["member", "add", "dell", "--api", &api, "--raft", &raft])
        .with_context(|| fleet.log("dell"))?;
    let voters: Vec<&str> = added["voters"]
        .as_array()
        .context("voters")?
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(voters.contains(&"dell"), "{added}");
    write_anywhere(&fleet, &NODES, "with-dell")
        .await
        .with_context(|| fleet.log("dell"))?;
    let mut dell = fleet.client("dell").await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(seen) = dell.event_bodies(false, 0).await
            && seen.contains("with-dell")
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("dell does not replicate:\n{}", fleet.log("dell"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let removed = fleet.fleetctl_json(&["member", "remove", "dell"])?;
    let voters: Vec<&str> = removed["voters"]
        .as_array()
        .context("voters")?
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(voters.len(), 3, "{removed}");
    assert!(!voters.contains(&"dell"), "{removed}");
    Ok(())
}

fleet_tests::over_both_transports!(
    writes_replicate_to_every_node,
    the_last_of_a_run_of_writes_reaches_every_follower_before_the_next_heartbeat,
    killing_the_leader_keeps_every_acknowledged_write,
    a_node_behind_a_purged_log_receives_a_snapshot_and_restarts_from_it,
    a_fourth_node_is_added_and_removed,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_of_another_fleet_is_refused() -> Result<()> {
    let fleet = started("quic")?;
    let stranger = ProcessFleet::init(&["beast"])?;
    // A node certificate of this fleet is accepted by beast's API...
    fleet_tests::client::call_with_node_cert(fleet.dir(), fleet.dir(), "mac", "beast")
        .await
        .context("a certificate of this fleet was refused")?;
    // ...one of another fleet (its own CA) is refused by the TLS handshake.
    let refused =
        fleet_tests::client::call_with_node_cert(fleet.dir(), stranger.dir(), "beast", "beast")
            .await;
    assert!(
        refused.is_err(),
        "a certificate of another fleet was accepted"
    );
    Ok(())
}

/// The write bench's load generator speaks the client API as tonic's client does: a
/// write through it commits and reads back, and a call the node does not serve fails
/// with the status the node answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_benchs_bare_grpc_client_writes_as_fleetctl_does() -> Result<()> {
    let fleet = started("grpc")?;
    let leader = fleet.wait_for_leader(None, ELECTION_BOUND)?;
    let bare = bare_api_client(fleet.dir(), &leader).await?;
    let request = write_request(&append("bare"), false)?;
    let reply: wire::WriteReply = bare.call(WRITE_PATH, &request).await?;
    let log_index = reply.log_index;
    let outcome = write_outcome(reply)?;
    assert!(matches!(outcome, Ok(Response::Event { .. })), "{outcome:?}");
    let mut client = fleet.client(&leader).await?;
    let bodies = client.event_bodies(false, log_index).await?;
    assert_eq!(bodies, BTreeSet::from(["bare".to_string()]));

    let unserved = bare
        .call::<wire::WriteReply>("/fleet.api.v1.Fleet/Unknown", &request)
        .await
        .expect_err("an unknown method was answered");
    assert!(
        unserved.to_string().contains("grpc-status 12"),
        "{unserved:#}"
    );
    Ok(())
}

/// Every node is killed at once after more log than its write-ahead log holds before
/// RocksDB switches to a recycled file (4 MiB): the acknowledged writes, some of them
/// in recycled files, are all there when the fleet comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_every_node_after_its_log_files_were_recycled_keeps_every_acknowledged_write()
-> Result<()> {
    let mut fleet = ProcessFleet::init(&NODES)?;
    // 200 KiB entries: elections that a busy debug build does not trip.
    fleet.with_long_elections();
    fleet.start_all()?;
    fleet.bootstrap("beast")?;
    let leader = fleet.wait_for_leader(None, ELECTION_BOUND)?;
    let mut client = fleet.client(&leader).await?;
    let ballast = "b".repeat(200 * 1024);
    let mut acknowledged = BTreeSet::new();
    // 60 × 200 KiB of ballast: past the write-ahead log's limit three times over.
    for i in 0..60 {
        let body = format!("kept-{i}");
        match client.write(&append(&body), false).await? {
            (Ok(Response::Event { .. }), _) => acknowledged.insert(body),
            (other, _) => bail!("write {i} answered {other:?}"),
        };
        let mut heavy = append(&format!("ballast-{i}"));
        if let Request::AppendEvent(event) = &mut heavy {
            event.stream = "ballast".into();
            event.body = format!("{i}{ballast}");
        }
        let (result, _) = client.write(&heavy, false).await?;
        assert!(matches!(result, Ok(Response::Event { .. })), "{result:?}");
    }
    for node in NODES {
        fleet.kill(node)?;
    }
    for node in NODES {
        fleet.start(node)?;
    }
    let leader = fleet.wait_for_leader(None, ELECTION_BOUND)?;
    let mut client = fleet.client(&leader).await?;
    let query = Query::Events {
        filter: EventFilter {
            stream: Some("cluster".into()),
            ..EventFilter::default()
        },
        since: 0,
        limit: 1_000,
    };
    let seen: BTreeSet<String> = match client.read(&query, true, 0).await? {
        QueryAnswer::Events { events, .. } => events.into_iter().map(|e| e.body).collect(),
        other => bail!("unexpected answer {other:?}"),
    };
    let lost: Vec<_> = acknowledged.difference(&seen).collect();
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    Ok(())
}
