//! `fleet-proto`: Fleet's wire types, generated from `proto/*.proto` at build time.
//!
//! *API Boundary:* nothing outside the edges of `fleetd` and `fleetctl` sees these
//! types; the domain has its own, and conversions sit in one place in the node.

/// The client API of a node (`proto/fleet.proto`).
pub mod api {
    tonic::include_proto!("fleet.api.v1");
}

/// Raft traffic between nodes (`proto/raft.proto`).
pub mod raft {
    tonic::include_proto!("fleet.raft.v1");
}
