//! `QuicServer`: accepts peers' QUIC connections and serves one RPC per stream.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use quinn::crypto::rustls::QuicServerConfig;
use quinn::{Connection, Endpoint, Incoming, ReadToEndError, RecvStream, SendStream};
use rustls::pki_types::CertificateDer;
use tokio::task::JoinHandle;
use tracing::{Instrument, debug, info, instrument, warn};

use super::{ALPN_PROTOCOL, CLOSE_CODE_REFUSED, CLOSE_CODE_SHUTDOWN, tls_setup_error};
use crate::transport::RpcHandler;
use crate::transport::frame::{
    FRAME_MAX_BYTES, PAYLOAD_MAX_BYTES, ReplyStatus, decode_request, encode_reply,
};
use crate::transport::peer_name::node_name_from_chain;

/// A listening QUIC endpoint that serves Raft RPCs to peers with a fleet certificate.
///
/// Dropping it (or [`QuicServer::close`]) closes every connection and stops accepting.
pub struct QuicServer {
    endpoint: Endpoint,
    local_addr: SocketAddr,
    accept_task: JoinHandle<()>,
}

impl QuicServer {
    /// Binds `listen` (UDP) and serves every peer's RPCs with `handler`.
    ///
    /// `tls` must require and verify client certificates against the fleet CA and offer
    /// TLS 1.3; its ALPN list is replaced by the Raft transport's. Must be called within
    /// a tokio runtime.
    pub fn bind(
        listen: SocketAddr,
        tls: Arc<rustls::ServerConfig>,
        handler: Arc<dyn RpcHandler>,
    ) -> io::Result<QuicServer> {
        let mut tls = (*tls).clone();
        tls.alpn_protocols = vec![ALPN_PROTOCOL.to_vec()];
        let crypto =
            QuicServerConfig::try_from(Arc::new(tls)).map_err(|e| tls_setup_error("server", e))?;
        let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        config.transport_config(super::transport_config());
        let endpoint = Endpoint::server(config, listen)?;
        let local_addr = endpoint.local_addr()?;
        let accept_task = tokio::spawn(accept_connections(endpoint.clone(), handler));
        info!(addr = %local_addr, "QUIC Raft transport listening");
        Ok(QuicServer {
            endpoint,
            local_addr,
            accept_task,
        })
    }

    /// The address the endpoint is bound to (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Connections currently open (from any peer).
    pub fn open_connections(&self) -> usize {
        self.endpoint.open_connections()
    }

    /// Closes every connection, stops accepting, and waits until the peers were told,
    /// so the UDP port is free again soon after this returns.
    pub async fn close(self) {
        self.shut_down();
        self.endpoint.wait_idle().await;
    }

    fn shut_down(&self) {
        self.accept_task.abort();
        self.endpoint
            .close(CLOSE_CODE_SHUTDOWN, b"the Raft transport is shutting down");
    }
}

impl Drop for QuicServer {
    fn drop(&mut self) {
        self.shut_down();
    }
}

impl std::fmt::Debug for QuicServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicServer")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

async fn accept_connections(endpoint: Endpoint, handler: Arc<dyn RpcHandler>) {
    while let Some(incoming) = endpoint.accept().await {
        tokio::spawn(serve_connection(incoming, handler.clone()));
    }
}

/// Completes the handshake, names the peer from its certificate, and serves its streams.
// The span is at debug level: every stream's task runs inside it, and an enabled span
// costs every write; the lines below name the peer themselves.
#[instrument(level = "debug", skip_all, fields(remote = %incoming.remote_address(), peer = tracing::field::Empty))]
async fn serve_connection(incoming: Incoming, handler: Arc<dyn RpcHandler>) {
    let remote = incoming.remote_address();
    let connection = match incoming.await {
        Ok(connection) => connection,
        Err(error) => {
            warn!(%remote, error = %error, "QUIC handshake with a peer failed");
            return;
        }
    };
    let peer = match peer_name(&connection) {
        Ok(peer) => peer,
        Err(reason) => {
            warn!(%remote, %reason, "refused a QUIC peer");
            connection.close(CLOSE_CODE_REFUSED, reason.as_bytes());
            return;
        }
    };
    tracing::Span::current().record("peer", peer.as_str());
    info!(%remote, %peer, "peer connected over QUIC");
    loop {
        match connection.accept_bi().await {
            Ok((send, recv)) => {
                let stream = serve_stream(peer.clone(), send, recv, handler.clone());
                tokio::spawn(stream.in_current_span());
            }
            Err(error) => {
                info!(%remote, %peer, reason = %error, "peer's QUIC connection ended");
                return;
            }
        }
    }
}

fn peer_name(connection: &Connection) -> Result<String, String> {
    let identity = connection
        .peer_identity()
        .ok_or_else(|| "the peer presented no client certificate".to_owned())?;
    let chain = identity
        .downcast::<Vec<CertificateDer<'static>>>()
        .map_err(|_| "the peer's identity is not a certificate chain".to_owned())?;
    node_name_from_chain(&chain)
}

/// Reads one request frame, lets the handler answer it, and writes one reply frame.
async fn serve_stream(
    from: String,
    mut send: SendStream,
    mut recv: RecvStream,
    handler: Arc<dyn RpcHandler>,
) {
    let (status, payload) = match recv.read_to_end(FRAME_MAX_BYTES).await {
        Ok(frame) => match decode_request(Bytes::from(frame)) {
            Ok((kind, payload)) => {
                debug!(%kind, bytes = payload.len(), "RPC received");
                match handler.handle(from.clone(), kind, payload).await {
                    Ok(reply) => (ReplyStatus::Ok, reply),
                    Err(message) => (ReplyStatus::RemoteError, Bytes::from(message)),
                }
            }
            Err(reason) => (ReplyStatus::Refused, Bytes::from(reason)),
        },
        Err(ReadToEndError::TooLong) => (
            ReplyStatus::Refused,
            Bytes::from(format!(
                "the request exceeds the frame limit of {PAYLOAD_MAX_BYTES} payload bytes"
            )),
        ),
        Err(ReadToEndError::Read(error)) => {
            debug!(error = %error, "RPC stream failed before its request was read");
            return;
        }
    };
    let (status, payload) = if payload.len() > PAYLOAD_MAX_BYTES {
        let message = format!(
            "the handler's reply of {} bytes exceeds the frame limit of {PAYLOAD_MAX_BYTES}",
            payload.len()
        );
        warn!(peer = %from, %message, "reply refused");
        (ReplyStatus::RemoteError, Bytes::from(message))
    } else {
        (status, payload)
    };
    if status == ReplyStatus::Refused {
        warn!(peer = %from, reason = %String::from_utf8_lossy(&payload), "request frame refused");
    }
    let frame = encode_reply(status, &payload);
    if let Err(error) = send.write_all(&frame).await {
        debug!(error = %error, "RPC reply could not be sent");
        return;
    }
    // The stream is finished after the one reply; quinn keeps delivering the data.
    let _ = send.finish();
}
