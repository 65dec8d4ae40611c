//! `fleetctl demo`: the whole product in one command, on one machine.
//!
//! It makes a fresh three-node fleet (as `fleetctl dev`) whose agents are scripted
//! `command` agents that disagree — Beast wants restic, 5070 and Mac want borg — and
//! whose notifications go to a local webhook receiver. It runs one deliberation, which
//! the hierarchy must decide (Beast outranks the others), checks the notes file the
//! note-taker wrote and the notifications the primary delivered, then (once the
//! primary also leads Raft) runs a failover drill and waits for the drill's own
//! notification. It prints all of it and exits 0 only when every part worked.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::notify::{ReceivedRequest, WebhookReceiver};
use fleet_node::state::{Deliberation, OpenDeliberation, Request, Response, RuleViolation, Tier};
use serde::Serialize;
use serde_json::Value;

use crate::connection::Connection;
use crate::dev::{DevFleet, DevOptions};
use crate::drill::{DrillOptions, DrillOutcome};
use crate::node_watch::NodeWatch;

/// The question the demo fleet deliberates.
const TOPIC: &str = "Which backup tool should the fleet standardise on for the home servers?";
/// The nodes, in hierarchy order.
const NODES: [&str; 3] = ["beast", "5070", "mac"];
/// How long the drill keeps the primary cut off.
const DRILL_DOWN: Duration = Duration::from_secs(4);

/// What `fleetctl demo` needs to know.
pub struct DemoOptions {
    /// Where the fleet lives; `None`: a fresh directory under the system's temp dir.
    pub dir: Option<PathBuf>,
    /// The first node's API port.
    pub base_port: u16,
}

/// Everything the demo saw, printed at the end.
#[derive(Debug, Serialize)]
pub struct DemoReport {
    pub ok: bool,
    pub dir: PathBuf,
    pub deliberation: DeliberationSummary,
    pub notes: NotesSummary,
    pub notifications: Vec<ReceivedNotification>,
    pub drill: Option<DrillOutcome>,
    pub problems: Vec<String>,
}

/// The decided deliberation.
#[derive(Debug, Serialize)]
pub struct DeliberationSummary {
    pub id: String,
    pub topic: String,
    pub outcome: Option<String>,
    pub decided_by: String,
    pub decision_maker: String,
    pub responder: Option<String>,
    /// `node: stance (phase)` for every input, in commit order.
    pub positions: Vec<String>,
}

/// The notes file as the note-taker wrote it.
#[derive(Debug, Serialize)]
pub struct NotesSummary {
    pub written_by: Option<String>,
    pub file: Option<PathBuf>,
    pub markdown: Option<String>,
}

/// One notification as the webhook received it.
#[derive(Debug, Serialize)]
pub struct ReceivedNotification {
    pub title: String,
    pub idempotency_key: String,
    /// Whether an earlier one carried the same key: delivered again, as when the
    /// primary that delivered it lost the lead before it recorded the delivery
    /// (delivery is at least once; a receiver drops a repeat by its key).
    pub repeat: bool,
}

/// The notifications in the order received, each repeat of a key marked.
fn mark_repeats(received: impl IntoIterator<Item = (String, String)>) -> Vec<ReceivedNotification> {
    let mut seen = BTreeSet::new();
    received
        .into_iter()
        .map(|(title, idempotency_key)| ReceivedNotification {
            repeat: !seen.insert(idempotency_key.clone()),
            title,
            idempotency_key,
        })
        .collect()
}

/// Runs the demo; the fleet is stopped when it returns.
pub async fn run(
    options: &DemoOptions,
    connect: impl Fn(&Path) -> Result<Connection>,
    progress: impl Fn(&str),
) -> Result<DemoReport> {
    let dir = match &options.dir {
        Some(dir) => dir.clone(),
        None => fresh_dir()?,
    };
    if dir.join("fleetctl.toml").exists() {
        bail!(
            "{} already holds a fleet; the demo needs a fresh directory",
            dir.display()
        );
    }
    progress(&format!("creating a three-node fleet in {}", dir.display()));
    init_fleet(&dir, options.base_port)?;
    let receiver = WebhookReceiver::start("127.0.0.1:0".parse()?)
        .await
        .context("starting the local webhook receiver")?;
    configure_nodes(&dir, &receiver.url())?;
    let dev_options = DevOptions {
        dir: dir.clone(),
        nodes: NODES.iter().map(ToString::to_string).collect(),
        base_port: options.base_port,
        transport: None,
    };
    let mut fleet: DevFleet = crate::dev::start(&dev_options, &connect).await?;
    let connection = connect(&dir.join("fleetctl.toml"))?;
    let result = exercise(&connection, &dir, &receiver, &progress).await;
    fleet.stop();
    result
}

async fn exercise(
    connection: &Connection,
    dir: &Path,
    receiver: &WebhookReceiver,
    progress: &impl Fn(&str),
) -> Result<DemoReport> {
    let mut problems = Vec::new();
    wait_for_primary(connection).await?;
    progress(&format!("deliberating: {TOPIC}"));
    let opened = connection
        .write(&Request::OpenDeliberation(OpenDeliberation {
            topic: TOPIC.into(),
            tier: Some(Tier::One),
            options: vec!["restic".into(), "borg".into()],
            participants: None,
            phase_ms: Some(20_000),
            urgent: false,
            request_id: "demo".into(),
        }))
        .await??;
    let Response::Deliberation { deliberation, .. } = opened else {
        bail!("unexpected answer to opening the deliberation: {opened:?}");
    };
    let decided = wait_for(connection, deliberation.id, Duration::from_secs(90), |d| {
        d.outcome.is_some() && d.notes.written_by.is_some()
    })
    .await?;
    let outcome = decided
        .outcome
        .clone()
        .context("decided without an outcome")?;
    progress(&format!(
        "decided: {} ({})",
        outcome.decision.as_deref().unwrap_or("no decision"),
        outcome.decided_by
    ));
    if outcome.decided_by.to_string() != "hierarchy:beast" {
        problems.push(format!(
            "expected the hierarchy (beast) to decide, got {}",
            outcome.decided_by
        ));
    }
    let notes = read_notes(dir, &decided, &mut problems);

    let id = deliberation.id;
    let of_this_deliberation = format!(":{id}:");
    let announcements = |received: &[ReceivedRequest]| -> BTreeSet<String> {
        keys(received)
            .filter(|key| key.contains(&of_this_deliberation))
            .collect()
    };
    let received = receiver
        .wait_until(Duration::from_secs(30), |received| {
            announcements(received).len() >= 2
        })
        .await;
    let announced = announcements(&received).len();
    if announced < 2 {
        problems.push(format!(
            "the webhook received {announced} of 2 announcements of {id}"
        ));
    }

    wait_for_primary_to_lead(connection).await?;
    progress(&format!(
        "failover drill: cutting the primary off for {} s",
        DRILL_DOWN.as_secs()
    ));
    let drill = crate::drill::failover(
        connection,
        &DrillOptions {
            target: None,
            down: DRILL_DOWN,
        },
    )
    .await;
    let drill = match drill {
        Ok(outcome) => {
            if !outcome.report.ok {
                problems.push(format!(
                    "the drill failed: {}",
                    outcome.report.problems.join("; ")
                ));
            }
            let reported =
                |received: &[ReceivedRequest]| keys(received).any(|key| key.contains(":drill-"));
            let received = receiver.wait_until(Duration::from_secs(30), reported).await;
            if !reported(&received) {
                problems.push("the webhook did not receive the drill's report".into());
            }
            Some(outcome)
        }
        Err(error) => {
            problems.push(format!("the drill did not run: {error:#}"));
            None
        }
    };

    let notifications = mark_repeats(
        receiver
            .received()
            .into_iter()
            .filter_map(|request| request.json())
            .map(|body| {
                let title = body["title"].as_str().unwrap_or_default().to_string();
                (title, key_of(&body))
            }),
    );
    Ok(DemoReport {
        ok: problems.is_empty(),
        dir: dir.to_path_buf(),
        deliberation: DeliberationSummary {
            id: id.to_string(),
            topic: decided.topic.clone(),
            outcome: outcome.decision.clone(),
            decided_by: outcome.decided_by.to_string(),
            decision_maker: outcome.decision_maker.clone(),
            responder: outcome.responder.as_ref().map(ToString::to_string),
            positions: decided
                .inputs
                .iter()
                .map(|input| format!("{}: {} ({})", input.node, input.stance, input.phase))
                .collect(),
        },
        notes,
        notifications,
        drill,
        problems,
    })
}

/// Prints the report for people.
pub fn print_table(report: &DemoReport) {
    let mut text = String::new();
    let d = &report.deliberation;
    let _ = writeln!(text, "\ndeliberation {}: {}", d.id, d.topic);
    for position in &d.positions {
        let _ = writeln!(text, "  {position}");
    }
    let _ = writeln!(
        text,
        "  decision: {} — by {} ({}), responder {}",
        d.outcome.as_deref().unwrap_or("none"),
        d.decision_maker,
        d.decided_by,
        d.responder.as_deref().unwrap_or("none")
    );
    match (&report.notes.file, &report.notes.written_by) {
        (Some(file), Some(by)) => {
            let _ = writeln!(text, "\nnotes written by {by}: {}", file.display());
        }
        _ => {
            let _ = writeln!(text, "\nnotes: not written");
        }
    }
    let _ = writeln!(text, "\nnotifications received by the webhook:");
    for notification in &report.notifications {
        let _ = writeln!(
            text,
            "  {}  [{}]{}",
            notification.title,
            notification.idempotency_key,
            if notification.repeat {
                "  (again, the same key: delivery is at least once, and a receiver keeps the first)"
            } else {
                ""
            }
        );
    }
    print!("{text}");
    if let Some(drill) = &report.drill {
        println!();
        let _ = crate::drill::print(drill, crate::output::OutputFormat::Table);
    }
    println!();
    if report.ok {
        println!(
            "demo passed; the fleet's files are in {}",
            report.dir.display()
        );
    } else {
        println!("demo FAILED:");
        for problem in &report.problems {
            println!("  {problem}");
        }
        println!("logs: {}/<node>/fleetd.log", report.dir.display());
    }
}

fn fresh_dir() -> Result<PathBuf> {
    let mut bytes = [0u8; 4];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    Ok(std::env::temp_dir().join(format!("fleet-demo-{}", hex::encode(bytes))))
}

fn init_fleet(dir: &Path, base_port: u16) -> Result<()> {
    let status = std::process::Command::new(std::env::current_exe()?)
        .arg("init")
        .arg("--dir")
        .arg(dir)
        .arg("--nodes")
        .arg(NODES.join(","))
        .arg("--base-port")
        .arg(base_port.to_string())
        .stdout(std::process::Stdio::null())
        .status()?;
    if !status.success() {
        bail!("fleetctl init failed for {}", dir.display());
    }
    Ok(())
}

/// Gives each node a scripted agent and the webhook as its notification sink.
fn configure_nodes(dir: &Path, webhook_url: &str) -> Result<()> {
    let fleetctl = std::env::current_exe()?;
    let agents = [
        (
            "beast",
            "restic",
            "restic's deduplicated, encrypted snapshots work against every backend we use.",
        ),
        (
            "5070",
            "borg",
            "borg is faster on the local disks and its compression saves space.",
        ),
        (
            "mac",
            "borg",
            "borg has the mature tooling (borgmatic) that the Mac already runs.",
        ),
    ];
    for (node, stance, reason) in agents {
        let path = dir.join(node).join("fleetd.toml");
        let mut config =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let command = [
            fleetctl.display().to_string(),
            "scripted-agent".into(),
            "--stance".into(),
            stance.into(),
            "--reason".into(),
            reason.into(),
        ];
        let _ = write!(
            config,
            "\n[agent]\nadapter = \"command\"\nworkspace = \"workspace\"\ncommand = {}\n\n[[notify]]\nname = \"demo-webhook\"\nkind = \"webhook\"\nurl = {}\n",
            toml::Value::Array(command.into_iter().map(toml::Value::String).collect()),
            toml::Value::String(webhook_url.to_string()),
        );
        fs::write(&path, config).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

async fn wait_for_primary(connection: &Connection) -> Result<()> {
    let committed = async || {
        matches!(
            connection.read(&Query::Overview).await,
            Ok(Ok(QueryAnswer::Overview { roles, .. })) if roles.primary().is_some()
        )
    };
    poll_until(committed, "no primary was committed within 30 s").await
}

/// Waits until the primary also leads Raft: leadership is handed to it after the
/// roles are committed, and a drill started before that would time the hand-over too.
async fn wait_for_primary_to_lead(connection: &Connection) -> Result<()> {
    let leads = async || {
        let status = crate::status::collect(connection).await;
        !status.primary.is_empty() && status.leader == status.primary
    };
    poll_until(
        leads,
        "the primary did not become the Raft leader within 30 s",
    )
    .await
}

/// Asks `holds` every 100 ms until it says yes; fails with `failure` after 30 s.
async fn poll_until(holds: impl AsyncFn() -> bool, failure: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if holds().await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("{failure}")
}

/// Reads the deliberation as each new command is applied until `done` holds.
async fn wait_for(
    connection: &Connection,
    id: fleet_node::state::DeliberationId,
    timeout: Duration,
    done: impl Fn(&Deliberation) -> bool,
) -> Result<Deliberation> {
    let deadline = Instant::now() + timeout;
    let mut watch = NodeWatch::through_candidates(connection, Query::Deliberation { id });
    while Instant::now() < deadline {
        match watch.next(Duration::from_secs(1)).await? {
            Ok(QueryAnswer::Deliberation(deliberation)) if done(&deliberation) => {
                return Ok(*deliberation);
            }
            Ok(QueryAnswer::Deliberation(_)) => {}
            // A follower may not have applied the opening yet.
            Err(RuleViolation::UnknownDeliberation { .. }) => {}
            answer => bail!("unexpected answer about {id}: {answer:?}"),
        }
    }
    bail!("{id} was not decided with its notes written within {timeout:?}")
}

fn read_notes(dir: &Path, deliberation: &Deliberation, problems: &mut Vec<String>) -> NotesSummary {
    let written_by = deliberation
        .notes
        .written_by
        .as_ref()
        .map(ToString::to_string);
    let file = written_by.as_ref().map(|node| {
        dir.join(node)
            .join("workspace")
            .join(&deliberation.notes.path)
    });
    let markdown = file.as_ref().and_then(|file| fs::read_to_string(file).ok());
    match (&file, &markdown) {
        (Some(_), Some(text)) if Some(text) == deliberation.notes.markdown.as_ref() => {}
        (Some(file), Some(_)) => problems.push(format!(
            "{} differs from the replicated notes",
            file.display()
        )),
        (Some(file), None) => problems.push(format!("{} is missing", file.display())),
        (None, _) => problems.push("nobody confirmed the notes".into()),
    }
    NotesSummary {
        written_by,
        file,
        markdown,
    }
}

/// The idempotency keys of `received`, in arrival order (a key repeats when a
/// delivery was retried).
fn keys(received: &[ReceivedRequest]) -> impl Iterator<Item = String> + '_ {
    received
        .iter()
        .filter_map(ReceivedRequest::json)
        .map(|body| key_of(&body))
}

fn key_of(body: &Value) -> String {
    body["idempotency_key"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_whose_key_came_before_is_marked_a_repeat() {
        let received = [
            ("started", "home:d-1:started"),
            ("decided", "home:d-1:decided"),
            ("decided", "home:d-1:decided"),
        ]
        .map(|(title, key)| (title.to_string(), key.to_string()));
        let repeats: Vec<bool> = mark_repeats(received).iter().map(|n| n.repeat).collect();
        assert_eq!(repeats, [false, false, true]);
    }
}
