//! `FleetNode`: a running node's core — proposing commands (forwarded to the leader
//! when this node follows), reading the state (linearizably when asked), reporting
//! status and changing membership.
//!
//! *Architecture invariant:* only here does a command get its timestamp. The leader
//! stamps `at_ms` from its own clock when it proposes; a follower forwards the request
//! and the actor, never a timestamp, so time in the state always comes from a leader.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use openraft::Instant as _;
use openraft::async_runtime::WatchReceiver;
use openraft::error::{ClientWriteError, RaftError};
use openraft::{ReadPolicy, ServerState};

use super::forwarder::Forwarder;
use crate::api::error::ApiError;
use crate::api::query::{Query, QueryAnswer};
use crate::raft::{CommandOutcome, FleetRaft, Peer, node_id};
use crate::state::{Actor, Command, FleetSettings, NodeName, Request, Response, RuleViolation};
use crate::store::{StateHandle, StateMachineStore};
use crate::transport::Isolation;
use fleet_proto::api as wire;

/// The node's openraft handle.
pub type RaftHandle = openraft::Raft<FleetRaft, StateMachineStore>;

/// A committed command's outcome as the caller sees it.
#[derive(Debug)]
pub struct Committed {
    pub result: Result<Response, RuleViolation>,
    pub log_index: u64,
    pub leader: String,
}

/// The longest a read may wait for the state to reach an index.
pub const READ_WAIT_MAX: Duration = Duration::from_secs(300);

/// A running node.
pub struct FleetNode {
    pub name: NodeName,
    pub fleet: String,
    pub raft: RaftHandle,
    pub state: StateHandle,
    /// This node as a member.
    pub peer: Peer,
    /// The members the config names, for bootstrapping.
    pub configured_peers: Vec<Peer>,
    pub(crate) forwarder: Forwarder,
    /// A leader that heard from no quorum for this long reports no quorum.
    pub quorum_stale_ms: u64,
    /// How long a call waits for a leader to emerge (an election, a hand-over to the
    /// primary) before it reports that there is no quorum.
    pub leader_wait: Duration,
    /// Which transport each peer's Raft traffic uses right now.
    pub transport_of: Box<dyn Fn(&str) -> &'static str + Send + Sync>,
    /// Cuts the node off from Raft traffic during a failover drill.
    pub isolation: Isolation,
}

/// Milliseconds since the Unix epoch on this machine's clock.
pub fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl FleetNode {
    /// Proposes `request` as `actor`: on the leader with its clock, else forwarded.
    pub async fn propose(&self, actor: Actor, request: Request) -> Result<Committed, ApiError> {
        let deadline = tokio::time::Instant::now() + self.leader_wait;
        loop {
            match self.propose_once(&actor, &request).await {
                Err(ApiError::NoQuorum(problem))
                    if !matches!(actor, Actor::Leader(_)) && self.await_leader(deadline).await =>
                {
                    tracing::debug!(%problem, "a leader emerged; proposing again");
                }
                other => return other,
            }
        }
    }

    /// Waits until another node is known as the leader, or this one leads, at most
    /// until `deadline`.
    async fn await_leader(&self, deadline: tokio::time::Instant) -> bool {
        let timeout = deadline.saturating_duration_since(tokio::time::Instant::now());
        let stuck_on_itself = self
            .leader_peer()
            .is_some_and(|l| l.name == self.name.as_str());
        !timeout.is_zero()
            && !stuck_on_itself
            && self
                .raft
                .wait(Some(timeout))
                .metrics(|m| m.current_leader.is_some(), "a known leader")
                .await
                .is_ok()
    }

    async fn propose_once(&self, actor: &Actor, request: &Request) -> Result<Committed, ApiError> {
        let command = Box::new(Command {
            at_ms: wall_clock_ms(),
            actor: actor.clone(),
            request: request.clone(),
        });
        match self.raft.client_write(command).await {
            Ok(written) => Ok(Committed {
                result: outcome_result(written.data),
                log_index: written.log_id.index,
                leader: self.name.to_string(),
            }),
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(forward))) => {
                self.forward(actor, request, forward.leader_node).await
            }
            // Appended here, then this node lost the lead before the entry committed:
            // it may yet commit through the new leader. Only a request whose repeat
            // is harmless may be sent on; for any other the caller must find out.
            Err(RaftError::APIError(ClientWriteError::LogEntryDiscarded(forward)))
                if request.is_idempotent() || matches!(actor, Actor::Leader(_)) =>
            {
                self.forward(actor, request, forward.leader_node).await
            }
            Err(RaftError::APIError(ClientWriteError::LogEntryDiscarded(forward))) => {
                Err(ApiError::OutcomeUnknown(format!(
                    "{} lost the lead to {} before its {} committed, and it may still \
                     commit; read the fleet's state before sending it again",
                    self.name,
                    forward
                        .leader_node
                        .map_or_else(|| "another node".into(), |p| p.name),
                    request.name()
                )))
            }
            Err(RaftError::APIError(other)) => Err(ApiError::Internal(other.to_string())),
            Err(RaftError::Fatal(fatal)) => Err(ApiError::Internal(fatal.to_string())),
        }
    }

    /// Sends `request`, refused here because this node does not lead, to `leader`.
    async fn forward(
        &self,
        actor: &Actor,
        request: &Request,
        leader: Option<Peer>,
    ) -> Result<Committed, ApiError> {
        match leader {
            // What this node decided as leader (health, ticks) is void once it is not
            // the leader: a leader that was cut off and comes back must not have its
            // stale view committed by its successor.
            _ if matches!(actor, Actor::Leader(_)) => Err(ApiError::NoQuorum(format!(
                "{} is no longer the leader; its {} is dropped",
                self.name,
                request.name()
            ))),
            Some(leader) if leader.name != self.name.as_str() => {
                self.forwarder.write(&leader, actor, request).await
            }
            _ => Err(ApiError::NoQuorum(self.quorum_problem())),
        }
    }

    /// Answers `query`; `linearizable` confirms with a quorum first (on the leader, to
    /// which a follower forwards such reads); `min_applied` waits for that index.
    pub async fn read(
        &self,
        query: &Query,
        linearizable: bool,
        min_applied: u64,
        wait: Duration,
    ) -> Result<(Result<QueryAnswer, RuleViolation>, u64), ApiError> {
        let leader_deadline = tokio::time::Instant::now() + self.leader_wait;
        if linearizable {
            loop {
                match self.raft.ensure_linearizable(ReadPolicy::ReadIndex).await {
                    Ok(_) => break,
                    Err(RaftError::APIError(error)) => match self.leader_peer() {
                        Some(leader) if leader.name != self.name.as_str() => {
                            return self.forwarder.read(&leader, query, min_applied, wait).await;
                        }
                        None if self.await_leader(leader_deadline).await => {}
                        _ => {
                            return Err(ApiError::NoQuorum(format!(
                                "{error}; {}",
                                self.quorum_problem()
                            )));
                        }
                    },
                    Err(RaftError::Fatal(fatal)) => {
                        return Err(ApiError::Internal(fatal.to_string()));
                    }
                }
            }
        }
        if min_applied > self.state.applied_index() {
            let mut applied = self.state.subscribe();
            let deadline = tokio::time::sleep(wait.min(READ_WAIT_MAX));
            tokio::pin!(deadline);
            while *applied.borrow_and_update() < min_applied {
                tokio::select! {
                    _ = &mut deadline => break,
                    changed = applied.changed() => if changed.is_err() { return Err(ApiError::ShuttingDown) },
                }
            }
        }
        Ok((self.answer_now(query), self.state.applied_index()))
    }

    /// Answers `query` from this node's state once the answer is ready
    /// ([`Query::is_ready`]), reading again after every applied command — woken by the
    /// apply, not by a timer — for at most `wait`; then the answer as it stands.
    /// Nothing is read before the state reaches `min_applied` (the index a forwarded
    /// read was answered at, so the answer never goes back in time).
    pub async fn read_when_ready(
        &self,
        query: &Query,
        min_applied: u64,
        wait: Duration,
    ) -> Result<(Result<QueryAnswer, RuleViolation>, u64), ApiError> {
        let mut applied = self.state.subscribe();
        let deadline = tokio::time::sleep(wait.min(READ_WAIT_MAX));
        tokio::pin!(deadline);
        loop {
            let index = *applied.borrow_and_update();
            if index >= min_applied {
                // A refusal is final; an answer that is not ready waits for the next apply.
                let answer = self.answer_now(query);
                if answer.as_ref().map_or(true, Query::is_ready) {
                    return Ok((answer, index));
                }
            }
            tokio::select! {
                () = &mut deadline => return Ok((self.answer_now(query), self.state.applied_index())),
                changed = applied.changed() => if changed.is_err() { return Err(ApiError::ShuttingDown) },
            }
        }
    }

    /// `query` answered from this node's state as it is, at this node's clock.
    fn answer_now(&self, query: &Query) -> Result<QueryAnswer, RuleViolation> {
        let now = wall_clock_ms();
        self.state.read(|state| query.answer(state, now))
    }

    /// Whether this node is the Raft leader right now.
    pub fn is_leader(&self) -> bool {
        self.raft.metrics().borrow_watched().state == ServerState::Leader
    }

    /// The leader as a member, if one is known.
    pub fn leader_peer(&self) -> Option<Peer> {
        let metrics = self.raft.metrics().borrow_watched().clone();
        let leader = metrics.current_leader?;
        metrics
            .membership_config
            .membership()
            .get_node(&leader)
            .cloned()
    }

    /// A sentence on why this node has no usable leader: as a leader, how many voters
    /// (itself included) answered it within the quorum window, against how many it
    /// needs; otherwise, that it knows of no leader.
    pub fn quorum_problem(&self) -> String {
        let metrics = self.raft.metrics().borrow_watched().clone();
        let voters: BTreeSet<u64> = metrics.membership_config.membership().voter_ids().collect();
        let needed = voters.len() / 2 + 1;
        if metrics.state == ServerState::Leader {
            let window = Duration::from_millis(self.quorum_stale_ms);
            let answered = metrics.heartbeat.iter().flatten().filter(|(id, acked)| {
                **id != metrics.id
                    && voters.contains(id)
                    && acked.is_some_and(|at| (*at).elapsed() < window)
            });
            let reachable = 1 + answered.count();
            return format!(
                "{reachable} of {} voters reachable from {} in the last {} ms; it leads term {} but needs {needed} to commit",
                voters.len(),
                self.name,
                self.quorum_stale_ms,
                metrics.current_term
            );
        }
        format!(
            "no leader is known to {} ({} voters in the fleet); fewer than {needed} of them can reach each other",
            self.name,
            voters.len(),
        )
    }

    /// This node's view of the fleet.
    pub fn status(&self) -> wire::StatusReply {
        let metrics = self.raft.metrics().borrow_watched().clone();
        let membership = metrics.membership_config.membership().clone();
        let voters: BTreeSet<u64> = membership.voter_ids().collect();
        let leader = metrics
            .current_leader
            .and_then(|id| membership.get_node(&id).cloned());
        let is_leader = metrics.state == ServerState::Leader;
        let replication = metrics.replication.clone().unwrap_or_default();
        let quorum_fresh = metrics
            .last_quorum_acked
            .is_some_and(|acked| (*acked).elapsed() < Duration::from_millis(self.quorum_stale_ms));
        let (roles, settings) = self.state.read(|s| (s.roles.clone(), s.settings.clone()));
        let members = membership
            .nodes()
            .map(|(id, peer)| {
                let voter = voters.contains(id);
                let own = *id == metrics.id;
                let raft_state = if own {
                    state_name(metrics.state).to_string()
                } else if Some(*id) == metrics.current_leader {
                    "leader".into()
                } else if is_leader {
                    match replication.get(id) {
                        Some(Some(_)) => if voter { "follower" } else { "learner" }.into(),
                        _ => "unreachable".into(),
                    }
                } else {
                    "unknown".into()
                };
                let acked = replication.get(id).cloned().flatten();
                wire::MemberStatus {
                    name: peer.name.clone(),
                    raft_state,
                    term: if own { metrics.current_term } else { 0 },
                    last_log_index: if own {
                        metrics.last_log_index.unwrap_or(0)
                    } else {
                        acked.map_or(0, |log_id| log_id.index)
                    },
                    applied_index: if own {
                        metrics.last_applied.map_or(0, |log_id| log_id.index)
                    } else {
                        0
                    },
                    healthy: NodeName::new(peer.name.clone()).is_ok_and(|n| roles.is_healthy(&n)),
                    api_addr: peer.api_addr.clone(),
                    raft_addr: peer.raft_addr.clone(),
                    transport: if own {
                        String::new()
                    } else {
                        (self.transport_of)(&peer.name).into()
                    },
                    voter,
                    snapshot_index: if own {
                        metrics.snapshot.map_or(0, |log_id| log_id.index)
                    } else {
                        0
                    },
                    purged_index: if own {
                        metrics.purged.map_or(0, |log_id| log_id.index)
                    } else {
                        0
                    },
                }
            })
            .collect();
        let quorum = leader.is_some() && (!is_leader || quorum_fresh || voters.len() == 1);
        wire::StatusReply {
            node: self.name.to_string(),
            fleet: settings.map_or_else(|| self.fleet.clone(), |s| s.fleet.clone()),
            leader: leader.map(|p| p.name).unwrap_or_default(),
            term: metrics.current_term,
            members,
            primary: roles.primary().map(ToString::to_string).unwrap_or_default(),
            note_taker: roles
                .note_taker()
                .map(ToString::to_string)
                .unwrap_or_default(),
            epoch: roles.epoch,
            quorum,
            problem: if quorum {
                String::new()
            } else {
                format!("no quorum: {}", self.quorum_problem())
            },
        }
    }

    /// Bootstraps a new fleet from the configured peers, then commits the settings.
    pub async fn init_cluster(
        &self,
        settings: Option<FleetSettings>,
    ) -> Result<wire::MembershipReply, ApiError> {
        let members: BTreeMap<u64, Peer> = self
            .configured_peers
            .iter()
            .map(|peer| (node_id(&peer.name), peer.clone()))
            .collect();
        let names: Vec<String> = self
            .configured_peers
            .iter()
            .map(|p| p.name.clone())
            .collect();
        let already = self
            .raft
            .is_initialized()
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        if !already {
            self.raft
                .initialize(members)
                .await
                .map_err(|e| ApiError::Internal(format!("bootstrap failed: {e}")))?;
        }
        let settings = match settings {
            Some(settings) => settings,
            None => default_settings(&self.fleet, &names)?,
        };
        // The first leader may take an election timeout to appear.
        let committed = self
            .propose_when_led(Actor::Operator, Request::Bootstrap(settings))
            .await?;
        let message = match committed.result {
            Ok(_) => format!("fleet bootstrapped with {}", names.join(", ")),
            Err(RuleViolation::AlreadyBootstrapped { fleet }) => {
                format!("fleet `{fleet}` was already bootstrapped")
            }
            Err(other) => return Err(ApiError::BadRequest(other.to_string())),
        };
        Ok(self.membership_reply(message))
    }

    async fn propose_when_led(
        &self,
        actor: Actor,
        request: Request,
    ) -> Result<Committed, ApiError> {
        let mut last = None;
        for _ in 0..50 {
            match self.propose(actor.clone(), request.clone()).await {
                Err(ApiError::NoQuorum(problem)) => {
                    last = Some(problem);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => return other,
            }
        }
        Err(ApiError::NoQuorum(last.unwrap_or_default()))
    }

    /// Adds a member: as a learner first, then as a voter once it has caught up.
    pub async fn add_member(&self, peer: Peer) -> Result<wire::MembershipReply, ApiError> {
        let name =
            NodeName::new(peer.name.clone()).map_err(|e| ApiError::BadRequest(e.to_string()))?;
        let id = node_id(&peer.name);
        self.raft
            .add_learner(id, peer.clone(), true)
            .await
            .map_err(|e| self.membership_error(e))?;
        let mut voters = self.voter_ids();
        voters.insert(id);
        self.raft
            .change_membership(voters, false)
            .await
            .map_err(|e| self.membership_error(e))?;
        let committed = self
            .propose(
                Actor::Operator,
                Request::AddNode {
                    node: name,
                    specialties: Vec::new(),
                },
            )
            .await?;
        if let Err(error) = committed.result
            && error.code() != "invalid_field"
        {
            return Err(ApiError::BadRequest(error.to_string()));
        }
        Ok(self.membership_reply(format!("{} joined as a voter", peer.name)))
    }

    /// Removes a member from the voters and from the fleet's chains.
    pub async fn remove_member(&self, name: &str) -> Result<wire::MembershipReply, ApiError> {
        let node = NodeName::new(name).map_err(|e| ApiError::BadRequest(e.to_string()))?;
        let id = node_id(name);
        let mut voters = self.voter_ids();
        if !voters.remove(&id) {
            return Err(ApiError::BadRequest(format!(
                "`{name}` is not a voter of this fleet"
            )));
        }
        self.raft
            .change_membership(voters, false)
            .await
            .map_err(|e| self.membership_error(e))?;
        let committed = self
            .propose(Actor::Operator, Request::RemoveNode { node })
            .await?;
        if let Err(error) = committed.result {
            return Err(ApiError::BadRequest(error.to_string()));
        }
        Ok(self.membership_reply(format!("{name} was removed")))
    }

    /// The current voters' ids.
    fn voter_ids(&self) -> BTreeSet<u64> {
        let metrics = self.raft.metrics();
        let metrics = metrics.borrow_watched();
        metrics.membership_config.membership().voter_ids().collect()
    }

    fn membership_error(
        &self,
        error: RaftError<FleetRaft, ClientWriteError<FleetRaft>>,
    ) -> ApiError {
        match error {
            RaftError::APIError(ClientWriteError::ForwardToLeader(forward)) => ApiError::Forward {
                leader: forward
                    .leader_node
                    .map_or_else(|| "unknown".into(), |p| p.name),
                reason: "membership changes are made on the leader; send them there".into(),
            },
            RaftError::APIError(ClientWriteError::LogEntryDiscarded(forward)) => {
                ApiError::OutcomeUnknown(format!(
                    "{} lost the lead before the membership change committed; see \
                     `fleetctl status` on {} before trying again",
                    self.name,
                    forward
                        .leader_node
                        .map_or_else(|| "the new leader".into(), |p| p.name)
                ))
            }
            other => ApiError::Internal(other.to_string()),
        }
    }

    fn membership_reply(&self, message: String) -> wire::MembershipReply {
        let metrics = self.raft.metrics().borrow_watched().clone();
        let membership = metrics.membership_config.membership();
        let name = |id: &u64| {
            membership
                .get_node(id)
                .map_or_else(|| id.to_string(), |p| p.name.clone())
        };
        wire::MembershipReply {
            voters: membership.voter_ids().map(|id| name(&id)).collect(),
            learners: membership.learner_ids().map(|id| name(&id)).collect(),
            message,
        }
    }
}

fn outcome_result(outcome: CommandOutcome) -> Result<Response, RuleViolation> {
    outcome.result.unwrap_or(Ok(Response::Done))
}

fn state_name(state: ServerState) -> &'static str {
    match state {
        ServerState::Leader => "leader",
        ServerState::Follower => "follower",
        ServerState::Candidate => "candidate",
        ServerState::Learner => "learner",
        ServerState::Shutdown => "shutdown",
    }
}

/// The settings of a fleet whose members are `names`, in the order the config lists
/// them: the seeds' defaults where the names are the seeds' (Beast, 5070, Mac).
fn default_settings(fleet: &str, names: &[String]) -> Result<FleetSettings, ApiError> {
    let mut settings = FleetSettings::default_for(fleet);
    let seeds: BTreeSet<&str> = ["beast", "5070", "mac"].into();
    let given: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    if given != seeds {
        let nodes = names
            .iter()
            .map(|n| NodeName::new(n.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ApiError::BadRequest(e.to_string()))?;
        settings.hierarchy = nodes.clone();
        settings.note_chain = nodes;
        settings.specialties.clear();
    }
    Ok(settings)
}
