//! `Notes`: the notes file of a deliberation (D7) and the operator's notification texts (D8).
//!
//! The note-taker writes `memory/deliberation-YYYY-MM-DD-HHMM.md` in its machine's agent
//! workspace with the topic, participants, positions per round, decision, decision
//! maker and reasoning. The text is rendered here, inside the state machine, so every
//! node holds the same notes and any of them can show or (after a failover) write them.
//! Times are UTC, derived from the leader's clock in the command, never from a local one.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use chrono::DateTime;

use super::deliberation::{Deliberation, Phase};

/// Renders notification and notes text for deliberations.
pub struct Notes;

impl Notes {
    /// A notes path for a deliberation opened at `opened_at_ms`, unique among `taken`:
    /// two deliberations opened in the same minute get `-2`, `-3`… suffixes.
    pub fn path(opened_at_ms: u64, taken: &BTreeSet<String>) -> String {
        let stamp = format_utc(opened_at_ms, "%Y-%m-%d-%H%M");
        let base = format!("memory/deliberation-{stamp}");
        let first = format!("{base}.md");
        if !taken.contains(&first) {
            return first;
        }
        (2..)
            .map(|n| format!("{base}-{n}.md"))
            .find(|candidate| !taken.contains(candidate))
            .expect("an unbounded range always yields a free name")
    }

    /// Seed 002's start notification.
    pub fn start_message(deliberation: &Deliberation) -> String {
        format!(
            "Fleet deliberation initiated: {}\nParticipants: {}\nNote taker: {}\nExpected duration: {} max",
            deliberation.topic,
            names(&deliberation.participants),
            deliberation
                .announced_note_taker
                .as_ref()
                .map_or_else(|| "none available".to_string(), ToString::to_string),
            duration_text(deliberation.hard_deadline_ms() - deliberation.opened_at_ms),
        )
    }

    /// Seed 002's end notification; `note_taker` is whoever is assigned the notes.
    pub fn decision_message(deliberation: &Deliberation, note_taker: Option<&str>) -> String {
        let outcome = deliberation
            .outcome
            .as_ref()
            .expect("a decision message is rendered for a decided deliberation");
        let mut text = format!(
            "Fleet decision reached: {}\nDecision maker: {}\nNote taker: {}\nNotes: {}",
            outcome
                .decision
                .as_deref()
                .unwrap_or("no decision (every participant abstained)"),
            outcome.decision_maker,
            note_taker.unwrap_or("none available"),
            deliberation.notes.path,
        );
        if let Some(responder) = &outcome.responder {
            let _ = write!(text, "\nResponder: {responder}");
        }
        text
    }

    /// The markdown notes of a decided deliberation.
    pub fn markdown(deliberation: &Deliberation, note_taker: &str) -> String {
        let outcome = deliberation
            .outcome
            .as_ref()
            .expect("notes are rendered for a decided deliberation");
        let mut md = String::new();
        let _ = writeln!(
            md,
            "# Fleet deliberation {}: {}\n",
            deliberation.id, deliberation.topic
        );
        let _ = writeln!(
            md,
            "- Opened: {} by {}",
            format_utc(deliberation.opened_at_ms, "%Y-%m-%d %H:%M:%S UTC"),
            deliberation.opened_by.author()
        );
        let _ = writeln!(
            md,
            "- Decided: {}",
            format_utc(outcome.decided_at_ms, "%Y-%m-%d %H:%M:%S UTC")
        );
        let _ = writeln!(md, "- Tier: {}", deliberation.tier.number());
        let _ = writeln!(md, "- Participants: {}", names(&deliberation.participants));
        if !deliberation.options.is_empty() {
            let _ = writeln!(md, "- Options: {}", deliberation.options.join(" | "));
        }
        let _ = writeln!(md, "- Note taker: {note_taker}");
        for (phase, title) in [
            (Phase::Positions, "Round 1: positions"),
            (Phase::Synthesis, "Round 2: synthesis"),
            (Phase::Decision, "Decision phase"),
        ] {
            let inputs: Vec<_> = deliberation
                .inputs
                .iter()
                .filter(|i| i.phase == phase)
                .collect();
            let silent: Vec<_> = deliberation
                .abstentions
                .iter()
                .filter(|a| a.phase == phase)
                .map(|a| a.node.to_string())
                .collect();
            if inputs.is_empty() && silent.is_empty() {
                continue;
            }
            let _ = writeln!(md, "\n## {title}\n");
            for input in inputs {
                let _ = writeln!(
                    md,
                    "- **{}** ({} confidence): {} — {}",
                    input.node, input.confidence, input.stance, input.summary
                );
                for concern in &input.concerns {
                    let _ = writeln!(md, "  - concern: {concern}");
                }
            }
            if !silent.is_empty() {
                let _ = writeln!(md, "- abstained: {}", silent.join(", "));
            }
        }
        let _ = writeln!(md, "\n## Decision\n");
        let _ = writeln!(
            md,
            "- Decision: {}",
            outcome
                .decision
                .as_deref()
                .unwrap_or("none (every participant abstained)")
        );
        let _ = writeln!(md, "- Decided by: {}", outcome.decided_by);
        let _ = writeln!(md, "- Decision maker: {}", outcome.decision_maker);
        if let Some(responder) = &outcome.responder {
            let _ = writeln!(
                md,
                "- Responder (answers publicly; the others stay silent): {responder}"
            );
        }
        let _ = writeln!(md, "\n## Reasoning\n\n{}", outcome.reasoning);
        md
    }
}

fn names<T: ToString>(nodes: &[T]) -> String {
    nodes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn duration_text(ms: u64) -> String {
    if ms.is_multiple_of(60_000) {
        let minutes = ms / 60_000;
        format!("{minutes} minute{}", if minutes == 1 { "" } else { "s" })
    } else {
        format!("{} seconds", ms.div_ceil(1_000))
    }
}

/// Formats a leader timestamp (ms since the Unix epoch) in UTC.
pub(crate) fn format_utc(ms: u64, pattern: &str) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    DateTime::from_timestamp_millis(ms)
        .map(|t| t.format(pattern).to_string())
        .unwrap_or_else(|| format!("{ms}ms"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_seed_and_stay_unique() {
        // 2026-03-25 14:05:09 UTC
        let at = 1_774_447_509_000;
        let mut taken = BTreeSet::new();
        let first = Notes::path(at, &taken);
        assert_eq!(first, "memory/deliberation-2026-03-25-1405.md");
        taken.insert(first);
        assert_eq!(
            Notes::path(at, &taken),
            "memory/deliberation-2026-03-25-1405-2.md"
        );
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration_text(180_000), "3 minutes");
        assert_eq!(duration_text(60_000), "1 minute");
        assert_eq!(duration_text(4_500), "5 seconds");
    }
}
