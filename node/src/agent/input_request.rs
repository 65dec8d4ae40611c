//! `InputRequest`: what a node's agent is asked when a deliberation phase starts.
//!
//! Built by a pure constructor from the replicated [`Deliberation`] and the time, so
//! every adapter sends the same facts: the question, the phase and its deadline, the
//! seed 002 instructions for the phase, and every input given so far (in round 2 the
//! agent sees the others' round-1 positions and concerns, which it must address).
//! It is serialised as JSON for the `command` adapter's stdin and inside the
//! `openai` adapter's prompt.

use serde::{Deserialize, Serialize};

use super::confidence_text;
use crate::state::deliberation::{Deliberation, Input, Phase};
use crate::state::{Confidence, NodeName};

/// The phase an agent is asked in, spelled as agents read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestPhase {
    /// Round 1: initial positions.
    Positions,
    /// Round 2: synthesis.
    Synthesis,
    /// The decision phase.
    Decision,
    /// The deliberation is already decided; nothing is taken any more.
    Decided,
}

impl RequestPhase {
    /// The name agents see: `positions`, `synthesis`, `decision`, `decided`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Positions => "positions",
            Self::Synthesis => "synthesis",
            Self::Decision => "decision",
            Self::Decided => "decided",
        }
    }
}

impl From<Phase> for RequestPhase {
    fn from(phase: Phase) -> Self {
        match phase {
            Phase::Positions => Self::Positions,
            Phase::Synthesis => Self::Synthesis,
            Phase::Decision => Self::Decision,
            Phase::Decided => Self::Decided,
        }
    }
}

/// An input given earlier in the deliberation, as the agent sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriorInput {
    /// Who gave it.
    pub node: NodeName,
    /// The phase it was given in.
    pub phase: RequestPhase,
    /// Its stance.
    pub stance: String,
    /// Its confidence: `low`, `medium` or `high`.
    #[serde(with = "confidence_text")]
    pub confidence: Confidence,
    /// The position (round 1) or rationale (round 2).
    pub summary: String,
    /// Its key concerns.
    pub concerns: Vec<String>,
}

impl From<&Input> for PriorInput {
    fn from(input: &Input) -> Self {
        Self {
            node: input.node.clone(),
            phase: input.phase.into(),
            stance: input.stance.clone(),
            confidence: input.confidence,
            summary: input.summary.clone(),
            concerns: input.concerns.clone(),
        }
    }
}

/// What an agent is asked for one phase of one deliberation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRequest {
    /// The deliberation's id: `d-3`.
    pub deliberation: String,
    /// The question.
    pub topic: String,
    /// Its tier: 1 (always deliberate), 2 (if positions conflict) or 3 (optional).
    pub tier: u8,
    /// The allowed stances; empty means the stance is free text.
    pub options: Vec<String>,
    /// The node whose agent is asked.
    pub node: NodeName,
    /// Every participant, in hierarchy order (the first decides without consensus).
    pub participants: Vec<NodeName>,
    /// The current phase.
    pub phase: RequestPhase,
    /// 1 or 2 in the rounds; `null` in the decision phase.
    pub round: Option<u8>,
    /// When the phase ends, in milliseconds since the Unix epoch (leader's clock).
    pub deadline_ms: u64,
    /// How long is left of the phase at the time of asking.
    pub time_left_ms: u64,
    /// What to do in this phase, from seed 002.
    pub instructions: String,
    /// Every input so far, in the order they were committed.
    pub inputs: Vec<PriorInput>,
}

impl InputRequest {
    /// The request for `node` in `deliberation`'s current phase, asked at `now_ms`.
    pub fn new(deliberation: &Deliberation, node: &NodeName, now_ms: u64) -> Self {
        let phase = RequestPhase::from(deliberation.phase);
        Self {
            deliberation: deliberation.id.to_string(),
            topic: deliberation.topic.clone(),
            tier: deliberation.tier.number(),
            options: deliberation.options.clone(),
            node: node.clone(),
            participants: deliberation.participants.clone(),
            phase,
            round: deliberation.phase.round(),
            deadline_ms: deliberation.phase_deadline_ms,
            time_left_ms: deliberation.phase_deadline_ms.saturating_sub(now_ms),
            instructions: instructions(phase, !deliberation.options.is_empty()),
            inputs: deliberation.inputs.iter().map(PriorInput::from).collect(),
        }
    }

    /// The inputs of participants other than the one asked.
    pub fn inputs_of_others(&self) -> impl Iterator<Item = &PriorInput> {
        self.inputs.iter().filter(|input| input.node != self.node)
    }
}

/// Seed 002's instructions for `phase`, and the rule on options when there are some.
fn instructions(phase: RequestPhase, has_options: bool) -> String {
    let what = match phase {
        RequestPhase::Positions => {
            "Round 1 (initial positions): state your position in 1-2 sentences, give your confidence (low, medium or high), and name the key concerns or blockers."
        }
        RequestPhase::Synthesis => {
            "Round 2 (synthesis): address the other participants' concerns, propose a compromise where one helps, and give your final position with its rationale."
        }
        RequestPhase::Decision => {
            "Decision phase: confirm or change your final stance so the fleet can converge; without consensus the highest-ranked participant's final position decides."
        }
        RequestPhase::Decided => "The deliberation is decided; no more input is taken.",
    };
    if has_options && phase != RequestPhase::Decided {
        format!("{what} Your stance must be one of the options.")
    } else {
        what.to_string()
    }
}
