//! One readable test per rule of the deliberation protocol (seed 002) and of SPEC
//! R1–R3 and D1–D9, against the pure state machine with injected time.

mod support;

use fleet_node::state::deliberation::Phase;
use fleet_node::state::outbox::{DeliveryResult, NotificationKind};
use fleet_node::state::router::Advice;
use fleet_node::state::{Actor, DecidedBy, Effect, Request, Response, Submission, Tier};
use support::{MINUTE, START_MS, TestFleet, as_node, node};

// ---- Deliberation structure: round 1, round 2, decision ----

#[test]
fn round_one_records_each_position_with_confidence_and_concerns() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Should we migrate to Azure or AWS for email security?");
    let mut submission = fleet.submission("AWS");
    submission.confidence = "medium".parse().unwrap();
    submission.concerns = vec!["SES reputation warm-up".into()];
    fleet
        .run(
            as_node("5070"),
            Request::Submit {
                deliberation: id,
                submission,
            },
        )
        .unwrap();
    let input = &fleet.deliberation(id).inputs[0];
    assert_eq!(
        (input.node.as_str(), input.phase, input.stance.as_str()),
        ("5070", Phase::Positions, "AWS")
    );
    assert_eq!(input.confidence.to_string(), "Medium");
    assert_eq!(input.concerns, ["SES reputation warm-up"]);
}

#[test]
fn a_round_ends_early_when_every_participant_has_spoken() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Adopt a shared backup schedule for all machines?");
    for who in ["beast", "5070"] {
        fleet.submit(who, id, "yes").unwrap();
    }
    assert_eq!(
        fleet.deliberation(id).phase,
        Phase::Positions,
        "mac has not spoken yet"
    );
    fleet.submit("mac", id, "no").unwrap();
    let deliberation = fleet.deliberation(id);
    assert_eq!(deliberation.phase, Phase::Synthesis);
    assert_eq!(
        deliberation.phase_started_ms, START_MS,
        "round 2 starts at once, not at the deadline"
    );
    assert_eq!(deliberation.phase_deadline_ms, START_MS + MINUTE);
}

#[test]
fn a_round_ends_at_its_deadline_and_the_silent_bot_abstains() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Rotate the fleet's SSH keys this week?");
    fleet.submit("beast", id, "yes").unwrap();
    fleet.submit("5070", id, "yes").unwrap();
    fleet.advance(MINUTE - 1);
    assert_eq!(fleet.deliberation(id).phase, Phase::Positions);
    fleet.advance(1);
    let deliberation = fleet.deliberation(id);
    assert_eq!(deliberation.phase, Phase::Synthesis);
    assert_eq!(deliberation.abstentions.len(), 1);
    assert_eq!(deliberation.abstentions[0].node, node("mac"));
    assert_eq!(deliberation.abstentions[0].phase, Phase::Positions);
}

#[test]
fn each_phase_lasts_at_most_one_minute_and_three_minutes_in_all() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Nobody answers this one");
    assert_eq!(
        fleet.deliberation(id).hard_deadline_ms(),
        START_MS + 3 * MINUTE
    );
    fleet.advance(3 * MINUTE);
    let outcome = fleet
        .deliberation(id)
        .outcome
        .clone()
        .expect("decided at the 3-minute mark");
    assert!(outcome.decided_at_ms <= START_MS + 3 * MINUTE);

    let open = fleet.apply(
        Actor::Operator,
        Request::OpenDeliberation(fleet_node::state::OpenDeliberation {
            topic: "too slow".into(),
            tier: None,
            options: vec![],
            participants: None,
            phase_ms: Some(90_000),
            urgent: false,
            request_id: "slow".into(),
        }),
    );
    let error = open.result.unwrap_err().to_string();
    assert!(
        error.contains("round duration") && error.contains("at most one minute"),
        "{error}"
    );
}

#[test]
fn a_deliberation_where_nobody_speaks_lapses_without_a_decision() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Silence");
    fleet.advance(2 * MINUTE);
    let outcome = fleet.deliberation(id).outcome.clone().unwrap();
    assert_eq!(outcome.decided_by, DecidedBy::Lapsed);
    assert_eq!(outcome.decision, None);
}

// ---- Decision: consensus, else hierarchy ----

#[test]
fn consensus_when_every_final_position_agrees() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Patch OpenSSL on every machine tonight?");
    for who in ["beast", "5070", "mac"] {
        fleet.submit(who, id, "Patch tonight").unwrap();
    }
    for who in ["beast", "5070", "mac"] {
        fleet.submit(who, id, "patch tonight.").unwrap();
    }
    let outcome = fleet
        .deliberation(id)
        .outcome
        .clone()
        .expect("decided once all agree");
    assert_eq!(outcome.decided_by, DecidedBy::Consensus);
    assert_eq!(outcome.decision.as_deref(), Some("patch tonight."));
    assert_eq!(outcome.decision_maker, "consensus");
}

#[test]
fn without_consensus_the_highest_ranked_participant_decides() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Which cloud for email security?");
    for (who, stance) in [("beast", "Azure"), ("5070", "AWS"), ("mac", "AWS")] {
        fleet.submit(who, id, stance).unwrap();
    }
    for (who, stance) in [("beast", "Azure"), ("5070", "AWS"), ("mac", "AWS")] {
        fleet.submit(who, id, stance).unwrap();
    }
    assert_eq!(
        fleet.deliberation(id).phase,
        Phase::Decision,
        "disagreement goes to the decision phase"
    );
    fleet.advance(MINUTE);
    let outcome = fleet.deliberation(id).outcome.clone().unwrap();
    assert_eq!(outcome.decided_by, DecidedBy::Hierarchy(node("beast")));
    assert_eq!(outcome.decision.as_deref(), Some("Azure"));
    assert_eq!(outcome.decision_maker, "beast hierarchy");
    assert_eq!(outcome.decided_by.to_string(), "hierarchy:beast");
}

#[test]
fn with_beast_down_5070_decides() {
    let mut fleet = TestFleet::new();
    fleet.healthy(&["5070", "mac"]);
    let id = fleet.open("Which cloud for email security?");
    assert_eq!(
        fleet.deliberation(id).participants,
        [node("5070"), node("mac")]
    );
    fleet.submit("5070", id, "AWS").unwrap();
    fleet.submit("mac", id, "Azure").unwrap();
    fleet.advance(3 * MINUTE);
    let outcome = fleet.deliberation(id).outcome.clone().unwrap();
    assert_eq!(outcome.decided_by, DecidedBy::Hierarchy(node("5070")));
    assert_eq!(outcome.decision.as_deref(), Some("AWS"));
}

#[test]
fn participants_may_still_converge_in_the_decision_phase() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Adopt Terraform for home infra?");
    for (who, stance) in [("beast", "yes"), ("5070", "no"), ("mac", "yes")] {
        fleet.submit(who, id, stance).unwrap();
    }
    for (who, stance) in [("beast", "yes"), ("5070", "no"), ("mac", "yes")] {
        fleet.submit(who, id, stance).unwrap();
    }
    assert_eq!(fleet.deliberation(id).phase, Phase::Decision);
    fleet.submit("5070", id, "yes").unwrap();
    let outcome = fleet
        .deliberation(id)
        .outcome
        .clone()
        .expect("convergence decides at once");
    assert_eq!(outcome.decided_by, DecidedBy::Consensus);
}

// ---- Limits ----

#[test]
fn a_fourth_input_is_refused_with_the_limit_named() {
    let mut fleet = TestFleet::with_settings(|s| s.phase_ms = 60_000);
    let id = fleet.open("Three inputs only");
    for _ in 0..3 {
        fleet.submit("mac", id, "maybe").unwrap();
    }
    let error = fleet.submit("mac", id, "maybe").unwrap_err();
    assert_eq!(error.code(), "input_limit");
    assert_eq!(
        error.to_string(),
        format!("mac has already given 3 inputs to deliberation {id} (limit 3)")
    );
    assert_eq!(fleet.deliberation(id).inputs_of(&node("mac")), 3);
}

#[test]
fn a_third_round_of_back_and_forth_is_refused() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Two rounds only");
    let mut submission = fleet.submission("yes");
    submission.round = Some(3);
    let error = fleet
        .run(
            as_node("beast"),
            Request::Submit {
                deliberation: id,
                submission,
            },
        )
        .unwrap_err();
    assert_eq!(error.code(), "round_limit");
    assert!(error.to_string().contains("at most 2 rounds"), "{error}");

    let mut early = fleet.submission("yes");
    early.round = Some(2);
    let error = fleet
        .run(
            as_node("beast"),
            Request::Submit {
                deliberation: id,
                submission: early,
            },
        )
        .unwrap_err();
    assert_eq!(error.code(), "wrong_round");
}

#[test]
fn only_participants_give_input_and_only_as_themselves() {
    let mut fleet = TestFleet::new();
    let id = fleet.open_with("Beast and 5070 only", |o| {
        o.participants = Some(vec![node("beast"), node("5070")])
    });
    let error = fleet.submit("mac", id, "yes").unwrap_err();
    assert_eq!(error.code(), "not_a_participant");
    let submission = fleet.submission("yes");
    let error = fleet
        .run(
            Actor::Operator,
            Request::Submit {
                deliberation: id,
                submission,
            },
        )
        .unwrap_err();
    assert_eq!(error.code(), "unauthorized");
}

#[test]
fn a_stance_must_be_one_of_the_options() {
    let mut fleet = TestFleet::new();
    let id = fleet.open_with("Azure or AWS?", |o| {
        o.options = vec!["Azure".into(), "AWS".into()]
    });
    let error = fleet.submit("beast", id, "GCP").unwrap_err();
    assert_eq!(error.code(), "unknown_option");
    fleet.submit("beast", id, "aws").unwrap();
    assert_eq!(
        fleet.deliberation(id).inputs[0].stance,
        "AWS",
        "canonical spelling"
    );
}

#[test]
fn a_decided_deliberation_takes_no_more_input() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Done soon");
    fleet.override_with(id, "stop").unwrap();
    let error = fleet.submit("beast", id, "go").unwrap_err();
    assert_eq!(error.code(), "deliberation_closed");
    assert!(error.to_string().contains("override"), "{error}");
}

// ---- Emergency bypass and operator override (D5) ----

#[test]
fn operator_override_ends_the_deliberation_at_once() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Reboot the NAS?");
    fleet.submit("beast", id, "no").unwrap();
    fleet
        .run(
            Actor::Operator,
            Request::Override {
                deliberation: id,
                decision: "Reboot it now".into(),
                reason: "I am at the console".into(),
            },
        )
        .unwrap();
    let outcome = fleet.deliberation(id).outcome.clone().unwrap();
    assert_eq!(outcome.decided_by, DecidedBy::Override);
    assert_eq!(outcome.decision.as_deref(), Some("Reboot it now"));
    assert_eq!(outcome.decided_at_ms, START_MS);
}

#[test]
fn only_the_operator_may_override() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Reboot the NAS?");
    let error = fleet
        .run(
            as_node("beast"),
            Request::Override {
                deliberation: id,
                decision: "x".into(),
                reason: String::new(),
            },
        )
        .unwrap_err();
    assert_eq!(error.code(), "unauthorized");
    assert!(fleet.deliberation(id).is_open());
}

#[test]
fn a_time_sensitive_question_skips_deliberation_and_the_responder_answers() {
    let mut fleet = TestFleet::new();
    let response = fleet
        .run(
            Actor::Operator,
            Request::OpenDeliberation(fleet_node::state::OpenDeliberation {
                topic: "nginx on linux is failing, restart the services?".into(),
                tier: None,
                options: vec![],
                participants: None,
                phase_ms: None,
                urgent: true,
                request_id: "urgent-1".into(),
            }),
        )
        .unwrap();
    let Response::Bypassed { route } = response else {
        panic!("expected a bypass, got {response:?}")
    };
    assert_eq!(route.advice, Advice::EmergencyBypass);
    assert_eq!(route.responder, Some(node("5070")));
    assert!(fleet.state.deliberations.is_empty());
}

#[test]
fn a_simple_specialty_question_needs_no_deliberation() {
    let fleet = TestFleet::new();
    let route = fleet
        .state
        .route("How do I restart a service on Linux?", false)
        .unwrap();
    assert_eq!(route.responder, Some(node("5070")), "{}", route.reason);
    assert!(!route.needs_deliberation, "{}", route.reason);
}

// ---- Tiers (D6) ----

#[test]
fn tier_one_questions_always_deliberate() {
    let fleet = TestFleet::new();
    let route = fleet
        .state
        .route(
            "Should we migrate to Azure or AWS for email security?",
            false,
        )
        .unwrap();
    assert_eq!(route.tier, Tier::One);
    assert_eq!(route.advice, Advice::Deliberate);
    assert_eq!(
        route.responder,
        Some(node("beast")),
        "security is Beast's specialty: {}",
        route.reason
    );
}

#[test]
fn tier_two_stops_after_round_one_when_positions_agree() {
    let mut fleet = TestFleet::new();
    let id = fleet.open_with("Which approach for the cache layer?", |o| {
        o.tier = Some(Tier::Two)
    });
    for who in ["beast", "5070", "mac"] {
        fleet.submit(who, id, "write-through").unwrap();
    }
    let outcome = fleet
        .deliberation(id)
        .outcome
        .clone()
        .expect("no conflict, no round 2");
    assert_eq!(outcome.decided_by, DecidedBy::Consensus);
}

#[test]
fn tier_two_goes_on_to_round_two_when_positions_conflict() {
    let mut fleet = TestFleet::new();
    let id = fleet.open_with("Which approach for the cache layer?", |o| {
        o.tier = Some(Tier::Two)
    });
    for (who, stance) in [
        ("beast", "write-through"),
        ("5070", "write-back"),
        ("mac", "write-through"),
    ] {
        fleet.submit(who, id, stance).unwrap();
    }
    assert_eq!(fleet.deliberation(id).phase, Phase::Synthesis);
}

// ---- Output and no loops (D9) ----

#[test]
fn one_open_deliberation_per_topic_and_a_second_opener_joins_it() {
    let mut fleet = TestFleet::new();
    let first = fleet.open("Upgrade the router firmware?");
    let second = fleet.open("  upgrade the ROUTER firmware ");
    assert_eq!(first, second);
    assert_eq!(fleet.state.deliberations.len(), 1);
}

#[test]
fn start_and_submit_are_idempotent() {
    let mut fleet = TestFleet::new();
    let open = |request_id: &str| {
        Request::OpenDeliberation(fleet_node::state::OpenDeliberation {
            topic: "Idempotent?".into(),
            tier: Some(Tier::One),
            options: vec![],
            participants: None,
            phase_ms: None,
            urgent: false,
            request_id: request_id.into(),
        })
    };
    fleet.run(Actor::Operator, open("same-key")).unwrap();
    let again = fleet.run(Actor::Operator, open("same-key")).unwrap();
    assert!(matches!(
        again,
        Response::Deliberation { repeated: true, .. }
    ));
    let id = fleet.state.deliberations.keys().next().copied().unwrap();

    let submission = Submission {
        round: None,
        stance: "yes".into(),
        confidence: "high".parse().unwrap(),
        summary: "Yes.".into(),
        concerns: vec![],
        request_id: "mac-1".into(),
    };
    for _ in 0..5 {
        fleet
            .run(
                as_node("mac"),
                Request::Submit {
                    deliberation: id,
                    submission: submission.clone(),
                },
            )
            .unwrap();
    }
    assert_eq!(
        fleet.deliberation(id).inputs_of(&node("mac")),
        1,
        "a retry is not a new input"
    );
}

#[test]
fn the_decision_names_the_specialist_as_responder() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Harden the linux services on 5070 with systemd sandboxing?");
    assert_eq!(fleet.deliberation(id).specialist, Some(node("5070")));
    fleet.override_with(id, "yes").unwrap();
    assert_eq!(
        fleet.deliberation(id).outcome.as_ref().unwrap().responder,
        Some(node("5070"))
    );
}

// ---- Notes (D7) ----

#[test]
fn the_note_taker_is_asked_to_write_the_notes_at_the_seed_path() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Which cloud for email security?");
    fleet.take_effects();
    fleet.override_with(id, "Azure").unwrap();
    let write = fleet
        .take_effects()
        .into_iter()
        .find_map(|e| match e {
            Effect::WriteNotes {
                note_taker,
                path,
                epoch,
                ..
            } => Some((note_taker, path, epoch)),
            _ => None,
        })
        .expect("notes are assigned on decision");
    assert_eq!(write.0, node("beast"));
    assert_eq!(write.1, "memory/deliberation-2026-03-25-1405.md");
    let notes = fleet.deliberation(id).notes.markdown.clone().unwrap();
    for part in [
        "Which cloud for email security?",
        "Participants: beast, 5070, mac",
        "Decision: Azure",
        "operator override",
        "## Reasoning",
    ] {
        assert!(notes.contains(part), "notes lack `{part}`:\n{notes}");
    }
    fleet
        .run(
            as_node("beast"),
            Request::NotesWritten {
                deliberation: id,
                epoch: write.2,
            },
        )
        .unwrap();
    assert_eq!(fleet.deliberation(id).notes.written_by, Some(node("beast")));
}

#[test]
fn with_beast_down_mac_takes_the_notes() {
    let mut fleet = TestFleet::new();
    fleet.healthy(&["5070", "mac"]);
    let id = fleet.open("Notes without Beast");
    fleet.override_with(id, "ok").unwrap();
    assert_eq!(
        fleet
            .deliberation(id)
            .notes
            .assigned
            .as_ref()
            .map(|a| a.0.clone()),
        Some(node("mac"))
    );
}

#[test]
fn notes_not_written_before_the_note_taker_died_go_to_the_next_in_its_chain() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Notes survive a failover");
    fleet.override_with(id, "ok").unwrap();
    let beast_epoch = fleet.deliberation(id).notes.assigned.clone().unwrap().1;
    fleet.healthy(&["5070", "mac"]);
    let (assignee, epoch) = fleet.deliberation(id).notes.assigned.clone().unwrap();
    assert_eq!(assignee, node("mac"));
    // Beast wakes up with its old assignment: refused, so only one notes file is confirmed.
    let error = fleet
        .run(
            as_node("beast"),
            Request::NotesWritten {
                deliberation: id,
                epoch: beast_epoch,
            },
        )
        .unwrap_err();
    assert_eq!(error.code(), "stale_epoch");
    fleet
        .run(
            as_node("mac"),
            Request::NotesWritten {
                deliberation: id,
                epoch,
            },
        )
        .unwrap();
    assert_eq!(fleet.deliberation(id).notes.written_by, Some(node("mac")));
}

#[test]
fn two_deliberations_in_one_minute_get_two_notes_files() {
    let mut fleet = TestFleet::new();
    let a = fleet.open("first");
    let b = fleet.open("second");
    assert_ne!(
        fleet.deliberation(a).notes.path,
        fleet.deliberation(b).notes.path
    );
}

// ---- Notifications (D8) ----

#[test]
fn start_and_decision_notifications_follow_the_seed_templates() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Rotate the Wi-Fi password?");
    fleet.override_with(id, "Rotate monthly").unwrap();
    let notifications: Vec<_> = fleet.state.outbox.notifications.values().collect();
    assert_eq!(notifications.len(), 2);
    assert_eq!(notifications[0].kind, NotificationKind::DeliberationStarted);
    assert_eq!(
        notifications[0].text,
        "Fleet deliberation initiated: Rotate the Wi-Fi password?\nParticipants: beast, 5070, mac\nNote taker: beast\nExpected duration: 3 minutes max"
    );
    assert_eq!(
        notifications[0].idempotency_key,
        format!("home:{id}:started")
    );
    assert_eq!(notifications[1].kind, NotificationKind::DeliberationDecided);
    assert!(notifications[1].text.starts_with(
        "Fleet decision reached: Rotate monthly\nDecision maker: operator override\nNote taker: beast\nNotes: memory/deliberation-2026-03-25-1405.md"
    ), "{}", notifications[1].text);
}

#[test]
fn only_the_current_primary_records_deliveries_and_a_delivery_is_final() {
    let mut fleet = TestFleet::new();
    fleet.open("Announce me");
    let notification = *fleet.state.outbox.notifications.keys().next().unwrap();
    let beast_epoch = fleet.state.roles.epoch;
    let record = |result: DeliveryResult, epoch: u64| Request::RecordDelivery {
        notification,
        sink: "ntfy".into(),
        result,
        epoch,
    };
    fleet
        .run(
            as_node("beast"),
            record(DeliveryResult::Delivered, beast_epoch),
        )
        .unwrap();
    fleet.healthy(&["5070", "mac"]);
    let error = fleet
        .run(
            as_node("beast"),
            record(DeliveryResult::Delivered, beast_epoch),
        )
        .unwrap_err();
    assert_eq!(error.code(), "stale_epoch", "a deposed primary cannot act");
    let epoch = fleet.state.roles.epoch;
    fleet
        .run(
            as_node("5070"),
            record(
                DeliveryResult::Failed {
                    error: "late timeout".into(),
                    permanent: false,
                },
                epoch,
            ),
        )
        .unwrap();
    let delivery = &fleet.state.outbox.notifications[&notification].deliveries["ntfy"];
    assert!(
        delivery.delivered_at_ms.is_some(),
        "a late failure does not undo a delivery"
    );
}

// ---- Time survives failover (D4) ----

#[test]
fn phases_that_expired_without_a_leader_end_at_their_deadlines() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Deadlines are replicated");
    fleet.submit("beast", id, "yes").unwrap();
    // No tick for 5 minutes (the leader died); the next command catches up.
    fleet.now += 5 * MINUTE;
    fleet.healthy(&["5070", "mac"]);
    let outcome = fleet
        .deliberation(id)
        .outcome
        .clone()
        .expect("decided by the catch-up");
    assert_eq!(
        outcome.decided_at_ms,
        START_MS + 2 * MINUTE,
        "synthesis ended with beast's position unchanged"
    );
    assert_eq!(outcome.decided_by, DecidedBy::Hierarchy(node("beast")));
}

#[test]
fn a_participant_that_goes_down_is_not_waited_for() {
    let mut fleet = TestFleet::new();
    let id = fleet.open("Do not wait for the dead");
    fleet.submit("beast", id, "yes").unwrap();
    fleet.submit("5070", id, "yes").unwrap();
    fleet.healthy(&["beast", "5070"]);
    assert_eq!(
        fleet.deliberation(id).phase,
        Phase::Synthesis,
        "mac is down; round 1 ends"
    );
}

// ---- Roles (R1, R2) ----

#[test]
fn roles_follow_the_hierarchy_and_the_note_chain() {
    let mut fleet = TestFleet::new();
    assert_eq!(fleet.state.roles.primary(), Some(&node("beast")));
    fleet.healthy(&["5070", "mac"]);
    assert_eq!(fleet.state.roles.primary(), Some(&node("5070")));
    assert_eq!(fleet.state.roles.note_taker(), Some(&node("mac")));
    assert!(
        fleet
            .take_effects()
            .contains(&Effect::TransferLeadership { to: node("5070") })
    );
    fleet.healthy(&["beast", "5070", "mac"]);
    assert_eq!(fleet.state.roles.primary(), Some(&node("beast")));
    assert_eq!(fleet.state.roles.note_taker(), Some(&node("beast")));
}

#[test]
fn failback_waits_for_the_hold_and_the_driver_is_told_when() {
    let mut fleet = TestFleet::with_settings(|s| s.failback_hold_ms = 10_000);
    fleet.healthy(&["5070", "mac"]);
    fleet.healthy(&["beast", "5070", "mac"]);
    assert_eq!(fleet.state.roles.primary(), Some(&node("5070")));
    assert_eq!(fleet.state.next_deadline_ms(), Some(fleet.now + 10_000));
    fleet.advance(10_000);
    assert_eq!(fleet.state.roles.primary(), Some(&node("beast")));
}

#[test]
fn only_the_leader_reports_health_and_ticks() {
    let mut fleet = TestFleet::new();
    for actor in [Actor::Operator, as_node("mac")] {
        let error = fleet.run(actor.clone(), Request::Tick).unwrap_err();
        assert_eq!(error.code(), "unauthorized", "{actor}");
    }
}
