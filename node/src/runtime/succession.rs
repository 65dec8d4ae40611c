//! `Succession`: the fast path of a failover (R2). When the Raft leader falls silent,
//! the follower that the hierarchy names next — the *successor*, the highest member
//! other than the leader that is committed healthy — stands for election as soon as
//! the leader's lease has run out on it, instead of waiting a further randomized
//! election timeout on top of the lease as every follower otherwise does.
//!
//! Only the successor takes the fast path, so two followers do not split the vote;
//! every other follower keeps openraft's randomized timer, which still elects someone
//! when the successor is down as well. The successor is also the node the roles move
//! to, so leadership lands where the health monitor would hand it anyway.
//!
//! The campaign is a pre-vote first: a successor that is itself cut off asks, is
//! refused (or hears nothing), and does not raise its term. A voter refuses while its
//! own lease of the old leader still runs, so a live leader is never unseated by this.
//! A round that elected nobody is tried again once every answer to it is in (a vote
//! RPC's timeout later): a pre-vote round stays invisible to the node's metrics until
//! it is granted, so a retry sent while its answers are on their way can land just
//! after they made the node a candidate, and would then start a second campaign a term
//! later that supersedes the first. Raft's safety does not rest on any of these
//! timings, only how soon a new leader is elected does.

use std::sync::Arc;
use std::time::Duration;

use openraft::ServerState;
use openraft::async_runtime::WatchReceiver;
use tokio::time::{Instant, sleep, sleep_until};

use super::fleet_node::FleetNode;
use crate::raft::{LeaderContact, node_id};

/// When the successor stands, derived from the Raft timers.
#[derive(Clone, Copy, Debug)]
pub struct SuccessionSettings {
    /// How long a leader's contact holds a follower's vote (openraft's leader lease:
    /// `election_timeout_max_ms`).
    pub lease: Duration,
    /// Waited beyond the lease, so the other voters' leases (which started when the
    /// same heartbeat reached them, a little later or earlier) have run out as well.
    pub margin: Duration,
    /// How soon a campaign that elected nobody is tried again: once its pre-vote
    /// requests have been answered or have timed out (openraft gives each the minimum
    /// election timeout), and a margin more.
    pub retry: Duration,
    /// How often a node that should not stand looks again.
    pub heartbeat: Duration,
}

impl SuccessionSettings {
    /// The settings for a heartbeat interval and the election timeouts, in ms.
    pub fn from_timers(
        heartbeat_ms: u64,
        election_timeout_min_ms: u64,
        election_timeout_max_ms: u64,
    ) -> Self {
        let margin = Duration::from_millis((heartbeat_ms / 4).max(1));
        Self {
            lease: Duration::from_millis(election_timeout_max_ms),
            margin,
            retry: Duration::from_millis(election_timeout_min_ms) + margin,
            heartbeat: Duration::from_millis(heartbeat_ms),
        }
    }
}

/// Runs until Raft shuts down.
pub async fn run_succession(
    node: Arc<FleetNode>,
    contact: LeaderContact,
    settings: SuccessionSettings,
) {
    loop {
        let Some(last) = contact.last() else {
            sleep(settings.lease).await;
            continue;
        };
        let due = last + settings.lease + settings.margin;
        if Instant::now() < due {
            sleep_until(due).await;
            continue;
        }
        if should_stand(&node) {
            tracing::info!(
                silent_ms = last.elapsed().as_millis() as u64,
                "the leader is silent past its lease; the successor stands"
            );
            if node.raft.trigger().elect(true).await.is_err() {
                return;
            }
            sleep(settings.retry).await;
        } else {
            // Leading, campaigning, or not the successor: look again a heartbeat on
            // (a new leader's contact moves the deadline on by then).
            sleep(settings.heartbeat).await;
        }
    }
}

/// Whether this node follows a leader that it should succeed.
fn should_stand(node: &FleetNode) -> bool {
    let metrics = node.raft.metrics().borrow_watched().clone();
    if metrics.state != ServerState::Follower {
        return false;
    }
    let Some(leader) = metrics.current_leader else {
        return false;
    };
    let is_voter = metrics
        .membership_config
        .membership()
        .voter_ids()
        .any(|id| id == metrics.id);
    if leader == metrics.id || !is_voter {
        return false;
    }
    node.state.read(|state| {
        let Some(settings) = state.settings.as_ref() else {
            return false;
        };
        let Some(leader) = settings
            .hierarchy
            .iter()
            .find(|name| node_id(name.as_str()) == leader)
        else {
            return false;
        };
        state.roles.successor(settings, leader) == Some(&node.name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_campaign_is_tried_again_only_after_its_vote_requests_have_timed_out() {
        // The defaults: a heartbeat of 100 ms, election timeouts of 200–400 ms.
        let settings = SuccessionSettings::from_timers(100, 200, 400);
        assert_eq!(settings.lease, Duration::from_millis(400));
        assert_eq!(settings.margin, Duration::from_millis(25));
        // openraft times a (pre-)vote request out after the minimum election timeout.
        assert!(settings.retry > Duration::from_millis(200), "{settings:?}");
        assert_eq!(settings.heartbeat, Duration::from_millis(100));
    }
}
