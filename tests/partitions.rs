//! Faults between machines (SPEC K1, K2), each node of three in a Docker container of
//! its own, each test over QUIC and over gRPC:
//! - a leader cut off from its peers by a network partition, while clients still reach
//!   it: the others elect a leader and go on, the cut-off node acknowledges no write
//!   and answers no linearizable read with stale data, says it has no quorum, and
//!   rejoins as a follower holding every acknowledged write; of the writes stranded
//!   on it, a keyed one goes on to the new leader once it steps down, and an unkeyed
//!   one is answered "outcome unknown" rather than repeated;
//! - a leader frozen whole (`docker pause`): the same, and when it thaws, its first
//!   linearizable read does not answer from the past.
//!
//! Where no Docker engine answers, each test says so and passes without running;
//! `make test` sets `FLEET_REQUIRE_DOCKER=1` on a machine with Docker, so there they
//! run or fail. The same faults on loopback processes, without Docker, are in
//! `cluster.rs` (`kill -9`) and `roles.rs` (`SIGSTOP`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use fleet_node::state::{Request, Response, RuleViolation};
use fleet_tests::TestClient;
use fleet_tests::client::{keyed_append, unkeyed_append};
use fleet_tests::container_fleet::ContainerFleet;
use tokio::task::JoinHandle;

const NODES: [&str; 3] = ["beast", "5070", "mac"];
/// A safety bound for an election or a catch-up; they take well under a second.
const BOUND: Duration = Duration::from_secs(20);
/// How many writes each phase of a test makes.
const WRITES: usize = 10;

/// The event stream the tests write to.
const STREAM: &str = "partitions";

fn append(body: &str) -> Request {
    keyed_append(STREAM, body)
}

/// A write's answer, as [`TestClient::write`] gives it.
type Answer = Result<(Result<Response, RuleViolation>, u64)>;

/// Sends `request` through `node` in the background, on a connection that waits long
/// enough to outlast a partition; gives the answer and when it came.
async fn send_in_background(
    fleet: &ContainerFleet,
    node: &str,
    request: Request,
) -> Result<JoinHandle<(Answer, Instant)>> {
    let mut client = TestClient::connect_with_timeout(fleet.dir(), node, 3 * BOUND).await?;
    Ok(tokio::spawn(async move {
        let answer = client.write(&request, false).await;
        (answer, Instant::now())
    }))
}

/// Writes `body` through the first of `nodes` that acknowledges it.
async fn write_through(fleet: &ContainerFleet, nodes: &[&str], body: &str) -> Result<()> {
    let mut last = None;
    for node in nodes {
        match fleet.client(node).await?.write(&append(body), false).await {
            Ok((Ok(Response::Event { .. }), _)) => return Ok(()),
            Ok((other, _)) => bail!("the write of {body} was answered {other:?}"),
            Err(error) => last = Some(error.context(format!("through {node}"))),
        }
    }
    Err(last.context("no node to write through")?)
}

/// Makes [`WRITES`] acknowledged writes named `phase-i` through `nodes`, retrying
/// each until [`BOUND`]; adds them to `acknowledged`.
async fn write_phase(
    fleet: &ContainerFleet,
    nodes: &[&str],
    phase: &str,
    acknowledged: &mut BTreeSet<String>,
) -> Result<()> {
    let deadline = Instant::now() + BOUND;
    for i in 0..WRITES {
        let body = format!("{phase}-{i}");
        loop {
            match write_through(fleet, nodes, &body).await {
                Ok(()) => break,
                Err(error) if Instant::now() > deadline => {
                    return Err(error.context(format!("writes of {phase} did not resume")));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        acknowledged.insert(body);
    }
    Ok(())
}

/// A linearizable read through `node` either fails or holds every acknowledged write:
/// it never answers from before them.
async fn assert_no_stale_read(
    client: &mut TestClient,
    node: &str,
    acknowledged: &BTreeSet<String>,
) {
    if let Ok(seen) = client.event_bodies(true, 0).await {
        let missing: Vec<_> = acknowledged.difference(&seen).collect();
        assert!(
            missing.is_empty(),
            "a linearizable read through {node} answered without {missing:?}"
        );
    }
}

/// Waits until `node` follows a leader other than itself and has applied every
/// acknowledged write.
async fn await_caught_up(
    fleet: &ContainerFleet,
    node: &str,
    acknowledged: &BTreeSet<String>,
) -> Result<()> {
    let deadline = Instant::now() + BOUND;
    let mut client = fleet.client(node).await?;
    loop {
        let follows = client
            .status()
            .await
            .is_ok_and(|s| !s.leader.is_empty() && s.leader != node);
        let holds = client
            .event_bodies(false, 0)
            .await
            .is_ok_and(|seen| acknowledged.is_subset(&seen));
        if follows && holds {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "{node} did not rejoin as a caught-up follower within {BOUND:?}:\n{}",
                fleet.log(node)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every node comes to hold every acknowledged write.
async fn assert_histories(fleet: &ContainerFleet, acknowledged: &BTreeSet<String>) -> Result<()> {
    for node in NODES {
        let mut client = fleet.client(node).await?;
        let deadline = Instant::now() + BOUND;
        loop {
            let seen = client.event_bodies(false, 0).await?;
            let lost: Vec<_> = acknowledged.difference(&seen).collect();
            if lost.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{node} lacks acknowledged writes {lost:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

/// A fleet in containers (`None` without Docker), its leader, and the writes made
/// before any fault.
async fn started(transport: &str) -> Result<Option<(ContainerFleet, String, BTreeSet<String>)>> {
    let Some(fleet) = ContainerFleet::start(&NODES, transport)? else {
        return Ok(None);
    };
    let leader = fleet.wait_for_leader(&NODES, None, BOUND).await?;
    let mut acknowledged = BTreeSet::new();
    write_phase(&fleet, &NODES, "before", &mut acknowledged).await?;
    Ok(Some((fleet, leader, acknowledged)))
}

async fn a_leader_cut_off_from_its_peers_acknowledges_nothing_and_rejoins_with_every_write(
    transport: &str,
) -> Result<()> {
    let Some((fleet, old, mut acknowledged)) = started(transport).await? else {
        return Ok(());
    };
    let others: Vec<&str> = NODES.iter().copied().filter(|n| *n != old).collect();
    let mut unknown = BTreeSet::new();

    fleet.cut_off(&old)?;
    // Two writes sent to the cut-off leader, which clients still reach. Neither can
    // commit while it is alone, so neither may be acknowledged before the partition
    // heals. Then it steps down and drops their entries: the keyed one, whose repeat
    // is harmless, goes on to the new leader; the unkeyed one must not be repeated
    // blindly, so its caller learns that its outcome is unknown.
    let keyed_body = "keyed-to-the-cut-off-leader";
    let unkeyed_body = "unkeyed-to-the-cut-off-leader";
    let keyed = send_in_background(&fleet, &old, append(keyed_body)).await?;
    let unkeyed = send_in_background(&fleet, &old, unkeyed_append(STREAM, unkeyed_body)).await?;
    let new = fleet.wait_for_leader(&others, Some(&old), BOUND).await?;
    write_phase(&fleet, &others, "during", &mut acknowledged).await?;

    let mut cut_off = fleet.client(&old).await?;
    assert_no_stale_read(&mut cut_off, &old, &acknowledged).await;
    let deadline = Instant::now() + BOUND;
    loop {
        let status = cut_off.status().await?;
        if !status.quorum {
            ensure!(
                status.problem.contains("no quorum"),
                "the cut-off {old} lacks a quorum but says {:?}",
                status.problem
            );
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "the cut-off {old} still claims a quorum: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let healed_at = Instant::now();
    fleet.reconnect(&old)?;
    for (write, body) in [(keyed, keyed_body), (unkeyed, unkeyed_body)] {
        let (answer, answered_at) = write.await?;
        let acknowledged_write = matches!(answer, Ok((Ok(Response::Event { .. }), _)));
        ensure!(
            !(acknowledged_write && answered_at < healed_at),
            "the cut-off {old} acknowledged {body} before the partition healed"
        );
        match answer {
            Ok((Ok(Response::Event { .. }), _)) => {
                acknowledged.insert(body.to_string());
            }
            Err(error) if body == unkeyed_body && error.to_string().contains("outcome unknown") => {
                unknown.insert(body.to_string());
            }
            other => bail!("{body}, sent to the cut-off {old}, was answered {other:?}"),
        }
    }
    await_caught_up(&fleet, &old, &acknowledged)
        .await
        .with_context(|| format!("after the heal, with {new} leading"))?;
    write_phase(&fleet, &NODES, "after", &mut acknowledged).await?;
    assert_histories(&fleet, &acknowledged).await?;
    // Its entry was only ever on the cut-off node, and was dropped there.
    for node in NODES {
        let seen = fleet.client(node).await?.event_bodies(false, 0).await?;
        ensure!(
            seen.is_disjoint(&unknown),
            "{node} holds {unknown:?}, which was never on a majority"
        );
    }
    Ok(())
}

async fn a_frozen_leader_is_replaced_and_answers_nothing_stale_when_it_thaws(
    transport: &str,
) -> Result<()> {
    let Some((fleet, old, mut acknowledged)) = started(transport).await? else {
        return Ok(());
    };
    let others: Vec<&str> = NODES.iter().copied().filter(|n| *n != old).collect();
    // Connected before the freeze, so the first read after the thaw goes out at once.
    let mut frozen = fleet.client(&old).await?;
    frozen.status().await?;

    fleet.pause(&old)?;
    let new = fleet.wait_for_leader(&others, Some(&old), BOUND).await?;
    write_phase(&fleet, &others, "during", &mut acknowledged).await?;
    fleet.unpause(&old)?;

    // The thawed node still believes it leads until it hears otherwise; a linearizable
    // read through it must not answer from its stale state meanwhile.
    assert_no_stale_read(&mut frozen, &old, &acknowledged).await;
    await_caught_up(&fleet, &old, &acknowledged)
        .await
        .with_context(|| format!("after the thaw, with {new} leading"))?;
    write_phase(&fleet, &NODES, "after", &mut acknowledged).await?;
    assert_histories(&fleet, &acknowledged).await
}

fleet_tests::over_both_transports!(
    a_leader_cut_off_from_its_peers_acknowledges_nothing_and_rejoins_with_every_write,
    a_frozen_leader_is_replaced_and_answers_nothing_stale_when_it_thaws,
);
