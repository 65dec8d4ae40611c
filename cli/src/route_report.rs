//! `RouteReport`: a route as `fleetctl` prints it in JSON — the tier as a number and
//! the advice as a stable snake_case word, whatever the state's own types are called.

use fleet_node::state::router::{Advice, Route};
use serde::Serialize;

/// Who should answer a question and whether it needs a deliberation.
#[derive(Debug, Serialize)]
pub struct RouteReport {
    pub responder: Option<String>,
    /// 1, 2 or 3.
    pub tier: u8,
    /// `deliberate`, `deliberate_if_conflict`, `responder_answers` or `emergency_bypass`.
    pub advice: &'static str,
    pub needs_deliberation: bool,
    pub reason: String,
    pub specialists: Vec<Specialist>,
}

/// A node whose specialties matched, with the terms that did.
#[derive(Debug, Serialize)]
pub struct Specialist {
    pub node: String,
    pub terms: Vec<String>,
}

impl RouteReport {
    /// The report of `route`.
    pub fn of(route: &Route) -> Self {
        Self {
            responder: route.responder.as_ref().map(ToString::to_string),
            tier: route.tier.number(),
            advice: match route.advice {
                Advice::Deliberate => "deliberate",
                Advice::DeliberateIfConflict => "deliberate_if_conflict",
                Advice::ResponderAnswers => "responder_answers",
                Advice::EmergencyBypass => "emergency_bypass",
            },
            needs_deliberation: route.needs_deliberation,
            reason: route.reason.clone(),
            specialists: route
                .specialists
                .iter()
                .map(|(node, terms)| Specialist {
                    node: node.to_string(),
                    terms: terms.clone(),
                })
                .collect(),
        }
    }
}
