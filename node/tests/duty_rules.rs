//! What each node owes the fleet (`FleetState::duties_of`), and the failover drill's
//! records, against the pure state machine with injected time.

mod support;

use fleet_node::state::outbox::DeliveryResult;
use fleet_node::state::{Actor, DrillReport, Duty, Phase, Request, Response, RuleViolation};
use support::{TestFleet, as_node, node};

fn sinks() -> Vec<String> {
    vec!["phone".to_string(), "webhook".to_string()]
}

fn speak_duties(fleet: &TestFleet, who: &str) -> Vec<(u64, Phase)> {
    fleet
        .state
        .duties_of(&node(who), &sinks())
        .into_iter()
        .filter_map(|duty| match duty {
            Duty::Speak {
                deliberation,
                phase,
                ..
            } => Some((deliberation.0, phase)),
            _ => None,
        })
        .collect()
}

fn notes_duties(fleet: &TestFleet, who: &str) -> Vec<(u64, u64)> {
    fleet
        .state
        .duties_of(&node(who), &sinks())
        .into_iter()
        .filter_map(|duty| match duty {
            Duty::WriteNotes {
                deliberation,
                epoch,
                ..
            } => Some((deliberation.0, epoch)),
            _ => None,
        })
        .collect()
}

fn deliveries(fleet: &TestFleet, who: &str) -> Vec<(u64, String, u64)> {
    fleet
        .state
        .duties_of(&node(who), &sinks())
        .into_iter()
        .filter_map(|duty| match duty {
            Duty::Deliver {
                notification,
                sink,
                epoch,
            } => Some((notification.0, sink, epoch)),
            _ => None,
        })
        .collect()
}

#[test]
fn every_participant_owes_an_input_until_it_has_spoken_in_the_phase() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Should we move the backups to restic?");
    for who in ["beast", "5070", "mac"] {
        assert_eq!(speak_duties(&fleet, who), vec![(id.0, Phase::Positions)]);
    }
    fleet.submit("beast", id, "yes").unwrap();
    assert!(speak_duties(&fleet, "beast").is_empty());
    assert_eq!(speak_duties(&fleet, "mac"), vec![(id.0, Phase::Positions)]);
    fleet.submit("5070", id, "yes").unwrap();
    fleet.submit("mac", id, "no").unwrap();
    // The round ended early; round 2 is owed by everyone again.
    for who in ["beast", "5070", "mac"] {
        assert_eq!(speak_duties(&fleet, who), vec![(id.0, Phase::Synthesis)]);
    }
}

#[test]
fn a_node_that_is_down_owes_nothing_and_the_others_are_not_held_up() {
    let mut fleet = TestFleet::new();
    fleet.healthy(&["beast", "5070"]);
    let id = fleet.open("Should we move the backups to restic?");
    assert!(speak_duties(&fleet, "mac").is_empty());
    assert_eq!(speak_duties(&fleet, "beast").len(), 1);
    let _ = id;
}

#[test]
fn the_note_taker_owes_the_notes_until_it_confirms_them_with_its_epoch() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Should we move the backups to restic?");
    fleet.override_with(id, "yes").unwrap();
    let epoch = fleet.state.roles.epoch;
    assert_eq!(notes_duties(&fleet, "beast"), vec![(id.0, epoch)]);
    assert!(notes_duties(&fleet, "mac").is_empty());
    fleet
        .run(
            as_node("beast"),
            Request::NotesWritten {
                deliberation: id,
                epoch,
            },
        )
        .unwrap();
    assert!(notes_duties(&fleet, "beast").is_empty());
}

#[test]
fn notes_owed_by_a_note_taker_that_went_down_pass_to_the_next_in_its_chain() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Should we move the backups to restic?");
    fleet.override_with(id, "yes").unwrap();
    fleet.healthy(&["5070", "mac"]);
    assert!(notes_duties(&fleet, "beast").is_empty());
    let owed = notes_duties(&fleet, "mac");
    assert_eq!(owed.len(), 1);
    assert_eq!(owed[0].1, fleet.state.roles.epoch);
    // Beast's late confirmation with its old epoch is refused; Mac still owes them.
    let stale = fleet.run(
        as_node("beast"),
        Request::NotesWritten {
            deliberation: id,
            epoch: 1,
        },
    );
    assert!(matches!(stale, Err(RuleViolation::StaleEpoch { .. })));
    assert_eq!(notes_duties(&fleet, "mac").len(), 1);
}

#[test]
fn only_the_primary_owes_deliveries_one_per_sink_until_settled() {
    let mut fleet = TestFleet::new();
    fleet.open("Should we move the backups to restic?");
    let epoch = fleet.state.roles.epoch;
    assert_eq!(
        deliveries(&fleet, "beast"),
        vec![
            (1, "phone".to_string(), epoch),
            (1, "webhook".to_string(), epoch)
        ]
    );
    assert!(deliveries(&fleet, "5070").is_empty());
    let record = |result| Request::RecordDelivery {
        notification: fleet_node::state::outbox::NotificationId(1),
        sink: "phone".into(),
        result,
        epoch,
    };
    // A failure that may pass leaves the duty; a delivery settles it.
    fleet
        .run(
            as_node("beast"),
            record(DeliveryResult::Failed {
                error: "HTTP 503".into(),
                permanent: false,
            }),
        )
        .unwrap();
    assert_eq!(deliveries(&fleet, "beast").len(), 2);
    fleet
        .run(as_node("beast"), record(DeliveryResult::Delivered))
        .unwrap();
    assert_eq!(
        deliveries(&fleet, "beast"),
        vec![(1, "webhook".to_string(), epoch)]
    );
}

#[test]
fn after_failover_the_new_primary_owes_what_was_not_delivered_and_nothing_that_was() {
    let mut fleet = TestFleet::new();
    fleet.open("Should we move the backups to restic?");
    let old_epoch = fleet.state.roles.epoch;
    fleet
        .run(
            as_node("beast"),
            Request::RecordDelivery {
                notification: fleet_node::state::outbox::NotificationId(1),
                sink: "phone".into(),
                result: DeliveryResult::Delivered,
                epoch: old_epoch,
            },
        )
        .unwrap();
    fleet.healthy(&["5070", "mac"]);
    let new_epoch = fleet.state.roles.epoch;
    assert!(new_epoch > old_epoch);
    assert_eq!(
        deliveries(&fleet, "5070"),
        vec![(1, "webhook".to_string(), new_epoch)]
    );
    assert!(deliveries(&fleet, "beast").is_empty());
}

fn report(target: &str) -> DrillReport {
    DrillReport {
        id: 0,
        target: node(target),
        down_ms: 5_000,
        ok: true,
        failover_ms: Some(640),
        failback_ms: Some(10_400),
        new_primary: Some(node("5070")),
        new_note_taker: Some(node("mac")),
        probe_write: true,
        role_changes: 2,
        problems: Vec::new(),
        recorded_at_ms: 0,
    }
}

#[test]
fn a_drill_report_is_recorded_and_announced_to_the_operator() {
    let mut fleet = TestFleet::new();
    let response = fleet
        .run(Actor::Operator, Request::RecordDrill(report("beast")))
        .unwrap();
    let Response::Drill {
        report,
        notification,
    } = response
    else {
        panic!("expected a drill report, got {response:?}");
    };
    assert_eq!(report.id, 1);
    assert_eq!(report.recorded_at_ms, fleet.now);
    assert_eq!(fleet.state.drills, vec![*report]);
    let announced = &fleet.state.outbox.notifications[&notification];
    assert_eq!(announced.idempotency_key, "home:drill-1:completed");
    assert!(announced.title.contains("passed"), "{}", announced.title);
    assert!(announced.text.contains("640 ms"), "{}", announced.text);
    // The primary owes its delivery like any other notification.
    assert!(
        deliveries(&fleet, "beast")
            .iter()
            .any(|(id, _, _)| *id == notification.0)
    );
}

#[test]
fn only_the_operator_records_a_drill_and_only_for_a_member() {
    let mut fleet = TestFleet::new();
    assert!(matches!(
        fleet.run(as_node("mac"), Request::RecordDrill(report("beast"))),
        Err(RuleViolation::Unauthorized { .. })
    ));
    assert!(
        fleet
            .run(Actor::Operator, Request::RecordDrill(report("pi")))
            .is_err()
    );
    assert!(fleet.state.drills.is_empty());
}

#[test]
fn a_probe_commits_and_changes_nothing_but_time() {
    let mut fleet = TestFleet::new();
    let before = fleet.state.clone();
    fleet.now += 5;
    assert_eq!(
        fleet.run(as_node("5070"), Request::Probe).unwrap(),
        Response::Done
    );
    assert_eq!(fleet.state.roles, before.roles);
    assert_eq!(fleet.state.outbox, before.outbox);
    assert_eq!(fleet.state.applied_commands, before.applied_commands + 1);
}

fn relay_duties(fleet: &TestFleet, who: &str) -> Vec<u64> {
    fleet
        .state
        .duties_of(&node(who), &sinks())
        .into_iter()
        .filter_map(|duty| match duty {
            Duty::RelayMessage { message } => Some(message.0),
            _ => None,
        })
        .collect()
}

#[test]
fn the_owner_of_a_session_owes_a_message_until_its_gateway_took_or_refused_it() {
    use fleet_node::state::relay::MessageStatus;
    let mut fleet = TestFleet::new();
    fleet
        .run(
            as_node("5070"),
            Request::PublishSession {
                key: "5070-main".into(),
                agent: None,
                status: "idle".into(),
            },
        )
        .unwrap();
    let send = |fleet: &mut TestFleet, key: &str| match fleet.run(
        as_node("beast"),
        Request::SendMessage {
            to_session: "5070-main".into(),
            body: "hello".into(),
            request_id: key.into(),
        },
    ) {
        Ok(Response::Message { message, .. }) => message.id,
        other => panic!("{other:?}"),
    };
    let first = send(&mut fleet, "m1");
    let second = send(&mut fleet, "m2");
    assert_eq!(relay_duties(&fleet, "5070"), vec![first.0, second.0]);
    assert!(relay_duties(&fleet, "beast").is_empty());
    let report = |status| Request::ReportMessage {
        message: first,
        status,
    };
    // Queued while the gateway is away: still owed, so it is tried again.
    fleet
        .run(
            as_node("5070"),
            report(MessageStatus::Queued {
                reason: "down".into(),
            }),
        )
        .unwrap();
    assert_eq!(relay_duties(&fleet, "5070"), vec![first.0, second.0]);
    // Only the owner reports.
    assert!(matches!(
        fleet.run(as_node("mac"), report(MessageStatus::Delivered)),
        Err(RuleViolation::Unauthorized { .. })
    ));
    fleet
        .run(as_node("5070"), report(MessageStatus::Delivered))
        .unwrap();
    assert_eq!(relay_duties(&fleet, "5070"), vec![second.0]);
}
