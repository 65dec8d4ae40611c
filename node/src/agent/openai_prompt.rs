//! The chat completion request the `openai` adapter sends: who the agent is, what
//! it is asked, and the one tool it must answer with.
//!
//! The answer is forced through a tool call (`tool_choice` names `submit_position`)
//! rather than parsed from prose: the tool's JSON schema carries the allowed stances
//! and confidences, so a compliant model cannot answer outside them, and the gateway
//! hands back the arguments as JSON we can check.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::confidence_text::{self, CONFIDENCE_WORDS};
use super::input_request::InputRequest;
use crate::state::limits::CONCERNS_MAX;

/// The name of the tool the model must call.
pub const SUBMIT_POSITION: &str = "submit_position";

/// The JSON body of `POST <url>` for `request`, asking `model`.
pub(crate) fn chat_request_body(model: &str, request: &InputRequest) -> Value {
    json!({
        "model": model,
        "messages": [
            {"role": "system", "content": system_message(request)},
            {"role": "user", "content": user_message(request)},
        ],
        "tools": [submit_position_tool(request)],
        "tool_choice": {"type": "function", "function": {"name": SUBMIT_POSITION}},
    })
}

fn system_message(request: &InputRequest) -> String {
    let participants = names(&request.participants);
    format!(
        "You are the agent of node {node} in a fleet of AI agents ({participants}) that deliberate privately and answer as one. \
         A deliberation has a time limit per phase; you are asked for your input to one phase. \
         Answer only by calling the function {SUBMIT_POSITION} with your stance, confidence, summary and concerns; a text reply is not counted and you abstain.",
        node = request.node,
    )
}

fn user_message(request: &InputRequest) -> String {
    let mut text = String::new();
    // `write!` to a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(
        text,
        "Deliberation {} (tier {}): {}",
        request.deliberation, request.tier, request.topic
    );
    let _ = writeln!(
        text,
        "Participants in hierarchy order: {}. You are {}.",
        names(&request.participants),
        request.node
    );
    let round = request
        .round
        .map(|round| format!(", round {round}"))
        .unwrap_or_default();
    let _ = writeln!(
        text,
        "Phase: {}{round}; about {} seconds left.",
        request.phase.name(),
        request.time_left_ms / 1000
    );
    let _ = writeln!(text, "{}", request.instructions);
    if request.options.is_empty() {
        let _ = writeln!(
            text,
            "Options: none; your stance is a short free-text statement."
        );
    } else {
        let _ = writeln!(
            text,
            "Options (your stance must be exactly one): {}",
            request.options.join(" | ")
        );
    }
    if request.inputs.is_empty() {
        let _ = writeln!(text, "Inputs so far: none.");
    } else {
        let _ = writeln!(text, "Inputs so far:");
        for input in &request.inputs {
            let who = if input.node == request.node {
                format!("{} (you)", input.node)
            } else {
                input.node.to_string()
            };
            let _ = write!(
                text,
                "- {who}, {}: {} (confidence {}). {}",
                input.phase.name(),
                input.stance,
                confidence_text::word(input.confidence),
                input.summary
            );
            if !input.concerns.is_empty() {
                let _ = write!(text, " Concerns: {}.", input.concerns.join("; "));
            }
            text.push('\n');
        }
    }
    let request_json = serde_json::to_string_pretty(request).unwrap_or_default();
    let _ = write!(text, "\nThe full request as JSON:\n{request_json}\n");
    text
}

/// The `submit_position` tool, its stance limited to the options when there are any.
fn submit_position_tool(request: &InputRequest) -> Value {
    let mut stance = json!({
        "type": "string",
        "description": "Your position in a few words; the decision if the fleet adopts it.",
    });
    if !request.options.is_empty() {
        stance["enum"] = json!(request.options);
    }
    json!({
        "type": "function",
        "function": {
            "name": SUBMIT_POSITION,
            "description": "Submit your input to this phase of the fleet deliberation.",
            "parameters": {
                "type": "object",
                "properties": {
                    "stance": stance,
                    "confidence": {
                        "type": "string",
                        "enum": CONFIDENCE_WORDS,
                        "description": "How sure you are.",
                    },
                    "summary": {
                        "type": "string",
                        "description": "1-2 sentences: your position (round 1) or its rationale (round 2 and the decision).",
                    },
                    "concerns": {
                        "type": "array",
                        "items": {"type": "string"},
                        "maxItems": CONCERNS_MAX,
                        "description": "Key concerns or blockers; empty if none.",
                    },
                },
                "required": ["stance", "confidence", "summary", "concerns"],
                "additionalProperties": false,
            },
        },
    })
}

fn names(nodes: &[crate::state::NodeName]) -> String {
    nodes
        .iter()
        .map(|node| node.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
