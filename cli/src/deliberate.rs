//! `fleetctl deliberate "<topic>"` (D1): opens a deliberation and follows it live until
//! it is decided, printing each phase, input and abstention as the fleet commits it,
//! then the outcome. `LiveProgress` remembers what was already printed, so each read
//! prints only what is new.
//!
//! Following works like `roles watch`: each read waits on a node until it has applied a
//! newer command, and moves to the next node when one stops answering. A node that has
//! applied less than the last one read may show an older state of the deliberation;
//! such a state is skipped, never printed backwards.

use std::time::Duration;

use crate::route_report::RouteReport;
use anyhow::{Result, anyhow, bail};
use clap::Args;
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::{
    Deliberation, NodeName, OpenDeliberation, Phase, Request, Response, RuleViolation, Tier,
};
use serde::Serialize;

use crate::connection::Connection;
use crate::deliberations::{
    DeliberationReport, abstention_line, input_lines, now_ms, print_outcome, seconds, time_left,
};
use crate::node_watch::NodeWatch;
use crate::output::OutputFormat;

/// How long one read waits for the node to apply something new.
const WAIT: Duration = Duration::from_secs(10);
/// How long to wait after the decision for the note-taker to confirm the notes file,
/// so the report can say who wrote it.
const NOTES_GRACE: Duration = Duration::from_secs(3);
/// How long past its last deadline an undecided deliberation may be followed before
/// `fleetctl` warns that the fleet may have no leader to move time on.
const OVERDUE_WARNING_MS: u64 = 30_000;
/// Random bytes in an idempotency key.
const REQUEST_ID_BYTES: usize = 16;

/// `fleetctl deliberate`.
#[derive(Debug, Args)]
pub struct DeliberateArgs {
    /// The question to deliberate.
    topic: String,
    /// 1: always deliberate; 2: only if the first positions conflict; 3: optional
    /// (default: classified from the topic's words).
    #[arg(long, value_name = "1|2|3")]
    tier: Option<u8>,
    /// An allowed stance; give none for free text, or at least two.
    #[arg(long = "option", value_name = "STANCE")]
    options: Vec<String>,
    /// The participants (default: every healthy member).
    #[arg(long, value_delimiter = ',', value_name = "NODES")]
    participants: Option<Vec<String>>,
    /// Length of each phase in seconds (decimals allowed; default: the fleet's setting).
    #[arg(long, value_name = "SECONDS")]
    round_secs: Option<f64>,
    /// Time-sensitive: skip deliberation and name the responder (emergency bypass).
    #[arg(long)]
    urgent: bool,
    /// Print the deliberation's id and return instead of following it.
    #[arg(long)]
    detach: bool,
}

/// What `deliberate -o json` prints: the deliberation, and whether this call joined
/// one that was already open on the same topic.
#[derive(Debug, Serialize)]
struct DeliberateReport {
    joined: bool,
    #[serde(flatten)]
    deliberation: DeliberationReport,
}

/// A fresh idempotency key: random hex, unique per invocation.
pub fn request_id() -> Result<String> {
    let mut bytes = [0u8; REQUEST_ID_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| anyhow!("no randomness for a request id: {e}"))?;
    Ok(hex::encode(bytes))
}

/// Opens the deliberation, then follows it unless `--detach`.
pub async fn run(
    connection: &Connection,
    args: &DeliberateArgs,
    output: OutputFormat,
) -> Result<()> {
    let json = output == OutputFormat::Json;
    let request = Request::OpenDeliberation(open_request(args)?);
    let response = connection.write(&request).await?.map_err(|v| anyhow!(v))?;
    let (deliberation, joined) = match response {
        Response::Deliberation {
            deliberation,
            repeated,
        } => (*deliberation, repeated),
        Response::Bypassed { route } => {
            return output.print(&RouteReport::of(&route), print_bypass);
        }
        other => bail!("unexpected answer to opening a deliberation: {other:?}"),
    };
    if !json && joined {
        println!(
            "joined the open deliberation {} on this topic",
            deliberation.id
        );
    }
    if args.detach {
        let report = DeliberateReport {
            joined,
            deliberation: DeliberationReport::new(&deliberation),
        };
        return output.print(&report, |report| {
            if !report.joined {
                println!("{}", report.deliberation.id);
            }
        });
    }
    if !json {
        print_header(&deliberation);
    }
    let decided = follow(connection, deliberation, json).await?;
    let report = DeliberateReport {
        joined,
        deliberation: DeliberationReport::new(&decided),
    };
    output.print(&report, |_| print_outcome(&decided))
}

fn open_request(args: &DeliberateArgs) -> Result<OpenDeliberation> {
    let tier = args
        .tier
        .map(Tier::from_number)
        .transpose()
        .map_err(|v| anyhow!(v))?;
    let participants = args
        .participants
        .as_ref()
        .map(|names| {
            names
                .iter()
                .map(|name| NodeName::new(name.trim()))
                .collect::<Result<Vec<_>, RuleViolation>>()
        })
        .transpose()
        .map_err(|v| anyhow!(v))?;
    let phase_ms = args
        .round_secs
        .map(|secs| {
            if secs.is_finite() && secs > 0.0 {
                // Whole milliseconds: the state checks the range and names its limits.
                Ok((secs * 1000.0).round() as u64)
            } else {
                Err(anyhow!(
                    "invalid --round-secs: {secs} is not a positive number of seconds"
                ))
            }
        })
        .transpose()?;
    Ok(OpenDeliberation {
        topic: args.topic.clone(),
        tier,
        options: args.options.clone(),
        participants,
        phase_ms,
        urgent: args.urgent,
        request_id: request_id()?,
    })
}

fn print_bypass(route: &RouteReport) {
    match &route.responder {
        Some(responder) => println!("urgent: no deliberation; {responder} answers now"),
        None => println!("urgent: no deliberation, but no responder could be named"),
    }
    println!("  tier:   {}", route.tier);
    println!("  reason: {}", route.reason);
}

fn print_header(deliberation: &Deliberation) {
    println!("{}: {}", deliberation.id, deliberation.topic);
    let mut facts = vec![
        format!("tier {}", deliberation.tier.number()),
        format!(
            "participants {}",
            deliberation
                .participants
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ];
    if !deliberation.options.is_empty() {
        facts.push(format!("options {}", deliberation.options.join(", ")));
    }
    facts.push(format!("{} phases", seconds(deliberation.phase_ms)));
    println!("  {}", facts.join(" · "));
}

/// Reads the deliberation again and again until it is decided, printing what is new
/// (unless `json`); returns the decided deliberation.
async fn follow(connection: &Connection, first: Deliberation, json: bool) -> Result<Deliberation> {
    let id = first.id;
    let mut watch = NodeWatch::through_candidates(connection, Query::Deliberation { id });
    watch.verbose = !json;
    let mut progress = LiveProgress::default();
    let mut latest = first;
    progress.print(&latest, json);
    let mut warned = false;
    let mut notes_deadline = None;
    loop {
        if !latest.is_open() {
            // Decided: wait a moment for the note-taker's confirmation, then stop.
            let until =
                *notes_deadline.get_or_insert_with(|| tokio::time::Instant::now() + NOTES_GRACE);
            if latest.notes.written_by.is_some()
                || latest.notes.assigned.is_none()
                || tokio::time::Instant::now() >= until
            {
                return Ok(latest);
            }
        } else if !warned && now_ms() > latest.hard_deadline_ms() + OVERDUE_WARNING_MS {
            warned = true;
            eprintln!(
                "fleetctl: {id} is past its last deadline and still undecided; the fleet may have no leader (see `fleetctl status`)"
            );
        }
        let wait = match notes_deadline {
            Some(until) => until.saturating_duration_since(tokio::time::Instant::now()),
            None => WAIT,
        };
        match watch.next(wait).await? {
            Ok(QueryAnswer::Deliberation(deliberation)) => {
                if LiveProgress::stage(&deliberation) >= LiveProgress::stage(&latest) {
                    latest = *deliberation;
                    progress.print(&latest, json);
                }
            }
            // This node has not applied the opening yet; it will.
            Err(RuleViolation::UnknownDeliberation { .. }) => {}
            Err(violation) => return Err(anyhow!(violation)),
            Ok(other) => bail!("unexpected answer: {other:?}"),
        }
    }
}

/// What has been printed of a deliberation so far.
#[derive(Debug, Default)]
struct LiveProgress {
    /// The last phase announced; `None` before the first.
    phase: Option<Phase>,
    inputs: usize,
    abstentions: usize,
}

impl LiveProgress {
    /// How far a deliberation has come; it only ever grows, so a smaller one is older.
    fn stage(deliberation: &Deliberation) -> (bool, Phase, usize, usize) {
        (
            !deliberation.is_open(),
            deliberation.phase,
            deliberation.inputs.len(),
            deliberation.abstentions.len(),
        )
    }

    /// Prints what is new in `deliberation` (nothing with `json`) and remembers it.
    fn print(&mut self, deliberation: &Deliberation, json: bool) {
        for line in self.news(deliberation, now_ms()) {
            if !json {
                println!("{line}");
            }
        }
    }

    /// The lines for what changed since the last call, in the order it happened: each
    /// phase's start, then the inputs given in it, then who abstained when it ended.
    fn news(&mut self, deliberation: &Deliberation, now: u64) -> Vec<String> {
        let mut events: Vec<(Phase, u8, String)> = Vec::new();
        for phase in [Phase::Positions, Phase::Synthesis, Phase::Decision] {
            let already = self.phase.is_some_and(|seen| seen >= phase);
            if already || !happened(deliberation, phase) {
                continue;
            }
            let line = if deliberation.is_open() && deliberation.phase == phase {
                format!(
                    "{phase} — {}",
                    time_left(deliberation.phase_deadline_ms, now)
                )
            } else {
                phase.to_string()
            };
            events.push((phase, 0, line));
            self.phase = Some(phase);
        }
        for input in deliberation.inputs.iter().skip(self.inputs) {
            for line in input_lines(input) {
                events.push((input.phase, 1, format!("  {line}")));
            }
        }
        for abstention in deliberation.abstentions.iter().skip(self.abstentions) {
            events.push((
                abstention.phase,
                2,
                format!("  {}", abstention_line(abstention)),
            ));
        }
        self.inputs = self.inputs.max(deliberation.inputs.len());
        self.abstentions = self.abstentions.max(deliberation.abstentions.len());
        // A stable sort keeps each input's concerns under it.
        events.sort_by_key(|(phase, kind, _)| (*phase, *kind));
        events.into_iter().map(|(_, _, line)| line).collect()
    }
}

/// Whether `phase` took place: it is the current or a past phase of an open
/// deliberation, or something was given or withheld in it (a phase that ended always
/// recorded an input or an abstention; phases skipped on the way to a decision did not).
fn happened(deliberation: &Deliberation, phase: Phase) -> bool {
    (deliberation.is_open() && phase <= deliberation.phase)
        || deliberation.inputs.iter().any(|i| i.phase == phase)
        || deliberation.abstentions.iter().any(|a| a.phase == phase)
}

#[cfg(test)]
mod tests {
    use fleet_node::state::deliberation::{Abstention, Input, NotesRecord};
    use fleet_node::state::{Actor, Confidence};

    use super::*;

    fn node(name: &str) -> NodeName {
        NodeName::new(name).unwrap()
    }

    fn deliberation() -> Deliberation {
        Deliberation {
            id: fleet_node::state::DeliberationId(1),
            topic: "Which?".into(),
            topic_key: "which".into(),
            tier: Tier::One,
            options: vec!["A".into(), "B".into()],
            participants: vec![node("beast"), node("mac")],
            opened_by: Actor::Operator,
            request_id: "r".into(),
            opened_at_ms: 0,
            phase_ms: 60_000,
            phase: Phase::Positions,
            phase_started_ms: 0,
            phase_deadline_ms: 60_000,
            inputs: Vec::new(),
            abstentions: Vec::new(),
            specialist: None,
            announced_note_taker: None,
            notes: NotesRecord {
                path: "memory/x.md".into(),
                markdown: None,
                assigned: None,
                written_by: None,
            },
            outcome: None,
        }
    }

    fn input(name: &str, phase: Phase) -> Input {
        Input {
            node: node(name),
            phase,
            stance: "A".into(),
            confidence: Confidence::High,
            summary: "because".into(),
            concerns: vec![],
            request_id: format!("{name}-{phase:?}"),
            at_ms: 1,
        }
    }

    #[test]
    fn each_change_is_printed_once_in_the_order_it_happened() {
        let mut progress = LiveProgress::default();
        let mut d = deliberation();
        assert_eq!(
            progress.news(&d, 2_000),
            ["round 1 (positions) — 58 s left"]
        );
        assert!(progress.news(&d, 3_000).is_empty());
        d.inputs.push(input("beast", Phase::Positions));
        d.abstentions.push(Abstention {
            node: node("mac"),
            phase: Phase::Positions,
        });
        d.phase = Phase::Synthesis;
        d.phase_deadline_ms = 120_000;
        d.inputs.push(input("mac", Phase::Synthesis));
        assert_eq!(
            progress.news(&d, 61_000),
            [
                "  beast  round 1  stance: A  (high) — because",
                "  mac abstained in round 1 (positions)",
                "round 2 (synthesis) — 59 s left",
                "  mac  round 2  stance: A  (high) — because",
            ]
        );
        assert!(progress.news(&d, 62_000).is_empty());
    }
}
