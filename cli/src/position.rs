//! `fleetctl position <id>` and `fleetctl override <id>`: the two ways into an open
//! deliberation. A position is a participant's input (D2) and is given as a node
//! (`--node NAME`); the fleet refuses it from the operator, and that refusal is shown
//! as the fleet words it. An override is the operator's decision (D5) and ends the
//! deliberation at once.

use std::str::FromStr;

use anyhow::{Result, anyhow, bail};
use clap::Args;
use fleet_node::state::{Confidence, Deliberation, Request, Response, Submission};

use crate::connection::Connection;
use crate::deliberate::request_id;
use crate::deliberations::{
    DeliberationReport, input_lines, now_ms, parse_id, print_outcome, time_left,
};
use crate::output::OutputFormat;

/// `fleetctl position`.
#[derive(Debug, Args)]
pub struct PositionArgs {
    /// The deliberation (`d-3` or `3`).
    id: String,
    /// The position; one of the deliberation's options when it has any.
    #[arg(long)]
    stance: String,
    /// How sure the node is: low, medium or high.
    #[arg(long, value_name = "low|medium|high")]
    confidence: String,
    /// 1–2 sentences: the position (round 1) or the rationale (round 2).
    #[arg(long)]
    summary: String,
    /// A key concern or blocker (repeat for several).
    #[arg(long = "concern", value_name = "TEXT")]
    concerns: Vec<String>,
    /// The round it is meant for (1 or 2); refused if the deliberation is elsewhere
    /// (default: whatever phase it is in).
    #[arg(long, value_name = "N")]
    round: Option<u8>,
}

/// `fleetctl override`.
#[derive(Debug, Args)]
pub struct OverrideArgs {
    /// The deliberation (`d-3` or `3`).
    id: String,
    /// The operator's decision.
    #[arg(long)]
    decision: String,
    /// Why, for the notes.
    #[arg(long, default_value = "")]
    reason: String,
}

/// Submits the `--node`'s position and prints it with the phase that follows.
pub async fn submit(
    connection: &Connection,
    args: &PositionArgs,
    output: OutputFormat,
) -> Result<()> {
    let deliberation = parse_id(&args.id)?;
    let confidence = Confidence::from_str(&args.confidence).map_err(|v| anyhow!(v))?;
    let submission = Submission {
        round: args.round,
        stance: args.stance.clone(),
        confidence,
        summary: args.summary.clone(),
        concerns: args.concerns.clone(),
        request_id: request_id()?,
    };
    let key = submission.request_id.clone();
    let request = Request::Submit {
        deliberation,
        submission,
    };
    let deliberation = deliberation_of(connection.write(&request).await?.map_err(|v| anyhow!(v))?)?;
    output.print(&DeliberationReport::new(&deliberation), |_| {
        if let Some(input) = deliberation.inputs.iter().find(|i| i.request_id == key) {
            for (index, line) in input_lines(input).into_iter().enumerate() {
                let lead = if index == 0 { "accepted: " } else { "" };
                println!("{lead}{line}");
            }
        }
        if deliberation.is_open() {
            println!(
                "{} is in {} — {}",
                deliberation.id,
                deliberation.phase,
                time_left(deliberation.phase_deadline_ms, now_ms())
            );
        } else {
            println!("{} is decided", deliberation.id);
            print_outcome(&deliberation);
        }
    })
}

/// Ends the deliberation with the operator's decision and prints the outcome.
pub async fn override_decision(
    connection: &Connection,
    args: &OverrideArgs,
    output: OutputFormat,
) -> Result<()> {
    let request = Request::Override {
        deliberation: parse_id(&args.id)?,
        decision: args.decision.clone(),
        reason: args.reason.clone(),
    };
    let deliberation = deliberation_of(connection.write(&request).await?.map_err(|v| anyhow!(v))?)?;
    output.print(&DeliberationReport::new(&deliberation), |_| {
        println!("{} overridden: {}", deliberation.id, deliberation.topic);
        print_outcome(&deliberation);
    })
}

fn deliberation_of(response: Response) -> Result<Deliberation> {
    match response {
        Response::Deliberation { deliberation, .. } => Ok(*deliberation),
        other => bail!("unexpected answer: {other:?}"),
    }
}
