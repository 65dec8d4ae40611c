//! What one write costs the state machine as the fleet's history grows.
//!
//! Every node applies every command, and after each applied command its runtime asks
//! for its duties (`duties_of`) and the leader's driver for the next deadline
//! (`next_deadline_ms`). This bench builds a state with `history` finished
//! deliberations (decided, notes written, both notifications delivered) and as many
//! delivered messages, then times what one node does per write: apply an event append,
//! then read its duties and the next deadline. Pure state, no I/O, one thread.
//!
//! ```sh
//! cargo bench -p fleet-node --bench state_history
//! # FLEET_BENCH_HISTORY=0,1000,10000 (default), FLEET_BENCH_WRITES=2000 (default)
//! ```

mod support;

use std::time::Instant;

use fleet_node::state::outbox::DeliveryResult;
use fleet_node::state::relay::MessageStatus;
use fleet_node::state::{
    Actor, Command, FleetSettings, FleetState, OpenDeliberation, Request, Response,
};
use support::{bench_event, listed, node};

const NODES: [&str; 3] = ["beast", "5070", "mac"];
const SINK: &str = "webhook";
const PHASE_MS: u64 = 1_000;

/// A state and the clock its commands carry.
struct Fleet {
    state: FleetState,
    now: u64,
    requests: u64,
}

impl Fleet {
    fn new() -> Self {
        let mut fleet = Fleet {
            state: FleetState::default(),
            now: 1_774_447_500_000,
            requests: 0,
        };
        fleet.run(
            Actor::Operator,
            Request::Bootstrap(FleetSettings::default_for("bench")),
        );
        let healthy = NODES.iter().map(|n| node(n)).collect();
        fleet.run(leader(), Request::ReportHealth { healthy });
        fleet
    }

    /// Publishes (or refreshes) mac's session, which the messages go to.
    fn publish_session(&mut self) {
        self.run(
            Actor::Node(node("mac")),
            Request::PublishSession {
                key: "mac-main".into(),
                agent: None,
                status: "idle".into(),
            },
        );
    }

    fn run(&mut self, actor: Actor, request: Request) -> Response {
        let applied = self.state.apply(Command {
            at_ms: self.now,
            actor,
            request,
        });
        applied.result.expect("the bench's commands are valid")
    }

    fn request_id(&mut self) -> String {
        self.requests += 1;
        format!("bench-{}", self.requests)
    }

    /// One deliberation from opening to delivered notifications and written notes.
    fn finished_deliberation(&mut self, topic: usize) {
        let open = OpenDeliberation {
            topic: format!("Topic number {topic}?"),
            tier: None,
            options: vec![],
            participants: None,
            phase_ms: Some(PHASE_MS),
            urgent: false,
            request_id: self.request_id(),
        };
        let Response::Deliberation { deliberation, .. } =
            self.run(Actor::Operator, Request::OpenDeliberation(open))
        else {
            panic!("opening answers with the deliberation");
        };
        self.now += 3 * PHASE_MS + 1;
        self.run(leader(), Request::Tick);
        let decided = &self.state.deliberations[&deliberation.id];
        let (note_taker, epoch) = decided.notes.assigned.clone().expect("notes assigned");
        self.run(
            Actor::Node(note_taker),
            Request::NotesWritten {
                deliberation: deliberation.id,
                epoch,
            },
        );
        let primary = self.state.roles.primary().cloned().expect("a primary");
        let epoch = self.state.roles.epoch;
        let announced: Vec<_> = self
            .state
            .outbox
            .notifications
            .values()
            .filter(|n| n.deliberation == Some(deliberation.id))
            .map(|n| n.id)
            .collect();
        for notification in announced {
            self.run(
                Actor::Node(primary.clone()),
                Request::RecordDelivery {
                    notification,
                    sink: SINK.into(),
                    result: DeliveryResult::Delivered,
                    epoch,
                },
            );
        }
    }

    /// One message to mac's session, delivered.
    fn delivered_message(&mut self) {
        self.publish_session();
        let request_id = self.request_id();
        let Response::Message { message, .. } = self.run(
            Actor::Operator,
            Request::SendMessage {
                to_session: "mac-main".into(),
                body: "Can you check nginx?".into(),
                request_id,
            },
        ) else {
            panic!("sending answers with the message");
        };
        self.run(
            Actor::Node(node("mac")),
            Request::ReportMessage {
                message: message.id,
                status: MessageStatus::Delivered,
            },
        );
    }

    /// What one node does per write: apply it, then read its duties and the deadline.
    /// Returns the number of duties, which a finished history leaves at zero.
    fn write(&mut self, sinks: &[String]) -> usize {
        let key = self.request_id();
        self.run(
            Actor::Node(node("beast")),
            Request::AppendEvent(bench_event(key)),
        );
        let duties = self.state.duties_of(&node("beast"), sinks);
        std::hint::black_box(self.state.next_deadline_ms());
        duties.len()
    }
}

fn leader() -> Actor {
    Actor::Leader(node("beast"))
}

fn main() {
    let writes = listed("FLEET_BENCH_WRITES", "2000")[0];
    let sinks = vec![SINK.to_string()];
    println!("| history | writes | µs per write (apply + duties + deadline) |");
    println!("|---|---|---|");
    for history in listed("FLEET_BENCH_HISTORY", "0,1000,10000") {
        let mut fleet = Fleet::new();
        for topic in 0..history {
            fleet.finished_deliberation(usize::try_from(topic).unwrap_or(usize::MAX));
            fleet.delivered_message();
        }
        let mut seen = 0;
        let started = Instant::now();
        for _ in 0..writes {
            seen += fleet.write(&sinks);
        }
        let per_write = started.elapsed().as_secs_f64() * 1e6 / writes as f64;
        assert_eq!(seen, 0, "a finished history leaves no duty");
        println!("| {history} | {writes} | {per_write:.2} |");
    }
}
