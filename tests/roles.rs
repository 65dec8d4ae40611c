//! Roles follow health (SPEC R1–R3) with real `fleetd` processes: the primary and the
//! note-taker move down their chains when Beast is killed, return to it — once —
//! after it restarts and the failback hold has passed, and with two of three nodes
//! down the fleet says it has no quorum and nobody claims to be primary. When the
//! leader dies, its successor in the hierarchy wins the first election.

use std::time::Duration;

use anyhow::Result;
use fleet_tests::ProcessFleet;

const NODES: [&str; 3] = ["beast", "5070", "mac"];
/// A generous safety bound for anything that takes an election and a health check.
const BOUND: Duration = Duration::from_secs(20);

fn roles(status: &serde_json::Value) -> (String, String) {
    let text = |key: &str| status[key].as_str().unwrap_or_default().to_string();
    (text("primary"), text("note_taker"))
}

fn has_roles(
    primary: &'static str,
    note_taker: &'static str,
) -> impl Fn(&serde_json::Value) -> bool {
    move |status| {
        status["quorum"] == true && roles(status) == (primary.to_string(), note_taker.to_string())
    }
}

#[test]
fn roles_fail_over_down_their_chains_and_return_to_beast() -> Result<()> {
    let mut fleet = ProcessFleet::init(&NODES)?;
    fleet.start_all()?;
    fleet.bootstrap_with_failback_hold("beast", 2000)?;
    let first = fleet.wait_for_status(
        "beast primary and note-taker",
        BOUND,
        has_roles("beast", "beast"),
    )?;
    let first_epoch = first["epoch"].as_u64().unwrap_or_default();

    fleet.kill("beast")?;
    let failed_over = fleet.wait_for_status(
        "5070 primary, mac note-taker",
        BOUND,
        has_roles("5070", "mac"),
    )?;
    assert!(
        failed_over["epoch"].as_u64() > Some(first_epoch),
        "{failed_over}"
    );

    fleet.start("beast")?;
    let back = fleet.wait_for_status("roles back on beast", BOUND, has_roles("beast", "beast"))?;
    assert!(
        back["epoch"].as_u64() > failed_over["epoch"].as_u64(),
        "{back}"
    );
    // Leadership follows the primary home.
    fleet.wait_for_status("beast leads again", BOUND, |s| s["leader"] == "beast")?;
    // Once: the roles stay put afterwards.
    std::thread::sleep(Duration::from_secs(2));
    let settled = fleet.status()?;
    assert_eq!(
        settled["epoch"], back["epoch"],
        "roles changed again: {settled}"
    );
    Ok(())
}

/// The successor (5070) campaigns as soon as Beast's lease has run out on it (2 s
/// here). Mac's timers are set so that, by openraft's randomized timer alone, Mac
/// would campaign first (its lease of 1.6 s plus 1.5–1.6 s, against 5070's 2 s plus
/// 1.5–2 s): only the successor's fast campaign lets 5070 win, and it has a second to
/// spare. So the first leader after Beast is 5070, one term later.
///
/// A follower knows it is the successor from the settings and health that it has
/// *applied*, so Beast is killed only once every member has applied what Beast has:
/// killed the moment Beast itself applied the fleet's settings, 5070 may not yet have
/// heard that they committed, and then knows of no successor to stand as.
#[test]
fn the_successor_wins_the_first_election_after_the_leader_dies() -> Result<()> {
    let timers = |min: &str, max: &str| {
        vec![
            (
                "FLEET_RAFT__ELECTION_TIMEOUT_MIN_MS".to_string(),
                min.to_string(),
            ),
            (
                "FLEET_RAFT__ELECTION_TIMEOUT_MAX_MS".to_string(),
                max.to_string(),
            ),
        ]
    };
    let mut fleet = ProcessFleet::init(&NODES)?;
    fleet.env = timers("1500", "2000");
    fleet.start("beast")?;
    fleet.start("5070")?;
    fleet.env = timers("1500", "1600");
    fleet.start("mac")?;
    fleet.bootstrap("beast")?;
    let before =
        fleet.wait_for_status("beast leads, everyone healthy and caught up", BOUND, |s| {
            let members = s["members"].as_array().cloned().unwrap_or_default();
            s["leader"] == "beast"
                && has_roles("beast", "beast")(s)
                && members.iter().all(|m| m["healthy"] == true)
                && members
                    .iter()
                    .all(|m| m["last_applied"] == members[0]["last_applied"])
        })?;
    let term = before["term"].as_u64().unwrap_or_default();

    fleet.kill("beast")?;
    let after = fleet.wait_for_status("a new leader", BOUND, |s| {
        s["leader"] != "beast" && s["leader"] != ""
    })?;
    assert_eq!(
        after["leader"],
        "5070",
        "{after}\nbefore the kill: {before}\n5070's log ends:\n{}",
        fleet.log_tail("5070", 30)
    );
    assert_eq!(
        after["term"].as_u64(),
        Some(term + 1),
        "{after}\n5070's log ends:\n{}\nmac's log ends:\n{}",
        fleet.log_tail("5070", 40),
        fleet.log_tail("mac", 40)
    );
    Ok(())
}

#[test]
fn without_a_quorum_the_status_says_so_and_nobody_is_primary() -> Result<()> {
    let mut fleet = ProcessFleet::init(&NODES)?;
    fleet.start_all()?;
    fleet.bootstrap("beast")?;
    fleet.wait_for_status("beast primary", BOUND, has_roles("beast", "beast"))?;
    fleet.kill("beast")?;
    fleet.wait_for_status("5070 primary", BOUND, has_roles("5070", "mac"))?;
    fleet.kill("5070")?;
    let alone = fleet.wait_for_status("no quorum reported", BOUND, |s| s["quorum"] == false)?;
    assert_eq!(
        alone["primary"], "",
        "a primary is claimed without a quorum: {alone}"
    );
    let problem = alone["problem"].as_str().unwrap_or_default();
    assert!(problem.contains("quorum"), "{alone}");
    let output = fleet.fleetctl(&["status"])?;
    assert!(
        !output.status.success(),
        "status must exit non-zero without a quorum"
    );
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("beast") && table.contains("5070"), "{table}");
    Ok(())
}

/// A laptop that slept: the primary is stopped (`SIGSTOP`) for longer than the
/// election timeout and continued. Meanwhile 5070 takes over with a newer epoch; no
/// two nodes ever report different primaries for the same epoch, and what the old
/// primary does with its old epoch afterwards is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_that_slept_cannot_act_on_its_old_epoch() -> Result<()> {
    use std::collections::BTreeMap;

    use fleet_node::state::outbox::{DeliveryResult, NotificationId};
    use fleet_node::state::{Request, RuleViolation};

    let mut fleet = ProcessFleet::init(&NODES)?;
    fleet.start_all()?;
    fleet.bootstrap("beast")?;
    let before = fleet.wait_for_status("beast primary", BOUND, has_roles("beast", "beast"))?;
    let old_epoch = before["epoch"].as_u64().unwrap_or_default();

    fleet.signal("beast", "STOP")?;
    let during = fleet.wait_for_status(
        "5070 primary while beast sleeps",
        BOUND,
        has_roles("5070", "mac"),
    )?;
    assert!(during["epoch"].as_u64() > Some(old_epoch), "{during}");
    fleet.signal("beast", "CONT")?;

    // Every node's own view, polled while beast wakes up: one primary per epoch.
    let mut primary_of_epoch: BTreeMap<u64, String> = BTreeMap::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < deadline {
        for node in NODES {
            let Ok(mut client) = fleet.client(node).await else {
                continue;
            };
            let Ok(Ok(status)) =
                tokio::time::timeout(Duration::from_secs(2), client.status()).await
            else {
                continue;
            };
            if status.primary.is_empty() {
                continue;
            }
            let known = primary_of_epoch
                .entry(status.epoch)
                .or_insert_with(|| status.primary.clone());
            assert_eq!(
                known, &status.primary,
                "two primaries for epoch {}: {status:?}",
                status.epoch
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Beast acts as primary with the epoch it had before it slept: refused.
    let mut beast = fleet.client("beast").await?;
    let stale = Request::RecordDelivery {
        notification: NotificationId(1),
        sink: "webhook".into(),
        result: DeliveryResult::Delivered,
        epoch: old_epoch,
    };
    let (result, _) = beast.write(&stale, true).await?;
    match result {
        Err(violation @ RuleViolation::StaleEpoch { .. }) => {
            assert_eq!(violation.code(), "stale_epoch");
        }
        other => panic!("a stale epoch was not refused: {other:?}"),
    }
    Ok(())
}

/// `fleetctl roles watch -o json` prints the roles, then the failover as it commits.
#[test]
fn roles_watch_prints_each_change_as_it_is_committed() -> Result<()> {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let mut fleet = ProcessFleet::init(&NODES)?;
    fleet.start_all()?;
    fleet.bootstrap("beast")?;
    fleet.wait_for_status("beast primary", BOUND, has_roles("beast", "beast"))?;
    let mut watcher = Command::new(fleet_tests::process_fleet::binary("fleetctl"))
        .arg("--config")
        .arg(fleet.dir().join("fleetctl.toml"))
        .args(["--node", "mac", "roles", "watch", "-o", "json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut lines = BufReader::new(watcher.stdout.take().expect("piped stdout")).lines();
    let mut next = || -> Result<serde_json::Value> {
        let line = lines
            .next()
            .ok_or_else(|| anyhow::anyhow!("roles watch ended"))??;
        Ok(serde_json::from_str(&line)?)
    };
    let first = next()?;
    assert_eq!(first["primary"], "beast", "{first}");
    fleet.kill("beast")?;
    let mut seen = vec![first];
    while seen.last().is_some_and(|l| l["primary"] != "5070") && seen.len() < 10 {
        seen.push(next()?);
    }
    let _ = watcher.kill();
    let _ = watcher.wait();
    let last = seen.last().cloned().unwrap_or_default();
    assert_eq!(
        (last["primary"].as_str(), last["note_taker"].as_str()),
        (Some("5070"), Some("mac")),
        "{seen:?}"
    );
    assert!(
        last["epoch"].as_u64() > seen[0]["epoch"].as_u64(),
        "{seen:?}"
    );
    Ok(())
}
