//! Node-to-node transports for Raft RPCs: QUIC (the default) and gRPC over TLS (the
//! fallback when UDP does not get through).
//!
//! A transport moves opaque payloads: the Raft layer encodes openraft's requests and
//! responses, a transport carries `(kind, payload)` to a peer and brings the reply
//! back. Both transports authenticate both ends with the fleet's certificates; the
//! handler learns the caller's node name from its certificate, never from the payload.
//!
//! # Layout
//! - this file: the contract both transports implement ([`RpcHandler`], [`RpcClient`]).
//! - [`quic`]: QUIC with quinn: one connection per peer, one bidirectional stream per RPC
//!   ([`QuicServer`], [`QuicConnector`], [`QuicClient`]); `frame.rs` holds its frames.
//! - [`grpc`]: the `fleet.raft.v1.RaftTransport` gRPC service ([`GrpcRaftService`]) and
//!   its client ([`GrpcClient`]).
//! - [`auto`]: [`AutoClient`], QUIC first with a fallback to gRPC when UDP is blocked.
//! - `peer_name.rs`: the caller's node name from its certificate.
//!
//! # Architecture Invariant
//! A payload is never larger than [`PAYLOAD_MAX_BYTES`] on either transport; both ends
//! check it before they send and while they receive, so a peer cannot make a node
//! buffer more than that per RPC.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;

pub mod auto;
mod frame;
pub mod grpc;
pub mod isolation;
mod peer_name;
pub mod quic;

pub use auto::AutoClient;
pub use frame::PAYLOAD_MAX_BYTES;
pub use grpc::{GrpcClient, GrpcRaftService};
pub use isolation::Isolation;
pub use quic::{QuicClient, QuicConnector, QuicServer};

/// Which Raft RPC a payload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RpcKind {
    AppendEntries,
    Vote,
    InstallSnapshot,
    TransferLeader,
    PreVote,
}

impl RpcKind {
    /// The kind's code on the wire.
    pub fn code(self) -> u8 {
        match self {
            Self::AppendEntries => 1,
            Self::Vote => 2,
            Self::InstallSnapshot => 3,
            Self::TransferLeader => 4,
            Self::PreVote => 5,
        }
    }

    /// The kind for a wire code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Self::AppendEntries),
            2 => Some(Self::Vote),
            3 => Some(Self::InstallSnapshot),
            4 => Some(Self::TransferLeader),
            5 => Some(Self::PreVote),
            _ => None,
        }
    }
}

impl fmt::Display for RpcKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::AppendEntries => "append-entries",
            Self::Vote => "vote",
            Self::InstallSnapshot => "install-snapshot",
            Self::TransferLeader => "transfer-leader",
            Self::PreVote => "pre-vote",
        })
    }
}

/// Why an RPC did not return a reply.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// No connection could be made: the peer is down or cut off. Raft backs off.
    #[error("{peer} is unreachable: {reason}")]
    Unreachable { peer: String, reason: String },
    /// Connected, but no reply came in time.
    #[error("{peer} did not answer {kind} within {timeout:?}")]
    Timeout {
        peer: String,
        kind: RpcKind,
        timeout: Duration,
    },
    /// The peer's handler failed; its message is verbatim.
    #[error("{peer} failed {kind}: {message}")]
    Remote {
        peer: String,
        kind: RpcKind,
        message: String,
    },
    /// The bytes on the wire were not what the protocol expects.
    #[error("protocol error with {peer}: {reason}")]
    Protocol { peer: String, reason: String },
}

/// Serves Raft RPCs that arrive over any transport.
pub trait RpcHandler: Send + Sync + 'static {
    /// Handles one RPC from `from` (the node name in the caller's certificate).
    /// An `Err` is sent back to the caller as [`TransportError::Remote`].
    fn handle(
        &self,
        from: String,
        kind: RpcKind,
        payload: Bytes,
    ) -> BoxFuture<'static, Result<Bytes, String>>;
}

/// Calls Raft RPCs on one peer.
pub trait RpcClient: Send + Sync + 'static {
    /// Sends one RPC and waits at most `timeout` for the reply.
    fn call(
        &self,
        kind: RpcKind,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Bytes, TransportError>>;
}
