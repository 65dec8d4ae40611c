//! `FleetNetwork`: openraft's view of the network, carried by a [`transport`](crate::transport).
//!
//! Each openraft RPC is encoded (JSON of openraft's own types), sent as
//! `(RpcKind, bytes)` through the peer's [`RpcClient`] — QUIC, gRPC or auto — and the
//! reply decoded. Transport failures map to the openraft errors that drive its
//! behaviour: a peer that cannot be reached is `Unreachable` (openraft backs off), a
//! reply that did not come in time is a `Timeout`, anything else a `Network` error.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use openraft::error::{
    NetworkError, RPCError, RaftError, ReplicationClosed, StreamingError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderRequest,
    TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::type_config::alias::{SnapshotOf, VoteOf};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::peer::Peer;
use super::type_config::FleetRaft;
use super::wire::{SnapshotData, SnapshotEnvelope};
use crate::transport::{RpcClient, RpcKind, TransportError};

/// Makes the [`RpcClient`] for a peer; the node decides QUIC, gRPC or auto.
pub trait ClientMaker: Send + Sync + 'static {
    /// A client for `peer`, cached once made; `Err` (an address that does not
    /// resolve) says why, and the peer counts as unreachable until a later try works.
    fn client_for(&self, peer: &Peer) -> Result<Arc<dyn RpcClient>, String>;
}

/// A peer's name, Raft address and API address: a client is made again when any
/// of them changes.
type PeerKey = (String, String, String);

/// openraft's network factory: one cached client per peer.
#[derive(Clone)]
pub struct FleetNetwork {
    maker: Arc<dyn ClientMaker>,
    clients: Arc<Mutex<HashMap<PeerKey, Arc<dyn RpcClient>>>>,
}

impl FleetNetwork {
    /// A network whose clients `maker` creates.
    pub fn new(maker: Arc<dyn ClientMaker>) -> Self {
        Self {
            maker,
            clients: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn client(&self, peer: &Peer) -> Result<Arc<dyn RpcClient>, String> {
        let key = (
            peer.name.clone(),
            peer.raft_addr.clone(),
            peer.api_addr.clone(),
        );
        let mut clients = self
            .clients
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let client = self.maker.client_for(peer)?;
        clients.insert(key, client.clone());
        Ok(client)
    }
}

impl RaftNetworkFactory<FleetRaft> for FleetNetwork {
    type Network = PeerLink;

    async fn new_client(&mut self, _target: u64, node: &Peer) -> PeerLink {
        PeerLink {
            peer: node.name.clone(),
            client: self.client(node),
        }
    }
}

/// The link to one peer, as openraft uses it.
pub struct PeerLink {
    peer: String,
    client: Result<Arc<dyn RpcClient>, String>,
}

impl PeerLink {
    async fn call<Req, Resp>(
        &self,
        kind: RpcKind,
        request: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<FleetRaft>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
    {
        let payload =
            serde_json::to_vec(request).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let client = self.client.as_ref().map_err(|reason| {
            self.rpc_error(TransportError::Unreachable {
                peer: self.peer.clone(),
                reason: reason.clone(),
            })
        })?;
        let reply = client
            .call(kind, Bytes::from(payload), option.hard_ttl())
            .await
            .map_err(|e| self.rpc_error(e))?;
        let decoded: Result<Resp, RaftError<FleetRaft>> =
            serde_json::from_slice(&reply).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        // The remote side fails only with a fatal error (it is shutting down).
        decoded.map_err(|e| RPCError::Network(NetworkError::new(&e)))
    }

    fn rpc_error(&self, error: TransportError) -> RPCError<FleetRaft> {
        match error {
            TransportError::Unreachable { .. } => RPCError::Unreachable(Unreachable::new(&error)),
            _ => RPCError::Network(NetworkError::new(&error)),
        }
    }
}

impl RaftNetworkV2<FleetRaft> for PeerLink {
    type SnapshotData = SnapshotData;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<FleetRaft>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<FleetRaft>, RPCError<FleetRaft>> {
        self.call(RpcKind::AppendEntries, &rpc, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<FleetRaft>,
        option: RPCOption,
    ) -> Result<VoteResponse<FleetRaft>, RPCError<FleetRaft>> {
        self.call(RpcKind::Vote, &rpc, &option).await
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<FleetRaft>,
        option: RPCOption,
    ) -> Result<VoteResponse<FleetRaft>, RPCError<FleetRaft>> {
        self.call(RpcKind::PreVote, &rpc, &option).await
    }

    async fn full_snapshot(
        &mut self,
        vote: VoteOf<FleetRaft>,
        snapshot: SnapshotOf<FleetRaft, SnapshotData>,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<FleetRaft>, StreamingError<FleetRaft>> {
        let envelope = SnapshotEnvelope::new(vote, snapshot);
        let call = self.call::<_, SnapshotResponse<FleetRaft>>(
            RpcKind::InstallSnapshot,
            &envelope,
            &option,
        );
        tokio::select! {
            closed = cancel => Err(StreamingError::Closed(closed)),
            result = call => result.map_err(|e| match e {
                RPCError::Unreachable(e) => StreamingError::Unreachable(e),
                RPCError::Timeout(e) => StreamingError::Timeout(e),
                RPCError::Network(e) => StreamingError::Network(e),
                RPCError::RemoteError(e) => StreamingError::Network(NetworkError::new(&e)),
            }),
        }
    }

    async fn transfer_leader(
        &mut self,
        req: TransferLeaderRequest<FleetRaft>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<FleetRaft>, RPCError<FleetRaft>> {
        self.call(RpcKind::TransferLeader, &req, &option).await
    }
}
