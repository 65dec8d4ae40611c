//! `FleetSettings`: the replicated, fleet-wide settings every node must agree on.
//!
//! Node-local settings (addresses, certificates, sinks) live in a node's config file;
//! what shapes the protocol's outcome (the hierarchy, the note-taker chain, the phase
//! length, specialties) is committed through Raft so every node applies the same
//! rules. `validate()` names the field and the rule for every bad value.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::error::{RuleViolation, join_names};
use super::limits::{
    NAME_BYTES_MAX, NODES_MAX, PHASE_MS_MAX, PHASE_MS_MIN, SPECIALTIES_PER_NODE_MAX,
};
use super::node_name::NodeName;

/// Settings of the whole fleet, set at bootstrap and changed only through commands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetSettings {
    /// The fleet's name; part of every notification's idempotency key.
    pub fleet: String,
    /// Primary order (R1): the first healthy node is primary. Default `beast, 5070, mac`.
    pub hierarchy: Vec<NodeName>,
    /// Note-taker order (R2): the first healthy node takes notes. Default `beast, mac, 5070`.
    pub note_chain: Vec<NodeName>,
    /// What each node is the specialist for (R3), as lowercase words or phrases.
    pub specialties: BTreeMap<NodeName, Vec<String>>,
    /// Length of each deliberation phase; seed 002 allows at most one minute.
    pub phase_ms: u64,
    /// How long a node that came back must stay healthy before it takes a role back.
    pub failback_hold_ms: u64,
    /// How long a published session lives without being published again.
    pub session_ttl_ms: u64,
    /// Age after which an unacknowledged bulletin item is flagged stale (seed 000: 48 h).
    pub bulletin_stale_ms: u64,
}

impl FleetSettings {
    /// The settings of the fleet in the seeds: Beast, 5070 and Mac.
    pub fn default_for(fleet: &str) -> Self {
        let node = |name: &str| NodeName::new(name).expect("built-in node name is valid");
        let specialties = BTreeMap::from([
            (
                node("beast"),
                vec!["infrastructure".into(), "security".into()],
            ),
            (node("5070"), vec!["linux".into(), "services".into()]),
            (node("mac"), vec!["macos".into(), "apple".into()]),
        ]);
        Self {
            fleet: fleet.into(),
            hierarchy: vec![node("beast"), node("5070"), node("mac")],
            note_chain: vec![node("beast"), node("mac"), node("5070")],
            specialties,
            phase_ms: PHASE_MS_MAX,
            failback_hold_ms: 10_000,
            session_ttl_ms: 90_000,
            bulletin_stale_ms: 48 * 3_600_000,
        }
    }

    /// The fleet's members: the nodes of the hierarchy.
    pub fn members(&self) -> &[NodeName] {
        &self.hierarchy
    }

    /// Whether `node` is a member.
    pub fn is_member(&self, node: &NodeName) -> bool {
        self.hierarchy.contains(node)
    }

    /// A node's place in the hierarchy (0 = highest), if it is a member.
    pub fn rank(&self, node: &NodeName) -> Option<usize> {
        self.hierarchy.iter().position(|n| n == node)
    }

    /// Fails with the member list when `node` is not a member.
    pub fn require_member(&self, node: &NodeName) -> Result<(), RuleViolation> {
        if self.is_member(node) {
            Ok(())
        } else {
            Err(RuleViolation::UnknownNode {
                node: node.to_string(),
                members: join_names(&self.hierarchy),
            })
        }
    }

    /// Checks every field; the error names the field and the rule it broke.
    pub fn validate(&self) -> Result<(), RuleViolation> {
        let fleet_ok = !self.fleet.is_empty()
            && self.fleet.len() <= NAME_BYTES_MAX
            && self
                .fleet
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !fleet_ok {
            return Err(RuleViolation::invalid(
                "fleet",
                format!(
                    "`{}` must be 1 to {NAME_BYTES_MAX} characters of letters, digits, `-` and `_`",
                    self.fleet
                ),
            ));
        }
        check_chain("hierarchy", &self.hierarchy)?;
        check_chain("note_chain", &self.note_chain)?;
        let hierarchy: BTreeSet<&NodeName> = self.hierarchy.iter().collect();
        let chain: BTreeSet<&NodeName> = self.note_chain.iter().collect();
        if hierarchy != chain {
            return Err(RuleViolation::invalid(
                "note_chain",
                format!(
                    "must name the same nodes as the hierarchy ({}), in any order; it names {}",
                    join_names(&self.hierarchy),
                    join_names(&self.note_chain)
                ),
            ));
        }
        for (node, specialties) in &self.specialties {
            self.require_member(node).map_err(|_| {
                RuleViolation::invalid("specialties", format!("`{node}` is not in the hierarchy"))
            })?;
            check_specialties(specialties)?;
        }
        if !(PHASE_MS_MIN..=PHASE_MS_MAX).contains(&self.phase_ms) {
            return Err(RuleViolation::invalid(
                "phase_ms",
                format!(
                    "{} is outside {PHASE_MS_MIN}..={PHASE_MS_MAX}: a phase lasts at most one minute (seed 002)",
                    self.phase_ms
                ),
            ));
        }
        if self.session_ttl_ms == 0 {
            return Err(RuleViolation::invalid("session_ttl_ms", "must be above 0"));
        }
        if self.bulletin_stale_ms == 0 {
            return Err(RuleViolation::invalid(
                "bulletin_stale_ms",
                "must be above 0",
            ));
        }
        Ok(())
    }
}

fn check_chain(field: &str, chain: &[NodeName]) -> Result<(), RuleViolation> {
    if chain.is_empty() {
        return Err(RuleViolation::invalid(field, "must name at least one node"));
    }
    if chain.len() > NODES_MAX {
        return Err(RuleViolation::invalid(
            field,
            format!(
                "names {} nodes; a fleet has at most {NODES_MAX}",
                chain.len()
            ),
        ));
    }
    let mut seen = BTreeSet::new();
    for node in chain {
        if !seen.insert(node) {
            return Err(RuleViolation::invalid(
                field,
                format!("names `{node}` twice"),
            ));
        }
    }
    Ok(())
}

/// Checks a node's declared specialties: lowercase words, bounded in number and size.
pub(crate) fn check_specialties(specialties: &[String]) -> Result<(), RuleViolation> {
    if specialties.len() > SPECIALTIES_PER_NODE_MAX {
        return Err(RuleViolation::invalid(
            "specialties",
            format!(
                "{} given; at most {SPECIALTIES_PER_NODE_MAX} per node",
                specialties.len()
            ),
        ));
    }
    for specialty in specialties {
        let ok = !specialty.trim().is_empty()
            && specialty.len() <= NAME_BYTES_MAX
            && specialty
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == ' ' || c == '-');
        if !ok {
            return Err(RuleViolation::invalid(
                "specialties",
                format!("`{specialty}` must be lowercase words (a-z, 0-9, space, `-`)"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_fleet_is_valid() {
        FleetSettings::default_for("home").validate().unwrap();
    }

    #[test]
    fn a_phase_longer_than_a_minute_is_refused_by_name() {
        let mut settings = FleetSettings::default_for("home");
        settings.phase_ms = 61_000;
        let error = settings.validate().unwrap_err().to_string();
        assert!(
            error.contains("phase_ms") && error.contains("one minute"),
            "{error}"
        );
    }

    #[test]
    fn the_note_chain_must_name_the_hierarchy_nodes() {
        let mut settings = FleetSettings::default_for("home");
        settings.note_chain.pop();
        let error = settings.validate().unwrap_err().to_string();
        assert!(error.contains("note_chain"), "{error}");
    }

    #[test]
    fn a_node_named_twice_is_refused() {
        let mut settings = FleetSettings::default_for("home");
        settings.hierarchy.push(NodeName::new("beast").unwrap());
        assert!(
            settings
                .validate()
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
    }
}
