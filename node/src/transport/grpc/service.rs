//! `GrpcRaftService`: the `RaftTransport` gRPC service, delegating to the node's
//! [`RpcHandler`]: a unary call per RPC, or appends on an append stream, answered in
//! order, one at a time.

use std::sync::Arc;

use fleet_proto::raft::RaftMessage;
use fleet_proto::raft::raft_transport_server::{RaftTransport, RaftTransportServer};
use futures::stream::BoxStream;
use tonic::{Request, Response, Status, Streaming};
use tracing::{debug, instrument, warn};

use super::{ENCODING_VERSION, MESSAGE_MAX_BYTES};
use crate::api::api_connection::CallerCertificates;
use crate::transport::peer_name::node_name_from_chain;
use crate::transport::{PAYLOAD_MAX_BYTES, RpcHandler, RpcKind};

/// Serves Raft RPCs that arrive over gRPC.
///
/// The API port runs TLS with *optional* client certificates (clients such as
/// `fleetctl` authenticate with tokens), so this service itself refuses a call that
/// came without a fleet node certificate.
#[derive(Clone)]
pub struct GrpcRaftService {
    handler: Arc<dyn RpcHandler>,
}

impl GrpcRaftService {
    /// A service that answers with `handler`.
    pub fn new(handler: Arc<dyn RpcHandler>) -> GrpcRaftService {
        GrpcRaftService { handler }
    }

    /// The tonic service to add to the node's `Router`, accepting messages up to the
    /// transport's payload limit (snapshots included).
    pub fn into_server(self) -> RaftTransportServer<GrpcRaftService> {
        RaftTransportServer::new(self)
            .max_decoding_message_size(MESSAGE_MAX_BYTES)
            .max_encoding_message_size(MESSAGE_MAX_BYTES)
    }

    /// One unary call: the caller's certificate, then its message.
    async fn serve(
        &self,
        kind: RpcKind,
        request: Request<RaftMessage>,
    ) -> Result<Response<RaftMessage>, Status> {
        let from = caller_name(&request)?;
        self.answer(from, kind, request.into_inner())
            .await
            .map(Response::new)
    }

    /// The reply to one message from `from`; `Err` refuses the message as a whole.
    #[instrument(level = "debug", skip_all, fields(peer = %from, %kind))]
    async fn answer(
        &self,
        from: String,
        kind: RpcKind,
        message: RaftMessage,
    ) -> Result<RaftMessage, Status> {
        if message.encoding_version != ENCODING_VERSION {
            warn!(version = message.encoding_version, "refused a Raft message");
            return Err(Status::failed_precondition(format!(
                "Raft payload encoding version {} is not supported; this node speaks version {ENCODING_VERSION}",
                message.encoding_version
            )));
        }
        if message.payload.len() > PAYLOAD_MAX_BYTES {
            return Err(Status::resource_exhausted(format!(
                "the {kind} payload of {} bytes exceeds the limit of {PAYLOAD_MAX_BYTES}",
                message.payload.len()
            )));
        }
        debug!(bytes = message.payload.len(), "RPC received");
        let reply = match self.handler.handle(from, kind, message.payload).await {
            Ok(payload) if payload.len() > PAYLOAD_MAX_BYTES => RaftMessage {
                error: Some(format!(
                    "the handler's reply of {} bytes exceeds the limit of {PAYLOAD_MAX_BYTES}",
                    payload.len()
                )),
                ..reply_envelope()
            },
            Ok(payload) => RaftMessage {
                payload,
                ..reply_envelope()
            },
            Err(message) => RaftMessage {
                error: Some(message),
                ..reply_envelope()
            },
        };
        Ok(reply)
    }
}

fn reply_envelope() -> RaftMessage {
    RaftMessage {
        encoding_version: ENCODING_VERSION,
        from: String::new(),
        payload: Default::default(),
        error: None,
    }
}

/// The caller's node name from its verified client certificate.
fn caller_name<T>(request: &Request<T>) -> Result<String, Status> {
    let Some(chain) = CallerCertificates::of(request) else {
        warn!("refused a Raft call without a client certificate");
        return Err(Status::unauthenticated(
            "Raft RPCs need a fleet node certificate; this call presented none",
        ));
    };
    node_name_from_chain(chain).map_err(|reason| {
        warn!(%reason, "refused a Raft call");
        Status::permission_denied(reason)
    })
}

#[tonic::async_trait]
impl RaftTransport for GrpcRaftService {
    async fn append_entries(
        &self,
        request: Request<RaftMessage>,
    ) -> Result<Response<RaftMessage>, Status> {
        self.serve(RpcKind::AppendEntries, request).await
    }

    type AppendStreamStream = BoxStream<'static, Result<RaftMessage, Status>>;

    /// Answers the caller's appends in order, each before the next is read; a refused
    /// message ends the stream with its status, as a unary call would end.
    async fn append_stream(
        &self,
        request: Request<Streaming<RaftMessage>>,
    ) -> Result<Response<Self::AppendStreamStream>, Status> {
        let from = caller_name(&request)?;
        debug!(peer = %from, "append stream opened");
        let state = Some((self.clone(), request.into_inner()));
        let replies = futures::stream::unfold(state, move |state| {
            let from = from.clone();
            async move {
                let (service, mut requests) = state?;
                let message = match requests.message().await {
                    Ok(Some(message)) => message,
                    Ok(None) => return None,
                    Err(status) => {
                        debug!(peer = %from, %status, "append stream ended");
                        return None;
                    }
                };
                match service.answer(from, RpcKind::AppendEntries, message).await {
                    Ok(reply) => Some((Ok(reply), Some((service, requests)))),
                    Err(status) => Some((Err(status), None)),
                }
            }
        });
        Ok(Response::new(Box::pin(replies)))
    }

    async fn vote(&self, request: Request<RaftMessage>) -> Result<Response<RaftMessage>, Status> {
        self.serve(RpcKind::Vote, request).await
    }

    async fn pre_vote(
        &self,
        request: Request<RaftMessage>,
    ) -> Result<Response<RaftMessage>, Status> {
        self.serve(RpcKind::PreVote, request).await
    }

    async fn install_snapshot(
        &self,
        request: Request<RaftMessage>,
    ) -> Result<Response<RaftMessage>, Status> {
        self.serve(RpcKind::InstallSnapshot, request).await
    }

    async fn transfer_leader(
        &self,
        request: Request<RaftMessage>,
    ) -> Result<Response<RaftMessage>, Status> {
        self.serve(RpcKind::TransferLeader, request).await
    }
}

impl std::fmt::Debug for GrpcRaftService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcRaftService").finish_non_exhaustive()
    }
}
