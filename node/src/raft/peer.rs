//! `Peer`: a member as Raft's membership records it — its name and where to reach it.

use serde::{Deserialize, Serialize};

/// A fleet member's name and addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peer {
    /// The node's name, as in its certificate.
    pub name: String,
    /// Where its Raft transport listens (`host:port`; QUIC on UDP, gRPC on TCP).
    pub raft_addr: String,
    /// Where its client API listens (`host:port`, gRPC over TLS).
    pub api_addr: String,
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.name, self.raft_addr)
    }
}
