//! Property tests of the state machine's invariants over random command sequences:
//! random topics, inputs, health changes, overrides, events, notes confirmations,
//! delivery records, messages and time jumps.
//!
//! After every command:
//! - a deliberation is decided at most once, and its outcome never changes;
//! - a decision is a participant's stance (consensus or hierarchy) or the operator's;
//! - no participant has more than 3 inputs counted;
//! - the primary and note-taker are the first healthy nodes of their chains (with a
//!   failback hold: healthy, and every healthy node above them came back too recently);
//! - no open phase has outlived its deadline, and no decision came after three phases;
//! - appended events never change;
//! - each decided deliberation is announced exactly once, and each opened one once;
//! - the scans that skip finished history (deliberations decided with notes written,
//!   notifications settled per sink, messages no longer waiting) change nothing: the
//!   same state without its scan marks, which then scans everything, applies every
//!   command alike and owes the same duties by the same deadlines.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fleet_node::state::deliberation::Outcome;
use fleet_node::state::event_log::{Event, EventStatus, NewEvent};
use fleet_node::state::limits::{INPUTS_PER_BOT_MAX, PHASES};
use fleet_node::state::outbox::{DeliveryResult, NotificationId, NotificationKind};
use fleet_node::state::relay::{MessageId, MessageStatus};
use fleet_node::state::{
    Actor, Command, Confidence, DecidedBy, DeliberationId, FleetSettings, FleetState,
    OpenDeliberation, Request, Submission, Tier,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use support::{START_MS, leader, node};

const NODES: [&str; 3] = ["beast", "5070", "mac"];
const TOPICS: [&str; 4] = [
    "Azure or AWS?",
    "Rotate keys?",
    "Cache approach?",
    "Adopt Terraform?",
];
const STANCES: [&str; 3] = ["yes", "no", "later"];

#[derive(Clone, Debug)]
enum Op {
    Open {
        topic: usize,
        tier: u8,
        options: bool,
        phase_s: u64,
    },
    Submit {
        who: usize,
        deliberation: u64,
        stance: usize,
        round: Option<u8>,
        key: u8,
    },
    Advance {
        ms: u64,
    },
    Health {
        mask: u8,
    },
    Override {
        deliberation: u64,
    },
    Append {
        who: usize,
        body: u8,
    },
    Ack {
        who: usize,
        event: u64,
        claim: bool,
    },
    /// The assigned note-taker confirms a deliberation's notes.
    Notes {
        deliberation: u64,
    },
    /// The primary records a delivery attempt: delivered, failed, or failed for good.
    Deliver {
        notification: u64,
        sink: usize,
        result: u8,
    },
    Publish {
        who: usize,
    },
    Send {
        to: usize,
        key: u8,
    },
    /// The owner reports on a message: delivered, queued, or failed.
    Report {
        message: u64,
        status: u8,
    },
}

/// The notification sinks the primary delivers to.
const SINKS: [&str; 2] = ["phone", "webhook"];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0..TOPICS.len(), 1u8..=3, any::<bool>(), 1u64..=60)
            .prop_map(|(topic, tier, options, phase_s)| Op::Open { topic, tier, options, phase_s }),
        6 => (0..3usize, 1u64..=6, 0..STANCES.len(), prop::option::weighted(0.2, 1u8..=3), 0u8..6)
            .prop_map(|(who, deliberation, stance, round, key)| Op::Submit { who, deliberation, stance, round, key }),
        3 => prop_oneof![0u64..2_000, 0u64..70_000, 0u64..400_000].prop_map(|ms| Op::Advance { ms }),
        2 => (0u8..8).prop_map(|mask| Op::Health { mask }),
        1 => (1u64..=6).prop_map(|deliberation| Op::Override { deliberation }),
        1 => (0..3usize, any::<u8>()).prop_map(|(who, body)| Op::Append { who, body }),
        1 => (0..3usize, 1u64..=8, any::<bool>()).prop_map(|(who, event, claim)| Op::Ack { who, event, claim }),
        2 => (1u64..=6).prop_map(|deliberation| Op::Notes { deliberation }),
        // Mostly the first few notifications, so a sink's settled prefix forms and
        // a permanent failure in it can be followed by a transient one.
        3 => (prop_oneof![1u64..=3, 1u64..=12], 0..SINKS.len(), 0u8..3)
            .prop_map(|(notification, sink, result)| Op::Deliver { notification, sink, result }),
        1 => (0..3usize).prop_map(|who| Op::Publish { who }),
        1 => (0..3usize, 0u8..4).prop_map(|(to, key)| Op::Send { to, key }),
        2 => (1u64..=6, 0u8..3).prop_map(|(message, status)| Op::Report { message, status }),
    ]
}

struct Run {
    state: FleetState,
    now: u64,
    outcomes: BTreeMap<DeliberationId, Outcome>,
    events: Vec<Arc<Event>>,
    hold_ms: u64,
}

impl Run {
    fn new(hold_ms: u64) -> Self {
        let mut settings = FleetSettings::default_for("prop");
        settings.failback_hold_ms = hold_ms;
        let mut run = Self {
            state: FleetState::default(),
            now: START_MS,
            outcomes: BTreeMap::new(),
            events: Vec::new(),
            hold_ms,
        };
        run.apply(Actor::Operator, Request::Bootstrap(settings));
        run
    }

    /// Applies a command, and checks that the same state without its scan marks
    /// applies it alike.
    fn apply(&mut self, actor: Actor, request: Request) {
        let command = Command {
            at_ms: self.now,
            actor,
            request,
        };
        let mut scanning_all = without_scan_marks(&self.state);
        let applied = self.state.apply(command.clone());
        let reference = scanning_all.apply(command);
        assert_eq!(
            applied, reference,
            "the scan marks changed what a command did"
        );
        assert_eq!(
            without_scan_marks(&self.state),
            without_scan_marks(&scanning_all),
            "the scan marks changed the state a command left"
        );
    }

    fn step(&mut self, op: Op) {
        match op {
            Op::Open {
                topic,
                tier,
                options,
                phase_s,
            } => {
                let open = OpenDeliberation {
                    topic: TOPICS[topic].into(),
                    tier: Some(Tier::from_number(tier).unwrap()),
                    options: if options {
                        STANCES.iter().map(|s| s.to_string()).collect()
                    } else {
                        vec![]
                    },
                    participants: None,
                    phase_ms: Some(phase_s * 1_000),
                    urgent: false,
                    request_id: format!("open-{}", self.state.applied_commands),
                };
                self.apply(Actor::Operator, Request::OpenDeliberation(open));
            }
            Op::Submit {
                who,
                deliberation,
                stance,
                round,
                key,
            } => {
                let submission = Submission {
                    round,
                    stance: STANCES[stance].into(),
                    confidence: Confidence::Medium,
                    summary: format!("{} because.", STANCES[stance]),
                    concerns: vec![],
                    request_id: format!("{who}-{key}-{stance}"),
                };
                self.apply(
                    Actor::Node(node(NODES[who])),
                    Request::Submit {
                        deliberation: DeliberationId(deliberation),
                        submission,
                    },
                );
            }
            Op::Advance { ms } => {
                self.now += ms;
                self.apply(leader(), Request::Tick);
            }
            Op::Health { mask } => {
                let healthy = NODES
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| mask & (1 << i) != 0)
                    .map(|(_, n)| node(n))
                    .collect();
                self.apply(leader(), Request::ReportHealth { healthy });
            }
            Op::Override { deliberation } => self.apply(
                Actor::Operator,
                Request::Override {
                    deliberation: DeliberationId(deliberation),
                    decision: "operator says so".into(),
                    reason: String::new(),
                },
            ),
            Op::Append { who, body } => self.apply(
                Actor::Node(node(NODES[who])),
                Request::AppendEvent(NewEvent {
                    event_type: "task.request".into(),
                    stream: "project/p".into(),
                    room: "delegation".into(),
                    to: "*".into(),
                    correlation_id: None,
                    status: EventStatus::Open,
                    body: format!("body {body}"),
                    // Some appends reuse a key: as a repeat (same body) or a conflict.
                    request_id: (body % 2 == 0).then(|| format!("key-{}", body % 6)),
                }),
            ),
            Op::Ack { who, event, claim } => self.apply(
                Actor::Node(node(NODES[who])),
                Request::AckEvent {
                    event,
                    status: if claim {
                        EventStatus::Claimed
                    } else {
                        EventStatus::Applied
                    },
                    body: String::new(),
                },
            ),
            Op::Notes { deliberation } => {
                let assigned = self
                    .state
                    .deliberations
                    .get(&DeliberationId(deliberation))
                    .and_then(|d| d.notes.assigned.clone());
                if let Some((note_taker, epoch)) = assigned {
                    self.apply(
                        Actor::Node(note_taker),
                        Request::NotesWritten {
                            deliberation: DeliberationId(deliberation),
                            epoch,
                        },
                    );
                }
            }
            Op::Deliver {
                notification,
                sink,
                result,
            } => {
                let Some(primary) = self.state.roles.primary().cloned() else {
                    return;
                };
                let result = match result {
                    0 => DeliveryResult::Delivered,
                    failed => DeliveryResult::Failed {
                        error: "HTTP 503".into(),
                        permanent: failed == 2,
                    },
                };
                self.apply(
                    Actor::Node(primary),
                    Request::RecordDelivery {
                        notification: NotificationId(notification),
                        sink: SINKS[sink].into(),
                        result,
                        epoch: self.state.roles.epoch,
                    },
                );
            }
            Op::Publish { who } => self.apply(
                Actor::Node(node(NODES[who])),
                Request::PublishSession {
                    key: format!("{}-main", NODES[who]),
                    agent: None,
                    status: "idle".into(),
                },
            ),
            Op::Send { to, key } => self.apply(
                Actor::Operator,
                Request::SendMessage {
                    to_session: format!("{}-main", NODES[to]),
                    body: format!("message {key}"),
                    request_id: format!("send-{key}"),
                },
            ),
            Op::Report { message, status } => {
                let Some(owner) = self
                    .state
                    .relay
                    .messages
                    .get(&MessageId(message))
                    .map(|m| m.to_node.clone())
                else {
                    return;
                };
                let status = match status {
                    0 => MessageStatus::Delivered,
                    1 => MessageStatus::Queued {
                        reason: "gateway down".into(),
                    },
                    _ => MessageStatus::Failed {
                        reason: "no such session".into(),
                    },
                };
                self.apply(
                    Actor::Node(owner),
                    Request::ReportMessage {
                        message: MessageId(message),
                        status,
                    },
                );
            }
        }
    }

    fn check_invariants(&mut self) -> Result<(), TestCaseError> {
        let settings = self.state.settings.clone().unwrap();
        let now = self.state.clock_ms;
        for deliberation in self.state.deliberations.values() {
            for participant in &deliberation.participants {
                prop_assert!(deliberation.inputs_of(participant) <= INPUTS_PER_BOT_MAX);
            }
            match &deliberation.outcome {
                None => prop_assert!(
                    deliberation.phase_deadline_ms > now,
                    "{} is open past its deadline",
                    deliberation.id
                ),
                Some(outcome) => {
                    if let Some(first) = self.outcomes.get(&deliberation.id) {
                        prop_assert_eq!(first, outcome, "an outcome changed");
                    }
                    self.outcomes.insert(deliberation.id, outcome.clone());
                    prop_assert!(
                        outcome.decided_at_ms
                            <= deliberation.opened_at_ms + PHASES * deliberation.phase_ms
                    );
                    let stances: BTreeSet<&str> = deliberation
                        .inputs
                        .iter()
                        .filter(|i| deliberation.participants.contains(&i.node))
                        .map(|i| i.stance.as_str())
                        .collect();
                    match &outcome.decided_by {
                        DecidedBy::Override => {
                            prop_assert_eq!(outcome.decision.as_deref(), Some("operator says so"))
                        }
                        DecidedBy::Lapsed => {
                            prop_assert!(outcome.decision.is_none() && stances.is_empty())
                        }
                        DecidedBy::Consensus => {
                            prop_assert!(stances.contains(outcome.decision.as_deref().unwrap()))
                        }
                        DecidedBy::Hierarchy(maker) => {
                            let finals = deliberation.final_positions();
                            let made = finals
                                .iter()
                                .find(|i| &i.node == maker)
                                .map(|i| i.stance.as_str());
                            prop_assert_eq!(made, outcome.decision.as_deref());
                            prop_assert!(deliberation.participants.contains(maker));
                        }
                    }
                }
            }
            let announced = |kind| {
                self.state
                    .outbox
                    .notifications
                    .values()
                    .filter(|n| n.deliberation == Some(deliberation.id) && n.kind == kind)
                    .count()
            };
            prop_assert_eq!(announced(NotificationKind::DeliberationStarted), 1);
            prop_assert_eq!(
                announced(NotificationKind::DeliberationDecided),
                usize::from(deliberation.outcome.is_some())
            );
        }
        let roles = &self.state.roles;
        for (role_holder, chain) in [
            (roles.primary(), &settings.hierarchy),
            (roles.note_taker(), &settings.note_chain),
        ] {
            let first_healthy = chain.iter().find(|n| roles.is_healthy(n));
            match role_holder {
                None => prop_assert!(first_healthy.is_none()),
                Some(holder) => {
                    prop_assert!(
                        roles.is_healthy(holder),
                        "{holder} holds a role while unhealthy"
                    );
                    if self.hold_ms == 0 {
                        prop_assert_eq!(Some(holder), first_healthy);
                    }
                    for above in chain.iter().take_while(|n| *n != holder) {
                        if let Some(health) = roles.health.get(above).filter(|h| h.healthy) {
                            prop_assert!(
                                now - health.since_ms < self.hold_ms,
                                "{above} is steady above {holder}"
                            );
                        }
                    }
                }
            }
        }
        let events = self.state.events.events();
        prop_assert!(events.len() >= self.events.len());
        prop_assert_eq!(
            &events[..self.events.len()],
            &self.events[..],
            "an appended event changed"
        );
        self.events = events.to_vec();
        let scanning_all = without_scan_marks(&self.state);
        let sinks: Vec<String> = SINKS.map(String::from).to_vec();
        for name in NODES {
            prop_assert_eq!(
                self.state.duties_of(&node(name), &sinks),
                scanning_all.duties_of(&node(name), &sinks),
                "the scan marks changed the duties of {}",
                name
            );
        }
        prop_assert_eq!(
            self.state.next_deadline_ms(),
            scanning_all.next_deadline_ms()
        );
        Ok(())
    }
}

/// The state as one without scan marks holds it: every scan starts at the first
/// deliberation, notification and message (as a snapshot of an earlier build decodes).
fn without_scan_marks(state: &FleetState) -> FleetState {
    let mut json = serde_json::to_value(state).unwrap();
    for (path, mark) in [
        ("", "unfinished_from"),
        ("/outbox", "settled_below"),
        ("/relay", "waiting_from"),
    ] {
        let removed = json
            .pointer_mut(path)
            .and_then(|part| part.as_object_mut())
            .and_then(|part| part.remove(mark));
        assert!(removed.is_some(), "the state has no {mark} at '{path}'");
    }
    serde_json::from_value(json).unwrap()
}

fn roles_are_first_healthy(hold_ms: u64, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut run = Run::new(hold_ms);
    run.check_invariants()?;
    for op in ops {
        run.step(op);
        run.check_invariants()?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_without_failback_hold(ops in prop::collection::vec(op(), 1..120)) {
        roles_are_first_healthy(0, ops)?;
    }

    #[test]
    fn invariants_hold_with_a_failback_hold(ops in prop::collection::vec(op(), 1..120)) {
        roles_are_first_healthy(15_000, ops)?;
    }

    #[test]
    fn every_node_reaches_the_same_state_and_snapshots_round_trip(ops in prop::collection::vec(op(), 1..60)) {
        let mut a = Run::new(0);
        let mut b = Run::new(0);
        for op in ops {
            a.step(op.clone());
            b.step(op);
        }
        prop_assert_eq!(&a.state, &b.state);
        let bytes = fleet_node::state::Snapshot::encode(&a.state);
        prop_assert_eq!(fleet_node::state::Snapshot::decode(&bytes).unwrap(), a.state);
    }
}

#[test]
fn the_generator_reaches_every_kind_of_decision() {
    // Guards the property tests against a generator that never decides anything.
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut kinds = BTreeSet::new();
    let (mut finished, mut settled, mut answered) = (0, 0, 0);
    for _ in 0..200 {
        let ops = prop::collection::vec(op(), 60..120)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let mut run = Run::new(0);
        for op in ops {
            run.step(op);
        }
        finished += run
            .state
            .deliberations
            .values()
            .filter(|d| d.is_finished())
            .count();
        settled += run
            .state
            .outbox
            .notifications
            .values()
            .filter(|n| n.is_settled_for(SINKS))
            .count();
        answered += run
            .state
            .relay
            .messages
            .values()
            .filter(|m| !m.is_waiting())
            .count();
        for deliberation in run.state.deliberations.values() {
            if let Some(outcome) = &deliberation.outcome {
                kinds.insert(match outcome.decided_by {
                    DecidedBy::Consensus => "consensus",
                    DecidedBy::Hierarchy(_) => "hierarchy",
                    DecidedBy::Override => "override",
                    DecidedBy::Lapsed => "lapsed",
                });
            }
        }
    }
    assert_eq!(kinds.len(), 4, "reached only {kinds:?}");
    // ... nor the history the scan marks skip.
    assert!(
        finished > 0 && settled > 0 && answered > 0,
        "finished deliberations {finished}, settled notifications {settled}, answered messages {answered}"
    );
}
