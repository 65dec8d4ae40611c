//! `FleetState`: the replicated state machine of the fleet — pure, deterministic, and
//! the one place where the protocol's rules are enforced.
//!
//! `apply` takes a [`Command`] (which carries the leader's timestamp and the
//! authenticated actor) and returns [`Applied`]: the result for the caller and the
//! [`Effect`]s for the runtime. Before the request itself, every command first moves
//! time on to its timestamp — expired phases end, due failbacks happen, sessions expire
//! — so no phase ever outlives its deadline by more than one command. A refused request
//! leaves the state as it was (time having moved on aside), and every refusal is a
//! [`RuleViolation`] that names the rule.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::actor::Actor;
use super::artifacts::ArtifactStore;
use super::bulletin::BulletinBoard;
use super::capabilities::CapabilityManifest;
use super::command::{Command, OpenDeliberation, Request};
use super::deliberation::{Deliberation, DeliberationId, NotesRecord, Phase, Progress, stance_key};
use super::drill_report::{DRILL_REPORTS_KEPT, DrillReport};
use super::effect::Effect;
use super::error::RuleViolation;
use super::event_log::EventLog;
use super::limits::{
    NAME_BYTES_MAX, NODES_MAX, OPEN_DELIBERATIONS_MAX, OPTIONS_MAX, PARTICIPANTS_MAX, PHASE_MS_MAX,
    PHASE_MS_MIN, STANCE_BYTES_MAX, TOPIC_BYTES_MAX, check_text,
};
use super::node_name::NodeName;
use super::notes::Notes;
use super::outbox::{NotificationKind, Outbox};
use super::relay::MessageRelay;
use super::response::Response;
use super::roles::{Role, RoleChange, Roles};
use super::router::{Route, Router};
use super::scan_mark::first_undone;
use super::sessions::SessionDirectory;
use super::settings::{FleetSettings, check_specialties};
use super::tier::Tier;

/// The result of applying one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// What the caller gets: a response, or the rule the request broke.
    pub result: Result<Response, RuleViolation>,
    /// What the runtime must do, whatever the result (time may have moved on).
    pub effects: Vec<Effect>,
}

/// The whole replicated state of a fleet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetState {
    /// `None` until the fleet is bootstrapped. Shared, so that a command reads them
    /// beside the parts it changes without copying them; a change copies them once.
    pub settings: Option<Arc<FleetSettings>>,
    /// The latest leader timestamp applied; never goes back.
    pub clock_ms: u64,
    /// Commands applied, refused ones included.
    pub applied_commands: u64,
    pub roles: Roles,
    next_deliberation: u64,
    pub deliberations: BTreeMap<DeliberationId, Deliberation>,
    /// Every deliberation before this one is finished (decided, notes written), and a
    /// finished one never changes again: the scans that run with every command (phase
    /// deadlines, duties, open deliberations) start here, so they cost what is
    /// unfinished, not the whole history.
    #[serde(default)]
    unfinished_from: DeliberationId,
    pub outbox: Outbox,
    pub sessions: SessionDirectory,
    pub relay: MessageRelay,
    pub events: EventLog,
    pub artifacts: ArtifactStore,
    pub bulletin: BulletinBoard,
    pub capabilities: BTreeMap<NodeName, CapabilityManifest>,
    /// The latest failover drill reports, oldest first.
    #[serde(default)]
    pub drills: Vec<DrillReport>,
    #[serde(default)]
    next_drill: u64,
}

impl FleetState {
    /// Applies one command.
    pub fn apply(&mut self, command: Command) -> Applied {
        self.applied_commands += 1;
        self.clock_ms = self.clock_ms.max(command.at_ms);
        let now = self.clock_ms;
        let mut effects = Vec::new();
        if self.settings.is_some() {
            self.advance_time(now, &mut effects);
        }
        let result = self.execute(&command.actor, command.request, now, &mut effects);
        self.pass_finished_deliberations();
        Applied { result, effects }
    }

    /// The deliberations that may still be open or owe their notes, oldest first.
    pub fn unfinished_deliberations(&self) -> impl Iterator<Item = &Deliberation> {
        self.deliberations
            .range(self.unfinished_from..)
            .map(|(_, deliberation)| deliberation)
    }

    /// Moves `unfinished_from` past the deliberations finished since the last command.
    fn pass_finished_deliberations(&mut self) {
        self.unfinished_from = first_undone(
            &self.deliberations,
            self.unfinished_from,
            DeliberationId(self.next_deliberation + 1),
            Deliberation::is_finished,
        );
    }

    /// The fleet settings, or `NotBootstrapped`.
    pub fn settings(&self) -> Result<&FleetSettings, RuleViolation> {
        self.settings
            .as_deref()
            .ok_or(RuleViolation::NotBootstrapped)
    }

    /// A handle on the fleet settings, or `NotBootstrapped`: for a handler that reads
    /// them while it changes other parts of the state, without copying them.
    fn shared_settings(&self) -> Result<Arc<FleetSettings>, RuleViolation> {
        self.settings.clone().ok_or(RuleViolation::NotBootstrapped)
    }

    /// When the leader's driver must next propose a `Tick`: the earliest phase
    /// deadline, pending failback or session expiry.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        let settings = self.settings.as_ref()?;
        let phases = self
            .unfinished_deliberations()
            .filter(|d| d.is_open())
            .map(|d| d.phase_deadline_ms);
        phases
            .chain(self.roles.next_failback_ms(settings))
            .chain(self.sessions.next_expiry_ms())
            .min()
    }

    /// Routes a question (S4, R3): who answers, and whether to deliberate.
    pub fn route(&self, question: &str, urgent: bool) -> Result<Route, RuleViolation> {
        let router = Router {
            settings: self.settings()?,
            manifests: &self.capabilities,
            primary: self.roles.primary(),
        };
        Ok(router.route(question, urgent))
    }

    /// The deliberation `id`.
    pub fn deliberation(&self, id: DeliberationId) -> Result<&Deliberation, RuleViolation> {
        self.deliberations
            .get(&id)
            .ok_or_else(|| RuleViolation::UnknownDeliberation { id: id.to_string() })
    }

    fn advance_time(&mut self, now: u64, effects: &mut Vec<Effect>) {
        let Some(settings) = self.settings.as_ref() else {
            return;
        };
        if let Some(change) = self.roles.recompute(settings, now) {
            self.on_roles_changed(change, now, effects);
        }
        self.advance_deliberations(now, effects);
        self.sessions.expire(now);
    }

    fn advance_deliberations(&mut self, now: u64, effects: &mut Vec<Effect>) {
        let open: Vec<DeliberationId> = self
            .unfinished_deliberations()
            .filter(|d| d.is_open())
            .map(|d| d.id)
            .collect();
        for id in open {
            self.advance_deliberation(id, now, effects);
        }
    }

    fn advance_deliberation(&mut self, id: DeliberationId, now: u64, effects: &mut Vec<Effect>) {
        let Some(settings) = self.settings.as_ref() else {
            return;
        };
        let Some(deliberation) = self.deliberations.get_mut(&id) else {
            return;
        };
        for progress in deliberation.advance(now, &settings.hierarchy, &self.roles) {
            match progress {
                Progress::PhaseStarted {
                    phase,
                    deadline_ms,
                    speakers,
                } => effects.extend(speakers.into_iter().map(|node| Effect::RequestInput {
                    deliberation: id,
                    node,
                    phase,
                    deadline_ms,
                })),
                Progress::Decided => self.on_decided(id, now, effects),
            }
        }
    }

    /// A deliberation was just decided: assign the notes, queue the announcement.
    fn on_decided(&mut self, id: DeliberationId, now: u64, effects: &mut Vec<Effect>) {
        let fleet = self
            .settings
            .as_ref()
            .map_or_else(String::new, |s| s.fleet.clone());
        let note_taker = self.roles.note_taker().cloned();
        let epoch = self.roles.epoch;
        let Some(deliberation) = self.deliberations.get_mut(&id) else {
            return;
        };
        effects.push(Effect::Decided { deliberation: id });
        assign_notes(deliberation, note_taker.as_ref(), epoch, effects);
        let text = Notes::decision_message(deliberation, note_taker.as_ref().map(NodeName::as_str));
        let title = format!("Fleet decision reached: {}", deliberation.topic);
        let notification = self.outbox.push(
            &fleet,
            NotificationKind::DeliberationDecided,
            id,
            title,
            text,
            now,
        );
        effects.push(Effect::Notify { notification });
    }

    fn on_roles_changed(&mut self, change: RoleChange, now: u64, effects: &mut Vec<Effect>) {
        if change.primary_changed
            && let Some(primary) = &change.primary
        {
            effects.push(Effect::TransferLeadership {
                to: primary.clone(),
            });
        }
        effects.push(Effect::RolesChanged(change));
        self.reassign_orphaned_notes(effects);
        // A participant that went down is no longer waited for.
        self.advance_deliberations(now, effects);
    }

    /// Notes assigned to a node that is down, or to nobody, go to the current note-taker.
    fn reassign_orphaned_notes(&mut self, effects: &mut Vec<Effect>) {
        let Some(note_taker) = self.roles.note_taker().cloned() else {
            return;
        };
        let epoch = self.roles.epoch;
        for (_, deliberation) in self.deliberations.range_mut(self.unfinished_from..) {
            let orphaned = deliberation.outcome.is_some()
                && deliberation.notes.written_by.is_none()
                && deliberation
                    .notes
                    .assigned
                    .as_ref()
                    .is_none_or(|(node, _)| !self.roles.is_healthy(node) && node != &note_taker);
            if orphaned {
                assign_notes(deliberation, Some(&note_taker), epoch, effects);
            }
        }
    }

    fn execute(
        &mut self,
        actor: &Actor,
        request: Request,
        now: u64,
        effects: &mut Vec<Effect>,
    ) -> Result<Response, RuleViolation> {
        if let Request::Bootstrap(settings) = request {
            return self.bootstrap(actor, settings, now, effects);
        }
        let action = request.name();
        let settings = self.shared_settings()?;
        if let Some(node) = actor.node().or(match actor {
            Actor::Leader(node) => Some(node),
            _ => None,
        }) {
            settings.require_member(node)?;
        }
        match request {
            Request::Bootstrap(_) => unreachable!("handled above"),
            Request::AddNode { node, specialties } => {
                require_operator(actor, action)?;
                self.add_node(node, specialties, now)
            }
            Request::RemoveNode { node } => {
                require_operator(actor, action)?;
                self.remove_node(&node, now, effects)
            }
            Request::SetSpecialties { node, specialties } => {
                if actor != &Actor::Operator && actor.node() != Some(&node) {
                    return Err(unauthorized(
                        actor,
                        action,
                        "a node sets only its own specialties",
                    ));
                }
                settings.require_member(&node)?;
                check_specialties(&specialties)?;
                let specialties = specialties.iter().map(|s| s.trim().to_string()).collect();
                self.settings_mut().specialties.insert(node, specialties);
                Ok(Response::Done)
            }
            Request::ReportHealth { healthy } => {
                require_leader(actor, action)?;
                for node in &healthy {
                    settings.require_member(node)?;
                }
                self.roles.report_health(&settings.hierarchy, &healthy, now);
                if let Some(change) = self.roles.recompute(&settings, now) {
                    self.on_roles_changed(change, now, effects);
                } else {
                    self.reassign_orphaned_notes(effects);
                    self.advance_deliberations(now, effects);
                }
                Ok(Response::Roles(self.roles.clone()))
            }
            Request::Tick => {
                require_leader(actor, action)?;
                Ok(Response::Done)
            }
            Request::OpenDeliberation(open) => {
                self.open_deliberation(actor, action, open, now, effects)
            }
            Request::Submit {
                deliberation,
                submission,
            } => {
                let node = require_node(actor, action)?.clone();
                let entry = self.deliberations.get_mut(&deliberation).ok_or_else(|| {
                    RuleViolation::UnknownDeliberation {
                        id: deliberation.to_string(),
                    }
                })?;
                let fresh = entry.submit(&node, submission, now)?;
                if fresh {
                    self.advance_deliberation(deliberation, now, effects);
                }
                Ok(self.deliberation_response(deliberation, !fresh))
            }
            Request::Override {
                deliberation,
                decision,
                reason,
            } => {
                require_operator(actor, action)?;
                check_text("decision", &decision, super::limits::OVERRIDE_BYTES_MAX)?;
                super::limits::check_size(
                    "reason",
                    reason.as_bytes(),
                    super::limits::OVERRIDE_BYTES_MAX,
                )?;
                let entry = self.deliberations.get_mut(&deliberation).ok_or_else(|| {
                    RuleViolation::UnknownDeliberation {
                        id: deliberation.to_string(),
                    }
                })?;
                entry.override_with(&decision, &reason, now, &self.roles)?;
                self.on_decided(deliberation, now, effects);
                Ok(self.deliberation_response(deliberation, false))
            }
            Request::NotesWritten {
                deliberation,
                epoch,
            } => {
                let node = require_node(actor, action)?.clone();
                self.confirm_notes(&node, deliberation, epoch)
            }
            Request::RecordDelivery {
                notification,
                sink,
                result,
                epoch,
            } => {
                let node = require_node(actor, action)?;
                self.roles.check_fence(Role::Primary, node, epoch)?;
                let notification = self.outbox.record(notification, &sink, result, now)?;
                Ok(Response::Notification(Box::new(notification.clone())))
            }
            Request::PublishSession { key, agent, status } => {
                let node = require_node(actor, action)?;
                let session = self.sessions.publish(
                    node,
                    &key,
                    agent,
                    &status,
                    now,
                    settings.session_ttl_ms,
                )?;
                Ok(Response::Session(session.clone()))
            }
            Request::SendMessage {
                to_session,
                body,
                request_id,
            } => {
                require_node_or_operator(actor, action)?;
                let owner = self.sessions.live(&to_session, now)?.node.clone();
                let (message, fresh) = self.relay.send(
                    actor.author(),
                    &to_session,
                    owner.clone(),
                    &body,
                    &request_id,
                    now,
                )?;
                if fresh {
                    effects.push(Effect::DeliverMessage {
                        message: message.id,
                        node: owner,
                    });
                }
                Ok(Response::Message {
                    message: Box::new(message.clone()),
                    repeated: !fresh,
                })
            }
            Request::ReportMessage { message, status } => {
                let node = require_node(actor, action)?;
                let message = self.relay.report(node, message, status, now)?;
                Ok(Response::Message {
                    message: Box::new(message.clone()),
                    repeated: false,
                })
            }
            Request::AppendEvent(new) => {
                require_node_or_operator(actor, action)?;
                let (event, fresh) = self.events.append(&actor.author(), new, now)?;
                Ok(Response::Event {
                    event: Box::new(event.clone()),
                    repeated: !fresh,
                })
            }
            Request::AckEvent {
                event,
                status,
                body,
            } => {
                require_node_or_operator(actor, action)?;
                let (event, fresh) = self.events.ack(&actor.author(), event, status, body, now)?;
                Ok(Response::Event {
                    event: Box::new(event.clone()),
                    repeated: !fresh,
                })
            }
            Request::PutArtifact {
                sha256,
                media_type,
                metadata,
                content,
            } => {
                require_node_or_operator(actor, action)?;
                let (artifact, fresh) = self.artifacts.put(
                    &actor.author(),
                    &sha256,
                    &media_type,
                    metadata,
                    content,
                    now,
                )?;
                Ok(Response::artifact_summary(artifact, !fresh))
            }
            Request::PostBulletin { to, subject, body } => {
                require_node_or_operator(actor, action)?;
                let item = self
                    .bulletin
                    .post(actor.author(), to, &subject, &body, now)?;
                Ok(Response::Bulletin(Box::new(item.clone())))
            }
            Request::AckBulletin { id } => {
                let node = require_node(actor, action)?;
                let item = self.bulletin.ack(node, &settings.hierarchy, &id, now)?;
                Ok(Response::Bulletin(Box::new(item.clone())))
            }
            Request::ArchiveBulletin { before_ms } => {
                require_operator(actor, action)?;
                Ok(Response::Archived {
                    count: self.bulletin.archive(before_ms),
                })
            }
            Request::Probe => {
                require_node_or_operator(actor, action)?;
                Ok(Response::Done)
            }
            Request::RecordDrill(report) => {
                require_operator(actor, action)?;
                settings.require_member(&report.target)?;
                report.validate()?;
                self.next_drill += 1;
                let report = DrillReport {
                    id: self.next_drill,
                    recorded_at_ms: now,
                    ..report
                };
                let notification = self.outbox.push_drill(
                    &settings.fleet,
                    report.id,
                    report.title(),
                    report.text(),
                    now,
                );
                effects.push(Effect::Notify { notification });
                self.drills.push(report.clone());
                if self.drills.len() > DRILL_REPORTS_KEPT {
                    self.drills.remove(0);
                }
                Ok(Response::Drill {
                    report: Box::new(report),
                    notification,
                })
            }
            Request::PublishCapabilities { markdown } => {
                let node = require_node(actor, action)?.clone();
                let manifest = CapabilityManifest::parse(&markdown, now)?;
                self.capabilities.insert(node, manifest.clone());
                Ok(Response::Capabilities(Box::new(manifest)))
            }
        }
    }

    fn settings_mut(&mut self) -> &mut FleetSettings {
        Arc::make_mut(self.settings.as_mut().expect("checked by the caller"))
    }

    fn bootstrap(
        &mut self,
        actor: &Actor,
        settings: FleetSettings,
        now: u64,
        effects: &mut Vec<Effect>,
    ) -> Result<Response, RuleViolation> {
        require_operator(actor, "bootstrap the fleet")?;
        if let Some(existing) = &self.settings {
            return Err(RuleViolation::AlreadyBootstrapped {
                fleet: existing.fleet.clone(),
            });
        }
        settings.validate()?;
        let members: BTreeSet<NodeName> = settings.hierarchy.iter().cloned().collect();
        self.roles.report_health(&settings.hierarchy, &members, now);
        let settings = Arc::new(settings);
        self.settings = Some(Arc::clone(&settings));
        if let Some(change) = self.roles.recompute(&settings, now) {
            self.on_roles_changed(change, now, effects);
        }
        Ok(Response::Roles(self.roles.clone()))
    }

    fn add_node(
        &mut self,
        node: NodeName,
        specialties: Vec<String>,
        now: u64,
    ) -> Result<Response, RuleViolation> {
        let settings = self.settings()?;
        if settings.is_member(&node) {
            return Err(RuleViolation::invalid(
                "node",
                format!("`{node}` is already a member"),
            ));
        }
        if settings.hierarchy.len() >= NODES_MAX {
            return Err(RuleViolation::invalid(
                "node",
                format!(
                    "the fleet has {} nodes (limit {NODES_MAX})",
                    settings.hierarchy.len()
                ),
            ));
        }
        check_specialties(&specialties)?;
        let settings = self.settings_mut();
        settings.hierarchy.push(node.clone());
        settings.note_chain.push(node.clone());
        if !specialties.is_empty() {
            settings.specialties.insert(node.clone(), specialties);
        }
        // A new node is not healthy until the leader hears from it.
        self.roles.set_health(&node, false, now);
        Ok(Response::Roles(self.roles.clone()))
    }

    fn remove_node(
        &mut self,
        node: &NodeName,
        now: u64,
        effects: &mut Vec<Effect>,
    ) -> Result<Response, RuleViolation> {
        let settings = self.settings()?;
        settings.require_member(node)?;
        if settings.hierarchy.len() == 1 {
            return Err(RuleViolation::invalid(
                "node",
                format!("`{node}` is the last member"),
            ));
        }
        let settings = self.settings_mut();
        settings.hierarchy.retain(|n| n != node);
        settings.note_chain.retain(|n| n != node);
        settings.specialties.remove(node);
        let settings = settings.clone();
        self.capabilities.remove(node);
        self.sessions.forget_node(node);
        self.roles.forget(node);
        if let Some(change) = self.roles.recompute(&settings, now) {
            self.on_roles_changed(change, now, effects);
        }
        Ok(Response::Roles(self.roles.clone()))
    }

    fn open_deliberation(
        &mut self,
        actor: &Actor,
        action: &str,
        open: OpenDeliberation,
        now: u64,
        effects: &mut Vec<Effect>,
    ) -> Result<Response, RuleViolation> {
        require_node_or_operator(actor, action)?;
        let settings = self.shared_settings()?;
        check_text("topic", &open.topic, TOPIC_BYTES_MAX)?;
        check_text("request_id", &open.request_id, NAME_BYTES_MAX)?;
        let topic_key = stance_key(&open.topic);
        if let Some(existing) = self
            .deliberations
            .values()
            .find(|d| d.request_id == open.request_id)
        {
            if existing.topic_key != topic_key {
                return Err(RuleViolation::IdempotencyConflict {
                    key: open.request_id,
                    what: "deliberation".into(),
                });
            }
            return Ok(self.deliberation_response(existing.id, true));
        }
        if open.urgent {
            return Ok(Response::Bypassed {
                route: self.route(&open.topic, true)?,
            });
        }
        // One open deliberation per topic: a second opener joins the first (D9).
        if let Some(existing) = self
            .unfinished_deliberations()
            .find(|d| d.is_open() && d.topic_key == topic_key)
        {
            return Ok(self.deliberation_response(existing.id, true));
        }
        let open_count = self
            .unfinished_deliberations()
            .filter(|d| d.is_open())
            .count();
        if open_count >= OPEN_DELIBERATIONS_MAX {
            return Err(RuleViolation::TooManyOpenDeliberations {
                open: open_count,
                limit: OPEN_DELIBERATIONS_MAX,
            });
        }
        let tier = open.tier.unwrap_or_else(|| Tier::classify(&open.topic).0);
        let options = validate_options(&open.options)?;
        let participants = self.participants(&settings, open.participants)?;
        let phase_ms = open.phase_ms.unwrap_or(settings.phase_ms);
        if !(PHASE_MS_MIN..=PHASE_MS_MAX).contains(&phase_ms) {
            return Err(RuleViolation::invalid(
                "round duration",
                format!(
                    "{phase_ms} ms is outside {PHASE_MS_MIN}..={PHASE_MS_MAX} ms: a phase lasts at most one minute (seed 002)"
                ),
            ));
        }
        let specialist = self
            .route(&open.topic, false)?
            .specialists
            .into_iter()
            .map(|(node, _)| node)
            .find(|node| participants.contains(node));
        let taken: BTreeSet<String> = self
            .deliberations
            .values()
            .map(|d| d.notes.path.clone())
            .collect();
        self.next_deliberation += 1;
        let id = DeliberationId(self.next_deliberation);
        let deliberation = Deliberation {
            id,
            topic: open.topic.trim().to_string(),
            topic_key,
            tier,
            options,
            participants,
            opened_by: actor.clone(),
            request_id: open.request_id,
            opened_at_ms: now,
            phase_ms,
            phase: Phase::Positions,
            phase_started_ms: now,
            phase_deadline_ms: now + phase_ms,
            inputs: Vec::new(),
            abstentions: Vec::new(),
            specialist,
            announced_note_taker: self.roles.note_taker().cloned(),
            notes: NotesRecord {
                path: Notes::path(now, &taken),
                markdown: None,
                assigned: None,
                written_by: None,
            },
            outcome: None,
        };
        let speakers = deliberation.expected_speakers(&self.roles);
        effects.extend(speakers.into_iter().map(|node| Effect::RequestInput {
            deliberation: id,
            node,
            phase: Phase::Positions,
            deadline_ms: deliberation.phase_deadline_ms,
        }));
        let title = format!("Fleet deliberation initiated: {}", deliberation.topic);
        let text = Notes::start_message(&deliberation);
        self.deliberations.insert(id, deliberation);
        let notification = self.outbox.push(
            &settings.fleet,
            NotificationKind::DeliberationStarted,
            id,
            title,
            text,
            now,
        );
        effects.push(Effect::Notify { notification });
        Ok(self.deliberation_response(id, false))
    }

    /// Participants in hierarchy order: the requested members, or every healthy one.
    fn participants(
        &self,
        settings: &FleetSettings,
        requested: Option<Vec<NodeName>>,
    ) -> Result<Vec<NodeName>, RuleViolation> {
        let chosen: BTreeSet<NodeName> = match requested {
            Some(requested) => {
                for node in &requested {
                    settings.require_member(node)?;
                }
                requested.into_iter().collect()
            }
            None => {
                let healthy: BTreeSet<NodeName> = settings
                    .hierarchy
                    .iter()
                    .filter(|n| self.roles.is_healthy(n))
                    .cloned()
                    .collect();
                if healthy.is_empty() {
                    settings.hierarchy.iter().cloned().collect()
                } else {
                    healthy
                }
            }
        };
        if chosen.is_empty() {
            return Err(RuleViolation::invalid(
                "participants",
                "name at least one member",
            ));
        }
        if chosen.len() > PARTICIPANTS_MAX {
            return Err(RuleViolation::invalid(
                "participants",
                format!("{} named; at most {PARTICIPANTS_MAX}", chosen.len()),
            ));
        }
        Ok(settings
            .hierarchy
            .iter()
            .filter(|n| chosen.contains(n))
            .cloned()
            .collect())
    }

    fn confirm_notes(
        &mut self,
        node: &NodeName,
        id: DeliberationId,
        epoch: u64,
    ) -> Result<Response, RuleViolation> {
        let deliberation = self
            .deliberations
            .get_mut(&id)
            .ok_or_else(|| RuleViolation::UnknownDeliberation { id: id.to_string() })?;
        if let Some(by) = &deliberation.notes.written_by {
            return Ok(Response::NotesConfirmed { by: by.clone() });
        }
        match &deliberation.notes.assigned {
            Some((assigned, assigned_epoch)) if assigned == node && *assigned_epoch == epoch => {
                deliberation.notes.written_by = Some(node.clone());
                Ok(Response::NotesConfirmed { by: node.clone() })
            }
            assigned => Err(RuleViolation::StaleEpoch {
                role: Role::NoteTaker.to_string(),
                actor: node.to_string(),
                presented: epoch,
                holder: assigned
                    .as_ref()
                    .map_or_else(|| "nobody".into(), |(n, _)| n.to_string()),
                current: assigned.as_ref().map_or(self.roles.epoch, |(_, e)| *e),
            }),
        }
    }

    fn deliberation_response(&self, id: DeliberationId, repeated: bool) -> Response {
        Response::Deliberation {
            deliberation: Box::new(self.deliberations[&id].clone()),
            repeated,
        }
    }
}

/// Gives the notes of a decided deliberation to `note_taker` and asks it to write them.
fn assign_notes(
    deliberation: &mut Deliberation,
    note_taker: Option<&NodeName>,
    epoch: u64,
    effects: &mut Vec<Effect>,
) {
    let name = note_taker.map_or("none available", NodeName::as_str);
    deliberation.notes.markdown = Some(Notes::markdown(deliberation, name));
    let Some(note_taker) = note_taker else {
        deliberation.notes.assigned = None;
        return;
    };
    deliberation.notes.assigned = Some((note_taker.clone(), epoch));
    effects.push(Effect::WriteNotes {
        deliberation: deliberation.id,
        note_taker: note_taker.clone(),
        epoch,
        path: deliberation.notes.path.clone(),
    });
}

fn validate_options(options: &[String]) -> Result<Vec<String>, RuleViolation> {
    if options.len() > OPTIONS_MAX {
        return Err(RuleViolation::invalid(
            "options",
            format!("{} given; at most {OPTIONS_MAX}", options.len()),
        ));
    }
    if options.len() == 1 {
        return Err(RuleViolation::invalid(
            "options",
            "give none, or at least two",
        ));
    }
    let mut seen = BTreeSet::new();
    let mut valid = Vec::new();
    for option in options {
        check_text("option", option, STANCE_BYTES_MAX)?;
        if !seen.insert(stance_key(option)) {
            return Err(RuleViolation::invalid(
                "options",
                format!("`{}` is given twice", option.trim()),
            ));
        }
        valid.push(option.trim().to_string());
    }
    Ok(valid)
}

fn unauthorized(actor: &Actor, action: &str, rule: &str) -> RuleViolation {
    RuleViolation::Unauthorized {
        actor: actor.to_string(),
        action: action.into(),
        rule: rule.into(),
    }
}

fn require_operator(actor: &Actor, action: &str) -> Result<(), RuleViolation> {
    match actor {
        Actor::Operator => Ok(()),
        _ => Err(unauthorized(actor, action, "only the operator may")),
    }
}

fn require_leader(actor: &Actor, action: &str) -> Result<(), RuleViolation> {
    match actor {
        Actor::Leader(_) => Ok(()),
        _ => Err(unauthorized(
            actor,
            action,
            "only the Raft leader's driver may",
        )),
    }
}

fn require_node<'a>(actor: &'a Actor, action: &str) -> Result<&'a NodeName, RuleViolation> {
    actor.node().ok_or_else(|| {
        unauthorized(
            actor,
            action,
            "only a node acts here, as itself (use --node NAME)",
        )
    })
}

fn require_node_or_operator(actor: &Actor, action: &str) -> Result<(), RuleViolation> {
    match actor {
        Actor::Operator | Actor::Node(_) => Ok(()),
        Actor::Leader(_) => Err(unauthorized(
            actor,
            action,
            "only the operator or a node may",
        )),
    }
}
