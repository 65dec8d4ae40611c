//! `GrpcRaftService`: the `RaftTransport` gRPC service, delegating to the node's
//! [`RpcHandler`].

use std::sync::Arc;

use bytes::Bytes;
use fleet_proto::raft::RaftMessage;
use fleet_proto::raft::raft_transport_server::{RaftTransport, RaftTransportServer};
use tonic::{Request, Response, Status};
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

    #[instrument(level = "debug", skip_all, fields(peer = tracing::field::Empty, %kind))]
    async fn serve(
        &self,
        kind: RpcKind,
        request: Request<RaftMessage>,
    ) -> Result<Response<RaftMessage>, Status> {
        let from = caller_name(&request)?;
        tracing::Span::current().record("peer", from.as_str());
        let message = request.into_inner();
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
        let reply = match self
            .handler
            .handle(from, kind, Bytes::from(message.payload))
            .await
        {
            Ok(payload) if payload.len() > PAYLOAD_MAX_BYTES => RaftMessage {
                error: Some(format!(
                    "the handler's reply of {} bytes exceeds the limit of {PAYLOAD_MAX_BYTES}",
                    payload.len()
                )),
                ..reply_envelope()
            },
            Ok(payload) => RaftMessage {
                payload: payload.to_vec(),
                ..reply_envelope()
            },
            Err(message) => RaftMessage {
                error: Some(message),
                ..reply_envelope()
            },
        };
        Ok(Response::new(reply))
    }
}

fn reply_envelope() -> RaftMessage {
    RaftMessage {
        encoding_version: ENCODING_VERSION,
        from: String::new(),
        payload: Vec::new(),
        error: None,
    }
}

/// The caller's node name from its verified client certificate.
fn caller_name(request: &Request<RaftMessage>) -> Result<String, Status> {
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
