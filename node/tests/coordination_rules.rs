//! The agents' shared state (S1–S4) and the state's snapshot format, against the pure
//! state machine with injected time.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use fleet_node::state::artifacts::sha256_hex;
use fleet_node::state::bulletin::Recipient;
use fleet_node::state::event_log::{EventFilter, EventStatus, NewEvent};
use fleet_node::state::limits::BODY_BYTES_MAX;
use fleet_node::state::relay::MessageStatus;
use fleet_node::state::{Actor, Effect, Request, Response, Snapshot};
use support::{MINUTE, TestFleet, as_node, node};

fn publish(fleet: &mut TestFleet, who: &str, key: &str) {
    fleet
        .run(
            as_node(who),
            Request::PublishSession {
                key: key.into(),
                agent: Some("main".into()),
                status: "idle".into(),
            },
        )
        .unwrap();
}

fn request_event(to: &str, body: &str) -> NewEvent {
    NewEvent {
        event_type: "task.request".into(),
        stream: "project/fleet".into(),
        room: "delegation".into(),
        to: to.into(),
        correlation_id: Some("task_fix_ranking_7f3a".into()),
        status: EventStatus::Open,
        body: body.into(),
        request_id: None,
    }
}

/// beast appends a request to mac with `body`.
fn append_request_to_mac(
    fleet: &mut TestFleet,
    body: &str,
) -> Result<Response, fleet_node::state::RuleViolation> {
    fleet.run(
        as_node("beast"),
        Request::AppendEvent(request_event("mac", body)),
    )
}

fn ack(
    fleet: &mut TestFleet,
    actor: Actor,
    event: u64,
    status: EventStatus,
    body: String,
) -> Result<Response, fleet_node::state::RuleViolation> {
    fleet.run(
        actor,
        Request::AckEvent {
            event,
            status,
            body,
        },
    )
}

// ---- S1 sessions and cross-machine send ----

#[test]
fn sessions_of_a_silent_node_expire() {
    let mut fleet = TestFleet::new();
    publish(&mut fleet, "5070", "5070-main");
    publish(&mut fleet, "beast", "beast-main");
    fleet.advance(60_000);
    publish(&mut fleet, "beast", "beast-main");
    fleet.advance(31_000);
    let live: Vec<_> = fleet
        .state
        .sessions
        .live_sessions(fleet.now)
        .map(|s| s.key.clone())
        .collect();
    assert_eq!(
        live,
        ["beast-main"],
        "5070 went silent for more than the 90 s ttl"
    );
}

#[test]
fn a_node_cannot_publish_another_nodes_session() {
    let mut fleet = TestFleet::new();
    publish(&mut fleet, "5070", "5070-main");
    let error = fleet
        .run(
            as_node("mac"),
            Request::PublishSession {
                key: "5070-main".into(),
                agent: None,
                status: "idle".into(),
            },
        )
        .unwrap_err();
    assert_eq!(error.code(), "session_owned_elsewhere");
}

#[test]
fn send_relays_to_the_owning_node_which_reports_delivery() {
    let mut fleet = TestFleet::new();
    publish(&mut fleet, "5070", "5070-main");
    fleet.take_effects();
    let response = fleet
        .run(
            as_node("beast"),
            Request::SendMessage {
                to_session: "5070-main".into(),
                body: "Can you check nginx?".into(),
                request_id: "s-1".into(),
            },
        )
        .unwrap();
    let Response::Message { message, .. } = response else {
        panic!("{response:?}")
    };
    assert!(fleet.take_effects().contains(&Effect::DeliverMessage {
        message: message.id,
        node: node("5070")
    }));
    let error = fleet
        .run(
            as_node("mac"),
            Request::ReportMessage {
                message: message.id,
                status: MessageStatus::Delivered,
            },
        )
        .unwrap_err();
    assert_eq!(error.code(), "unauthorized", "only the owner delivers");
    fleet
        .run(
            as_node("5070"),
            Request::ReportMessage {
                message: message.id,
                status: MessageStatus::Queued {
                    reason: "gateway down".into(),
                },
            },
        )
        .unwrap();
    assert_eq!(fleet.state.relay.inbox(&node("5070")).count(), 1);
    fleet
        .run(
            as_node("5070"),
            Request::ReportMessage {
                message: message.id,
                status: MessageStatus::Delivered,
            },
        )
        .unwrap();
    assert_eq!(fleet.state.relay.inbox(&node("5070")).count(), 0);
}

#[test]
fn send_to_an_unknown_session_names_the_live_ones() {
    let mut fleet = TestFleet::new();
    publish(&mut fleet, "5070", "5070-main");
    let error = fleet
        .run(
            Actor::Operator,
            Request::SendMessage {
                to_session: "mac-main".into(),
                body: "hi".into(),
                request_id: "s-2".into(),
            },
        )
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "no live session `mac-main` (live: 5070-main)"
    );
}

// ---- S2 event log and artifacts ----

#[test]
fn an_ack_is_a_new_event_and_the_request_is_never_changed() {
    let mut fleet = TestFleet::new();
    append_request_to_mac(&mut fleet, "Fix ranking; done = tests pass").unwrap();
    let before = fleet.state.events.get(1).unwrap().clone();
    ack(
        &mut fleet,
        as_node("mac"),
        1,
        EventStatus::Claimed,
        String::new(),
    )
    .unwrap();
    assert_eq!(fleet.state.events.get(1).unwrap(), &before);
    let ack = fleet.state.events.get(2).unwrap();
    assert_eq!(
        (ack.acks, ack.status, ack.from.as_str(), ack.to.as_str()),
        (Some(1), EventStatus::Claimed, "mac", "beast")
    );
    assert_eq!(ack.correlation_id, before.correlation_id);
}

#[test]
fn an_event_repeated_with_its_key_is_stored_once_also_after_a_snapshot() {
    let keyed = |body: &str, key: &str| {
        Request::AppendEvent(NewEvent {
            request_id: Some(key.into()),
            ..request_event("mac", body)
        })
    };
    let appended = |response: Response| match response {
        Response::Event { event, repeated } => (event.id, repeated),
        other => panic!("append answered {other:?}"),
    };
    let mut fleet = TestFleet::new();
    for (who, body, key) in [("beast", "one", "k-1"), ("beast", "two", "k-2")] {
        fleet.run(as_node(who), keyed(body, key)).unwrap();
    }
    // The same key from another author is another event.
    let other = fleet.run(as_node("5070"), keyed("one", "k-1")).unwrap();
    assert_eq!(appended(other), (3, false));

    // The log as a restarted node has it: decoded from a snapshot.
    fleet.state = Snapshot::decode(&Snapshot::encode(&fleet.state)).unwrap();
    let repeat = fleet.run(as_node("beast"), keyed("one", "k-1")).unwrap();
    assert_eq!(appended(repeat), (1, true));
    let conflict = fleet
        .run(as_node("beast"), keyed("changed", "k-2"))
        .unwrap_err();
    assert_eq!(conflict.code(), "idempotency_conflict");
    assert_eq!(fleet.state.events.last_id(), 3, "nothing new was stored");
    let fresh = fleet.run(as_node("beast"), keyed("three", "k-3")).unwrap();
    assert_eq!(appended(fresh), (4, false));
    let again = fleet.run(as_node("beast"), keyed("three", "k-3")).unwrap();
    assert_eq!(appended(again), (4, true));
}

#[test]
fn a_message_sent_again_with_its_key_is_sent_once_also_after_a_snapshot() {
    let send = |body: &str, key: &str| Request::SendMessage {
        to_session: "mac-main".into(),
        body: body.into(),
        request_id: key.into(),
    };
    let sent = |response: Response| match response {
        Response::Message { message, repeated } => (message.id.0, repeated),
        other => panic!("send answered {other:?}"),
    };
    let mut fleet = TestFleet::new();
    publish(&mut fleet, "mac", "mac-main");
    for (body, key) in [("one", "s-1"), ("two", "s-2")] {
        fleet.run(Actor::Operator, send(body, key)).unwrap();
    }
    // The same key from another sender is another message.
    let other = fleet.run(as_node("beast"), send("one", "s-1")).unwrap();
    assert_eq!(sent(other), (3, false));

    // The relay as a restarted node has it: decoded from a snapshot.
    fleet.state = Snapshot::decode(&Snapshot::encode(&fleet.state)).unwrap();
    let repeat = fleet.run(Actor::Operator, send("one", "s-1")).unwrap();
    assert_eq!(sent(repeat), (1, true));
    let conflict = fleet
        .run(Actor::Operator, send("changed", "s-2"))
        .unwrap_err();
    assert_eq!(conflict.code(), "idempotency_conflict");
    assert_eq!(fleet.state.relay.messages.len(), 3, "nothing new was sent");
    let fresh = fleet.run(Actor::Operator, send("three", "s-3")).unwrap();
    assert_eq!(sent(fresh), (4, false));
    let again = fleet.run(Actor::Operator, send("three", "s-3")).unwrap();
    assert_eq!(sent(again), (4, true));
}

#[test]
fn two_nodes_race_to_claim_one_request_and_exactly_one_wins() {
    let mut fleet = TestFleet::new();
    fleet
        .run(
            as_node("beast"),
            Request::AppendEvent(request_event("*", "anyone")),
        )
        .unwrap();
    ack(
        &mut fleet,
        as_node("mac"),
        1,
        EventStatus::Claimed,
        String::new(),
    )
    .unwrap();
    let error = ack(
        &mut fleet,
        as_node("5070"),
        1,
        EventStatus::Claimed,
        String::new(),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "event 1 is already claimed by mac (ack event 2)"
    );
    let again = ack(
        &mut fleet,
        as_node("mac"),
        1,
        EventStatus::Claimed,
        String::new(),
    )
    .unwrap();
    assert!(
        matches!(again, Response::Event { repeated: true, .. }),
        "the holder's retry is idempotent"
    );
    ack(
        &mut fleet,
        as_node("mac"),
        1,
        EventStatus::Applied,
        "merged".into(),
    )
    .unwrap();
    assert_eq!(fleet.state.events.last_id(), 3);
}

#[test]
fn events_are_read_from_a_cursor_with_filters_and_broadcasts() {
    let mut fleet = TestFleet::new();
    append_request_to_mac(&mut fleet, "one").unwrap();
    fleet
        .run(
            as_node("beast"),
            Request::AppendEvent(request_event("5070", "two")),
        )
        .unwrap();
    fleet
        .run(
            as_node("beast"),
            Request::AppendEvent(request_event("*", "three")),
        )
        .unwrap();
    let filter = EventFilter {
        to: Some("mac".into()),
        ..EventFilter::default()
    };
    let bodies: Vec<_> = fleet
        .state
        .events
        .since(0, &filter, 10)
        .map(|e| e.body.as_str())
        .collect();
    assert_eq!(bodies, ["one", "three"]);
    let after_first: Vec<_> = fleet
        .state
        .events
        .since(1, &filter, 10)
        .map(|e| e.id)
        .collect();
    assert_eq!(after_first, [3]);
}

#[test]
fn an_oversized_body_is_refused_with_the_limit_named_and_nothing_stored() {
    let mut fleet = TestFleet::new();
    let error = append_request_to_mac(&mut fleet, &"x".repeat(BODY_BYTES_MAX + 1)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "body is 262145 bytes, over the limit of 262144 bytes; nothing was stored"
    );
    assert_eq!(fleet.state.events.last_id(), 0);
}

#[test]
fn an_artifact_with_a_wrong_hash_is_refused() {
    let mut fleet = TestFleet::new();
    let content = b"--- a/src/rank.rs\n+++ b/src/rank.rs\n".to_vec();
    let put = |sha256: String| Request::PutArtifact {
        sha256,
        media_type: "text/x-diff".into(),
        metadata: BTreeMap::from([("correlation_id".into(), "task_fix_ranking_7f3a".into())]),
        content: content.clone(),
    };
    let error = fleet
        .run(as_node("mac"), put(sha256_hex(b"other")))
        .unwrap_err();
    assert_eq!(error.code(), "artifact_hash_mismatch");
    let sha = sha256_hex(&content);
    fleet.run(as_node("mac"), put(sha.clone())).unwrap();
    assert_eq!(fleet.state.artifacts.get(&sha).unwrap().content, content);
}

#[test]
fn the_author_of_an_event_is_the_authenticated_actor() {
    let mut fleet = TestFleet::new();
    fleet
        .run(
            as_node("mac"),
            Request::AppendEvent(request_event("beast", "from mac")),
        )
        .unwrap();
    fleet
        .run(
            Actor::Operator,
            Request::AppendEvent(request_event("beast", "from the operator")),
        )
        .unwrap();
    let authors: Vec<_> = fleet
        .state
        .events
        .events()
        .iter()
        .map(|e| e.from.as_str())
        .collect();
    assert_eq!(authors, ["mac", "operator"]);
}

// ---- S3 bulletin board ----

#[test]
fn unacknowledged_items_are_flagged_stale_after_48_hours() {
    let mut fleet = TestFleet::new();
    let post = |to: &str| Request::PostBulletin {
        to: Recipient::parse(to).unwrap(),
        subject: "Cloudflare billing renewal April 15".into(),
        body: "May need a payment method update.".into(),
    };
    fleet.run(as_node("mac"), post("beast")).unwrap();
    fleet.run(as_node("mac"), post("all")).unwrap();
    let item = fleet.state.bulletin.items["b-1"].clone();
    assert_eq!(
        item.heading(),
        "[mac → beast] Cloudflare billing renewal April 15"
    );
    let members = fleet.state.settings.as_ref().unwrap().hierarchy.clone();
    fleet.advance(48 * 60 * MINUTE - 1);
    assert!(!item.is_stale(&members, fleet.now, 48 * 60 * MINUTE));
    fleet.advance(1);
    assert!(item.is_stale(&members, fleet.now, 48 * 60 * MINUTE));

    let error = fleet
        .run(as_node("5070"), Request::AckBulletin { id: "b-1".into() })
        .unwrap_err();
    assert_eq!(error.code(), "not_a_bulletin_target");
    fleet
        .run(as_node("beast"), Request::AckBulletin { id: "b-1".into() })
        .unwrap();
    assert!(!fleet.state.bulletin.items["b-1"].is_stale(&members, fleet.now, 48 * 60 * MINUTE));

    for who in ["beast", "5070"] {
        fleet
            .run(as_node(who), Request::AckBulletin { id: "b-2".into() })
            .unwrap();
    }
    assert!(
        fleet.state.bulletin.items["b-2"].is_stale(&members, fleet.now, 48 * 60 * MINUTE),
        "mac has not acked"
    );
    let archived = fleet
        .run(
            Actor::Operator,
            Request::ArchiveBulletin {
                before_ms: fleet.now,
            },
        )
        .unwrap();
    assert_eq!(archived, Response::Archived { count: 2 });
}

// ---- S4 capabilities and routing ----

#[test]
fn published_capabilities_route_questions_no_specialty_covers() {
    let mut fleet = TestFleet::new();
    let manifest = "## I Can Do\n- Cloudflare Pages deployment\n## I've Learned\n- wacli quirks\n## I Need From Others\n- builds\n";
    fleet
        .run(
            as_node("mac"),
            Request::PublishCapabilities {
                markdown: manifest.into(),
            },
        )
        .unwrap();
    let route = fleet
        .state
        .route(
            "Who can handle the Cloudflare deployment of the blog?",
            false,
        )
        .unwrap();
    assert_eq!(route.responder, Some(node("mac")), "{}", route.reason);
    assert!(
        route.reason.contains("Cloudflare Pages deployment"),
        "{}",
        route.reason
    );
}

#[test]
fn a_three_letter_domain_word_routes_but_a_common_one_does_not() {
    let mut fleet = TestFleet::new();
    let manifest =
        "## I Can Do\n- GPU inference\n## I've Learned\n- CUDA\n## I Need From Others\n- disk\n";
    fleet
        .run(
            as_node("mac"),
            Request::PublishCapabilities {
                markdown: manifest.into(),
            },
        )
        .unwrap();
    let route = fleet
        .state
        .route("Who should look at the GPU fans?", false)
        .unwrap();
    assert_eq!(route.responder, Some(node("mac")), "{}", route.reason);
    // `who`, `the`, `any`: words every question has route nowhere.
    let route = fleet
        .state
        .route("Who has any idea about the weather?", false)
        .unwrap();
    assert_ne!(route.responder, Some(node("mac")), "{}", route.reason);
}

#[test]
fn a_cross_domain_question_deliberates_if_positions_conflict() {
    let fleet = TestFleet::new();
    let route = fleet
        .state
        .route("Tune the linux services on the macos laptop?", false)
        .unwrap();
    assert!(route.needs_deliberation, "{}", route.reason);
    assert!(route.reason.contains("cross-domain"), "{}", route.reason);
}

// ---- Snapshots ----

#[test]
fn a_snapshot_round_trips_the_whole_state_and_refuses_other_versions() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Snapshot me");
    fleet.submit("beast", id, "yes").unwrap();
    publish(&mut fleet, "5070", "5070-main");
    append_request_to_mac(&mut fleet, "one").unwrap();
    let bytes = Snapshot::encode(&fleet.state);
    assert_eq!(Snapshot::decode(&bytes).unwrap(), fleet.state);

    let text = String::from_utf8(bytes).unwrap().replacen(
        "\"format_version\":1",
        "\"format_version\":99",
        1,
    );
    let error = Snapshot::decode(text.as_bytes()).unwrap_err();
    assert_eq!(error.code(), "unsupported_snapshot_version");
    assert_eq!(
        Snapshot::decode(b"{not json").unwrap_err().code(),
        "corrupt_snapshot"
    );
}

#[test]
fn a_copy_of_the_state_shares_its_events_and_artifacts_and_encodes_the_same() {
    let mut fleet = TestFleet::new();
    for body in ["one", "two"] {
        append_request_to_mac(&mut fleet, body).unwrap();
    }
    let content = b"--- a/src/rank.rs\n+++ b/src/rank.rs\n".to_vec();
    let sha = sha256_hex(&content);
    fleet
        .run(
            as_node("mac"),
            Request::PutArtifact {
                sha256: sha.clone(),
                media_type: "text/x-diff".into(),
                metadata: BTreeMap::new(),
                content,
            },
        )
        .unwrap();
    let copy = fleet.state.clone();
    assert!(
        Arc::ptr_eq(
            &fleet.state.artifacts.artifacts[&sha],
            &copy.artifacts.artifacts[&sha]
        ),
        "a copy of the state copied an artifact's content"
    );
    let (events, copied) = (fleet.state.events.events(), copy.events.events());
    assert_eq!(events.len(), 2);
    assert!(
        events
            .iter()
            .zip(copied)
            .all(|(event, copy)| Arc::ptr_eq(event, copy)),
        "a copy of the state (as a snapshot takes) copied the events themselves"
    );
    // An event is encoded as itself, as before events were shared.
    let bytes = Snapshot::encode(&copy);
    let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(json["state"]["events"]["events"][1]["body"], "two");
    assert_eq!(Snapshot::decode(&bytes).unwrap(), fleet.state);
}

#[test]
fn a_snapshot_encoded_into_a_buffer_with_room_is_written_once_and_is_the_same_bytes() {
    let mut fleet = TestFleet::new();
    append_request_to_mac(&mut fleet, "one").unwrap();
    let bytes = Snapshot::encode(&fleet.state);
    let room = 2 * bytes.len();
    let presized = Snapshot::encode_with_capacity(&fleet.state, room);
    assert_eq!(presized, bytes);
    assert_eq!(
        presized.capacity(),
        room,
        "the buffer was made again while the snapshot was encoded"
    );
}
