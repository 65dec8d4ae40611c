//! `QuicClient`: Raft RPCs to one peer over one reused QUIC connection, a stream per call.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use quinn::{Connection, ConnectionError, Endpoint, ReadError, ReadToEndError, WriteError};
use tokio::sync::Mutex;
use tokio::time::{Instant, timeout_at};
use tracing::{debug, info, instrument};

use crate::transport::frame::{
    FRAME_MAX_BYTES, PAYLOAD_MAX_BYTES, ReplyStatus, decode_reply, encode_request,
};
use crate::transport::peer_name::NODE_NAME_DNS_SUFFIX;
use crate::transport::{RpcClient, RpcKind, TransportError};

/// Calls one peer over QUIC. Made by [`QuicConnector::client`](super::QuicConnector::client).
///
/// The connection is opened on the first call and reused by every later one, concurrent
/// calls included; when it has closed (the peer restarted, or went silent past the idle
/// timeout) or a call on it timed out with nothing at all received on it meanwhile,
/// the next call opens a new one.
pub struct QuicClient {
    endpoint: Endpoint,
    peer_name: String,
    server_name: String,
    addr: SocketAddr,
    /// The open connection, if any. Held across a connect so concurrent first calls
    /// share one handshake.
    connection: Mutex<Option<Connection>>,
}

/// Why one request/reply exchange on a stream failed.
enum ExchangeError {
    /// The connection is gone; `opening` says whether it failed before any byte was sent.
    ConnectionLost {
        error: ConnectionError,
        opening: bool,
    },
    Remote(String),
    Protocol(String),
}

impl QuicClient {
    pub(super) fn new(endpoint: Endpoint, peer_name: &str, addr: SocketAddr) -> QuicClient {
        QuicClient {
            endpoint,
            peer_name: peer_name.to_owned(),
            server_name: format!("{peer_name}{NODE_NAME_DNS_SUFFIX}"),
            addr,
            connection: Mutex::new(None),
        }
    }

    /// The peer's node name.
    pub fn peer_name(&self) -> &str {
        &self.peer_name
    }

    /// The peer's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Opens the connection to the peer unless one is open, waiting at most `within`.
    /// A peer that cannot be reached in that time is [`TransportError::Unreachable`].
    pub async fn connect(&self, within: Duration) -> Result<(), TransportError> {
        self.connection_by(Instant::now() + within, within)
            .await
            .map(|_| ())
    }

    /// The open connection (and whether it was reused), or a new one by `deadline`.
    async fn connection_by(
        &self,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<(Connection, bool), TransportError> {
        match timeout_at(deadline, self.connection()).await {
            Ok(result) => result,
            Err(_) => Err(self.unreachable(format!("no QUIC connection within {timeout:?}"))),
        }
    }

    async fn connection(&self) -> Result<(Connection, bool), TransportError> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            match connection.close_reason() {
                None => return Ok((connection.clone(), true)),
                Some(reason) => debug!(reason = %reason, "QUIC connection closed; reconnecting"),
            }
        }
        *slot = None;
        let connecting = self
            .endpoint
            .connect(self.addr, &self.server_name)
            .map_err(|e| self.unreachable(format!("cannot start a QUIC connection: {e}")))?;
        let connection = connecting
            .await
            .map_err(|e| self.unreachable(format!("QUIC handshake failed: {e}")))?;
        info!(peer = %self.peer_name, addr = %self.addr, "connected to peer over QUIC");
        *slot = Some(connection.clone());
        Ok((connection, false))
    }

    /// Drops `connection` from the slot if it is still the one there.
    async fn forget(&self, connection: &Connection) {
        let mut slot = self.connection.lock().await;
        if slot
            .as_ref()
            .is_some_and(|open| open.stable_id() == connection.stable_id())
        {
            *slot = None;
        }
    }

    // A span per call at debug level: enabled at info, it would cost every write.
    #[instrument(level = "debug", skip_all, fields(peer = %self.peer_name, %kind, bytes = payload.len()))]
    async fn call_by(
        &self,
        kind: RpcKind,
        payload: Bytes,
        timeout: Duration,
    ) -> Result<Bytes, TransportError> {
        if payload.len() > PAYLOAD_MAX_BYTES {
            return Err(self.protocol(format!(
                "the {kind} request of {} bytes exceeds the frame limit of {PAYLOAD_MAX_BYTES}",
                payload.len()
            )));
        }
        let deadline = Instant::now() + timeout;
        let frame = Bytes::from(encode_request(kind, &payload));
        let mut retried = false;
        loop {
            let (connection, reused) = self.connection_by(deadline, timeout).await?;
            let received_before = connection.stats().udp_rx.datagrams;
            let exchanged = match timeout_at(deadline, exchange(&connection, frame.clone())).await {
                Ok(exchanged) => exchanged,
                Err(_) => {
                    // A peer that restarted never answers on the old connection, which
                    // lingers until the idle timeout: the next call opens a new one.
                    // Calls still running on the old one keep it until they end. A
                    // peer that is only slow (busy with a large entry) still sends
                    // packets on it: that connection is kept.
                    if connection.stats().udp_rx.datagrams == received_before {
                        self.forget(&connection).await;
                    }
                    return Err(TransportError::Timeout {
                        peer: self.peer_name.clone(),
                        kind,
                        timeout,
                    });
                }
            };
            return match exchanged {
                Ok(reply) => Ok(reply),
                Err(ExchangeError::ConnectionLost { error, opening }) => {
                    self.forget(&connection).await;
                    // A reused connection may have closed since it was checked; nothing
                    // was sent on it yet, so one attempt on a fresh connection is safe.
                    if reused && opening && !retried {
                        retried = true;
                        debug!(error = %error, "reused QUIC connection had closed; retrying");
                        continue;
                    }
                    Err(self.unreachable(format!("QUIC connection lost: {error}")))
                }
                Err(ExchangeError::Remote(message)) => Err(TransportError::Remote {
                    peer: self.peer_name.clone(),
                    kind,
                    message,
                }),
                Err(ExchangeError::Protocol(reason)) => Err(self.protocol(reason)),
            };
        }
    }

    fn unreachable(&self, reason: String) -> TransportError {
        TransportError::Unreachable {
            peer: self.peer_name.clone(),
            reason,
        }
    }

    fn protocol(&self, reason: String) -> TransportError {
        TransportError::Protocol {
            peer: self.peer_name.clone(),
            reason,
        }
    }
}

/// Sends one request frame on a new stream and reads the one reply frame.
async fn exchange(connection: &Connection, frame: Bytes) -> Result<Bytes, ExchangeError> {
    let (mut send, mut recv) =
        connection
            .open_bi()
            .await
            .map_err(|error| ExchangeError::ConnectionLost {
                error,
                opening: true,
            })?;
    match send.write_chunk(frame).await {
        Ok(()) => {
            // Only fails if the stream was already finished or reset, which it is not.
            let _ = send.finish();
        }
        // The peer stopped reading because it refused the request; its reply says why.
        Err(WriteError::Stopped(_)) => {}
        Err(WriteError::ConnectionLost(error)) => {
            return Err(ExchangeError::ConnectionLost {
                error,
                opening: false,
            });
        }
        Err(error) => {
            return Err(ExchangeError::Protocol(format!(
                "cannot send the request: {error}"
            )));
        }
    }
    let reply = match recv.read_to_end(FRAME_MAX_BYTES).await {
        Ok(reply) => Bytes::from(reply),
        Err(ReadToEndError::TooLong) => {
            return Err(ExchangeError::Protocol(format!(
                "the reply exceeds the frame limit of {PAYLOAD_MAX_BYTES} payload bytes"
            )));
        }
        Err(ReadToEndError::Read(ReadError::ConnectionLost(error))) => {
            return Err(ExchangeError::ConnectionLost {
                error,
                opening: false,
            });
        }
        Err(ReadToEndError::Read(error)) => {
            return Err(ExchangeError::Protocol(format!(
                "cannot read the reply: {error}"
            )));
        }
    };
    let (status, payload) = decode_reply(reply).map_err(ExchangeError::Protocol)?;
    match status {
        ReplyStatus::Ok => Ok(payload),
        ReplyStatus::RemoteError => Err(ExchangeError::Remote(
            String::from_utf8_lossy(&payload).into_owned(),
        )),
        ReplyStatus::Refused => Err(ExchangeError::Protocol(format!(
            "the peer refused the request: {}",
            String::from_utf8_lossy(&payload)
        ))),
    }
}

impl RpcClient for QuicClient {
    fn call(
        &self,
        kind: RpcKind,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Bytes, TransportError>> {
        Box::pin(self.call_by(kind, payload, timeout))
    }
}

impl std::fmt::Debug for QuicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicClient")
            .field("peer_name", &self.peer_name)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}
