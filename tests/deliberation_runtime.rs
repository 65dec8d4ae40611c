//! Deliberations carried out by real `fleetd` processes (SPEC D1–D8, A1, R4): agents
//! asked through the `command` adapter, notes files written by the note-taker,
//! notifications delivered by the primary to a real HTTP receiver, a primary killed
//! in the middle of round 2, and the failover drill.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::notify::WebhookReceiver;
use fleet_node::state::{
    Confidence, Deliberation, DeliberationId, OpenDeliberation, Request, Response, Submission, Tier,
};
use fleet_tests::ProcessFleet;
use fleet_tests::process_fleet::binary;

const NODES: [&str; 3] = ["beast", "5070", "mac"];
/// A generous safety bound for anything that takes an election or a phase.
const BOUND: Duration = Duration::from_secs(30);

/// Adds `[agent]` and a webhook sink to every node's config; `agents` maps a node to
/// the scripted agent's stance (others stay manual).
fn configure(fleet: &ProcessFleet, webhook: &str, agents: &[(&str, &str)]) -> Result<()> {
    let stances: BTreeMap<&str, &str> = agents.iter().copied().collect();
    for node in NODES {
        let path = fleet.config_path(node);
        let mut config = std::fs::read_to_string(&path)?;
        match stances.get(node) {
            Some(stance) => {
                let command = [
                    binary("fleetctl").display().to_string(),
                    "scripted-agent".into(),
                    "--stance".into(),
                    (*stance).into(),
                    "--reason".into(),
                    format!("{node} prefers {stance}."),
                ];
                writeln!(
                    config,
                    "\n[agent]\nadapter = \"command\"\nworkspace = \"workspace\"\ncommand = {}",
                    toml::Value::Array(command.into_iter().map(toml::Value::String).collect())
                )?;
            }
            None => writeln!(
                config,
                "\n[agent]\nadapter = \"manual\"\nworkspace = \"workspace\""
            )?,
        }
        writeln!(
            config,
            "\n[[notify]]\nname = \"test-webhook\"\nkind = \"webhook\"\nurl = \"{webhook}\""
        )?;
        std::fs::write(&path, config)?;
    }
    Ok(())
}

/// Bootstraps with a short failback hold so the drill's failback stays quick.
fn bootstrap(fleet: &ProcessFleet) -> Result<()> {
    fleet.bootstrap_with_failback_hold("beast", 2000)?;
    fleet.wait_for_status("beast primary", BOUND, |status| {
        status["primary"] == "beast" && status["note_taker"] == "beast"
    })?;
    Ok(())
}

fn open(topic: &str, phase_ms: u64) -> Request {
    Request::OpenDeliberation(OpenDeliberation {
        topic: topic.into(),
        tier: Some(Tier::One),
        options: vec!["restic".into(), "borg".into()],
        participants: None,
        phase_ms: Some(phase_ms),
        urgent: false,
        request_id: format!("test-{topic}"),
    })
}

/// Opens a deliberation through `node` and returns its id.
async fn open_through(
    fleet: &ProcessFleet,
    node: &str,
    request: &Request,
) -> Result<DeliberationId> {
    let mut client = fleet.client(node).await?;
    match client.write(request, false).await?.0? {
        Response::Deliberation { deliberation, .. } => Ok(deliberation.id),
        other => bail!("expected a deliberation, got {other:?}"),
    }
}

/// Reads `id` from any live node until `done` holds.
async fn wait_for(
    fleet: &ProcessFleet,
    nodes: &[&str],
    id: DeliberationId,
    what: &str,
    done: impl Fn(&Deliberation) -> bool,
) -> Result<Deliberation> {
    let deadline = Instant::now() + BOUND;
    let mut last = String::new();
    while Instant::now() < deadline {
        for node in nodes {
            let Ok(mut client) = fleet.client(node).await else {
                continue;
            };
            match client.read(&Query::Deliberation { id }, false, 0).await {
                Ok(QueryAnswer::Deliberation(deliberation)) if done(&deliberation) => {
                    return Ok(*deliberation);
                }
                Ok(other) => last = format!("{other:?}"),
                Err(error) => last = error.to_string(),
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("{what}: not within {BOUND:?}; last: {last}")
}

/// Every notes file under the nodes' workspaces.
fn notes_files(dir: &Path) -> Vec<PathBuf> {
    NODES
        .iter()
        .filter_map(|node| std::fs::read_dir(dir.join(node).join("workspace/memory")).ok())
        .flatten()
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect()
}

/// The idempotency keys the receiver got, in order.
fn keys(receiver: &WebhookReceiver) -> Vec<String> {
    receiver
        .received()
        .iter()
        .filter_map(|request| request.json())
        .map(|body| {
            body["idempotency_key"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

async fn wait_for_keys(receiver: &WebhookReceiver, wanted: &[String]) -> Result<Vec<String>> {
    let deadline = Instant::now() + BOUND;
    loop {
        let got = keys(receiver);
        if wanted.iter().all(|key| got.contains(key)) {
            return Ok(got);
        }
        if Instant::now() > deadline {
            bail!("the webhook got {got:?}, not all of {wanted:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scripted_agents_deliberate_and_the_hierarchy_decides_with_notes_and_notifications()
-> Result<()> {
    let receiver = WebhookReceiver::start("127.0.0.1:0".parse()?).await?;
    let mut fleet = ProcessFleet::init(&NODES)?;
    configure(
        &fleet,
        &receiver.url(),
        &[("beast", "restic"), ("5070", "borg"), ("mac", "borg")],
    )?;
    fleet.start_all()?;
    bootstrap(&fleet)?;

    let id = open_through(&fleet, "mac", &open("backups", 20_000)).await?;
    let decided = wait_for(&fleet, &NODES, id, "decided with notes", |d| {
        d.notes.written_by.is_some()
    })
    .await
    .with_context(|| fleet.log("beast"))?;
    let outcome = decided.outcome.clone().context("no outcome")?;
    assert_eq!(
        outcome.decided_by.to_string(),
        "hierarchy:beast",
        "{decided:?}"
    );
    assert_eq!(outcome.decision.as_deref(), Some("restic"));
    // Every agent spoke in both rounds and in the decision phase: nine inputs, all
    // committed by the agents (request ids of the command adapter).
    assert_eq!(decided.inputs.len(), 9, "{:?}", decided.inputs);
    assert!(decided.abstentions.is_empty(), "{:?}", decided.abstentions);
    assert!(
        decided
            .inputs
            .iter()
            .all(|i| i.request_id.starts_with("agent:"))
    );

    // Exactly one notes file, by Beast (the note-taker), with the replicated notes.
    let files = notes_files(fleet.dir());
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].starts_with(fleet.dir().join("beast")), "{files:?}");
    assert_eq!(
        Some(std::fs::read_to_string(&files[0])?),
        decided.notes.markdown
    );

    // The start and the decision reach the webhook, once each.
    let started = format!("home:{id}:started");
    let decided_key = format!("home:{id}:decided");
    wait_for_keys(&receiver, &[started.clone(), decided_key.clone()]).await?;
    let got = keys(&receiver);
    assert_eq!(got.iter().filter(|k| **k == started).count(), 1, "{got:?}");
    assert_eq!(
        got.iter().filter(|k| **k == decided_key).count(),
        1,
        "{got:?}"
    );
    let decision = receiver
        .received()
        .into_iter()
        .filter_map(|r| r.json())
        .find(|body| body["idempotency_key"] == decided_key.as_str())
        .context("no decision body")?;
    let text = decision["text"].as_str().unwrap_or_default();
    assert!(text.contains("restic"), "{text}");
    assert!(text.contains(&decided.notes.path), "{text}");
    Ok(())
}

/// Waits until the fleet has committed the delivery of the notification with `key`.
async fn wait_for_delivery_recorded(fleet: &ProcessFleet, key: &str) -> Result<()> {
    let deadline = Instant::now() + BOUND;
    while Instant::now() < deadline {
        let mut client = fleet.client("5070").await?;
        if let QueryAnswer::Outbox { notifications, .. } =
            client.read(&Query::Outbox, false, 0).await?
            && notifications.iter().any(|n| {
                n.idempotency_key == key
                    && n.deliveries
                        .get("test-webhook")
                        .is_some_and(|d| d.delivered_at_ms.is_some())
            })
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("the delivery of {key} was not committed within {BOUND:?}")
}

fn submission(stance: &str, key: &str) -> Submission {
    Submission {
        round: None,
        stance: stance.into(),
        confidence: Confidence::Medium,
        summary: format!("{stance} is the better fit."),
        concerns: Vec::new(),
        request_id: key.into(),
    }
}

async fn submit(
    fleet: &ProcessFleet,
    node: &str,
    id: DeliberationId,
    stance: &str,
    key: &str,
) -> Result<()> {
    let mut client = fleet.client(node).await?;
    let request = Request::Submit {
        deliberation: id,
        submission: submission(stance, key),
    };
    client.write(&request, true).await?.0?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_the_primary_in_round_two_gives_one_decision_one_notes_file_one_announcement()
-> Result<()> {
    let receiver = WebhookReceiver::start("127.0.0.1:0".parse()?).await?;
    let mut fleet = ProcessFleet::init(&NODES)?;
    configure(&fleet, &receiver.url(), &[])?;
    fleet.start_all()?;
    bootstrap(&fleet)?;

    let id = open_through(&fleet, "5070", &open("failover", 60_000)).await?;
    wait_for_keys(&receiver, &[format!("home:{id}:started")]).await?;
    // The start's delivery is committed before Beast dies, so no successor repeats it.
    wait_for_delivery_recorded(&fleet, &format!("home:{id}:started")).await?;
    for (node, stance) in [("beast", "restic"), ("5070", "borg"), ("mac", "borg")] {
        submit(&fleet, node, id, stance, &format!("{node}-1")).await?;
    }
    wait_for(&fleet, &NODES, id, "round 2", |d| {
        d.phase == fleet_node::state::Phase::Synthesis
    })
    .await?;

    // Beast — primary, note-taker and leader — dies in the middle of round 2.
    fleet.kill("beast")?;
    let survivors = ["5070", "mac"];
    fleet.wait_for_status("5070 primary, mac note-taker", BOUND, |status| {
        status["quorum"] == true && status["primary"] == "5070" && status["note_taker"] == "mac"
    })?;
    for (node, stance) in [("5070", "borg"), ("mac", "borg")] {
        submit(&fleet, node, id, stance, &format!("{node}-2")).await?;
    }
    wait_for(&fleet, &survivors, id, "the decision phase", |d| {
        d.phase == fleet_node::state::Phase::Decision
    })
    .await?;
    for (node, stance) in [("5070", "borg"), ("mac", "borg")] {
        submit(&fleet, node, id, stance, &format!("{node}-3")).await?;
    }
    let decided = wait_for(&fleet, &survivors, id, "decided with notes", |d| {
        d.notes.written_by.is_some()
    })
    .await?;
    let outcome = decided.outcome.clone().context("no outcome")?;
    assert!(outcome.decision.is_some(), "{outcome:?}");
    assert_eq!(
        decided.notes.written_by.as_ref().map(|n| n.to_string()),
        Some("mac".to_string())
    );
    let files = notes_files(fleet.dir());
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].starts_with(fleet.dir().join("mac")), "{files:?}");

    let decided_key = format!("home:{id}:decided");
    wait_for_keys(&receiver, std::slice::from_ref(&decided_key)).await?;
    // Give a duplicate time to show up if there were going to be one.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got = keys(&receiver);
    assert_eq!(
        got.iter().filter(|k| **k == decided_key).count(),
        1,
        "{got:?}"
    );
    assert_eq!(
        got.iter()
            .filter(|k| **k == format!("home:{id}:started"))
            .count(),
        1,
        "{got:?}"
    );
    // Beast restarts: it must not announce the decision again, nor write notes.
    fleet.start("beast")?;
    fleet.wait_for_status("beast back as primary", BOUND, |status| {
        status["primary"] == "beast"
    })?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got = keys(&receiver);
    assert_eq!(
        got.iter().filter(|k| **k == decided_key).count(),
        1,
        "{got:?}"
    );
    assert_eq!(notes_files(fleet.dir()).len(), 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_failover_drill_reports_its_timings_and_is_announced() -> Result<()> {
    let receiver = WebhookReceiver::start("127.0.0.1:0".parse()?).await?;
    let mut fleet = ProcessFleet::init(&NODES)?;
    configure(&fleet, &receiver.url(), &[])?;
    fleet.start_all()?;
    bootstrap(&fleet)?;

    let report = fleet.fleetctl_json(&["drill", "failover", "--down-secs", "3"])?;
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["target"], "beast", "{report}");
    assert_eq!(report["new_primary"], "5070", "{report}");
    assert_eq!(report["new_note_taker"], "mac", "{report}");
    assert_eq!(report["probe_write"], true, "{report}");
    let failover_ms = report["failover_ms"].as_u64().context("failover_ms")?;
    assert!(failover_ms > 0 && failover_ms < 3_000, "{report}");
    // The roles come back only after the fleet's failback hold (2 s here): a node
    // that was cut off must not get them back while it still is, nor at once.
    let failback_ms = report["failback_ms"].as_u64().context("failback_ms")?;
    assert!(failback_ms >= 1_500, "{report}");
    // Out to the others and back: at least two role changes.
    assert!(report["role_changes"].as_u64() >= Some(2), "{report}");

    let id = report["id"].as_u64().context("id")?;
    wait_for_keys(&receiver, &[format!("home:drill-{id}:completed")]).await?;
    // Raft leadership follows the primary back to beast, after the drill: until beast
    // has committed in its new term, the status shows no primary for a moment.
    fleet.wait_for_status("beast primary after the drill", BOUND, |status| {
        status["primary"] == "beast"
    })?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sink_that_asks_to_retry_later_gets_the_same_announcement_again_once_it_is_ready()
-> Result<()> {
    let receiver = WebhookReceiver::start("127.0.0.1:0".parse()?).await?;
    // The first attempt is told to come back in a second, the second one is accepted.
    receiver.respond_with(vec![(503, Some(1))]);
    let mut fleet = ProcessFleet::init(&NODES)?;
    configure(&fleet, &receiver.url(), &[])?;
    fleet.start_all()?;
    bootstrap(&fleet)?;

    let id = open_through(&fleet, "beast", &open("retry", 60_000)).await?;
    let key = format!("home:{id}:started");
    wait_for_delivery_recorded(&fleet, &key).await?;
    let attempts: Vec<_> = receiver
        .received()
        .into_iter()
        .filter(|r| {
            r.json()
                .is_some_and(|b| b["idempotency_key"] == key.as_str())
        })
        .collect();
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    for attempt in &attempts {
        assert_eq!(attempt.header("idempotency-key"), Some(key.as_str()));
    }
    let mut client = fleet.client("mac").await?;
    let QueryAnswer::Outbox { notifications, .. } = client.read(&Query::Outbox, false, 0).await?
    else {
        bail!("expected the outbox");
    };
    let started = notifications
        .iter()
        .find(|n| n.idempotency_key == key)
        .context("the start notification")?;
    let delivery = &started.deliveries["test-webhook"];
    assert_eq!(delivery.attempts, 2, "{delivery:?}");
    assert!(delivery.delivered_at_ms.is_some(), "{delivery:?}");
    assert!(
        delivery
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("503")),
        "{delivery:?}"
    );
    Ok(())
}
