//! A write that `Request::is_idempotent` calls harmless to repeat — which a node sends
//! on to the new leader when it lost the lead before the write committed — has,
//! committed twice with another write between, the effect of committing it once:
//! the repeat is answered, not refused, and the state is the same. The writes it does
//! not call so change the state again when repeated, which is why a node answers
//! "outcome unknown" for them instead.

mod support;

use std::collections::BTreeMap;

use fleet_node::state::artifacts::sha256_hex;
use fleet_node::state::bulletin::Recipient;
use fleet_node::state::event_log::{EventStatus, NewEvent};
use fleet_node::state::{
    Actor, DeliberationId, FleetState, OpenDeliberation, Request, Response, Tier,
};
use support::{TestFleet, as_node};

/// A fleet with one open deliberation, a session published by 5070 and a task event
/// by Mac.
struct Setup {
    fleet: TestFleet,
    deliberation: DeliberationId,
    task: u64,
}

fn setup() -> Setup {
    let mut fleet = TestFleet::new();
    let deliberation = fleet.open("Rotate keys?");
    let Ok(Response::Event { event: task, .. }) = fleet.run(
        as_node("mac"),
        Request::AppendEvent(event("review the diff", None)),
    ) else {
        panic!("the task event was not appended");
    };
    fleet
        .run(
            as_node("5070"),
            Request::PublishSession {
                key: "5070-main".into(),
                agent: Some("main".into()),
                status: "idle".into(),
            },
        )
        .unwrap();
    Setup {
        fleet,
        deliberation,
        task: task.id,
    }
}

fn event(body: &str, key: Option<&str>) -> NewEvent {
    NewEvent {
        event_type: "task.request".into(),
        stream: "tasks".into(),
        room: "ops".into(),
        to: "*".into(),
        correlation_id: None,
        status: EventStatus::Open,
        body: body.into(),
        request_id: key.map(str::to_string),
    }
}

/// Commits `request` as `actor` once on one fleet and twice on another, with the
/// same other write after the first commit on both; gives both states.
fn once_and_twice(actor: &Actor, request: &Request) -> (FleetState, FleetState) {
    let mut once = setup().fleet;
    let mut twice = setup().fleet;
    for fleet in [&mut once, &mut twice] {
        let first = fleet.run(actor.clone(), request.clone());
        assert!(first.is_ok(), "{}: {first:?}", request.name());
        fleet.advance(1_000);
        fleet
            .run(
                as_node("mac"),
                Request::AppendEvent(event("in between", None)),
            )
            .unwrap();
        fleet.advance(1_000);
    }
    let repeat = twice.run(actor.clone(), request.clone());
    assert!(
        repeat.is_ok(),
        "{}: a repeat was refused: {repeat:?}",
        request.name()
    );
    // Every command applied is counted, the repeat too; that is no effect of it.
    twice.state.applied_commands -= 1;
    (once.state, twice.state)
}

#[test]
fn a_write_called_idempotent_committed_twice_is_committed_once() {
    let content = b"diff --git a/x b/x".to_vec();
    let Setup {
        mut fleet,
        deliberation,
        ..
    } = setup();
    let submission = fleet.submission("yes");
    let writes = [
        (
            Actor::Operator,
            Request::OpenDeliberation(OpenDeliberation {
                topic: "Adopt Terraform?".into(),
                tier: Some(Tier::One),
                options: Vec::new(),
                participants: None,
                phase_ms: None,
                urgent: false,
                request_id: "open-terraform".into(),
            }),
        ),
        (
            as_node("beast"),
            Request::Submit {
                deliberation,
                submission,
            },
        ),
        (
            as_node("beast"),
            Request::SendMessage {
                to_session: "5070-main".into(),
                body: "Can you check nginx?".into(),
                request_id: "send-1".into(),
            },
        ),
        (
            as_node("beast"),
            Request::AppendEvent(event("deploy the blog", Some("task-1"))),
        ),
        (
            as_node("mac"),
            Request::PutArtifact {
                sha256: sha256_hex(&content),
                media_type: "text/x-diff".into(),
                metadata: BTreeMap::new(),
                content,
            },
        ),
        (as_node("beast"), Request::Probe),
    ];
    for (actor, request) in writes {
        assert!(request.is_idempotent(), "{}", request.name());
        let (once, twice) = once_and_twice(&actor, &request);
        assert!(
            once == twice,
            "{}: committed twice, the state differs from committing it once",
            request.name()
        );
    }
}

#[test]
fn a_write_not_called_idempotent_changes_the_state_again_when_repeated() {
    let task = setup().task;
    let writes = [
        (
            as_node("beast"),
            Request::AppendEvent(event("deploy the blog", None)),
        ),
        (
            as_node("beast"),
            Request::PostBulletin {
                to: Recipient::All,
                subject: "Maintenance".into(),
                body: "Beast reboots at noon.".into(),
            },
        ),
        (
            as_node("5070"),
            Request::AckEvent {
                event: task,
                status: EventStatus::Applied,
                body: "done".into(),
            },
        ),
    ];
    for (actor, request) in writes {
        assert!(!request.is_idempotent(), "{}", request.name());
        let (once, twice) = once_and_twice(&actor, &request);
        assert!(
            once != twice,
            "{}: a repeat changed nothing, so it could be called idempotent",
            request.name()
        );
    }
}

#[test]
fn a_keyed_repeat_answers_with_the_first_result() {
    let mut fleet = setup().fleet;
    let append = Request::AppendEvent(event("deploy the blog", Some("task-1")));
    let first = fleet.run(as_node("beast"), append.clone()).unwrap();
    fleet.advance(1_000);
    let repeat = fleet.run(as_node("beast"), append).unwrap();
    let (Response::Event { event: first, .. }, Response::Event { event: repeat, .. }) =
        (first, repeat)
    else {
        panic!("an append is answered with its event");
    };
    assert_eq!(first, repeat);
}
