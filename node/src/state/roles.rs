//! `Roles`: the committed primary and note-taker, their epoch, and the health they follow.
//!
//! R1: the primary is the first healthy node of the hierarchy; R2: the note-taker is the
//! first healthy node of its own chain. Both are decided here, from health the Raft
//! leader observed and committed, so every node agrees on who holds each role.
//!
//! Failover is immediate: when a holder is unhealthy, the first healthy node of the
//! chain takes the role at once. Failback is held back: a node ranked above the holder
//! must have stayed healthy for `failback_hold_ms` before it takes the role back, so a
//! flapping link does not make roles flap.
//!
//! *Invariant:* a holder is healthy whenever any node of its chain is, and every healthy
//! node ranked above it became healthy less than `failback_hold_ms` ago.
//!
//! Every change bumps `epoch`. A holder acts with the epoch it was given; an action
//! from a node that no longer holds the role, or that holds it again since a later
//! epoch, is refused as stale, so a primary cut off and come back cannot act on old
//! authority.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::error::RuleViolation;
use super::node_name::NodeName;
use super::settings::FleetSettings;

/// The two roles of the fleet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// Notifies the operator, drives deliberations, leads Raft (R1).
    Primary,
    /// Writes the deliberation notes (R2, D7).
    NoteTaker,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Primary => "primary",
            Self::NoteTaker => "note-taker",
        })
    }
}

/// The node holding a role and since when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleHolder {
    /// The node holding the role.
    pub node: NodeName,
    /// The epoch at which it took the role; older epochs are stale for it.
    pub since_epoch: u64,
    /// When it took the role (the leader's clock).
    pub since_ms: u64,
}

/// A node's health as the leader last committed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeHealth {
    /// Whether the leader hears from the node.
    pub healthy: bool,
    /// Since when the node has been in this state.
    pub since_ms: u64,
}

/// The committed roles and the health they were derived from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roles {
    /// Bumped on every role change; fences stale holders.
    pub epoch: u64,
    /// The primary (R1), if any node is healthy.
    pub primary: Option<RoleHolder>,
    /// The note-taker (R2), if any node is healthy.
    pub note_taker: Option<RoleHolder>,
    /// Health per member.
    pub health: BTreeMap<NodeName, NodeHealth>,
}

/// A committed change of roles.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleChange {
    /// The new epoch.
    pub epoch: u64,
    /// The primary after the change.
    pub primary: Option<NodeName>,
    /// The note-taker after the change.
    pub note_taker: Option<NodeName>,
    /// Whether the primary changed (the note-taker may have changed alone).
    pub primary_changed: bool,
    /// Whether the note-taker changed.
    pub note_taker_changed: bool,
}

impl Roles {
    /// Whether `node` is currently healthy.
    pub fn is_healthy(&self, node: &NodeName) -> bool {
        self.health.get(node).is_some_and(|h| h.healthy)
    }

    /// The primary's name, if any.
    pub fn primary(&self) -> Option<&NodeName> {
        self.primary.as_ref().map(|h| &h.node)
    }

    /// The note-taker's name, if any.
    pub fn note_taker(&self) -> Option<&NodeName> {
        self.note_taker.as_ref().map(|h| &h.node)
    }

    /// Who stands first if `leader` is lost: the highest node of the hierarchy, other
    /// than `leader`, that is committed healthy. This is also the node that would become
    /// primary, so a leadership that lands there needs no hand-over afterwards.
    pub fn successor<'a>(
        &self,
        settings: &'a FleetSettings,
        leader: &NodeName,
    ) -> Option<&'a NodeName> {
        settings
            .hierarchy
            .iter()
            .find(|node| *node != leader && self.is_healthy(node))
    }

    /// Marks `node` healthy or not at `now`; returns whether anything changed.
    pub fn set_health(&mut self, node: &NodeName, healthy: bool, now: u64) -> bool {
        match self.health.get_mut(node) {
            Some(health) if health.healthy == healthy => false,
            Some(health) => {
                *health = NodeHealth {
                    healthy,
                    since_ms: now,
                };
                true
            }
            None => {
                self.health.insert(
                    node.clone(),
                    NodeHealth {
                        healthy,
                        since_ms: now,
                    },
                );
                true
            }
        }
    }

    /// Applies a full health report: `healthy` are healthy, every other member is not.
    pub fn report_health(
        &mut self,
        members: &[NodeName],
        healthy: &BTreeSet<NodeName>,
        now: u64,
    ) -> bool {
        let mut changed = false;
        for node in members {
            changed |= self.set_health(node, healthy.contains(node), now);
        }
        changed
    }

    /// Forgets a node that left the fleet.
    pub fn forget(&mut self, node: &NodeName) {
        self.health.remove(node);
    }

    /// Re-derives both roles at `now`; returns the change if either holder changed.
    pub fn recompute(&mut self, settings: &FleetSettings, now: u64) -> Option<RoleChange> {
        let hold = settings.failback_hold_ms;
        let primary = self.choose(&settings.hierarchy, self.primary(), now, hold);
        let note_taker = self.choose(&settings.note_chain, self.note_taker(), now, hold);
        let primary_changed = primary.as_ref() != self.primary();
        let note_taker_changed = note_taker.as_ref() != self.note_taker();
        if !primary_changed && !note_taker_changed {
            return None;
        }
        self.epoch += 1;
        let holder = |node: NodeName| RoleHolder {
            node,
            since_epoch: self.epoch,
            since_ms: now,
        };
        if primary_changed {
            self.primary = primary.map(holder);
        }
        if note_taker_changed {
            self.note_taker = note_taker.map(holder);
        }
        Some(RoleChange {
            epoch: self.epoch,
            primary: self.primary().cloned(),
            note_taker: self.note_taker().cloned(),
            primary_changed,
            note_taker_changed,
        })
    }

    /// The holder `chain` should have now, given its current holder.
    fn choose(
        &self,
        chain: &[NodeName],
        current: Option<&NodeName>,
        now: u64,
        hold_ms: u64,
    ) -> Option<NodeName> {
        let current_is_healthy = current.is_some_and(|node| self.is_healthy(node));
        let mut healthy = chain.iter().filter(|node| self.is_healthy(node));
        if !current_is_healthy {
            // Failover: no wait, the first healthy node takes the role.
            return healthy.next().cloned();
        }
        // Failback: a higher-ranked node takes the role only after holding steady.
        healthy
            .find(|node| Some(*node) == current || self.healthy_for(node, now) >= hold_ms)
            .cloned()
    }

    fn healthy_for(&self, node: &NodeName, now: u64) -> u64 {
        self.health
            .get(node)
            .filter(|h| h.healthy)
            .map_or(0, |h| now.saturating_sub(h.since_ms))
    }

    /// The earliest time a pending failback becomes due, so the driver can tick then.
    pub fn next_failback_ms(&self, settings: &FleetSettings) -> Option<u64> {
        let due = |chain: &[NodeName], holder: Option<&NodeName>| -> Option<u64> {
            let holder = holder?;
            chain
                .iter()
                .take_while(|node| *node != holder)
                .filter_map(|node| self.health.get(node).filter(|h| h.healthy))
                .map(|h| h.since_ms.saturating_add(settings.failback_hold_ms))
                .min()
        };
        let primary = due(&settings.hierarchy, self.primary());
        let note_taker = due(&settings.note_chain, self.note_taker());
        primary.into_iter().chain(note_taker).min()
    }

    /// Refuses an action of `node` as holder of `role` with `epoch` unless it is current.
    pub fn check_fence(
        &self,
        role: Role,
        node: &NodeName,
        epoch: u64,
    ) -> Result<(), RuleViolation> {
        let holder = match role {
            Role::Primary => self.primary.as_ref(),
            Role::NoteTaker => self.note_taker.as_ref(),
        };
        match holder {
            Some(holder)
                if &holder.node == node && epoch >= holder.since_epoch && epoch <= self.epoch =>
            {
                Ok(())
            }
            _ => Err(RuleViolation::StaleEpoch {
                role: role.to_string(),
                actor: node.to_string(),
                presented: epoch,
                holder: holder.map_or_else(|| "nobody".into(), |h| h.node.to_string()),
                current: holder.map_or(self.epoch, |h| h.since_epoch),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str) -> NodeName {
        NodeName::new(name).unwrap()
    }

    fn fleet(hold_ms: u64) -> FleetSettings {
        let mut settings = FleetSettings::default_for("home");
        settings.failback_hold_ms = hold_ms;
        settings
    }

    fn healthy(names: &[&str]) -> BTreeSet<NodeName> {
        names.iter().map(|n| node(n)).collect()
    }

    #[test]
    fn beast_down_makes_5070_primary_and_mac_note_taker() {
        let settings = fleet(0);
        let mut roles = Roles::default();
        roles.report_health(settings.members(), &healthy(&["beast", "5070", "mac"]), 0);
        roles.recompute(&settings, 0);
        assert_eq!(roles.primary(), Some(&node("beast")));
        assert_eq!(roles.note_taker(), Some(&node("beast")));

        roles.report_health(settings.members(), &healthy(&["5070", "mac"]), 10);
        let change = roles.recompute(&settings, 10).unwrap();
        assert_eq!(change.primary, Some(node("5070")));
        assert_eq!(change.note_taker, Some(node("mac")));
        assert_eq!(change.epoch, 2);
    }

    #[test]
    fn the_successor_is_the_highest_healthy_member_other_than_the_leader() {
        let settings = fleet(0);
        let mut roles = Roles::default();
        roles.report_health(settings.members(), &healthy(&["beast", "5070", "mac"]), 0);
        assert_eq!(
            roles.successor(&settings, &node("beast")),
            Some(&node("5070"))
        );
        assert_eq!(
            roles.successor(&settings, &node("mac")),
            Some(&node("beast"))
        );

        roles.report_health(settings.members(), &healthy(&["beast", "mac"]), 10);
        assert_eq!(
            roles.successor(&settings, &node("beast")),
            Some(&node("mac"))
        );

        roles.report_health(settings.members(), &healthy(&["beast"]), 20);
        assert_eq!(roles.successor(&settings, &node("beast")), None);
    }

    #[test]
    fn failback_waits_for_the_hold_period_but_failover_does_not() {
        let settings = fleet(5_000);
        let mut roles = Roles::default();
        roles.report_health(settings.members(), &healthy(&["5070", "mac"]), 0);
        roles.recompute(&settings, 0);
        assert_eq!(roles.primary(), Some(&node("5070")));

        roles.report_health(
            settings.members(),
            &healthy(&["beast", "5070", "mac"]),
            1_000,
        );
        assert_eq!(
            roles.recompute(&settings, 1_000),
            None,
            "beast is back but not yet steady"
        );
        assert_eq!(roles.next_failback_ms(&settings), Some(6_000));
        assert_eq!(roles.recompute(&settings, 5_999), None);
        let change = roles.recompute(&settings, 6_000).unwrap();
        assert_eq!(change.primary, Some(node("beast")));
        assert_eq!(change.note_taker, Some(node("beast")));

        // Failover is immediate, whatever the hold period.
        roles.report_health(settings.members(), &healthy(&["5070", "mac"]), 6_001);
        assert_eq!(
            roles.recompute(&settings, 6_001).unwrap().primary,
            Some(node("5070"))
        );
    }

    #[test]
    fn a_stale_holder_is_fenced() {
        let settings = fleet(0);
        let mut roles = Roles::default();
        roles.report_health(settings.members(), &healthy(&["beast", "5070", "mac"]), 0);
        roles.recompute(&settings, 0);
        let beast_epoch = roles.epoch;
        roles
            .check_fence(Role::Primary, &node("beast"), beast_epoch)
            .unwrap();

        roles.report_health(settings.members(), &healthy(&["5070", "mac"]), 1);
        roles.recompute(&settings, 1);
        let error = roles
            .check_fence(Role::Primary, &node("beast"), beast_epoch)
            .unwrap_err();
        assert_eq!(error.code(), "stale_epoch");
        assert!(
            error.to_string().contains("the primary is now 5070"),
            "{error}"
        );

        // Beast returns: its old epoch stays stale even though it holds the role again.
        roles.report_health(settings.members(), &healthy(&["beast", "5070", "mac"]), 2);
        roles.recompute(&settings, 2);
        assert_eq!(roles.primary(), Some(&node("beast")));
        assert!(
            roles
                .check_fence(Role::Primary, &node("beast"), beast_epoch)
                .is_err()
        );
        roles
            .check_fence(Role::Primary, &node("beast"), roles.epoch)
            .unwrap();
    }

    #[test]
    fn nobody_holds_a_role_when_no_node_is_healthy() {
        let settings = fleet(0);
        let mut roles = Roles::default();
        roles.report_health(settings.members(), &healthy(&[]), 0);
        assert_eq!(roles.recompute(&settings, 0), None);
        assert_eq!(roles.primary(), None);
    }
}
