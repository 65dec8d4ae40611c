//! `Deliberation`: one time-boxed, three-phase deliberation of seed 002 (D1–D9).
//!
//! Phases: **positions** (round 1: a stance in 1–2 sentences, a confidence, key
//! concerns), **synthesis** (round 2: answer the others' concerns, final position with
//! rationale), **decision** (participants who disagree may still converge). Each
//! phase ends at its deadline or as soon as every expected speaker has spoken;
//! participants who stay silent abstain for that phase. A deliberation is decided
//! by consensus when every final position agrees, otherwise by the hierarchy: the
//! highest-ranked participant that gave a position (preferring a healthy one) decides
//! with its own final position. The operator may override at any time.
//!
//! Deadlines are absolute times on the leader's clock, replicated with the state: a
//! phase that expired while no leader was ticking ends at its deadline and the next
//! phase starts from that deadline, so a failover never stretches a deliberation
//! past `3 × phase_ms` from its start.
//!
//! *Invariants:* at most one outcome, set once; the outcome's decision is a
//! participant's stance or the operator's; no participant has more than
//! `INPUTS_PER_BOT_MAX` inputs.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::actor::Actor;
use super::error::{RuleViolation, join_names};
use super::limits::{
    CONCERN_BYTES_MAX, CONCERNS_MAX, INPUTS_PER_BOT_MAX, NAME_BYTES_MAX, ROUNDS_MAX,
    STANCE_BYTES_MAX, SUMMARY_BYTES_MAX, check_text,
};
use super::node_name::NodeName;
use super::roles::Roles;
use super::tier::Tier;

/// A deliberation's id: `d-17`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct DeliberationId(pub u64);

impl fmt::Display for DeliberationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "d-{}", self.0)
    }
}

impl FromStr for DeliberationId {
    type Err = RuleViolation;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.trim()
            .trim_start_matches("d-")
            .parse()
            .map(Self)
            .map_err(|_| {
                RuleViolation::invalid("deliberation id", format!("`{s}` is not like `d-17`"))
            })
    }
}

/// Where a deliberation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Phase {
    /// Round 1: initial positions.
    Positions,
    /// Round 2: synthesis.
    Synthesis,
    /// Decision phase: last chance to converge before the hierarchy decides.
    Decision,
    /// Decided; no more inputs.
    Decided,
}

impl Phase {
    /// The round number of the back-and-forth rounds; the decision phase has none.
    pub fn round(self) -> Option<u8> {
        match self {
            Self::Positions => Some(1),
            Self::Synthesis => Some(2),
            Self::Decision | Self::Decided => None,
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Positions => "round 1 (positions)",
            Self::Synthesis => "round 2 (synthesis)",
            Self::Decision => "the decision phase",
            Self::Decided => "decided",
        })
    }
}

/// A position's confidence (seed 002: Low/Medium/High).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Confidence {
    Low,
    Medium,
    High,
}

impl fmt::Display for Confidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Low => "Low",
            Self::Medium => "Medium",
            Self::High => "High",
        })
    }
}

impl FromStr for Confidence {
    type Err = RuleViolation;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "low" => Ok(Self::Low),
            "medium" => Ok(Self::Medium),
            "high" => Ok(Self::High),
            _ => Err(RuleViolation::invalid(
                "confidence",
                format!("`{s}` is not low, medium or high"),
            )),
        }
    }
}

/// What a participant submits in a phase.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submission {
    /// The round it is meant for (1 or 2); `None` means the current phase.
    pub round: Option<u8>,
    /// The position itself; one of the options when the deliberation has options.
    pub stance: String,
    /// How sure the participant is.
    pub confidence: Confidence,
    /// 1–2 sentences: the position (round 1) or the rationale (round 2).
    pub summary: String,
    /// Key concerns or blockers.
    pub concerns: Vec<String>,
    /// Idempotency key: the same key again returns the first result.
    pub request_id: String,
}

/// An accepted input, as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Input {
    /// Who gave it.
    pub node: NodeName,
    /// The phase it was given in.
    pub phase: Phase,
    /// The stance, canonical (an option's own spelling when there are options).
    pub stance: String,
    /// Confidence.
    pub confidence: Confidence,
    /// Position or rationale.
    pub summary: String,
    /// Key concerns.
    pub concerns: Vec<String>,
    /// Idempotency key it was given with.
    pub request_id: String,
    /// When it was committed.
    pub at_ms: u64,
}

/// How the decision was reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DecidedBy {
    /// Every final position agreed.
    Consensus,
    /// Positions differed; this node, the highest-ranked that gave one, decided.
    Hierarchy(NodeName),
    /// The operator ended the deliberation with a decision.
    Override,
    /// Nobody gave a position; there is no decision.
    Lapsed,
}

impl fmt::Display for DecidedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Consensus => f.write_str("consensus"),
            Self::Hierarchy(node) => write!(f, "hierarchy:{node}"),
            Self::Override => f.write_str("override"),
            Self::Lapsed => f.write_str("lapsed"),
        }
    }
}

/// The end of a deliberation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// The decision; `None` only when the deliberation lapsed.
    pub decision: Option<String>,
    /// How it was reached.
    pub decided_by: DecidedBy,
    /// Who made it, as the notification says it: `consensus`, `beast hierarchy`, `operator override`.
    pub decision_maker: String,
    /// The node that answers publicly; the others stay silent (D9).
    pub responder: Option<NodeName>,
    /// Why, in sentences, for the notes.
    pub reasoning: String,
    /// When it was decided.
    pub decided_at_ms: u64,
}

/// A participant that said nothing in a phase.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Abstention {
    /// The silent participant.
    pub node: NodeName,
    /// The phase it was silent in.
    pub phase: Phase,
}

/// Who must write the notes of a decided deliberation, and whether they have.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotesRecord {
    /// `memory/deliberation-YYYY-MM-DD-HHMM.md`, unique in the fleet.
    pub path: String,
    /// The rendered notes, replicated so any node can show them.
    pub markdown: Option<String>,
    /// The node asked to write them and the epoch of that assignment.
    pub assigned: Option<(NodeName, u64)>,
    /// The node that confirmed the file is written.
    pub written_by: Option<NodeName>,
}

/// What a deliberation did when time moved on or an input arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// A new phase began; `speakers` are asked for input until `deadline_ms`.
    PhaseStarted {
        phase: Phase,
        deadline_ms: u64,
        speakers: Vec<NodeName>,
    },
    /// The deliberation was decided.
    Decided,
}

/// One deliberation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deliberation {
    pub id: DeliberationId,
    /// The question, as asked.
    pub topic: String,
    /// The topic normalised, to keep one open deliberation per topic.
    pub topic_key: String,
    pub tier: Tier,
    /// Allowed stances; empty means free text.
    pub options: Vec<String>,
    /// Participants in hierarchy order.
    pub participants: Vec<NodeName>,
    pub opened_by: Actor,
    /// The idempotency key it was opened with.
    pub request_id: String,
    pub opened_at_ms: u64,
    /// Length of each phase.
    pub phase_ms: u64,
    pub phase: Phase,
    pub phase_started_ms: u64,
    pub phase_deadline_ms: u64,
    /// Every accepted input, in commit order.
    pub inputs: Vec<Input>,
    pub abstentions: Vec<Abstention>,
    /// The node whose specialty the topic falls in (R3), if any.
    pub specialist: Option<NodeName>,
    /// The note-taker when it opened, as announced.
    pub announced_note_taker: Option<NodeName>,
    pub notes: NotesRecord,
    pub outcome: Option<Outcome>,
}

impl Deliberation {
    /// Whether it is still taking inputs.
    pub fn is_open(&self) -> bool {
        self.outcome.is_none()
    }

    /// Whether nothing is left to do for it: decided, and its notes written. Neither
    /// ever changes back.
    pub fn is_finished(&self) -> bool {
        self.outcome.is_some() && self.notes.written_by.is_some()
    }

    /// The latest deadline it can have: three phases from its start.
    pub fn hard_deadline_ms(&self) -> u64 {
        self.opened_at_ms + super::limits::PHASES * self.phase_ms
    }

    /// How many inputs `node` has given.
    pub fn inputs_of(&self, node: &NodeName) -> usize {
        self.inputs.iter().filter(|i| &i.node == node).count()
    }

    /// Each participant's latest stance, in hierarchy order (participants are kept in it).
    pub fn final_positions(&self) -> Vec<&Input> {
        self.participants
            .iter()
            .filter_map(|node| self.inputs.iter().rev().find(|i| &i.node == node))
            .collect()
    }

    /// Whether `node` gave an input in `phase`.
    pub fn spoke_in(&self, node: &NodeName, phase: Phase) -> bool {
        self.inputs
            .iter()
            .any(|i| &i.node == node && i.phase == phase)
    }

    /// Who is expected to speak in the current phase: healthy participants (all of them
    /// if none is healthy); in the decision phase only those who gave a position.
    pub fn expected_speakers(&self, roles: &Roles) -> Vec<NodeName> {
        let candidates: Vec<&NodeName> = match self.phase {
            Phase::Positions | Phase::Synthesis => self.participants.iter().collect(),
            Phase::Decision => self
                .final_positions()
                .into_iter()
                .map(|i| &i.node)
                .collect(),
            Phase::Decided => Vec::new(),
        };
        let healthy: Vec<NodeName> = candidates
            .iter()
            .filter(|n| roles.is_healthy(n))
            .map(|n| (*n).clone())
            .collect();
        if healthy.is_empty() {
            candidates.into_iter().cloned().collect()
        } else {
            healthy
        }
    }

    /// Validates and records a participant's input; `Ok(false)` for a repeat of an
    /// earlier input with the same idempotency key (nothing is counted twice).
    pub fn submit(
        &mut self,
        node: &NodeName,
        submission: Submission,
        now: u64,
    ) -> Result<bool, RuleViolation> {
        let id = self.id.to_string();
        if let Some(previous) = self
            .inputs
            .iter()
            .find(|i| &i.node == node && i.request_id == submission.request_id)
        {
            let same = previous.summary == submission.summary
                && previous
                    .stance
                    .eq_ignore_ascii_case(submission.stance.trim());
            return if same {
                Ok(false)
            } else {
                Err(RuleViolation::IdempotencyConflict {
                    key: submission.request_id,
                    what: "input".into(),
                })
            };
        }
        if let Some(outcome) = &self.outcome {
            return Err(RuleViolation::DeliberationClosed {
                id,
                decided_by: outcome.decided_by.to_string(),
            });
        }
        if !self.participants.contains(node) {
            return Err(RuleViolation::NotAParticipant {
                node: node.to_string(),
                id,
                participants: join_names(&self.participants),
            });
        }
        if let Some(round) = submission.round {
            if round > ROUNDS_MAX {
                return Err(RuleViolation::RoundLimit {
                    id,
                    requested: round,
                    limit: ROUNDS_MAX,
                });
            }
            if Some(round) != self.phase.round() {
                return Err(RuleViolation::WrongRound {
                    id,
                    requested: round,
                    current: self.phase.to_string(),
                });
            }
        }
        let given = self.inputs_of(node);
        if given >= INPUTS_PER_BOT_MAX {
            return Err(RuleViolation::InputLimit {
                node: node.to_string(),
                id,
                given,
                limit: INPUTS_PER_BOT_MAX,
            });
        }
        let stance = self.canonical_stance(&submission.stance)?;
        check_text("summary", &submission.summary, SUMMARY_BYTES_MAX)?;
        check_text("request_id", &submission.request_id, NAME_BYTES_MAX)?;
        if submission.concerns.len() > CONCERNS_MAX {
            return Err(RuleViolation::invalid(
                "concerns",
                format!(
                    "{} given; at most {CONCERNS_MAX}",
                    submission.concerns.len()
                ),
            ));
        }
        for concern in &submission.concerns {
            check_text("concern", concern, CONCERN_BYTES_MAX)?;
        }
        self.inputs.push(Input {
            node: node.clone(),
            phase: self.phase,
            stance,
            confidence: submission.confidence,
            summary: submission.summary.trim().to_string(),
            concerns: submission
                .concerns
                .iter()
                .map(|c| c.trim().to_string())
                .collect(),
            request_id: submission.request_id,
            at_ms: now,
        });
        Ok(true)
    }

    /// The stance as recorded: an option's own spelling, or the trimmed free text.
    fn canonical_stance(&self, stance: &str) -> Result<String, RuleViolation> {
        check_text("stance", stance, STANCE_BYTES_MAX)?;
        if self.options.is_empty() {
            return Ok(stance.trim().to_string());
        }
        self.options
            .iter()
            .find(|option| stance_key(option) == stance_key(stance))
            .cloned()
            .ok_or_else(|| RuleViolation::UnknownOption {
                stance: stance.trim().into(),
                id: self.id.to_string(),
                options: self.options.join(", "),
            })
    }

    /// Moves phases on at `now`: past deadlines first (each next phase starts at the
    /// deadline that ended the last), then an early end when everyone expected spoke.
    pub fn advance(&mut self, now: u64, hierarchy: &[NodeName], roles: &Roles) -> Vec<Progress> {
        let mut progress = Vec::new();
        while self.is_open() {
            let ended_at = if self.phase_deadline_ms <= now {
                self.phase_deadline_ms
            } else if self.everyone_expected_spoke(roles) || self.converged_in_decision() {
                now
            } else {
                break;
            };
            progress.push(self.end_phase(ended_at, hierarchy, roles));
        }
        progress
    }

    fn everyone_expected_spoke(&self, roles: &Roles) -> bool {
        self.expected_speakers(roles)
            .iter()
            .all(|node| self.spoke_in(node, self.phase))
    }

    fn converged_in_decision(&self) -> bool {
        self.phase == Phase::Decision && self.is_unanimous()
    }

    /// Every final position agrees, and agreement means something: at least two
    /// participants gave one, or the deliberation has a single participant.
    fn is_unanimous(&self) -> bool {
        let finals = self.final_positions();
        let keys: BTreeSet<String> = finals.iter().map(|i| stance_key(&i.stance)).collect();
        keys.len() == 1 && (finals.len() >= 2 || self.participants.len() == 1)
    }

    fn end_phase(&mut self, at: u64, hierarchy: &[NodeName], roles: &Roles) -> Progress {
        let expected = self.expected_speakers(roles);
        for node in expected {
            if !self.spoke_in(&node, self.phase) {
                self.abstentions.push(Abstention {
                    node,
                    phase: self.phase,
                });
            }
        }
        let positions = self.final_positions().len();
        let has_positions = positions > 0;
        let next = match self.phase {
            // Tier 2 deliberates further only if the first positions conflict.
            Phase::Positions if self.tier == Tier::Two && has_positions && self.stances_agree() => {
                Phase::Decided
            }
            Phase::Positions => Phase::Synthesis,
            // Nothing to reconcile with fewer than two positions, or when all agree.
            Phase::Synthesis if positions < 2 || self.is_unanimous() => Phase::Decided,
            Phase::Synthesis => Phase::Decision,
            Phase::Decision | Phase::Decided => Phase::Decided,
        };
        if next == Phase::Decided {
            self.decide(at, hierarchy, roles);
            return Progress::Decided;
        }
        self.phase = next;
        self.phase_started_ms = at;
        self.phase_deadline_ms = at + self.phase_ms;
        Progress::PhaseStarted {
            phase: next,
            deadline_ms: self.phase_deadline_ms,
            speakers: self.expected_speakers(roles),
        }
    }

    fn stances_agree(&self) -> bool {
        let keys: BTreeSet<String> = self
            .final_positions()
            .iter()
            .map(|i| stance_key(&i.stance))
            .collect();
        keys.len() <= 1
    }

    /// Decides from the final positions: consensus, else the hierarchy, else lapsed.
    fn decide(&mut self, at: u64, hierarchy: &[NodeName], roles: &Roles) {
        let finals = self.final_positions();
        let listing = finals
            .iter()
            .map(|i| format!("{}: {}", i.node, i.stance))
            .collect::<Vec<_>>()
            .join("; ");
        let (decision, decided_by, maker, reasoning) = if finals.is_empty() {
            (
                None,
                DecidedBy::Lapsed,
                "none (every participant abstained)".to_string(),
                "No participant gave a position before the deadlines.".to_string(),
            )
        } else if self.is_unanimous() {
            let first = finals[0];
            (
                Some(first.stance.clone()),
                DecidedBy::Consensus,
                "consensus".to_string(),
                format!(
                    "All {} participants who gave a position agreed: {}. {}",
                    finals.len(),
                    first.stance,
                    first.summary
                ),
            )
        } else {
            let rank = |node: &NodeName| {
                hierarchy
                    .iter()
                    .position(|n| n == node)
                    .unwrap_or(usize::MAX)
            };
            let by_rank = |healthy_only: bool| {
                finals
                    .iter()
                    .filter(|i| !healthy_only || roles.is_healthy(&i.node))
                    .min_by_key(|i| rank(&i.node))
                    .copied()
            };
            let maker = by_rank(true)
                .or_else(|| by_rank(false))
                .expect("finals is not empty");
            (
                Some(maker.stance.clone()),
                DecidedBy::Hierarchy(maker.node.clone()),
                format!("{} hierarchy", maker.node),
                format!(
                    "No consensus ({listing}). {} is the highest-ranked participant that gave a position and decided: {}. {}",
                    maker.node, maker.stance, maker.summary
                ),
            )
        };
        let responder = self.responder(&decided_by, roles);
        self.finish(Outcome {
            decision,
            decided_by,
            decision_maker: maker,
            responder,
            reasoning,
            decided_at_ms: at,
        });
    }

    /// The node that answers publicly: the specialist if healthy, else the decision
    /// maker, else the highest-ranked healthy participant.
    fn responder(&self, decided_by: &DecidedBy, roles: &Roles) -> Option<NodeName> {
        let healthy_specialist = self.specialist.clone().filter(|n| roles.is_healthy(n));
        let maker = match decided_by {
            DecidedBy::Hierarchy(node) => Some(node.clone()),
            _ => None,
        };
        healthy_specialist
            .or(maker)
            .or_else(|| {
                self.participants
                    .iter()
                    .find(|n| roles.is_healthy(n))
                    .cloned()
            })
            .or_else(|| self.specialist.clone())
            .or_else(|| self.participants.first().cloned())
    }

    /// Ends the deliberation at once with the operator's decision (D5).
    pub fn override_with(
        &mut self,
        decision: &str,
        reason: &str,
        at: u64,
        roles: &Roles,
    ) -> Result<(), RuleViolation> {
        if let Some(outcome) = &self.outcome {
            return Err(RuleViolation::DeliberationClosed {
                id: self.id.to_string(),
                decided_by: outcome.decided_by.to_string(),
            });
        }
        let reasoning = if reason.trim().is_empty() {
            "The operator overrode the deliberation.".to_string()
        } else {
            format!("The operator overrode the deliberation: {}", reason.trim())
        };
        let responder = self.responder(&DecidedBy::Override, roles);
        self.finish(Outcome {
            decision: Some(decision.trim().to_string()),
            decided_by: DecidedBy::Override,
            decision_maker: "operator override".into(),
            responder,
            reasoning,
            decided_at_ms: at,
        });
        Ok(())
    }

    fn finish(&mut self, outcome: Outcome) {
        debug_assert!(self.outcome.is_none(), "a deliberation is decided once");
        self.phase = Phase::Decided;
        self.phase_deadline_ms = outcome.decided_at_ms;
        self.outcome = Some(outcome);
    }
}

/// A stance or topic normalised for comparison: lowercase, single spaces, no end punctuation.
pub fn stance_key(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .trim_end_matches(['.', '!', '?'])
        .to_string()
}
