//! `HealthMonitor`: the leader's view of which members are up, committed to the state
//! so that roles follow it (R1, R2), and leadership handed to the primary once it is
//! healthy and caught up.
//!
//! A member is healthy while the leader has an acknowledgement from it younger than
//! `unhealthy_after`. A new leader presumes the member that led before it down — it
//! lost leadership without handing it over, so it crashed or was cut off — and every
//! other member healthy as committed until the grace period of one `unhealthy_after`
//! has passed without an acknowledgement. A member that comes back acknowledges the
//! next heartbeat and is healthy again; the state's failback hold keeps roles from
//! flapping.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use openraft::Instant as _;
use openraft::ServerState;
use openraft::async_runtime::WatchReceiver;

use super::fleet_node::FleetNode;
use crate::raft::node_id;
use crate::state::{Actor, NodeName, Request};

/// Tunables of the health monitor.
#[derive(Clone, Copy, Debug)]
pub struct HealthSettings {
    /// How often the leader looks.
    pub interval: Duration,
    /// A member with no acknowledgement for this long is unhealthy.
    pub unhealthy_after: Duration,
}

type RaftInstant = openraft::type_config::alias::InstantOf<crate::raft::FleetRaft>;

/// Runs until the node shuts down.
pub async fn run_health_monitor(node: Arc<FleetNode>, settings: HealthSettings) {
    let mut metrics = node.raft.metrics();
    let mut server = node.raft.server_metrics();
    let mut leading_since: Option<RaftInstant> = None;
    let mut presumed_down: Option<u64> = None;
    let mut last_leader: Option<u64> = None;
    let mut last_transfer: Option<RaftInstant> = None;
    loop {
        let snapshot = metrics.borrow_watched().clone();
        // Whether this leader's view of health still waits to be committed.
        let mut unsettled = false;
        if snapshot.state == ServerState::Leader {
            let now = RaftInstant::now();
            if leading_since.is_none() {
                leading_since = Some(now);
                presumed_down = last_leader.filter(|id| *id != snapshot.id);
            }
            let in_grace =
                leading_since.is_some_and(|since| now - since < settings.unhealthy_after);
            let heartbeats = snapshot.heartbeat.clone().unwrap_or_default();
            let membership = snapshot.membership_config.membership().clone();
            let (members, committed) = node.state.read(|state| {
                let members = state
                    .settings
                    .as_ref()
                    .map(|s| s.hierarchy.clone())
                    .unwrap_or_default();
                let committed: BTreeSet<NodeName> = members
                    .iter()
                    .filter(|n| state.roles.is_healthy(n))
                    .cloned()
                    .collect();
                (members, committed)
            });
            let mut healthy = BTreeSet::new();
            for member in &members {
                let id = node_id(member.as_str());
                let is_healthy = if id == snapshot.id {
                    true
                } else {
                    match heartbeats.get(&id).cloned().flatten() {
                        Some(acked) => (*acked).elapsed() < settings.unhealthy_after,
                        None if in_grace => committed.contains(member) && presumed_down != Some(id),
                        None => false,
                    }
                };
                if is_healthy && membership.get_node(&id).is_some() {
                    healthy.insert(member.clone());
                }
            }
            if !members.is_empty() && healthy != committed {
                let request = Request::ReportHealth {
                    healthy: healthy.clone(),
                };
                match node
                    .propose(Actor::Leader(node.name.clone()), request)
                    .await
                {
                    Ok(_) => tracing::info!(healthy = ?healthy, "health committed"),
                    Err(error) => {
                        unsettled = true;
                        tracing::debug!(error = %error, "health not committed");
                    }
                }
            }
            transfer_to_primary(&node, &snapshot, &mut last_transfer, settings).await;
        } else {
            leading_since = None;
        }
        if snapshot.current_leader.is_some() {
            last_leader = snapshot.current_leader;
        }
        // Every write changes the metrics; only a change of who leads or of the
        // membership (the server metrics, which change with nothing else) is looked at
        // at once, anything else at the next interval — unless a view of health waits
        // to be committed (a new leader's first report fails until its first entry
        // commits): then any change will do.
        let seen = leadership(&server.borrow_watched());
        let next_check = tokio::time::Instant::now() + settings.interval;
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(next_check) => break,
                changed = metrics.changed(), if unsettled => {
                    if changed.is_err() {
                        return;
                    }
                    break;
                }
                changed = server.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if leadership(&server.borrow_watched()) != seen {
                        break;
                    }
                }
            }
        }
    }
}

/// What makes the monitor look again at once: this node's Raft state, the leader it
/// knows, and the membership.
fn leadership(
    server: &openraft::metrics::RaftServerMetrics<crate::raft::FleetRaft>,
) -> (ServerState, Option<u64>, Option<u64>) {
    (
        server.state,
        server.current_leader,
        server.membership_config.log_id().map(|id| id.index),
    )
}

/// Hands leadership to the primary when it is not this node, is healthy and has
/// replicated everything; at most once per `unhealthy_after`.
async fn transfer_to_primary(
    node: &FleetNode,
    metrics: &openraft::RaftMetrics<crate::raft::FleetRaft>,
    last_transfer: &mut Option<RaftInstant>,
    settings: HealthSettings,
) {
    let Some(primary) = node.state.read(|s| s.roles.primary().cloned()) else {
        return;
    };
    if primary == node.name {
        return;
    }
    let target = node_id(primary.as_str());
    let caught_up = metrics
        .replication
        .as_ref()
        .and_then(|r| r.get(&target).cloned().flatten())
        .is_some_and(|matched| Some(matched.index) >= metrics.last_log_index);
    let now = RaftInstant::now();
    let recently = last_transfer.is_some_and(|at| now - at < settings.unhealthy_after);
    if caught_up && !recently {
        *last_transfer = Some(now);
        tracing::info!(to = %primary, "transferring leadership to the primary");
        if let Err(error) = node.raft.trigger().transfer_leader(target).await {
            tracing::warn!(error = %error, "leadership transfer");
        }
    }
}
