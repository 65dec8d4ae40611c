//! The QUIC transport (quinn, mutual TLS): the default path for Raft between nodes.
//!
//! One connection per peer, opened lazily and reused; one bidirectional stream per RPC,
//! carrying one request frame and one reply frame (`frame.rs`). Keep-alives and an idle
//! timeout make a dead peer's connection close, so the next call reconnects.
//!
//! # Layout
//! - this file: the settings both ends share (ALPN, keep-alive, stream limits).
//! - `quic/server.rs`: [`QuicServer`], the listening endpoint.
//! - `quic/connector.rs`: [`QuicConnector`], the one client endpoint of a node.
//! - `quic/client.rs`: [`QuicClient`], calls to one peer.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use quinn::{IdleTimeout, TransportConfig, VarInt};

mod client;
mod connector;
mod server;

pub use client::QuicClient;
pub use connector::QuicConnector;
pub use server::QuicServer;

/// The ALPN protocol both ends require. It names the frame format's version, so a node
/// of an incompatible build fails the handshake instead of misreading frames.
pub(crate) const ALPN_PROTOCOL: &[u8] = b"fleet-raft/1";

/// How often an idle connection is pinged, so NATs keep it open and a dead peer is seen.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_millis(750);

/// How long a connection may hear nothing before it is closed: a dead peer is noticed
/// within this time, and the next call opens a new connection — which fails at once
/// while the peer is down, so Raft sees it as unreachable and backs off.
const IDLE_TIMEOUT: Duration = Duration::from_secs(3);

/// Concurrent RPC streams one peer may have open on a connection; further calls wait
/// for a free stream (within their timeout) rather than fail.
const STREAMS_PER_CONNECTION_MAX: u32 = 256;

/// The application close code for a peer whose certificate names no valid node.
pub(crate) const CLOSE_CODE_REFUSED: VarInt = VarInt::from_u32(1);

/// The application close code when a server shuts down.
pub(crate) const CLOSE_CODE_SHUTDOWN: VarInt = VarInt::from_u32(0);

/// The transport settings of every Fleet QUIC connection, on either end.
pub(crate) fn transport_config() -> Arc<TransportConfig> {
    let mut config = TransportConfig::default();
    config
        .keep_alive_interval(Some(KEEP_ALIVE_INTERVAL))
        .max_idle_timeout(Some(
            IdleTimeout::try_from(IDLE_TIMEOUT).expect("3 s is a valid QUIC idle timeout"),
        ))
        .max_concurrent_bidi_streams(VarInt::from_u32(STREAMS_PER_CONNECTION_MAX))
        // RPCs use bidirectional streams only.
        .max_concurrent_uni_streams(VarInt::from_u32(0));
    Arc::new(config)
}

/// A TLS setup error as an `io::Error`, naming what to fix.
pub(crate) fn tls_setup_error(side: &str, error: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("the QUIC {side}'s TLS config cannot be used for QUIC (it needs TLS 1.3): {error}"),
    )
}
