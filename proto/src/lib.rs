//! `fleet-proto`: Fleet's wire types, generated from `proto/*.proto` at build time.
//!
//! *API Boundary:* nothing outside the edges of `fleetd` and `fleetctl` sees these
//! types; the domain has its own, and conversions sit in one place in the node.

/// Raft traffic between nodes (`proto/raft.proto`).
pub mod raft {
    tonic::include_proto!("fleet.raft.v1");
}
