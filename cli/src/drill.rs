//! `fleetctl drill failover`: cuts a node (default: the primary) off from Raft
//! traffic for a while, as if it had crashed, and measures what the fleet does (R4).
//!
//! The drill watches the roles on the other nodes — each read waits on a node until
//! it applies something new, so a role change is seen as it is committed — and
//! reports: the time until a new primary and note-taker were committed, whether a
//! probe write was committed meanwhile, the time from the node's return until the
//! roles were back, and how many role changes happened in all. The report is
//! committed to the fleet's state, which announces it to the operator like a decision.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::roles::Roles;
use fleet_node::state::{DrillReport, NodeName, Request, Response};
use serde::Serialize;

use crate::connection::Connection;
use crate::node_watch::NodeWatch;
use crate::output::OutputFormat;

/// How long one read waits for the watched node to apply something new.
const WATCH_WAIT: Duration = Duration::from_millis(500);
/// How long the roles may take to return after the failback hold before the drill
/// calls failback missed.
const FAILBACK_GRACE: Duration = Duration::from_secs(30);

/// What the operator asked for.
pub struct DrillOptions {
    /// The node to cut off; `None`: the primary.
    pub target: Option<String>,
    /// How long it stays cut off.
    pub down: Duration,
}

/// The report as printed: the committed report plus its ids.
#[derive(Debug, Serialize)]
pub struct DrillOutcome {
    #[serde(flatten)]
    pub report: DrillReport,
    /// The operator notification that announces it (`n-7`).
    pub notification: Option<String>,
}

/// The roles as one node last committed them.
#[derive(Clone, Debug, PartialEq, Eq)]
struct RolesSeen {
    primary: Option<NodeName>,
    note_taker: Option<NodeName>,
    epoch: u64,
}

impl RolesSeen {
    fn of(roles: &Roles) -> Self {
        Self {
            primary: roles.primary().cloned(),
            note_taker: roles.note_taker().cloned(),
            epoch: roles.epoch,
        }
    }

    fn held_by(&self, node: &NodeName) -> bool {
        self.primary.as_ref() == Some(node) || self.note_taker.as_ref() == Some(node)
    }
}

/// The roles as the next watched node applies them.
async fn next_roles(watch: &mut NodeWatch<'_>) -> Result<RolesSeen> {
    match watch.next(WATCH_WAIT).await? {
        Ok(QueryAnswer::Overview { roles, .. }) => Ok(RolesSeen::of(&roles)),
        other => bail!("unexpected answer: {other:?}"),
    }
}

/// Runs the drill and commits its report.
pub async fn failover(connection: &Connection, options: &DrillOptions) -> Result<DrillOutcome> {
    let (settings, before) = match connection.read(&Query::Overview).await? {
        Ok(QueryAnswer::Overview {
            settings: Some(settings),
            roles,
            ..
        }) => (settings, RolesSeen::of(&roles)),
        Ok(QueryAnswer::Overview { settings: None, .. }) => {
            bail!("the fleet is not bootstrapped yet: run `fleetctl cluster init`")
        }
        Ok(other) => bail!("unexpected answer: {other:?}"),
        Err(violation) => bail!("{violation}"),
    };
    let target = match &options.target {
        Some(name) => NodeName::new(name.clone()).map_err(|e| anyhow!("--node: {e}"))?,
        None => before
            .primary
            .clone()
            .context("no node is primary now: the fleet has no quorum or is not healthy")?,
    };
    if !settings.is_member(&target) {
        bail!("--node {target}: not a member of the fleet");
    }
    let others: Vec<String> = connection
        .endpoints
        .iter()
        .map(|(name, _)| name.clone())
        .filter(|name| name != target.as_str())
        .collect();
    if others.is_empty() {
        bail!("the fleetctl config names no node besides {target} to watch from");
    }
    let mut problems = Vec::new();
    // The target's own view is cut off with it: watch through the others.
    let mut watch = NodeWatch::new(connection, Query::Overview, others);

    connection.isolate(target.as_str(), options.down).await?;
    let cut_at = Instant::now();
    let back_at = cut_at + options.down;

    // Failover: the roles the target held move to other nodes.
    let mut failover_ms = None;
    let mut latest = before.clone();
    while Instant::now() < back_at {
        latest = next_roles(&mut watch).await?;
        if latest.epoch > before.epoch && !latest.held_by(&target) {
            failover_ms = Some(elapsed_ms(cut_at));
            break;
        }
        if !before.held_by(&target) {
            failover_ms = Some(0);
            break;
        }
    }
    let after_failover = latest.clone();
    if failover_ms.is_none() {
        problems.push(format!(
            "{target} still held a role when it came back after {} ms",
            options.down.as_millis()
        ));
    }

    // A probe write through the others while the target is away.
    let probe_write = match connection.write_via(watch.nodes(), &Request::Probe).await {
        Ok(Ok(_)) if Instant::now() < back_at => true,
        Ok(Ok(_)) => {
            problems.push("the probe write committed only after the target was back".into());
            false
        }
        Ok(Err(violation)) => {
            problems.push(format!("probe write refused: {violation}"));
            false
        }
        Err(error) => {
            problems.push(format!("probe write failed: {error:#}"));
            false
        }
    };

    tokio::time::sleep_until(back_at.into()).await;

    // Failback: the roles return to where they were, after the hold.
    let deadline = back_at + Duration::from_millis(settings.failback_hold_ms) + FAILBACK_GRACE;
    let mut failback_ms = None;
    while Instant::now() < deadline {
        latest = next_roles(&mut watch).await?;
        if latest.primary == before.primary && latest.note_taker == before.note_taker {
            failback_ms = Some(elapsed_ms(back_at));
            break;
        }
    }
    if failback_ms.is_none() {
        problems.push(format!(
            "the roles did not return within {} ms of {target}'s return (primary {}, note-taker {})",
            (deadline - back_at).as_millis(),
            show(latest.primary.as_ref()),
            show(latest.note_taker.as_ref()),
        ));
    }

    let report = DrillReport {
        id: 0,
        target,
        down_ms: u64::try_from(options.down.as_millis()).unwrap_or(u64::MAX),
        ok: problems.is_empty() && probe_write,
        failover_ms,
        failback_ms,
        new_primary: after_failover.primary,
        new_note_taker: after_failover.note_taker,
        probe_write,
        role_changes: latest.epoch.saturating_sub(before.epoch),
        problems,
        recorded_at_ms: 0,
    };
    match connection
        .write(&Request::RecordDrill(report.clone()))
        .await
    {
        Ok(Ok(Response::Drill {
            report,
            notification,
        })) => Ok(DrillOutcome {
            report: *report,
            notification: Some(notification.to_string()),
        }),
        Ok(Ok(other)) => bail!("unexpected answer to the drill report: {other:?}"),
        Ok(Err(violation)) => bail!("the drill report was refused: {violation}"),
        Err(error) => {
            eprintln!("fleetctl: the drill report could not be committed: {error:#}");
            Ok(DrillOutcome {
                report,
                notification: None,
            })
        }
    }
}

/// Prints the report.
pub fn print(outcome: &DrillOutcome, output: OutputFormat) -> Result<()> {
    output.print(outcome, |outcome| {
        let report = &outcome.report;
        let ms =
            |value: Option<u64>| value.map_or_else(|| "not reached".into(), |v| format!("{v} ms"));
        println!(
            "failover drill {}: {}",
            report.id,
            if report.ok { "passed" } else { "FAILED" }
        );
        println!(
            "  target          {} (cut off for {} ms)",
            report.target, report.down_ms
        );
        println!(
            "  failover        {} (primary {}, note-taker {})",
            ms(report.failover_ms),
            show(report.new_primary.as_ref()),
            show(report.new_note_taker.as_ref())
        );
        println!(
            "  probe write     {}",
            if report.probe_write {
                "committed"
            } else {
                "failed"
            }
        );
        println!("  failback        {}", ms(report.failback_ms));
        println!("  role changes    {}", report.role_changes);
        for problem in &report.problems {
            println!("  problem         {problem}");
        }
        if let Some(notification) = &outcome.notification {
            println!("  announced as    {notification}");
        }
    })
}

fn show(node: Option<&NodeName>) -> &str {
    node.map_or("none", NodeName::as_str)
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}
