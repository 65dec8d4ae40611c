//! Coordination overhead of deliberations on a three-node loopback fleet: from the
//! last input of a phase to the next phase (or the decision) committed, with instant
//! agents.
//!
//! Each deliberation has options A/B; 5070 and Mac say B and Beast says A, so it
//! needs all three phases and the hierarchy decides. In every phase 5070 and Mac speak
//! first; Beast (the leader) speaks last, and the time of that last input — sent, committed,
//! the phase ended and the next one started (or the decision taken, with its notes
//! assigned and its announcement queued) in the same command — is the overhead
//! measured. The state machine does that work in the command that carries the last
//! input, so the overhead is one replicated write.
//!
//! Run: `cargo bench --workspace --bench coordination` after `cargo build --workspace
//! --release --bins` (optimised), or with `--profile dev` after `cargo build
//! --workspace --all-targets` (the debug build). `FLEET_BENCH_DELIBERATIONS` sets how many
//! (default 200). Prints a Markdown table for `docs/benchmarks.md`.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use fleet_node::state::{
    Confidence, DeliberationId, OpenDeliberation, Phase, Request, Response, Submission, Tier,
};
use fleet_tests::latency::percentile;
use fleet_tests::{ProcessFleet, TestClient};

const NODES: [&str; 3] = ["beast", "5070", "mac"];

fn submission(stance: &str, key: String) -> Submission {
    Submission {
        round: None,
        stance: stance.into(),
        confidence: Confidence::High,
        summary: format!("{stance} fits best."),
        concerns: Vec::new(),
        request_id: key,
    }
}

/// Submits as the node `client` talks to; returns the phase afterwards.
async fn submit(
    client: &mut TestClient,
    id: DeliberationId,
    stance: &str,
    key: String,
) -> Result<Phase> {
    let request = Request::Submit {
        deliberation: id,
        submission: submission(stance, key),
    };
    match client.write(&request, true).await?.0? {
        Response::Deliberation { deliberation, .. } => Ok(deliberation.phase),
        other => bail!("unexpected answer {other:?}"),
    }
}

fn main() -> Result<()> {
    let count: usize = std::env::var("FLEET_BENCH_DELIBERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut fleet = ProcessFleet::init(&NODES)?;
        fleet.start_all()?;
        fleet.bootstrap("beast")?;
        fleet.wait_for_status("beast leads", Duration::from_secs(30), |status| {
            status["leader"] == "beast" && status["primary"] == "beast"
        })?;
        let mut operator = fleet.client("beast").await?;
        let mut beast = fleet.client("beast").await?;
        let mut others = [fleet.client("5070").await?, fleet.client("mac").await?];
        let mut phase_ends = Vec::new();
        let mut decisions = Vec::new();
        for round in 0..count {
            let open = Request::OpenDeliberation(OpenDeliberation {
                topic: format!("Benchmark question {round}"),
                tier: Some(Tier::One),
                options: vec!["A".into(), "B".into()],
                participants: None,
                phase_ms: Some(60_000),
                urgent: false,
                request_id: format!("bench-{round}"),
            });
            let id = match operator.write(&open, false).await?.0? {
                Response::Deliberation { deliberation, .. } => deliberation.id,
                other => bail!("unexpected answer {other:?}"),
            };
            for (phase, next) in [
                (Phase::Positions, Phase::Synthesis),
                (Phase::Synthesis, Phase::Decision),
                (Phase::Decision, Phase::Decided),
            ] {
                for (client, node) in others.iter_mut().zip(["5070", "mac"]) {
                    submit(client, id, "B", format!("{node}-{round}-{phase:?}")).await?;
                }
                let started = Instant::now();
                let after = submit(&mut beast, id, "A", format!("beast-{round}-{phase:?}")).await?;
                let elapsed = started.elapsed();
                if after != next {
                    bail!("{id}: after the last input of {phase} came {after}, not {next}");
                }
                if next == Phase::Decided {
                    decisions.push(elapsed);
                } else {
                    phase_ends.push(elapsed);
                }
            }
        }
        let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
        println!("| measured | samples | p50 ms | p99 ms |");
        println!("|---|---|---|---|");
        println!(
            "| last input → next phase committed | {} | {} | {} |",
            phase_ends.len(),
            ms(percentile(&phase_ends, 0.5)),
            ms(percentile(&phase_ends, 0.99))
        );
        println!(
            "| last input → decision committed | {} | {} | {} |",
            decisions.len(),
            ms(percentile(&decisions, 0.5)),
            ms(percentile(&decisions, 0.99))
        );
        Ok(())
    })
}
