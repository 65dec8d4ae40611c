//! The deliberation commands of `fleetctl` against real `fleetd` processes (SPEC D1–D3,
//! D5, D7, D9): `deliberate` (detached and followed live), `position`, `override`,
//! `deliberations [show]` and `notes`, run as an operator and as nodes would run them.
//!
//! The nodes' agents are manual, so every position comes from `fleetctl --node NAME
//! position`, and each test decides exactly who speaks when. Phases are a minute long
//! unless a test is about deadlines, so a round ends early only because everyone spoke.

use std::io::{BufRead, BufReader, Read};
use std::process::Output;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fleet_node::state::limits::{INPUTS_PER_BOT_MAX, PHASE_MS_MAX, PHASE_MS_MIN};
use fleet_node::state::{Actor, RuleViolation};
use fleet_tests::process_fleet::refused;
use fleet_tests::running_fleetctl::Finished;
use fleet_tests::{ProcessFleet, RunningFleetctl};
use serde_json::Value;

const NODES: [&str; 3] = ["beast", "5070", "mac"];
/// A generous safety bound for anything that takes an election, a health check or a
/// few phases.
const BOUND: Duration = Duration::from_secs(30);
/// The keys `deliberate -o json` promises.
const REPORT_KEYS: [&str; 12] = [
    "id",
    "topic",
    "tier",
    "outcome",
    "decided_by",
    "decision_maker",
    "responder",
    "notes_path",
    "notes_written_by",
    "positions",
    "abstentions",
    "joined",
];

/// `fleetctl deliberate … --detach -o json` for a tier-1 question with options A and
/// B among all three nodes; `extra` adds or overrides flags.
fn open(fleet: &ProcessFleet, topic: &str, extra: &[&str]) -> Result<Value> {
    let mut args = vec![
        "deliberate",
        topic,
        "--tier",
        "1",
        "--option",
        "A",
        "--option",
        "B",
        "--participants",
        "beast,5070,mac",
        "--detach",
    ];
    args.extend_from_slice(extra);
    fleet.fleetctl_json(&args)
}

/// `fleetctl --node NODE position ID --stance STANCE …`, whatever its exit code.
fn position(
    fleet: &ProcessFleet,
    node: Option<&str>,
    id: &str,
    stance: &str,
    extra: &[&str],
) -> Result<Output> {
    let summary = format!("{} prefers {stance}.", node.unwrap_or("the operator"));
    let mut args = Vec::new();
    if let Some(node) = node {
        args.extend(["--node", node]);
    }
    args.extend([
        "position",
        id,
        "--stance",
        stance,
        "--confidence",
        "high",
        "--summary",
        &summary,
        "--concern",
        "cost",
    ]);
    args.extend_from_slice(extra);
    fleet.fleetctl(&args)
}

/// Like [`position`] with `-o json`, which must succeed; returns the deliberation after it.
fn accepted(
    fleet: &ProcessFleet,
    node: &str,
    id: &str,
    stance: &str,
    extra: &[&str],
) -> Result<Value> {
    let mut all = extra.to_vec();
    all.extend(["-o", "json"]);
    let output = position(fleet, Some(node), id, stance, &all)?;
    if !output.status.success() {
        bail!(
            "{node}'s position {stance} on {id} was refused: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(serde_json::from_slice(&output.stdout)?)
}

fn show(fleet: &ProcessFleet, id: &str) -> Result<Value> {
    fleet.fleetctl_json(&["deliberations", "show", id])
}

/// Polls `deliberations show` until `check` accepts the deliberation.
fn wait_for(
    fleet: &ProcessFleet,
    id: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Result<Value> {
    let deadline = Instant::now() + BOUND;
    loop {
        let deliberation = show(fleet, id)?;
        if check(&deliberation) {
            return Ok(deliberation);
        }
        if Instant::now() > deadline {
            bail!("{id}: {what} not within {BOUND:?}; last: {deliberation:#}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// All three agree in round 1, which ends early; all agree again in round 2; the fleet
/// decides by consensus. `show` as a table and as JSON tell the same story, a second
/// opener of the same topic joins the first, and the notes are replicated.
#[test]
fn agreement_in_both_rounds_is_decided_by_consensus() -> Result<()> {
    let fleet = ProcessFleet::start_all_healthy(&NODES, BOUND)?;
    let topic = "Which queue should the build farm use?";
    let opened = open(&fleet, topic, &["--round-secs", "60"])?;
    let id = opened["id"].as_str().context("an id")?.to_string();
    assert_eq!(opened["joined"], false, "{opened:#}");
    assert_eq!(opened["phase"], "positions", "{opened:#}");
    assert_eq!(opened["outcome"], Value::Null, "{opened:#}");

    // One open deliberation per topic: a second opener joins it.
    let again = open(&fleet, topic, &[])?;
    assert_eq!(
        (again["id"].as_str(), &again["joined"]),
        (Some(id.as_str()), &Value::Bool(true))
    );
    let joined = fleet.fleetctl(&["deliberate", topic, "--tier", "1", "--detach"])?;
    assert!(
        text(&joined).contains(&format!("joined the open deliberation {id} on this topic")),
        "{}",
        text(&joined)
    );

    let open_list = fleet.fleetctl_json(&["deliberations", "--open"])?;
    assert!(
        open_list
            .as_array()
            .is_some_and(|l| l.iter().any(|d| d["id"] == id.as_str())),
        "{open_list:#}"
    );

    let mut last = Value::Null;
    for node in NODES {
        assert_eq!(last["phase"].as_str().unwrap_or("positions"), "positions");
        last = accepted(&fleet, node, &id, "A", &["--round", "1"])?;
    }
    assert_eq!(
        last["phase"], "synthesis",
        "round 1 must end once all spoke: {last:#}"
    );
    for node in NODES {
        last = accepted(&fleet, node, &id, "a", &["--round", "2"])?;
    }
    assert_eq!(last["phase"], "decided", "{last:#}");
    assert_eq!(last["outcome"], "A", "the option's own spelling: {last:#}");
    assert_eq!(last["decided_by"], "consensus", "{last:#}");
    assert_eq!(last["decision_maker"], "consensus", "{last:#}");
    assert_eq!(last["abstentions"], Value::Array(vec![]), "{last:#}");

    // The JSON and the table of `show` agree.
    let json = show(&fleet, &id)?;
    let table = text(&fleet.fleetctl(&["deliberations", "show", &id])?);
    assert_eq!(json["topic"], topic);
    assert!(table.contains(topic), "{table}");
    assert!(table.contains("decision: A"), "{table}");
    assert!(table.contains("consensus"), "{table}");
    let positions = json["positions"].as_array().context("positions")?;
    assert_eq!(positions.len(), 6, "{json:#}");
    for input in positions {
        let line = format!(
            "{}  round {}  stance: {}  ({}) — {}",
            input["node"].as_str().unwrap_or_default(),
            input["round"],
            input["stance"].as_str().unwrap_or_default(),
            input["confidence"].as_str().unwrap_or_default(),
            input["summary"].as_str().unwrap_or_default(),
        );
        assert!(table.contains(&line), "{line} missing from:\n{table}");
        assert_eq!(input["concerns"], serde_json::json!(["cost"]));
    }
    assert!(
        table.contains(json["notes_path"].as_str().unwrap_or("?")),
        "{table}"
    );

    // Decided: gone from the open list, in the full list with its outcome.
    let open_list = fleet.fleetctl_json(&["deliberations", "--open"])?;
    assert_eq!(open_list, Value::Array(vec![]), "{open_list:#}");
    let all = fleet.fleetctl_json(&["deliberations"])?;
    let listed = all
        .as_array()
        .and_then(|l| l.iter().find(|d| d["id"] == id.as_str()))
        .context("the decided deliberation is listed")?;
    assert_eq!(listed["outcome"], "A");
    let table = text(&fleet.fleetctl(&["deliberations"])?);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("consensus")),
        "{table}"
    );

    // The notes are replicated; the table prints the markdown as is.
    let notes = fleet.fleetctl_json(&["notes", &id])?;
    let markdown = notes["markdown"].as_str().context("markdown")?;
    assert!(markdown.contains(topic), "{markdown}");
    assert_eq!(notes["path"], json["notes_path"]);
    assert_eq!(text(&fleet.fleetctl(&["notes", &id])?), markdown);
    Ok(())
}

/// The positions still differ after round 2 and the decision phase: the hierarchy
/// decides, and beast's *final* stance (not its first) is the decision.
#[test]
fn without_consensus_beast_decides_with_its_final_stance() -> Result<()> {
    let fleet = ProcessFleet::start_all_healthy(&NODES, BOUND)?;
    let opened = open(&fleet, "Where should the backups live?", &[])?;
    let id = opened["id"].as_str().context("an id")?.to_string();
    for (node, stance) in [("beast", "B"), ("5070", "B"), ("mac", "A")] {
        accepted(&fleet, node, &id, stance, &["--round", "1"])?;
    }
    let mut last = Value::Null;
    for (node, stance) in [("beast", "A"), ("5070", "B"), ("mac", "B")] {
        last = accepted(&fleet, node, &id, stance, &["--round", "2"])?;
    }
    assert_eq!(last["phase"], "decision", "{last:#}");
    // The decision phase has no round number: each speaks once more without `--round`.
    for (node, stance) in [("beast", "A"), ("5070", "B"), ("mac", "B")] {
        last = accepted(&fleet, node, &id, stance, &[])?;
    }
    assert_eq!(last["phase"], "decided", "{last:#}");
    assert_eq!(last["decided_by"], "hierarchy:beast", "{last:#}");
    assert_eq!(last["outcome"], "A", "{last:#}");
    assert_eq!(last["decision_maker"], "beast hierarchy", "{last:#}");
    let table = text(&fleet.fleetctl(&["deliberations", "show", &id])?);
    assert!(table.contains("hierarchy:beast"), "{table}");
    assert!(table.contains("beast  decision  stance: A"), "{table}");
    Ok(())
}

/// A fourth input from one node is refused with the protocol's limit named, and the
/// notes of an undecided deliberation are not there yet.
#[test]
fn a_fourth_input_is_refused_by_name() -> Result<()> {
    let fleet = ProcessFleet::start_all_healthy(&NODES, BOUND)?;
    let opened = open(&fleet, "Should we pin the compiler version?", &[])?;
    let id = opened["id"].as_str().context("an id")?.to_string();
    // The others stay silent, so round 1 stays open while beast speaks three times.
    for stance in ["A", "B", "A"] {
        let after = accepted(&fleet, "beast", &id, stance, &[])?;
        assert_eq!(after["phase"], "positions", "{after:#}");
    }
    let fourth = refused(&position(&fleet, Some("beast"), &id, "B", &[])?);
    let limit = RuleViolation::InputLimit {
        node: "beast".into(),
        id: id.clone(),
        given: INPUTS_PER_BOT_MAX,
        limit: INPUTS_PER_BOT_MAX,
    };
    assert!(fourth.contains(&limit.to_string()), "{fourth}");
    assert!(fourth.contains("(limit 3)"), "{fourth}");
    let recorded = show(&fleet, &id)?;
    assert_eq!(
        recorded["positions"].as_array().map(Vec::len),
        Some(3),
        "{recorded:#}"
    );

    let notes = refused(&fleet.fleetctl(&["notes", &id])?);
    assert!(notes.contains("not decided yet"), "{notes}");
    Ok(())
}

/// The operator cannot give a position (only a node can, as itself), a node cannot
/// override, and the operator's override ends the deliberation at once.
#[test]
fn the_operator_overrides_but_cannot_give_a_position() -> Result<()> {
    let fleet = ProcessFleet::start_all_healthy(&NODES, BOUND)?;
    let opened = open(&fleet, "Should the fleet adopt the new log format?", &[])?;
    let id = opened["id"].as_str().context("an id")?.to_string();

    let as_operator = refused(&position(&fleet, None, &id, "A", &[])?);
    let rule = RuleViolation::Unauthorized {
        actor: Actor::Operator.to_string(),
        action: "submit a position".into(),
        rule: "only a node acts here, as itself (use --node NAME)".into(),
    };
    assert!(as_operator.contains(&rule.to_string()), "{as_operator}");

    accepted(&fleet, "beast", &id, "A", &[])?;
    let as_node =
        refused(&fleet.fleetctl(&["--node", "beast", "override", &id, "--decision", "B"])?);
    assert!(as_node.contains("only the operator may"), "{as_node}");

    let overridden = fleet.fleetctl_json(&[
        "override",
        &id,
        "--decision",
        "Neither: keep the old format",
        "--reason",
        "a release is due",
    ])?;
    assert_eq!(overridden["decided_by"], "override", "{overridden:#}");
    assert_eq!(
        overridden["outcome"], "Neither: keep the old format",
        "{overridden:#}"
    );
    assert_eq!(
        overridden["decision_maker"], "operator override",
        "{overridden:#}"
    );
    assert_eq!(overridden["phase"], "decided", "{overridden:#}");
    assert!(
        overridden["reasoning"]
            .as_str()
            .is_some_and(|r| r.contains("a release is due")),
        "{overridden:#}"
    );

    let late = refused(&position(&fleet, Some("5070"), &id, "B", &[])?);
    assert!(late.contains("already decided (override)"), "{late}");
    let table = text(&fleet.fleetctl(&["deliberations", "show", &id])?);
    assert!(
        table.contains("decision: Neither: keep the old format"),
        "{table}"
    );
    assert!(table.contains("override"), "{table}");
    Ok(())
}

/// Round 1 ends at its deadline while mac stays silent: mac is recorded as abstaining
/// and the two who spoke decide. With the shortest phase the state accepts and
/// nobody speaking, the deliberation lapses, followed live to the end.
#[test]
fn a_silent_bot_abstains_when_the_phase_deadline_passes() -> Result<()> {
    let fleet = ProcessFleet::start_all_healthy(&NODES, BOUND)?;
    let opened = open(
        &fleet,
        "Which mirror should the packages come from?",
        &["--round-secs", "3"],
    )?;
    let id = opened["id"].as_str().context("an id")?.to_string();
    accepted(&fleet, "beast", &id, "A", &[])?;
    accepted(&fleet, "5070", &id, "A", &[])?;
    let decided = wait_for(&fleet, &id, "decided", |d| d["phase"] == "decided")?;
    let abstentions = decided["abstentions"].as_array().context("abstentions")?;
    assert!(
        abstentions
            .iter()
            .any(|a| a["node"] == "mac" && a["phase"] == "positions"),
        "{decided:#}"
    );
    assert!(
        abstentions
            .iter()
            .all(|a| a["node"] == "mac" || a["phase"] != "positions"),
        "{decided:#}"
    );
    assert_eq!(decided["outcome"], "A", "{decided:#}");
    assert_eq!(decided["decided_by"], "consensus", "{decided:#}");
    let table = text(&fleet.fleetctl(&["deliberations", "show", &id])?);
    assert!(
        table.contains("mac abstained in round 1 (positions)"),
        "{table}"
    );

    // Below the shortest phase: refused, with the limits named.
    let min_secs = format!("{}", PHASE_MS_MIN as f64 / 1000.0);
    let too_short = format!("{}", PHASE_MS_MIN as f64 / 2000.0);
    let below = refused(&fleet.fleetctl(&[
        "deliberate",
        "Too quick a question?",
        "--round-secs",
        &too_short,
        "--detach",
    ])?);
    assert!(
        below.contains(&format!("{PHASE_MS_MIN}..={PHASE_MS_MAX} ms")),
        "{below}"
    );

    // The shortest phase, nobody speaks: it lapses, and following it ends with exit 0.
    let output = fleet.fleetctl(&[
        "deliberate",
        "Is anyone there?",
        "--tier",
        "1",
        "--participants",
        "beast,5070,mac",
        "--round-secs",
        &min_secs,
        "-o",
        "json",
    ])?;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lapsed: Value = serde_json::from_slice(&output.stdout)?;
    assert_eq!(lapsed["decided_by"], "lapsed", "{lapsed:#}");
    assert_eq!(lapsed["outcome"], Value::Null, "{lapsed:#}");
    for node in NODES {
        assert!(
            lapsed["abstentions"].as_array().is_some_and(|a| a
                .iter()
                .any(|a| a["node"] == node && a["phase"] == "positions")),
            "{node} did not abstain: {lapsed:#}"
        );
    }
    Ok(())
}

/// `fleetctl deliberate` without `--detach` follows the deliberation live while the
/// nodes give their positions, prints each input and the decision, and exits 0; with
/// `-o json` it prints exactly one object, at the end.
#[test]
fn deliberate_follows_live_until_the_decision() -> Result<()> {
    let fleet = ProcessFleet::start_all_healthy(&NODES, BOUND)?;
    let topic = "Should the GPU box run the nightly evals?";
    let mut follower = RunningFleetctl::spawn(
        &fleet,
        &[
            "deliberate",
            topic,
            "--tier",
            "1",
            "--option",
            "yes",
            "--option",
            "no",
            "--participants",
            "beast,5070,mac",
            "--round-secs",
            "60",
        ],
    )?;
    let mut stdout = BufReader::new(follower.take_stdout().context("piped stdout")?);
    let mut header = String::new();
    stdout.read_line(&mut header)?;
    let id = header
        .split(':')
        .next()
        .filter(|id| id.starts_with("d-"))
        .with_context(|| format!("no id in the first line: {header:?}"))?
        .to_string();
    for round in ["1", "2"] {
        for node in NODES {
            accepted(&fleet, node, &id, "yes", &["--round", round])?;
        }
    }
    let Finished { code, stderr, .. } = follower.finish(BOUND)?;
    let mut rest = String::new();
    stdout.read_to_string(&mut rest)?;
    assert_eq!(code, Some(0), "{stderr}");
    let printed = format!("{header}{rest}");
    assert!(printed.contains("round 1 (positions) — "), "{printed}");
    assert!(printed.contains("round 2 (synthesis)"), "{printed}");
    for node in NODES {
        assert!(
            printed.contains(&format!("{node}  round 1  stance: yes  (high)")),
            "{printed}"
        );
        assert!(
            printed.contains(&format!("{node}  round 2  stance: yes  (high)")),
            "{printed}"
        );
    }
    let field = |name: &str| {
        printed
            .lines()
            .find_map(|l| l.trim_start().strip_prefix(name))
            .map(str::trim)
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(field("decision:"), "yes", "{printed}");
    assert_eq!(field("decided by:"), "consensus", "{printed}");
    assert!(NODES.contains(&field("responder:").as_str()), "{printed}");
    assert!(
        field("notes:").starts_with("memory/deliberation-"),
        "{printed}"
    );

    // The same with `-o json`: nothing while following, one object at the end.
    let topic = "Should the laptop keep a full replica?";
    let mut follower = RunningFleetctl::spawn(
        &fleet,
        &[
            "deliberate",
            topic,
            "--tier",
            "1",
            "--participants",
            "beast,5070,mac",
            "--round-secs",
            "60",
            "-o",
            "json",
        ],
    )?;
    let opened = {
        let deadline = Instant::now() + BOUND;
        loop {
            let list = fleet.fleetctl_json(&["deliberations", "--open"])?;
            if let Some(found) = list
                .as_array()
                .and_then(|l| l.iter().find(|d| d["topic"] == topic))
            {
                break found.clone();
            }
            if Instant::now() > deadline {
                bail!("the followed deliberation was never opened");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let id = opened["id"].as_str().context("an id")?.to_string();
    // Free-text stances: every final position agrees once normalised.
    for (node, stance) in [
        ("beast", "Yes, keep one"),
        ("5070", "yes, keep one."),
        ("mac", "Yes, keep one"),
    ] {
        accepted(&fleet, node, &id, stance, &["--round", "1"])?;
    }
    for node in NODES {
        accepted(&fleet, node, &id, "Yes, keep one", &["--round", "2"])?;
    }
    let Finished {
        code,
        stdout: printed,
        stderr,
        ..
    } = follower.finish(BOUND)?;
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&printed)
        .with_context(|| format!("not exactly one JSON object: {printed}"))?;
    for key in REPORT_KEYS {
        assert!(report.get(key).is_some(), "no `{key}` in {report:#}");
    }
    assert_eq!(report["id"], id.as_str());
    assert_eq!(report["topic"], topic);
    assert_eq!(report["tier"], 1);
    assert_eq!(report["outcome"], "Yes, keep one", "{report:#}");
    assert_eq!(report["decided_by"], "consensus", "{report:#}");
    assert_eq!(
        report["positions"].as_array().map(Vec::len),
        Some(6),
        "{report:#}"
    );
    let first = &report["positions"][0];
    for key in [
        "node",
        "phase",
        "stance",
        "confidence",
        "summary",
        "concerns",
    ] {
        assert!(first.get(key).is_some(), "no `{key}` in {first:#}");
    }
    assert!(report["abstentions"].is_array(), "{report:#}");
    assert!(
        report["notes_path"]
            .as_str()
            .is_some_and(|p| p.starts_with("memory/deliberation-")),
        "{report:#}"
    );
    Ok(())
}

/// An urgent question skips deliberation: the responder is named, nothing is opened.
#[test]
fn an_urgent_question_names_the_responder_instead() -> Result<()> {
    let fleet = ProcessFleet::start_all_healthy(&NODES, BOUND)?;
    let route = fleet.fleetctl_json(&[
        "deliberate",
        "The build server is down, restart it?",
        "--urgent",
    ])?;
    assert!(
        route["responder"]
            .as_str()
            .is_some_and(|r| NODES.contains(&r)),
        "{route:#}"
    );
    assert_eq!(route["needs_deliberation"], false, "{route:#}");
    assert_eq!(route["advice"], "emergency_bypass", "{route:#}");
    assert!(route["tier"].is_u64(), "{route:#}");
    let table = text(&fleet.fleetctl(&[
        "deliberate",
        "The build server is down, restart it?",
        "--urgent",
    ])?);
    assert!(table.contains("answers now"), "{table}");
    assert_eq!(
        fleet.fleetctl_json(&["deliberations"])?,
        Value::Array(vec![])
    );
    Ok(())
}
