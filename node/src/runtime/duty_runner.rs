//! The duty runner: carries out what this node owes the fleet — its agent's inputs,
//! the notes it must write, the notifications it must deliver as primary, the
//! messages to hand to its gateway.
//!
//! It is level-triggered: after every applied command (and once a second) it reads
//! [`FleetState::duties_of`](crate::state::FleetState::duties_of) and starts a task
//! for each duty it has not started yet. A duty ends when the state records it done
//! (an input committed, notes confirmed, a delivery settled), so a restart, a
//! failover or a lost task never loses one: the duty is still in the state, and the
//! next reading starts it again. Each task commits its result as a command through
//! [`FleetNode::propose`], so the leader orders it like any other write.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use super::fleet_node::{FleetNode, wall_clock_ms};
use super::message_relay::relay_message;
use crate::agent::{self, AgentConfig, AgentError, InputRequest};
use crate::api::error::ApiError;
use crate::api::query::{Query, QueryAnswer};
use crate::gateway::GatewayConfig;
use crate::notify::{self, Attempt, RetryPolicy, SinkConfig};
use crate::state::outbox::{Notification, NotificationId};
use crate::state::{Actor, DeliberationId, Duty, Phase, Request, RuleViolation};

/// How often duties are read even when nothing was applied (retries, deadlines).
const IDLE_CHECK: Duration = Duration::from_secs(1);
/// How long a failed notes write or commit waits before the duty is tried again.
const RETRY_LATER: Duration = Duration::from_secs(1);

/// What the duty runner needs from the node's config.
pub struct DutySettings {
    /// How this node's agent is asked for input, and its workspace (for notes).
    pub agent: AgentConfig,
    /// Where this node delivers notifications when it is primary.
    pub sinks: Vec<SinkConfig>,
    /// Backoff between delivery attempts.
    pub retry: RetryPolicy,
    /// Where messages relayed to this node's sessions go.
    pub gateway: GatewayConfig,
}

/// Whether a finished task's duty may be started again if it is still owed.
pub enum Finished {
    /// Done, or given up for this duty (an agent that did not answer abstains).
    Settled,
    /// Failed for a reason that may pass (no quorum, a disk error): try again.
    TryAgain,
}

/// Runs until the node's state stops applying (shutdown).
pub async fn run_duties(node: Arc<FleetNode>, settings: DutySettings) {
    let settings = Arc::new(settings);
    let http = notify::http_client();
    let sink_names: Vec<String> = settings.sinks.iter().map(|s| s.name.clone()).collect();
    let mut applied = node.state.subscribe();
    let mut started: BTreeSet<Duty> = BTreeSet::new();
    let mut running: JoinSet<(Duty, Finished)> = JoinSet::new();
    loop {
        let duties: BTreeSet<Duty> = node
            .state
            .read(|state| state.duties_of(&node.name, &sink_names))
            .into_iter()
            .collect();
        started.retain(|duty| duties.contains(duty));
        for duty in duties {
            if started.insert(duty.clone()) {
                let task = perform(node.clone(), settings.clone(), http.clone(), duty.clone());
                running.spawn(async move { (duty, task.await) });
            }
        }
        tokio::select! {
            changed = applied.changed() => if changed.is_err() { return },
            Some(done) = running.join_next() => {
                if let Ok((duty, Finished::TryAgain)) = done {
                    started.remove(&duty);
                }
            }
            () = tokio::time::sleep(IDLE_CHECK) => {}
        }
    }
}

async fn perform(
    node: Arc<FleetNode>,
    settings: Arc<DutySettings>,
    http: reqwest::Client,
    duty: Duty,
) -> Finished {
    match duty {
        Duty::Speak {
            deliberation,
            phase,
            deadline_ms,
        } => {
            speak(
                &node,
                &settings.agent,
                &http,
                deliberation,
                phase,
                deadline_ms,
            )
            .await
        }
        Duty::WriteNotes {
            deliberation,
            epoch,
            path,
        } => write_notes(&node, &settings.agent.workspace, deliberation, epoch, &path).await,
        Duty::Deliver {
            notification,
            sink,
            epoch,
        } => {
            let Some(sink) = settings.sinks.iter().find(|s| s.name == sink) else {
                return Finished::Settled;
            };
            deliver(&node, sink, &settings.retry, &http, notification, epoch).await
        }
        Duty::RelayMessage { message } => {
            relay_message(&node, &settings.gateway, &http, message).await
        }
    }
}

/// Asks the local agent for this phase's input and submits it as this node.
async fn speak(
    node: &FleetNode,
    agent_config: &AgentConfig,
    http: &reqwest::Client,
    id: DeliberationId,
    phase: Phase,
    deadline_ms: u64,
) -> Finished {
    let now = wall_clock_ms();
    let Ok(deliberation) = node.state.read(|state| state.deliberation(id).cloned()) else {
        return Finished::Settled;
    };
    let margin = agent_config.answer_margin_ms;
    let Some(wait_ms) = deadline_ms.checked_sub(now + margin).filter(|ms| *ms > 0) else {
        tracing::warn!(deliberation = %id, %phase, "no time left to ask the agent; it abstains");
        return Finished::Settled;
    };
    let request = InputRequest::new(&deliberation, &node.name, now);
    let answer =
        match agent::ask(agent_config, http, &request, Duration::from_millis(wait_ms)).await {
            Ok(answer) => answer,
            Err(AgentError::Manual) => return Finished::Settled,
            Err(error) => {
                tracing::warn!(deliberation = %id, %phase, error = %error, "agent gave no input");
                return Finished::Settled;
            }
        };
    // The round the agent was asked in: an answer that arrives after its phase ended
    // is refused rather than counted in the next one.
    let request_id = format!("agent:{}:{id}:{}", node.name, phase.round().unwrap_or(3));
    let submission = answer.into_submission(phase.round(), request_id);
    let request = Request::Submit {
        deliberation: id,
        submission,
    };
    match node.propose(Actor::Node(node.name.clone()), request).await {
        Ok(committed) => {
            if let Err(violation) = committed.result {
                tracing::warn!(deliberation = %id, %phase, rule = %violation, "agent input refused");
            } else {
                tracing::info!(deliberation = %id, %phase, "agent input committed");
            }
            Finished::Settled
        }
        Err(error) => {
            // The phase may still be open: the next reading asks again if it is.
            tracing::warn!(deliberation = %id, %phase, error = %error, "could not submit the agent's input");
            tokio::time::sleep(RETRY_LATER).await;
            Finished::TryAgain
        }
    }
}

/// Writes the replicated notes to the agent workspace, then confirms them with the
/// epoch they were assigned with. A confirmation refused because the notes went to
/// another note-taker removes the file again: one notes file per deliberation.
async fn write_notes(
    node: &FleetNode,
    workspace: &Path,
    id: DeliberationId,
    epoch: u64,
    relative: &str,
) -> Finished {
    let Ok(Some(markdown)) = node
        .state
        .read(|state| state.deliberation(id).map(|d| d.notes.markdown.clone()))
    else {
        return Finished::Settled;
    };
    let path = workspace.join(relative);
    let existed = path.exists();
    if let Err(error) = write_durably(&path, markdown.as_bytes()).await {
        tracing::error!(deliberation = %id, path = %path.display(), error = %error, "cannot write notes");
        tokio::time::sleep(RETRY_LATER).await;
        return Finished::TryAgain;
    }
    let request = Request::NotesWritten {
        deliberation: id,
        epoch,
    };
    match node.propose(Actor::Node(node.name.clone()), request).await {
        Ok(committed) => match committed.result {
            Ok(_) => {
                tracing::info!(deliberation = %id, path = %path.display(), "notes written");
                Finished::Settled
            }
            Err(violation @ RuleViolation::StaleEpoch { .. }) => {
                if !existed && let Err(error) = tokio::fs::remove_file(&path).await {
                    tracing::warn!(path = %path.display(), error = %error, "cannot remove notes written for a stale assignment");
                }
                tracing::info!(deliberation = %id, rule = %violation, "notes went to another note-taker");
                Finished::Settled
            }
            Err(violation) => {
                tracing::warn!(deliberation = %id, rule = %violation, "notes confirmation refused");
                Finished::Settled
            }
        },
        Err(error) => {
            tracing::warn!(deliberation = %id, error = %error, "could not confirm notes");
            tokio::time::sleep(RETRY_LATER).await;
            Finished::TryAgain
        }
    }
}

/// Writes `bytes` to `path` so that a crash leaves either the old file or the whole
/// new one: a temporary file, fsynced, renamed over, and the directory fsynced.
async fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let path = path.to_path_buf();
    let bytes = bytes.to_vec();
    tokio::task::spawn_blocking(move || {
        let directory = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
        std::fs::create_dir_all(&directory)?;
        let temporary = path.with_extension("md.tmp");
        {
            use std::io::Write as _;
            let mut file = std::fs::File::create(&temporary)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
        }
        std::fs::rename(&temporary, &path)?;
        std::fs::File::open(&directory)?.sync_all()
    })
    .await
    .map_err(std::io::Error::other)?
}

/// The notification, if it is still owed to `sink` by this node as primary of
/// `epoch` — asked of the leader (a linearizable read), not of this node's own copy:
/// a primary that was cut off and comes back with an old state must not send again
/// what its successor already delivered.
async fn still_owed(
    node: &FleetNode,
    id: NotificationId,
    sink: &str,
    epoch: u64,
) -> Result<Option<Notification>, ApiError> {
    let (answer, _) = node.read(&Query::Outbox, true, 0, Duration::ZERO).await?;
    let Ok(QueryAnswer::Outbox {
        primary,
        epoch: current,
        notifications,
    }) = answer
    else {
        return Ok(None);
    };
    if primary.as_ref() != Some(&node.name) || current != epoch {
        return Ok(None);
    }
    Ok(notifications
        .into_iter()
        .find(|n| n.id == id && !n.deliveries.get(sink).is_some_and(|d| d.is_settled())))
}

/// Delivers one notification to one sink as primary of `epoch`, committing each
/// attempt's result; stops when delivered, given up, or no longer primary.
async fn deliver(
    node: &FleetNode,
    sink: &SinkConfig,
    retry: &RetryPolicy,
    http: &reqwest::Client,
    id: NotificationId,
    epoch: u64,
) -> Finished {
    let mut attempts = node.state.read(|state| {
        state
            .outbox
            .notifications
            .get(&id)
            .and_then(|n| n.deliveries.get(&sink.name))
            .map_or(0, |d| d.attempts)
    });
    loop {
        let notification = match still_owed(node, id, &sink.name, epoch).await {
            Ok(Some(notification)) => notification,
            Ok(None) => return Finished::Settled,
            Err(error) => {
                tracing::warn!(notification = %id, sink = %sink.name, error = %error, "cannot confirm the delivery is still owed");
                tokio::time::sleep(RETRY_LATER).await;
                return Finished::TryAgain;
            }
        };
        let attempt = notify::attempt(sink, &notification, http).await;
        attempts += 1;
        let wait = match &attempt {
            Attempt::Retry { retry_after, .. } => retry.delay_after(attempts, *retry_after),
            Attempt::Delivered | Attempt::Permanent { .. } => None,
        };
        let give_up = matches!(attempt, Attempt::Retry { .. }) && wait.is_none();
        if give_up {
            tracing::warn!(notification = %id, sink = %sink.name, attempts, "giving up on a delivery");
        }
        let result = attempt.to_delivery_result(give_up);
        let request = Request::RecordDelivery {
            notification: id,
            sink: sink.name.clone(),
            result: result.clone(),
            epoch,
        };
        match node.propose(Actor::Node(node.name.clone()), request).await {
            Ok(committed) => {
                if let Err(violation) = committed.result {
                    // Most likely no longer primary: the new one delivers.
                    tracing::info!(notification = %id, sink = %sink.name, rule = %violation, "delivery not recorded");
                    return Finished::Settled;
                }
            }
            Err(error) => {
                tracing::warn!(notification = %id, sink = %sink.name, error = %error, "could not record a delivery");
                tokio::time::sleep(RETRY_LATER).await;
                return Finished::TryAgain;
            }
        }
        tracing::info!(notification = %id, sink = %sink.name, attempts, result = ?result, "notification attempt");
        match wait {
            Some(delay) => tokio::time::sleep(delay).await,
            None => return Finished::Settled,
        }
    }
}
