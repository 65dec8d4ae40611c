//! `DeliberationReport`: one deliberation as `fleetctl` shows it, and the read-only
//! deliberation commands: `fleetctl deliberations [--open]`, `fleetctl deliberations
//! show <id>` and `fleetctl notes <id>`.
//!
//! The report is the one JSON shape every deliberation command prints (`deliberate`,
//! `position`, `override`, `deliberations`, `deliberations show`), so a script reads the
//! same keys wherever the deliberation came from. Nothing in it is shortened; only the
//! table may cut a long topic to fit a line.

use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Result, anyhow, bail};
use clap::{Args, Subcommand};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::deliberation::{Abstention, Input};
use fleet_node::state::{Confidence, Deliberation, DeliberationId, Phase};
use serde::Serialize;

use crate::connection::Connection;
use crate::output::OutputFormat;

/// The longest topic the list table shows before it cuts it with `…`.
const TOPIC_COLUMN_CHARS_MAX: usize = 48;

/// `fleetctl deliberations`: the list, or one deliberation in full.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DeliberationsArgs {
    /// Only deliberations that are not decided yet.
    #[arg(long)]
    open: bool,
    #[command(subcommand)]
    command: Option<DeliberationsCommand>,
}

#[derive(Debug, Subcommand)]
enum DeliberationsCommand {
    /// Every detail of one deliberation: inputs, abstentions, deadline, outcome, notes.
    Show {
        /// The deliberation (`d-3` or `3`).
        id: String,
    },
}

/// `fleetctl notes <id>`.
#[derive(Debug, Args)]
pub struct NotesArgs {
    /// The deliberation (`d-3` or `3`).
    id: String,
}

/// One input as reported.
#[derive(Debug, Serialize)]
pub struct PositionReport {
    pub node: String,
    /// `positions`, `synthesis` or `decision`.
    pub phase: &'static str,
    /// 1 or 2; none in the decision phase.
    pub round: Option<u8>,
    pub stance: String,
    /// `low`, `medium` or `high`.
    pub confidence: &'static str,
    pub summary: String,
    pub concerns: Vec<String>,
    pub at_ms: u64,
}

/// A participant that stayed silent in a phase.
#[derive(Debug, Serialize)]
pub struct AbstentionReport {
    pub node: String,
    pub phase: &'static str,
}

/// A deliberation, flattened for people and scripts.
#[derive(Debug, Serialize)]
pub struct DeliberationReport {
    pub id: String,
    pub topic: String,
    pub tier: u8,
    pub options: Vec<String>,
    pub participants: Vec<String>,
    /// `operator` or the node that opened it.
    pub opened_by: String,
    pub opened_at_ms: u64,
    pub phase_ms: u64,
    /// `positions`, `synthesis`, `decision` or `decided`.
    pub phase: &'static str,
    pub phase_started_ms: u64,
    /// When the current phase ends at the latest (when it was decided, once decided).
    pub phase_deadline_ms: u64,
    /// The node whose specialty the topic falls in, if any.
    pub specialist: Option<String>,
    /// The decision; null while open and when it lapsed.
    pub outcome: Option<String>,
    /// `consensus`, `hierarchy:<node>`, `override` or `lapsed`; null while open.
    pub decided_by: Option<String>,
    pub decision_maker: Option<String>,
    /// The node that answers publicly.
    pub responder: Option<String>,
    pub reasoning: Option<String>,
    pub decided_at_ms: Option<u64>,
    pub notes_path: String,
    /// The node asked to write the notes file.
    pub notes_assigned_to: Option<String>,
    /// The node that confirmed it wrote the notes file.
    pub notes_written_by: Option<String>,
    /// Every input, in commit order.
    pub positions: Vec<PositionReport>,
    pub abstentions: Vec<AbstentionReport>,
}

impl DeliberationReport {
    /// The report of `deliberation` as it stands.
    pub fn new(deliberation: &Deliberation) -> Self {
        let outcome = deliberation.outcome.as_ref();
        let name = ToString::to_string;
        Self {
            id: deliberation.id.to_string(),
            topic: deliberation.topic.clone(),
            tier: deliberation.tier.number(),
            options: deliberation.options.clone(),
            participants: deliberation.participants.iter().map(name).collect(),
            opened_by: deliberation.opened_by.author(),
            opened_at_ms: deliberation.opened_at_ms,
            phase_ms: deliberation.phase_ms,
            phase: phase_name(deliberation.phase),
            phase_started_ms: deliberation.phase_started_ms,
            phase_deadline_ms: deliberation.phase_deadline_ms,
            specialist: deliberation.specialist.as_ref().map(name),
            outcome: outcome.and_then(|o| o.decision.clone()),
            decided_by: outcome.map(|o| o.decided_by.to_string()),
            decision_maker: outcome.map(|o| o.decision_maker.clone()),
            responder: outcome.and_then(|o| o.responder.as_ref().map(name)),
            reasoning: outcome.map(|o| o.reasoning.clone()),
            decided_at_ms: outcome.map(|o| o.decided_at_ms),
            notes_path: deliberation.notes.path.clone(),
            notes_assigned_to: deliberation
                .notes
                .assigned
                .as_ref()
                .map(|(node, _)| node.to_string()),
            notes_written_by: deliberation.notes.written_by.as_ref().map(name),
            positions: deliberation.inputs.iter().map(position_report).collect(),
            abstentions: deliberation
                .abstentions
                .iter()
                .map(|a| AbstentionReport {
                    node: a.node.to_string(),
                    phase: phase_name(a.phase),
                })
                .collect(),
        }
    }
}

fn position_report(input: &Input) -> PositionReport {
    PositionReport {
        node: input.node.to_string(),
        phase: phase_name(input.phase),
        round: input.phase.round(),
        stance: input.stance.clone(),
        confidence: confidence_name(input.confidence),
        summary: input.summary.clone(),
        concerns: input.concerns.clone(),
        at_ms: input.at_ms,
    }
}

/// A phase's stable name for scripts.
pub fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Positions => "positions",
        Phase::Synthesis => "synthesis",
        Phase::Decision => "decision",
        Phase::Decided => "decided",
    }
}

fn confidence_name(confidence: Confidence) -> &'static str {
    match confidence {
        Confidence::Low => "low",
        Confidence::Medium => "medium",
        Confidence::High => "high",
    }
}

/// Parses `d-3` or `3`; a bad id is refused with the rule's own words.
pub fn parse_id(text: &str) -> Result<DeliberationId> {
    DeliberationId::from_str(text).map_err(|violation| anyhow!(violation))
}

/// This machine's clock in ms since the Unix epoch, only to say how long ago or how
/// soon something is; the fleet's own times come from its leader.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `58 s left`, rounded up so a phase never reads `0 s left` while it is still open.
pub fn time_left(deadline_ms: u64, now_ms: u64) -> String {
    let left_ms = deadline_ms.saturating_sub(now_ms);
    format!("{} s left", left_ms.div_ceil(1000))
}

/// A length of time in seconds, with decimals only when it has them: `60 s`, `0.1 s`.
pub fn seconds(ms: u64) -> String {
    // Display of an f64 drops a zero fraction: 60000 ms reads `60`, 100 ms reads `0.1`.
    let seconds = ms as f64 / 1000.0;
    format!("{seconds} s")
}

/// The time of day of a fleet timestamp: `14:05:09 UTC`. A deadline is at most a few
/// minutes away, so the date would only add noise.
pub fn time_of_day_utc(at_ms: u64) -> String {
    let seconds = (at_ms / 1000) % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        seconds / 3_600,
        seconds / 60 % 60,
        seconds % 60
    )
}

/// `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago`.
pub fn ago(at_ms: u64, now_ms: u64) -> String {
    let seconds = now_ms.saturating_sub(at_ms) / 1000;
    match seconds {
        0..60 => format!("{seconds} s ago"),
        60..3_600 => format!("{} min ago", seconds / 60),
        3_600..86_400 => format!("{} h ago", seconds / 3_600),
        _ => format!("{} d ago", seconds / 86_400),
    }
}

/// One input as a line: `beast  round 1  stance: A  (high) — summary`, and its concerns.
pub fn input_lines(input: &Input) -> Vec<String> {
    let phase = match input.phase.round() {
        Some(round) => format!("round {round}"),
        None => "decision".to_string(),
    };
    let mut lines = vec![format!(
        "{}  {phase}  stance: {}  ({}) — {}",
        input.node,
        input.stance,
        confidence_name(input.confidence),
        input.summary
    )];
    if !input.concerns.is_empty() {
        lines.push(format!("    concerns: {}", input.concerns.join("; ")));
    }
    lines
}

/// An abstention as a line: `mac abstained in round 1 (positions)`.
pub fn abstention_line(abstention: &Abstention) -> String {
    format!("{} abstained in {}", abstention.node, abstention.phase)
}

/// The outcome of a decided deliberation, for people; nothing while it is open.
pub fn print_outcome(deliberation: &Deliberation) {
    let Some(outcome) = &deliberation.outcome else {
        return;
    };
    match &outcome.decision {
        Some(decision) => println!("decision: {decision}"),
        None => println!(
            "{} lapsed: no participant gave a position, so there is no decision",
            deliberation.id
        ),
    }
    println!("  decided by:     {}", outcome.decided_by);
    println!("  decision maker: {}", outcome.decision_maker);
    println!(
        "  responder:      {}",
        outcome
            .responder
            .as_ref()
            .map_or_else(|| "none".to_string(), ToString::to_string)
    );
    println!("  reasoning:      {}", outcome.reasoning);
    let notes = &deliberation.notes;
    let writer = match (&notes.written_by, &notes.assigned) {
        (Some(node), _) => format!("written by {node}"),
        (None, Some((node, _))) => format!("assigned to {node}, not confirmed written yet"),
        (None, None) => "no note-taker available yet".to_string(),
    };
    println!("  notes:          {} ({writer})", notes.path);
}

/// Every detail of a deliberation, for people.
pub fn print_detail(deliberation: &Deliberation, now: u64) {
    println!("{}: {}", deliberation.id, deliberation.topic);
    println!("  tier:           {}", deliberation.tier.number());
    if !deliberation.options.is_empty() {
        println!("  options:        {}", deliberation.options.join(", "));
    }
    println!("  participants:   {}", join(&deliberation.participants));
    println!(
        "  opened:         {} by {} ({} phases)",
        ago(deliberation.opened_at_ms, now),
        deliberation.opened_by.author(),
        seconds(deliberation.phase_ms)
    );
    if let Some(specialist) = &deliberation.specialist {
        println!("  specialist:     {specialist}");
    }
    if deliberation.is_open() {
        println!(
            "  phase:          {} — {} (deadline {})",
            deliberation.phase,
            time_left(deliberation.phase_deadline_ms, now),
            time_of_day_utc(deliberation.phase_deadline_ms)
        );
    } else {
        println!("  phase:          decided");
    }
    println!("inputs:");
    if deliberation.inputs.is_empty() {
        println!("  none");
    }
    for input in &deliberation.inputs {
        for line in input_lines(input) {
            println!("  {line}");
        }
    }
    if !deliberation.abstentions.is_empty() {
        println!("abstentions:");
        for abstention in &deliberation.abstentions {
            println!("  {}", abstention_line(abstention));
        }
    }
    print_outcome(deliberation);
}

fn join<T: ToString>(names: &[T]) -> String {
    names
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads one deliberation; a refusal (no such id) is an error with the rule's words.
pub async fn fetch(connection: &Connection, id: DeliberationId) -> Result<Deliberation> {
    match connection.read(&Query::Deliberation { id }).await? {
        Ok(QueryAnswer::Deliberation(deliberation)) => Ok(*deliberation),
        Ok(other) => bail!("unexpected answer to a deliberation read: {other:?}"),
        Err(violation) => Err(anyhow!(violation)),
    }
}

/// `fleetctl deliberations [--open]` and `fleetctl deliberations show <id>`.
pub async fn run(
    connection: &Connection,
    args: &DeliberationsArgs,
    output: OutputFormat,
) -> Result<()> {
    if let Some(DeliberationsCommand::Show { id }) = &args.command {
        let deliberation = fetch(connection, parse_id(id)?).await?;
        return output.print(&DeliberationReport::new(&deliberation), |_| {
            print_detail(&deliberation, now_ms());
        });
    }
    let query = Query::Deliberations {
        open_only: args.open,
    };
    let deliberations = match connection.read(&query).await? {
        Ok(QueryAnswer::Deliberations(list)) => list,
        Ok(other) => bail!("unexpected answer to a deliberations read: {other:?}"),
        Err(violation) => return Err(anyhow!(violation)),
    };
    let reports: Vec<DeliberationReport> =
        deliberations.iter().map(DeliberationReport::new).collect();
    output.print(&reports, |_| {
        print!("{}", table(&deliberations, now_ms(), args.open));
    })
}

/// The list as a table, newest first.
fn table(deliberations: &[Deliberation], now: u64, open_only: bool) -> String {
    if deliberations.is_empty() {
        return if open_only {
            "no open deliberations\n".to_string()
        } else {
            "no deliberations yet\n".to_string()
        };
    }
    let headers = ["ID", "PHASE", "TOPIC", "PARTICIPANTS", "OPENED", "OUTCOME"];
    let rows: Vec<[String; 6]> = deliberations
        .iter()
        .map(|d| {
            let phase = if d.is_open() {
                format!(
                    "{} ({})",
                    phase_name(d.phase),
                    time_left(d.phase_deadline_ms, now)
                )
            } else {
                phase_name(d.phase).to_string()
            };
            let outcome = match &d.outcome {
                None => "-".to_string(),
                Some(o) => match &o.decision {
                    Some(decision) => format!("{decision} ({})", o.decided_by),
                    None => o.decided_by.to_string(),
                },
            };
            [
                d.id.to_string(),
                phase,
                shorten(&d.topic, TOPIC_COLUMN_CHARS_MAX),
                join(&d.participants),
                ago(d.opened_at_ms, now),
                outcome,
            ]
        })
        .collect();
    let mut out = String::new();
    for line in crate::output::table_lines(&headers, &rows) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `text` cut to `max` characters with `…`, for a table cell only.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The notes as `fleetctl notes -o json` prints them.
#[derive(Debug, Serialize)]
struct NotesReport {
    id: String,
    path: String,
    written_by: Option<String>,
    markdown: String,
}

/// `fleetctl notes <id>`: the replicated notes markdown, as is.
pub async fn notes(connection: &Connection, args: &NotesArgs, output: OutputFormat) -> Result<()> {
    let deliberation = fetch(connection, parse_id(&args.id)?).await?;
    let Some(markdown) = deliberation.notes.markdown.clone() else {
        bail!(
            "deliberation {} is not decided yet ({}); its notes are written once it is (follow it with `fleetctl deliberations show {}`)",
            deliberation.id,
            deliberation.phase,
            deliberation.id
        );
    };
    let report = NotesReport {
        id: deliberation.id.to_string(),
        path: deliberation.notes.path.clone(),
        written_by: deliberation
            .notes
            .written_by
            .as_ref()
            .map(ToString::to_string),
        markdown,
    };
    output.print(&report, |report| print!("{}", report.markdown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_table_shortens_a_topic() {
        assert_eq!(shorten("short", 10), "short");
        let long = "a".repeat(60);
        let cut = shorten(&long, TOPIC_COLUMN_CHARS_MAX);
        assert_eq!(cut.chars().count(), TOPIC_COLUMN_CHARS_MAX);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn time_left_rounds_up_and_never_goes_negative() {
        assert_eq!(time_left(10_001, 0), "11 s left");
        assert_eq!(time_left(5, 10), "0 s left");
        assert_eq!(ago(0, 125_000), "2 min ago");
        // 2026-03-25 14:05:09 UTC
        assert_eq!(time_of_day_utc(1_774_447_509_000), "14:05:09 UTC");
    }

    #[test]
    fn ids_parse_with_or_without_the_prefix() {
        assert_eq!(parse_id("d-3").unwrap(), DeliberationId(3));
        assert_eq!(parse_id("3").unwrap(), DeliberationId(3));
        let error = parse_id("x").unwrap_err().to_string();
        assert!(error.contains("deliberation id"), "{error}");
    }
}
