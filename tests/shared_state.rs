//! The agents' shared state through `fleetctl` against real `fleetd` processes (SPEC
//! S1–S4): sessions that expire when their node dies, an event wait that is woken by
//! an append on another node, a claim race between two nodes, artifacts verified by
//! sha256, limits that refuse instead of truncating, the bulletin board with stale
//! flags and archive, and capability manifests with routing.
//!
//! Every command runs as a person or an agent would run it: the `fleetctl` binary,
//! `--node NAME` to act as a node. The test client is used only for writes `fleetctl`
//! can never send (a wrong sha256, a body past the limit that an argument cannot hold).

use std::fs;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fleet_node::api::error::{ANSWERED_BY_NODE, delivery_unknown};
use fleet_node::api::service::API_MESSAGE_MAX_BYTES;
use fleet_node::state::artifacts::sha256_hex;
use fleet_node::state::event_log::{EventStatus, NewEvent};
use fleet_node::state::limits::{ARTIFACT_BYTES_MAX, BODY_BYTES_MAX};
use fleet_node::state::{Request, RuleViolation};
use fleet_tests::client::unkeyed_append;
use fleet_tests::process_fleet::refused;
use fleet_tests::running_fleetctl::Finished;
use fleet_tests::{ProcessFleet, RunningFleetctl};
use serde_json::Value;
use tonic::Code;

const NODES: [&str; 3] = ["beast", "5070", "mac"];
/// A generous bound for anything that takes an election or a few commits.
const BOUND: Duration = Duration::from_secs(30);
/// The most an event may take from its append on one node to a waiter on another; a
/// loose bound on purpose (the figure is printed), as the push is measured in
/// `benches/`, not asserted here.
const WAIT_WAKE_BOUND: Duration = Duration::from_secs(2);

/// Three nodes bootstrapped with the documented fleet settings, each `(from, to)`
/// replacement applied to `config/fleet.toml` first; waits until beast is primary.
fn start_fleet(changes: &[(&str, &str)]) -> Result<ProcessFleet> {
    start_prepared_fleet(ProcessFleet::init(&NODES)?, changes)
}

/// [`start_fleet`] with the documented settings, for tests that write multi-MiB
/// entries: elections that a busy debug build does not trip.
fn start_fleet_for_large_entries() -> Result<ProcessFleet> {
    let mut fleet = ProcessFleet::init(&NODES)?;
    fleet.with_long_elections();
    start_prepared_fleet(fleet, &[])
}

/// [`start_fleet`] for a fleet initialised (and perhaps configured) by the caller.
fn start_prepared_fleet(mut fleet: ProcessFleet, changes: &[(&str, &str)]) -> Result<ProcessFleet> {
    fleet.start_all()?;
    let mut settings =
        fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../config/fleet.toml"))?;
    for (from, to) in changes {
        if !settings.contains(from) {
            bail!("config/fleet.toml no longer says `{from}`");
        }
        settings = settings.replace(from, to);
    }
    let path = fleet.dir().join("fleet.toml");
    fs::write(&path, settings)?;
    fleet.bootstrap_with(
        "beast",
        &["--settings", path.to_str().context("a UTF-8 path")?],
    )?;
    fleet.wait_for_status("beast primary", BOUND, |s| {
        s["quorum"] == true && s["primary"] == "beast"
    })?;
    Ok(fleet)
}

/// `fleetctl [--node NODE] ARGS -o json`, which must succeed.
fn json(fleet: &ProcessFleet, node: Option<&str>, args: &[&str]) -> Result<Value> {
    let mut all = Vec::new();
    if let Some(node) = node {
        all.extend(["--node", node]);
    }
    all.extend_from_slice(args);
    fleet.fleetctl_json(&all)
}

/// `fleetctl [--node NODE] ARGS`, whatever its exit code.
fn run(fleet: &ProcessFleet, node: Option<&str>, args: &[&str]) -> Result<Output> {
    let mut all = Vec::new();
    if let Some(node) = node {
        all.extend(["--node", node]);
    }
    all.extend_from_slice(args);
    fleet.fleetctl(&all)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The keys of the live sessions `fleetctl sessions -o json` lists.
fn session_keys(fleet: &ProcessFleet) -> Result<Vec<String>> {
    let sessions = json(fleet, None, &["sessions"])?;
    Ok(sessions
        .as_array()
        .context("a list of sessions")?
        .iter()
        .filter_map(|s| s["key"].as_str().map(str::to_string))
        .collect())
}

/// The newest event id, from `fleetctl events list -o json`.
fn last_event_id(fleet: &ProcessFleet) -> Result<u64> {
    json(fleet, None, &["events", "list", "--limit", "1"])?["last_id"]
        .as_u64()
        .context("last_id")
}

#[test]
fn sessions_are_published_by_their_node_and_expire_when_it_is_killed() -> Result<()> {
    let mut fleet = start_fleet(&[("session_ttl_ms = 90000", "session_ttl_ms = 3000")])?;

    let published = json(
        &fleet,
        Some("mac"),
        &[
            "sessions", "publish", "mac-main", "--agent", "main", "--status", "busy",
        ],
    )?;
    assert_eq!(
        (&published["key"], &published["node"], &published["agent"]),
        (
            &Value::from("mac-main"),
            &Value::from("mac"),
            &Value::from("main")
        ),
        "{published:#}"
    );
    assert_eq!(published["status"], "busy", "{published:#}");
    json(
        &fleet,
        Some("beast"),
        &["sessions", "publish", "beast-main"],
    )?;

    // The node is the authenticated caller: the operator cannot publish, and a node
    // cannot take over another node's live session.
    let error = refused(&run(&fleet, None, &["sessions", "publish", "beast-main"])?);
    assert!(error.contains("--node"), "{error}");
    let error = refused(&run(
        &fleet,
        Some("mac"),
        &["sessions", "publish", "beast-main"],
    )?);
    assert!(error.contains("belongs to beast"), "{error}");

    assert_eq!(session_keys(&fleet)?, ["beast-main", "mac-main"]);
    let table = stdout(&run(&fleet, Some("5070"), &["sessions"])?);
    let header = table.lines().next().unwrap_or_default();
    for column in ["KEY", "NODE", "AGENT", "STATUS", "LAST ACTIVITY"] {
        assert!(header.contains(column), "{table}");
    }
    let mac_row = table
        .lines()
        .find(|l| l.starts_with("mac-main"))
        .with_context(|| format!("no mac-main row in\n{table}"))?;
    assert!(
        mac_row.contains("busy") && mac_row.contains("s ago"),
        "{table}"
    );

    // mac dies; beast keeps publishing. Only mac's session expires.
    fleet.kill("mac")?;
    let killed = Instant::now();
    loop {
        json(
            &fleet,
            Some("beast"),
            &["sessions", "publish", "beast-main"],
        )?;
        let keys = session_keys(&fleet)?;
        assert!(keys.contains(&"beast-main".to_string()), "{keys:?}");
        if !keys.contains(&"mac-main".to_string()) {
            break;
        }
        if killed.elapsed() > BOUND {
            bail!("mac-main did not expire within {BOUND:?} of mac being killed: {keys:?}");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    println!(
        "mac-main expired {:.1} s after mac was killed (ttl 3 s)",
        killed.elapsed().as_secs_f64()
    );
    Ok(())
}

#[test]
fn an_event_wait_on_one_node_is_woken_by_an_append_on_another() -> Result<()> {
    let fleet = start_fleet(&[])?;
    let since = last_event_id(&fleet)?;
    let since_arg = since.to_string();

    let mut waiter = RunningFleetctl::spawn(
        &fleet,
        &[
            "--node",
            "5070",
            "events",
            "wait",
            "--type",
            "task.request",
            "--to",
            "5070",
            "--since",
            &since_arg,
            "--timeout",
            "30s",
            "-o",
            "json",
        ],
    )?;
    // Let the wait reach the node and park there, so the append below is news to it.
    std::thread::sleep(Duration::from_millis(1_000));
    // An event for someone else must not wake it.
    json(
        &fleet,
        Some("mac"),
        &[
            "events",
            "append",
            "--type",
            "task.request",
            "--stream",
            "project/fleet",
            "--to",
            "beast",
            "--body",
            "not for 5070",
        ],
    )?;
    let body = "Goal: fix the ranking.\nBranch: main\nBase: 1a2b3c\nDone when: tests pass";
    let appending = Instant::now();
    let appended = json(
        &fleet,
        Some("mac"),
        &[
            "events",
            "append",
            "--type",
            "task.request",
            "--stream",
            "project/fleet",
            "--room",
            "delegation",
            "--to",
            "5070",
            "--correlation-id",
            "task_fix_ranking_7f3a",
            "--body",
            body,
        ],
    )?;
    let Finished {
        code,
        stdout: out,
        stderr: err,
        exited,
    } = waiter.finish(BOUND)?;
    let woken_after = exited.duration_since(appending);
    println!(
        "events wait on 5070 returned {:.0} ms after the append through mac began",
        woken_after.as_secs_f64() * 1000.0
    );
    assert_eq!(code, Some(0), "stdout: {out}; stderr: {err}");
    assert!(
        woken_after < WAIT_WAKE_BOUND,
        "the waiter took {woken_after:?}"
    );

    let page: Value = serde_json::from_str(&out)?;
    let events = page["events"].as_array().context("events")?;
    assert_eq!(events.len(), 1, "{page:#}");
    let event = &events[0];
    assert_eq!(event["id"], appended["event"]["id"], "{page:#}");
    assert_eq!(event["from"], "mac", "the author is the authenticated node");
    assert_eq!(event["to"], "5070");
    assert_eq!(event["room"], "delegation");
    assert_eq!(event["status"], "Open");
    assert_eq!(event["correlation_id"], "task_fix_ranking_7f3a");
    assert_eq!(event["body"], body, "bodies are verbatim");
    assert_eq!(page["next_since"], event["id"], "{page:#}");

    // The same filters on `list` find it; an operator's event is authored `operator`.
    let listed = json(
        &fleet,
        None,
        &[
            "events",
            "list",
            "--correlation-id",
            "task_fix_ranking_7f3a",
        ],
    )?;
    assert_eq!(listed["events"][0]["id"], event["id"], "{listed:#}");
    let by_operator = json(
        &fleet,
        None,
        &["events", "append", "--type", "note", "--stream", "ops"],
    )?;
    assert_eq!(by_operator["event"]["from"], "operator", "{by_operator:#}");

    // Nothing matches: a clear message and exit code 2 once the timeout passes.
    let after = last_event_id(&fleet)?.to_string();
    let started = Instant::now();
    let timed_out = run(
        &fleet,
        Some("beast"),
        &[
            "events",
            "wait",
            "--type",
            "never.sent",
            "--since",
            &after,
            "--timeout",
            "1s",
        ],
    )?;
    let waited = started.elapsed();
    assert_eq!(
        timed_out.status.code(),
        Some(2),
        "stderr: {}",
        String::from_utf8_lossy(&timed_out.stderr)
    );
    let message = String::from_utf8_lossy(&timed_out.stderr);
    assert!(message.contains("no matching event"), "{message}");
    assert!(message.contains(&format!("--since {after}")), "{message}");
    assert!(
        waited >= Duration::from_secs(1),
        "returned after {waited:?}"
    );
    Ok(())
}

#[test]
fn two_nodes_race_to_claim_one_request_and_exactly_one_wins() -> Result<()> {
    let fleet = start_fleet(&[])?;
    let request = json(
        &fleet,
        Some("mac"),
        &[
            "events",
            "append",
            "--type",
            "task.request",
            "--stream",
            "project/fleet",
            "--correlation-id",
            "task_race",
            "--body",
            "whoever is free",
        ],
    )?;
    let id = request["event"]["id"]
        .as_u64()
        .context("an event id")?
        .to_string();

    let claim = |node: &'static str| {
        RunningFleetctl::spawn(
            &fleet,
            &[
                "--node", node, "events", "ack", &id, "--status", "claimed", "--body", node,
            ],
        )
    };
    let mut racers = [("beast", claim("beast")?), ("5070", claim("5070")?)];
    let mut winners = Vec::new();
    let mut losers = Vec::new();
    for (node, racer) in &mut racers {
        let Finished {
            code,
            stdout: out,
            stderr: err,
            ..
        } = racer.finish(BOUND)?;
        match code {
            Some(0) => winners.push((*node, out)),
            Some(1) => losers.push((*node, err)),
            other => bail!("{node}'s claim exited {other:?}: {out} {err}"),
        }
    }
    assert_eq!(winners.len(), 1, "winners {winners:?}, losers {losers:?}");
    assert_eq!(losers.len(), 1, "winners {winners:?}, losers {losers:?}");
    let (winner, _) = winners[0];
    let (loser, refusal) = &losers[0];
    println!(
        "{winner} won the claim; {loser} was told: {}",
        refusal.trim()
    );
    assert!(
        refusal.contains(&format!("already claimed by {winner}")),
        "{refusal}"
    );

    // One claim in the log; the holder's repeat returns it; the loser stays refused.
    let acks = json(
        &fleet,
        None,
        &["events", "list", "--type", "task.request.ack"],
    )?;
    let claims: Vec<&Value> = acks["events"]
        .as_array()
        .context("events")?
        .iter()
        .filter(|e| e["status"] == "Claimed")
        .collect();
    assert_eq!(claims.len(), 1, "{acks:#}");
    assert_eq!(claims[0]["from"], winner);
    assert_eq!(claims[0]["to"], "mac", "an ack goes back to the requester");
    assert_eq!(claims[0]["correlation_id"], "task_race");
    let again = json(
        &fleet,
        Some(winner),
        &["events", "ack", &id, "--status", "claimed"],
    )?;
    assert_eq!(again["repeated"], true, "{again:#}");
    assert_eq!(again["event"]["id"], claims[0]["id"]);
    let error = refused(&run(
        &fleet,
        Some(loser),
        &["events", "ack", &id, "--status", "claimed"],
    )?);
    assert!(
        error.contains(&format!("already claimed by {winner}")),
        "{error}"
    );
    let applied = json(
        &fleet,
        Some(winner),
        &[
            "events", "ack", &id, "--status", "applied", "--body", "done",
        ],
    )?;
    assert_eq!(applied["event"]["status"], "Applied", "{applied:#}");
    assert_eq!(applied["event"]["acks"], request["event"]["id"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_round_trip_verified_and_a_wrong_hash_is_refused() -> Result<()> {
    let fleet = start_fleet(&[])?;
    let dir = fleet.dir().to_path_buf();

    // A patch through one follower, fetched through the other.
    let patch = b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n".to_vec();
    let patch_path = dir.join("fix.patch");
    fs::write(&patch_path, &patch)?;
    let stored = json(
        &fleet,
        Some("mac"),
        &[
            "artifacts",
            "put",
            patch_path.to_str().context("path")?,
            "--media-type",
            "text/x-diff",
        ],
    )?;
    let sha = sha256_hex(&patch);
    assert_eq!(stored["sha256"], sha.as_str(), "{stored:#}");
    assert_eq!(stored["size"], patch.len());
    let table = run(
        &fleet,
        Some("beast"),
        &["artifacts", "put", patch_path.to_str().context("path")?],
    )?;
    assert_eq!(stdout(&table).trim(), sha, "put prints the id");

    let fetched_path = dir.join("fetched.patch");
    let summary = json(
        &fleet,
        Some("5070"),
        &[
            "artifacts",
            "get",
            &sha,
            "--out",
            fetched_path.to_str().context("path")?,
        ],
    )?;
    assert_eq!(fs::read(&fetched_path)?, patch);
    assert_eq!(summary["media_type"], "text/x-diff", "{summary:#}");
    assert_eq!(summary["put_by"], "mac", "{summary:#}");
    assert_eq!(summary["metadata"]["file_name"], "fix.patch", "{summary:#}");
    let raw = run(&fleet, None, &["artifacts", "get", &sha.to_uppercase()])?;
    assert_eq!(raw.stdout, patch, "get prints the content byte for byte");

    // A hash that is not the content's is refused, naming both; nothing is stored.
    let mut client = fleet.client("beast").await?;
    let claimed = sha256_hex(b"something else");
    let (result, _) = client
        .write(
            &Request::PutArtifact {
                sha256: claimed.clone(),
                media_type: "text/plain".into(),
                metadata: Default::default(),
                content: b"the real content".to_vec(),
            },
            false,
        )
        .await?;
    match result {
        Err(RuleViolation::ArtifactHashMismatch {
            claimed: said,
            actual,
        }) => {
            assert_eq!(said, claimed);
            assert_eq!(actual, sha256_hex(b"the real content"));
        }
        other => bail!("a wrong hash must be refused, got {other:?}"),
    }
    let error = refused(&run(
        &fleet,
        None,
        &["artifacts", "get", &sha256_hex(b"the real content")],
    )?);
    assert!(error.contains("no artifact"), "{error}");
    Ok(())
}

/// The largest artifact the fleet takes is stored through one follower and read back
/// through the other, so every hop (the forwarded write, Raft, the forwarded
/// linearizable read) carries 4 MiB of content, base64-encoded in JSON.
#[test]
fn the_largest_artifact_round_trips_through_followers() -> Result<()> {
    let fleet = start_fleet_for_large_entries()?;
    let dir = fleet.dir().to_path_buf();
    let largest: Vec<u8> = (0..ARTIFACT_BYTES_MAX).map(|i| (i % 251) as u8).collect();
    let largest_path = dir.join("largest.bin");
    fs::write(&largest_path, &largest)?;
    let stored = json(
        &fleet,
        Some("mac"),
        &["artifacts", "put", largest_path.to_str().context("path")?],
    )?;
    let largest_sha = sha256_hex(&largest);
    assert_eq!(stored["sha256"], largest_sha.as_str(), "{stored:#}");
    assert_eq!(stored["size"], ARTIFACT_BYTES_MAX, "{stored:#}");
    let largest_out = dir.join("largest.out");
    json(
        &fleet,
        Some("5070"),
        &[
            "artifacts",
            "get",
            &largest_sha,
            "--out",
            largest_out.to_str().context("path")?,
        ],
    )?;
    assert!(fs::read(&largest_out)? == largest, "4 MiB round trip");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_and_artifacts_are_refused_with_the_limit_named() -> Result<()> {
    let fleet = start_fleet_for_large_entries()?;
    let dir = fleet.dir().to_path_buf();
    let append_file = |path: &Path| -> Result<Output> {
        run(
            &fleet,
            Some("mac"),
            &[
                "events",
                "append",
                "--type",
                "log.dump",
                "--stream",
                "project/fleet",
                "--body-file",
                path.to_str().context("path")?,
            ],
        )
    };

    // A body exactly at the limit is stored whole.
    let at_limit = "a".repeat(BODY_BYTES_MAX);
    let at_limit_path = dir.join("at-limit.txt");
    fs::write(&at_limit_path, &at_limit)?;
    let output = append_file(&at_limit_path)?;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let listed = json(&fleet, None, &["events", "list", "--type", "log.dump"])?;
    assert_eq!(
        listed["events"][0]["body"].as_str().map(str::len),
        Some(BODY_BYTES_MAX),
        "never truncated"
    );

    // One byte more is refused with the limit named, through fleetctl…
    let over_path = dir.join("over.txt");
    fs::write(&over_path, format!("{at_limit}b"))?;
    let error = refused(&append_file(&over_path)?);
    assert!(
        error.contains("body") && error.contains(&BODY_BYTES_MAX.to_string()),
        "{error}"
    );
    let error = refused(&run(
        &fleet,
        Some("mac"),
        &[
            "bulletin",
            "post",
            "--to",
            "all",
            "--subject",
            "logs",
            "--body-file",
            over_path.to_str().context("path")?,
        ],
    )?);
    assert!(error.contains(&BODY_BYTES_MAX.to_string()), "{error}");

    // …and by the fleet itself for a client that does not check.
    let mut client = fleet.client("beast").await?;
    let (result, _) = client
        .write(
            &Request::AppendEvent(NewEvent {
                event_type: "log.dump".into(),
                stream: "project/fleet".into(),
                room: "general".into(),
                to: "*".into(),
                correlation_id: None,
                status: EventStatus::Open,
                body: format!("{at_limit}b"),
                request_id: None,
            }),
            false,
        )
        .await?;
    match result {
        Err(RuleViolation::TooLarge { field, size, limit }) => {
            assert_eq!(
                (field.as_str(), size, limit),
                ("body", BODY_BYTES_MAX + 1, BODY_BYTES_MAX)
            );
        }
        other => bail!("an oversized body must be refused, got {other:?}"),
    }
    let listed = json(&fleet, None, &["events", "list", "--type", "log.dump"])?;
    assert_eq!(
        listed["events"].as_array().map(Vec::len),
        Some(1),
        "nothing stored"
    );

    // A 5 MiB file is refused before it is sent; the fleet refuses 4 MiB + 1 itself.
    let big_path = dir.join("big.bin");
    fs::write(&big_path, vec![7u8; 5 * 1024 * 1024])?;
    let error = refused(&run(
        &fleet,
        Some("mac"),
        &["artifacts", "put", big_path.to_str().context("path")?],
    )?);
    assert!(
        error.contains("artifact") && error.contains(&ARTIFACT_BYTES_MAX.to_string()),
        "{error}"
    );
    let content = vec![7u8; ARTIFACT_BYTES_MAX + 1];
    let (result, _) = client
        .write(
            &Request::PutArtifact {
                sha256: sha256_hex(&content),
                media_type: "application/octet-stream".into(),
                metadata: Default::default(),
                content,
            },
            false,
        )
        .await?;
    match result {
        Err(RuleViolation::TooLarge { field, limit, .. }) => {
            assert_eq!((field.as_str(), limit), ("artifact", ARTIFACT_BYTES_MAX));
        }
        other => bail!("an oversized artifact must be refused, got {other:?}"),
    }

    // A call past the client API's message limit is refused by the node's gRPC layer
    // before any code of Fleet's sees it; that answer, too, says a node gave it, so a
    // caller knows the write was not taken (rather than that its fate is unknown).
    let mut unlimited = fleet.client("beast").await?.without_send_limit();
    let huge = unkeyed_append("project/fleet", &"h".repeat(API_MESSAGE_MAX_BYTES));
    match unlimited.send_write(&huge, false).await? {
        Err(status) => {
            assert_eq!(status.code(), Code::OutOfRange, "{status:?}");
            assert!(
                status.metadata().contains_key(ANSWERED_BY_NODE) && !delivery_unknown(&status),
                "{status:?}"
            );
        }
        Ok(reply) => bail!("a call past the message limit must be refused, got {reply:?}"),
    }
    Ok(())
}

#[test]
fn bulletin_items_are_acknowledged_flagged_stale_and_archived() -> Result<()> {
    let fleet = start_fleet(&[("bulletin_stale_ms = 172800000", "bulletin_stale_ms = 2000")])?;
    let to_beast = json(
        &fleet,
        Some("mac"),
        &[
            "bulletin",
            "post",
            "--to",
            "beast",
            "--subject",
            "Cloudflare billing renewal April 15",
            "--body",
            "May need a payment method update.",
        ],
    )?;
    assert_eq!(
        to_beast["from"], "mac",
        "the source is the authenticated node"
    );
    let to_beast_id = to_beast["id"].as_str().context("an id")?.to_string();
    let to_all = json(
        &fleet,
        None,
        &[
            "bulletin",
            "post",
            "--to",
            "all",
            "--subject",
            "New blog post ready",
        ],
    )?;
    let to_all_id = to_all["id"].as_str().context("an id")?.to_string();

    // Only the target acknowledges.
    let error = refused(&run(
        &fleet,
        Some("5070"),
        &["bulletin", "ack", &to_beast_id],
    )?);
    assert!(error.contains("addressed to beast"), "{error}");
    json(&fleet, Some("beast"), &["bulletin", "ack", &to_beast_id])?;
    for node in ["beast", "5070"] {
        json(&fleet, Some(node), &["bulletin", "ack", &to_all_id])?;
    }

    let for_5070 = json(&fleet, None, &["bulletin", "--for", "5070"])?;
    let ids: Vec<&str> = for_5070
        .as_array()
        .context("a list")?
        .iter()
        .filter_map(|l| l["item"]["id"].as_str())
        .collect();
    assert_eq!(ids, [to_all_id.as_str()], "{for_5070:#}");

    // After the (shortened) stale age, the item mac has not acknowledged is flagged.
    std::thread::sleep(Duration::from_millis(2_500));
    let listed = json(&fleet, None, &["bulletin"])?;
    let listing = |id: &str| {
        listed
            .as_array()
            .and_then(|l| l.iter().find(|x| x["item"]["id"] == id))
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(listing(&to_beast_id)["acknowledged"], true, "{listed:#}");
    assert_eq!(listing(&to_beast_id)["stale"], false, "{listed:#}");
    assert_eq!(listing(&to_all_id)["acknowledged"], false, "{listed:#}");
    assert_eq!(listing(&to_all_id)["stale"], true, "{listed:#}");
    let table = stdout(&run(&fleet, None, &["bulletin"])?);
    let stale_row = table
        .lines()
        .find(|l| l.starts_with(&to_all_id))
        .with_context(|| format!("no {to_all_id} row in\n{table}"))?;
    assert!(
        stale_row.contains("[operator → All] New blog post ready") && stale_row.ends_with("STALE"),
        "{table}"
    );
    assert!(
        table.contains("    May need a payment method update."),
        "{table}"
    );

    // Archiving is the operator's; archived items leave the list but are kept.
    let error = refused(&run(
        &fleet,
        Some("mac"),
        &["bulletin", "archive", "--before", "2100-01-01"],
    )?);
    assert!(error.contains("operator"), "{error}");
    let archived = json(
        &fleet,
        None,
        &["bulletin", "archive", "--before", "2100-01-01"],
    )?;
    assert_eq!(archived["archived"], 2, "{archived:#}");
    assert_eq!(json(&fleet, None, &["bulletin"])?, Value::Array(vec![]));
    let all = json(&fleet, None, &["bulletin", "--all"])?;
    assert_eq!(all.as_array().map(Vec::len), Some(2), "{all:#}");
    assert!(
        stdout(&run(&fleet, None, &["bulletin", "--all"])?).contains("archived"),
        "the table marks archived items"
    );
    Ok(())
}

#[test]
fn capabilities_are_published_shown_and_used_to_route_questions() -> Result<()> {
    let fleet = start_fleet(&[])?;
    let manifest = fleet.dir().join("CAPABILITIES.md");
    fs::write(
        &manifest,
        "# CAPABILITIES.md — 5070\n## I Can Do\n- GPU inference with vLLM\n- CUDA driver upgrades\n## I’ve Learned\n- The fans get loud above 300 W\n## I Need From Others\n- beast: DNS changes\n",
    )?;
    let manifest_arg = manifest.to_str().context("path")?;
    let error = refused(&run(
        &fleet,
        None,
        &["capabilities", "publish", manifest_arg],
    )?);
    assert!(error.contains("--node"), "{error}");
    let published = json(
        &fleet,
        Some("5070"),
        &["capabilities", "publish", manifest_arg],
    )?;
    assert_eq!(
        published["can_do"],
        serde_json::json!(["GPU inference with vLLM", "CUDA driver upgrades"])
    );

    let shown = json(&fleet, None, &["capabilities", "5070"])?;
    assert_eq!(shown[0]["node"], "5070", "{shown:#}");
    assert_eq!(
        shown[0]["learned"],
        serde_json::json!(["The fans get loud above 300 W"])
    );
    assert_eq!(shown[0]["needs"], serde_json::json!(["beast: DNS changes"]));
    let table = stdout(&run(&fleet, None, &["capabilities"])?);
    for line in [
        "5070",
        "  I Can Do:",
        "    - CUDA driver upgrades",
        "  I've Learned:",
        "  I Need From Others:",
    ] {
        assert!(table.lines().any(|l| l == line), "{line:?} in\n{table}");
    }
    assert_eq!(
        json(&fleet, None, &["capabilities", "mac"])?,
        Value::Array(vec![])
    );

    // No specialty covers GPUs: the manifest decides; a simple question needs no
    // deliberation.
    let route = json(&fleet, None, &["route", "Which GPU inference server fits?"])?;
    assert_eq!(route["responder"], "5070", "{route:#}");
    assert_eq!(route["needs_deliberation"], false, "{route:#}");
    let table = stdout(&run(
        &fleet,
        None,
        &["route", "Which GPU inference server fits?"],
    )?);
    assert!(table.contains("responder:   5070"), "{table}");
    assert!(table.contains("reason:"), "{table}");

    // A security question goes to beast's specialty and always deliberates (tier 1)…
    let route = json(
        &fleet,
        None,
        &["route", "Should we rotate the security keys?"],
    )?;
    assert_eq!(route["responder"], "beast", "{route:#}");
    assert_eq!(route["needs_deliberation"], true, "{route:#}");
    // …unless it is urgent: emergency bypass.
    let route = json(
        &fleet,
        None,
        &["route", "Should we rotate the security keys?", "--urgent"],
    )?;
    assert_eq!(route["needs_deliberation"], false, "{route:#}");
    assert_eq!(route["advice"], "emergency_bypass", "{route:#}");
    assert_eq!(route["tier"], 1, "{route:#}");
    Ok(())
}

/// The config an agent's machine uses: the local node only, with that node's agent
/// token (`token_file`). Every call acts as that node and can do no operator's work.
#[test]
fn an_agents_fleetctl_config_acts_as_its_node_and_nothing_more() -> Result<()> {
    let fleet = start_fleet(&[])?;
    let client_config = fs::read_to_string(fleet.dir().join("fleetctl.toml"))?;
    let mac_endpoint = client_config
        .lines()
        .find_map(|line| line.strip_prefix("mac = "))
        .context("mac's endpoint in fleetctl.toml")?;
    let agent_config = fleet.dir().join("mac-agent.toml");
    fs::write(
        &agent_config,
        format!(
            "fleet = \"home\"\nca_cert = \"ca.pem\"\ntoken_file = \"mac/agent.token\"\n\
             [endpoints]\nmac = {mac_endpoint}\n"
        ),
    )?;
    let agent = |args: &[&str]| -> Result<Output> {
        let mut all = vec!["--config", agent_config.to_str().context("a UTF-8 path")?];
        all.extend_from_slice(args);
        Ok(
            std::process::Command::new(fleet_tests::process_fleet::binary("fleetctl"))
                .args(&all)
                .output()?,
        )
    };
    let posted = agent(&[
        "bulletin",
        "post",
        "--to",
        "all",
        "--subject",
        "GPU free",
        "--body",
        "idle",
        "-o",
        "json",
    ])?;
    assert!(
        posted.status.success(),
        "{}",
        String::from_utf8_lossy(&posted.stderr)
    );
    let item: Value = serde_json::from_slice(&posted.stdout)?;
    assert_eq!(item["from"], "mac", "{item}");
    // Archiving is the operator's; the agent token is not the operator.
    let archive = agent(&["bulletin", "archive", "--before", "2100-01-01"])?;
    let message = refused(&archive);
    assert!(message.contains("operator"), "{message}");
    Ok(())
}
