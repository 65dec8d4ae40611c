//! The gRPC transport (tonic over TLS): the fallback for Raft when UDP does not get
//! through, served on the node's API port next to the client API.
//!
//! Each Raft RPC kind is one unary method of `fleet.raft.v1.RaftTransport` carrying a
//! `RaftMessage`; appends also go, one at a time, on a long-lived `AppendStream` per
//! peer. A handler's failure travels in the reply's `error` field, so a gRPC `Status`
//! always means the call itself failed.
//!
//! # Layout
//! - this file: what both ends share (encoding version, message size bound).
//! - `grpc/service.rs`: [`GrpcRaftService`], the server side.
//! - `grpc/client.rs`: [`GrpcClient`], calls to one peer.
//! - `grpc/append_stream.rs`: the client's end of an append stream.

mod append_stream;
mod client;
mod service;

pub use client::GrpcClient;
pub use service::GrpcRaftService;

use super::PAYLOAD_MAX_BYTES;

/// The payload encoding version this build sends and accepts (`RaftMessage.encoding_version`).
pub(crate) const ENCODING_VERSION: u32 = 1;

/// The largest encoded `RaftMessage`: the payload limit plus room for the envelope
/// (version, name, error message). tonic's default of 4 MiB would refuse snapshots.
pub(crate) const MESSAGE_MAX_BYTES: usize = PAYLOAD_MAX_BYTES + 64 * 1024;
