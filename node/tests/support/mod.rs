//! A test fleet around the pure state machine: injected time, named actors, and
//! shorthands for the commands the rule tests use.

#![allow(dead_code)]

use std::collections::BTreeSet;

use fleet_node::state::deliberation::Deliberation;
use fleet_node::state::{
    Actor, Applied, Command, Confidence, DeliberationId, Effect, FleetSettings, FleetState,
    NodeName, OpenDeliberation, Request, Response, RuleViolation, Submission, Tier,
};

/// 2026-03-25 14:05:00 UTC, the seed's implementation date.
pub const START_MS: u64 = 1_774_447_500_000;
pub const MINUTE: u64 = 60_000;

pub fn node(name: &str) -> NodeName {
    NodeName::new(name).unwrap()
}

pub fn as_node(name: &str) -> Actor {
    Actor::Node(node(name))
}

pub fn leader() -> Actor {
    Actor::Leader(node("beast"))
}

/// The fleet of the seeds (Beast, 5070, Mac), bootstrapped, with a clock the test moves.
pub struct TestFleet {
    pub state: FleetState,
    pub now: u64,
    pub effects: Vec<Effect>,
    requests: u64,
}

impl TestFleet {
    pub fn new() -> Self {
        Self::with_settings(|_| {})
    }

    pub fn with_settings(change: impl FnOnce(&mut FleetSettings)) -> Self {
        let mut settings = FleetSettings::default_for("home");
        settings.failback_hold_ms = 0;
        change(&mut settings);
        let mut fleet = Self {
            state: FleetState::default(),
            now: START_MS,
            effects: Vec::new(),
            requests: 0,
        };
        fleet
            .run(Actor::Operator, Request::Bootstrap(settings))
            .unwrap();
        fleet
    }

    /// Applies a request as `actor` at the current time; keeps the effects.
    pub fn apply(&mut self, actor: Actor, request: Request) -> Applied {
        let applied = self.state.apply(Command {
            at_ms: self.now,
            actor,
            request,
        });
        self.effects.extend(applied.effects.clone());
        applied
    }

    pub fn run(&mut self, actor: Actor, request: Request) -> Result<Response, RuleViolation> {
        self.apply(actor, request).result
    }

    /// Moves the clock on and lets the leader tick.
    pub fn advance(&mut self, ms: u64) {
        self.now += ms;
        self.run(leader(), Request::Tick).unwrap();
    }

    /// The leader reports exactly these nodes healthy.
    pub fn healthy(&mut self, names: &[&str]) {
        let healthy: BTreeSet<NodeName> = names.iter().map(|n| node(n)).collect();
        self.run(leader(), Request::ReportHealth { healthy })
            .unwrap();
    }

    pub fn next_request_id(&mut self) -> String {
        self.requests += 1;
        format!("req-{}", self.requests)
    }

    pub fn open_with(
        &mut self,
        topic: &str,
        change: impl FnOnce(&mut OpenDeliberation),
    ) -> DeliberationId {
        let mut open = OpenDeliberation {
            topic: topic.into(),
            tier: Some(Tier::One),
            options: Vec::new(),
            participants: None,
            phase_ms: None,
            urgent: false,
            request_id: self.next_request_id(),
        };
        change(&mut open);
        match self
            .run(Actor::Operator, Request::OpenDeliberation(open))
            .unwrap()
        {
            Response::Deliberation { deliberation, .. } => deliberation.id,
            other => panic!("expected a deliberation, got {other:?}"),
        }
    }

    pub fn open(&mut self, topic: &str) -> DeliberationId {
        self.open_with(topic, |_| {})
    }

    pub fn submission(&mut self, stance: &str) -> Submission {
        Submission {
            round: None,
            stance: stance.into(),
            confidence: Confidence::High,
            summary: format!("I hold that {stance} is right."),
            concerns: Vec::new(),
            request_id: self.next_request_id(),
        }
    }

    pub fn submit(
        &mut self,
        who: &str,
        id: DeliberationId,
        stance: &str,
    ) -> Result<Response, RuleViolation> {
        let submission = self.submission(stance);
        self.run(
            as_node(who),
            Request::Submit {
                deliberation: id,
                submission,
            },
        )
    }

    /// The operator overrides `id` with `decision`.
    pub fn override_with(
        &mut self,
        id: DeliberationId,
        decision: &str,
    ) -> Result<Response, RuleViolation> {
        self.run(
            Actor::Operator,
            Request::Override {
                deliberation: id,
                decision: decision.into(),
                reason: String::new(),
            },
        )
    }

    pub fn deliberation(&self, id: DeliberationId) -> &Deliberation {
        self.state.deliberation(id).unwrap()
    }

    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }
}
