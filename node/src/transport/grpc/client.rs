//! `GrpcClient`: Raft RPCs to one peer over a lazily connected tonic `Channel`, whose
//! TLS is an [`ApiConnector`]'s (an append's message and the end of its stream leave in
//! one write). Appends go on the peer's [`AppendStream`] when it is free; other RPCs,
//! and an append (a heartbeat) sent while another is in flight, are unary calls.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use bytes::Bytes;
use fleet_proto::raft::RaftMessage;
use fleet_proto::raft::raft_transport_client::RaftTransportClient;
use futures::future::BoxFuture;
use rustls::ClientConfig;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use tracing::{debug, instrument};

use super::append_stream::AppendStream;
use super::{ENCODING_VERSION, MESSAGE_MAX_BYTES};
use crate::api::api_connector::{ApiConnector, api_endpoint};
use crate::transport::{PAYLOAD_MAX_BYTES, RpcClient, RpcKind, TransportError};

/// How long opening the TCP+TLS connection may take before the call fails as
/// unreachable (each call is also bounded by its own timeout).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// HTTP/2 pings on an idle connection, so a dead peer is noticed and the channel
/// reconnects.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(2);

/// How long a ping may go unanswered before the connection is dropped.
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long appends stay unary after the peer said it has no append stream (a build
/// from before it), before the stream is tried again.
const STREAM_UNSUPPORTED_RETRY: Duration = Duration::from_secs(60);

/// The append stream to the peer, behind a lock that one append holds at a time.
#[derive(Default)]
struct AppendSlot {
    /// The open stream; `None` before the first append and after a failure.
    stream: Option<AppendStream>,
    /// Until when appends go unary because the peer had no append stream (a time
    /// past means the stream is tried again).
    unsupported_until: Option<Instant>,
}

/// Calls one peer's `RaftTransport` service over TLS with this node's certificate.
///
/// The channel connects on the first call and reconnects by itself after a failure.
#[derive(Clone)]
pub struct GrpcClient {
    peer_name: String,
    client: RaftTransportClient<Channel>,
    append_slot: Arc<tokio::sync::Mutex<AppendSlot>>,
}

impl GrpcClient {
    /// A client for `peer_name`'s API port at `addr` under `tls` (the client API's
    /// configuration with this node's certificate, `api_client_config`), requiring the
    /// peer's certificate to name `<peer_name>.fleet`. Nothing connects until the first
    /// call; an error here means the peer's name or address is unusable.
    pub fn new(
        peer_name: &str,
        addr: SocketAddr,
        tls: Arc<ClientConfig>,
    ) -> io::Result<GrpcClient> {
        let setup_error = |e: &dyn std::fmt::Display| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cannot set up the gRPC Raft client for {peer_name}: {e}"),
            )
        };
        let connector = ApiConnector::new(tls, peer_name).map_err(|e| setup_error(&e))?;
        let endpoint = api_endpoint(&addr.to_string())
            .map_err(|e| setup_error(&e))?
            .connect_timeout(CONNECT_TIMEOUT)
            .http2_keep_alive_interval(KEEP_ALIVE_INTERVAL)
            .keep_alive_timeout(KEEP_ALIVE_TIMEOUT)
            .keep_alive_while_idle(true);
        let client = RaftTransportClient::new(endpoint.connect_with_connector_lazy(connector))
            .max_decoding_message_size(MESSAGE_MAX_BYTES)
            .max_encoding_message_size(MESSAGE_MAX_BYTES);
        Ok(GrpcClient {
            peer_name: peer_name.to_owned(),
            client,
            append_slot: Arc::default(),
        })
    }

    /// The peer's node name.
    pub fn peer_name(&self) -> &str {
        &self.peer_name
    }

    #[instrument(level = "debug", skip_all, fields(peer = %self.peer_name, %kind, bytes = payload.len()))]
    async fn call_by(
        &self,
        kind: RpcKind,
        payload: Bytes,
        timeout: Duration,
    ) -> Result<Bytes, TransportError> {
        if payload.len() > PAYLOAD_MAX_BYTES {
            return Err(self.protocol(format!(
                "the {kind} request of {} bytes exceeds the limit of {PAYLOAD_MAX_BYTES}",
                payload.len()
            )));
        }
        let message = RaftMessage {
            encoding_version: ENCODING_VERSION,
            from: String::new(),
            payload,
            error: None,
        };
        if kind == RpcKind::AppendEntries
            && let Ok(mut slot) = self.append_slot.try_lock()
            && slot
                .unsupported_until
                .is_none_or(|until| until <= Instant::now())
        {
            return self.call_on_stream(&mut slot, message, timeout).await;
        }
        self.call_unary(kind, message, timeout).await
    }

    /// One RPC as a unary call of its own.
    async fn call_unary(
        &self,
        kind: RpcKind,
        message: RaftMessage,
        timeout: Duration,
    ) -> Result<Bytes, TransportError> {
        let mut request = Request::new(message);
        // Tells the peer the deadline, so it can give up too.
        request.set_timeout(timeout);
        let mut client = self.client.clone();
        let call = async move {
            match kind {
                RpcKind::AppendEntries => client.append_entries(request).await,
                RpcKind::Vote => client.vote(request).await,
                RpcKind::PreVote => client.pre_vote(request).await,
                RpcKind::InstallSnapshot => client.install_snapshot(request).await,
                RpcKind::TransferLeader => client.transfer_leader(request).await,
            }
        };
        match tokio::time::timeout(timeout, call).await {
            Err(_) => Err(self.timeout(kind, timeout)),
            Ok(Err(status)) => Err(self.status_error(kind, timeout, status)),
            Ok(Ok(response)) => self.reply_payload(kind, response.into_inner()),
        }
    }

    /// One append on the append stream, opened first if need be. Any failure drops the
    /// stream (a reply that comes late must not answer the next request); a peer
    /// without the stream gets this append, and those of the next minute, unary.
    async fn call_on_stream(
        &self,
        slot: &mut AppendSlot,
        message: RaftMessage,
        timeout: Duration,
    ) -> Result<Bytes, TransportError> {
        let kind = RpcKind::AppendEntries;
        let deadline = Instant::now() + timeout;
        // Taken out of the slot while in use: if this call is dropped midway, the stream
        // goes with it, and no later call can read this call's reply as its own.
        let stream = match slot.stream.take() {
            Some(stream) => Some(stream),
            None => self.open_stream(deadline, timeout).await?,
        };
        let Some(mut stream) = stream else {
            debug!(peer = %self.peer_name, "the peer has no append stream; appends go unary");
            slot.unsupported_until = Some(Instant::now() + STREAM_UNSUPPORTED_RETRY);
            let left = deadline.saturating_duration_since(Instant::now());
            return self.call_unary(kind, message, left).await;
        };
        match tokio::time::timeout_at(deadline, stream.call(message)).await {
            Err(_) => Err(self.timeout(kind, timeout)),
            Ok(Err(status)) => Err(self.status_error(kind, timeout, status)),
            Ok(Ok(reply)) => {
                slot.stream = Some(stream);
                self.reply_payload(kind, reply)
            }
        }
    }

    /// Opens an append stream by `deadline`; `None` when the peer has no such method.
    async fn open_stream(
        &self,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Option<AppendStream>, TransportError> {
        let kind = RpcKind::AppendEntries;
        let mut client = self.client.clone();
        match tokio::time::timeout_at(deadline, AppendStream::open(&mut client)).await {
            Err(_) => Err(self.timeout(kind, timeout)),
            Ok(Err(status)) if status.code() == Code::Unimplemented => Ok(None),
            Ok(Err(status)) => Err(self.status_error(kind, timeout, status)),
            Ok(Ok(stream)) => Ok(Some(stream)),
        }
    }

    /// The payload of a peer's reply, or the peer's handler's failure.
    fn reply_payload(&self, kind: RpcKind, reply: RaftMessage) -> Result<Bytes, TransportError> {
        if let Some(message) = reply.error {
            return Err(TransportError::Remote {
                peer: self.peer_name.clone(),
                kind,
                message,
            });
        }
        if reply.encoding_version != ENCODING_VERSION {
            return Err(self.protocol(format!(
                "the reply has payload encoding version {}; this node speaks version {ENCODING_VERSION}",
                reply.encoding_version
            )));
        }
        Ok(reply.payload)
    }

    /// What a failed call means for Raft: a peer that cannot be reached or refuses this
    /// node is unreachable (Raft backs off); a missed deadline is a timeout.
    fn status_error(&self, kind: RpcKind, timeout: Duration, status: Status) -> TransportError {
        match status.code() {
            Code::Unavailable => self.unreachable(format!("gRPC: {}", status.message())),
            Code::Unauthenticated | Code::PermissionDenied => self.unreachable(format!(
                "the peer refused this node's certificate: {}",
                status.message()
            )),
            Code::DeadlineExceeded | Code::Cancelled => self.timeout(kind, timeout),
            // The connection itself failed (e.g. the peer's TLS refused this node's
            // certificate after the handshake): tonic reports that as `Unknown` with the
            // transport error as source.
            Code::Unknown if std::error::Error::source(&status).is_some_and(is_transport_error) => {
                self.unreachable(format!("gRPC connection failed: {}", error_chain(&status)))
            }
            code => self.protocol(format!("gRPC status {code:?}: {}", status.message())),
        }
    }

    fn unreachable(&self, reason: String) -> TransportError {
        TransportError::Unreachable {
            peer: self.peer_name.clone(),
            reason,
        }
    }

    fn timeout(&self, kind: RpcKind, timeout: Duration) -> TransportError {
        TransportError::Timeout {
            peer: self.peer_name.clone(),
            kind,
            timeout,
        }
    }

    fn protocol(&self, reason: String) -> TransportError {
        TransportError::Protocol {
            peer: self.peer_name.clone(),
            reason,
        }
    }
}

fn is_transport_error(error: &(dyn std::error::Error + 'static)) -> bool {
    error.is::<tonic::transport::Error>()
}

/// The status message followed by every source's message, for a reason that says why.
fn error_chain(status: &Status) -> String {
    let mut reason = status.message().to_owned();
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        reason.push_str(": ");
        reason.push_str(&error.to_string());
        source = error.source();
    }
    reason
}

impl RpcClient for GrpcClient {
    fn call(
        &self,
        kind: RpcKind,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Bytes, TransportError>> {
        Box::pin(self.call_by(kind, payload, timeout))
    }
}

impl std::fmt::Debug for GrpcClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcClient")
            .field("peer_name", &self.peer_name)
            .finish_non_exhaustive()
    }
}
