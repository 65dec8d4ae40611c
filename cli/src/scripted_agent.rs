//! `fleetctl scripted-agent`: a stand-in agent for the `command` adapter, used by
//! `fleetctl demo` and by tests. It reads the input request (JSON) on stdin and
//! answers with a fixed stance, so a demo deliberation goes the way it was written.
//!
//! Real fleets point the `command` adapter at a program that asks a model; this one
//! answers at once, which also makes it the "instant agent" of the benchmarks.

use std::io::Read as _;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::{Value, json};

/// The stance the scripted agent always takes.
#[derive(Debug, Args)]
pub struct ScriptedAgentArgs {
    /// The stance, in every phase.
    #[arg(long)]
    pub stance: String,
    /// low, medium or high.
    #[arg(long, default_value = "high")]
    pub confidence: String,
    /// Why, in a sentence.
    #[arg(long)]
    pub reason: String,
    /// A concern to raise in round 1.
    #[arg(long)]
    pub concern: Option<String>,
}

/// Reads one request from stdin and prints the answer.
pub fn run(args: &ScriptedAgentArgs) -> Result<()> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("reading the input request from stdin")?;
    let request: Value =
        serde_json::from_str(&input).context("the input request on stdin is not JSON")?;
    // Each other node's latest stance, in the order they first spoke.
    let mut others: Vec<(String, String)> = Vec::new();
    for input in request["inputs"].as_array().into_iter().flatten() {
        let (Some(node), Some(stance)) = (input["node"].as_str(), input["stance"].as_str()) else {
            continue;
        };
        if input["node"] == request["node"] {
            continue;
        }
        match others.iter_mut().find(|(n, _)| n == node) {
            Some(entry) => entry.1 = stance.to_string(),
            None => others.push((node.to_string(), stance.to_string())),
        }
    }
    let phase = request["phase"].as_str().unwrap_or("positions");
    let summary = match phase {
        "positions" => args.reason.clone(),
        _ if others
            .iter()
            .all(|(_, stance)| stance.eq_ignore_ascii_case(&args.stance)) =>
        {
            format!("Everyone agrees on {}. {}", args.stance, args.reason)
        }
        _ => format!(
            "I heard {}, and I stay with {}: {}",
            others
                .iter()
                .map(|(node, stance)| format!("{node}: {stance}"))
                .collect::<Vec<_>>()
                .join(", "),
            args.stance,
            args.reason
        ),
    };
    let concerns: Vec<&str> = match (phase, &args.concern) {
        ("positions", Some(concern)) => vec![concern.as_str()],
        _ => Vec::new(),
    };
    let answer = json!({
        "stance": args.stance,
        "confidence": args.confidence,
        "summary": summary,
        "concerns": concerns,
    });
    println!("{answer}");
    Ok(())
}
