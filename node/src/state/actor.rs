//! `Actor`: who a command acts as, as authenticated at the edge.
//!
//! The API layer turns a caller's credentials into an actor: the operator's token is
//! the `Operator`; a node's local agent token is that `Node`, and nothing else (a bot
//! on Mac can never act as Beast); the Raft leader's own driver proposes as `Leader`
//! for the commands only the fleet itself may issue (health, ticks). The state
//! machine then decides what each actor may do.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::node_name::NodeName;

/// The authenticated author of a command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Actor {
    /// The human operator of the fleet.
    Operator,
    /// A node, or an agent on that node's machine acting as the node.
    Node(NodeName),
    /// The Raft leader's driver, reporting health and moving time on.
    Leader(NodeName),
}

impl Actor {
    /// The node this actor speaks for, if it is a node.
    pub fn node(&self) -> Option<&NodeName> {
        match self {
            Self::Node(node) => Some(node),
            Self::Operator | Self::Leader(_) => None,
        }
    }

    /// The name recorded as the author of events and bulletin items.
    pub fn author(&self) -> String {
        match self {
            Self::Operator => "operator".into(),
            Self::Node(node) | Self::Leader(node) => node.to_string(),
        }
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Operator => f.write_str("the operator"),
            Self::Node(node) => write!(f, "node {node}"),
            Self::Leader(node) => write!(f, "leader {node}"),
        }
    }
}
