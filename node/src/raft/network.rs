//! `FleetNetwork`: openraft's view of the network, carried by a [`transport`](crate::transport).
//!
//! Each openraft RPC is encoded (JSON of openraft's own types), sent as
//! `(RpcKind, bytes)` through the peer's [`RpcClient`] — QUIC, gRPC or auto — and the
//! reply decoded. Transport failures map to the openraft errors that drive its
//! behaviour: a peer that cannot be reached is `Unreachable` (openraft backs off), a
//! reply that did not come in time is a `Timeout`, anything else a `Network` error.
//!
//! Appends go as openraft's own sequential stream (one request in flight), except
//! that a request carrying nothing but a new commit index waits, amid close writes,
//! for the next request to carry it ([`piggyback_commits`]).
//!
//! openraft gives an append one heartbeat interval, which is plenty for a heartbeat
//! and a few small entries but not for a large one (an artifact of several MiB): such
//! a call would time out on every try, and the follower would never catch up. So a
//! call's time grows with its payload, as if the link carried at least
//! [`TRANSFER_BYTES_PER_SEC_MIN`].

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use openraft::OptionalSend;
use openraft::base::{BoxFuture, BoxStream};
use openraft::error::{
    NetworkError, RPCError, RaftError, ReplicationClosed, StreamingError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2, stream_append_sequential};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, StreamAppendResult,
    TransferLeaderRequest, TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::type_config::alias::{SnapshotOf, VoteOf};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::commit_piggyback::piggyback_commits;
use super::peer::Peer;
use super::type_config::FleetRaft;
use super::wire::{SnapshotData, SnapshotEnvelope, append_entries_json};
use crate::transport::{RpcClient, RpcKind, TransportError};

/// The slowest link a large payload is given time for: 1 MiB/s (about 8 Mbit/s).
pub const TRANSFER_BYTES_PER_SEC_MIN: u64 = 1024 * 1024;

/// How long a call with `payload_bytes` may take: openraft's budget, plus the time the
/// payload needs at [`TRANSFER_BYTES_PER_SEC_MIN`].
pub fn call_timeout(openraft_ttl: Duration, payload_bytes: usize) -> Duration {
    let transfer_ms = (payload_bytes as u64).saturating_mul(1000) / TRANSFER_BYTES_PER_SEC_MIN;
    openraft_ttl + Duration::from_millis(transfer_ms)
}

/// Encodes a small request (a vote, a heartbeat) on the caller's task.
fn encode<Req: Serialize>(request: &Req) -> Result<Vec<u8>, RPCError<FleetRaft>> {
    serde_json::to_vec(request).map_err(|e| RPCError::Network(NetworkError::new(&e)))
}

/// The most bytes of a Raft message encoded or decoded on the caller's task; a larger
/// one goes to the blocking pool (on both sides, so a multi-MiB entry never holds up
/// the runtime's workers).
pub(crate) const ON_RUNTIME_BYTES_MAX: usize = 64 * 1024;

/// Encodes entries (copying the JSON each one carries, [`append_entries_json`]): in
/// place when they are small (nearly always: no hop to another thread on a write's
/// path), on the blocking pool when they are not.
async fn encode_entries(
    rpc: AppendEntriesRequest<FleetRaft>,
) -> Result<Vec<u8>, RPCError<FleetRaft>> {
    let (buffer, encoded) = append_entries_json(&rpc, ON_RUNTIME_BYTES_MAX);
    match encoded {
        Ok(()) => Ok(buffer.bytes),
        Err(_) if buffer.overflowed => {
            let encode = move || {
                let (buffer, encoded) = append_entries_json(&rpc, usize::MAX);
                encoded.map(|()| buffer.bytes)
            };
            tokio::task::spawn_blocking(encode)
                .await
                .map_err(|e| RPCError::Network(NetworkError::new(&e)))?
                .map_err(|e| RPCError::Network(NetworkError::new(&e)))
        }
        Err(error) => Err(RPCError::Network(NetworkError::new(&error))),
    }
}

/// Encodes a snapshot, which may be large, on the blocking pool, so that encoding a
/// multi-MiB one never holds up the runtime's workers — the heartbeats and Raft's own
/// task run on them.
async fn encode_off_runtime<Req: Serialize + Send + 'static>(
    request: Req,
) -> Result<Vec<u8>, RPCError<FleetRaft>> {
    tokio::task::spawn_blocking(move || encode(&request))
        .await
        .map_err(|e| RPCError::Network(NetworkError::new(&e)))?
}

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
    async fn call<Resp: DeserializeOwned>(
        &self,
        kind: RpcKind,
        payload: Vec<u8>,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<FleetRaft>> {
        let client = self.client.as_ref().map_err(|reason| {
            self.rpc_error(TransportError::Unreachable {
                peer: self.peer.clone(),
                reason: reason.clone(),
            })
        })?;
        let timeout = call_timeout(option.hard_ttl(), payload.len());
        let reply = client
            .call(kind, Bytes::from(payload), timeout)
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
        let payload = encode_entries(rpc).await?;
        self.call(RpcKind::AppendEntries, payload, &option).await
    }

    /// openraft's own sequential stream (one request in flight, the next made when
    /// its answer is in), with entry-less commits held for the next request
    /// ([`piggyback_commits`]).
    fn stream_append<'s, S>(
        &'s mut self,
        input: S,
        option: RPCOption,
    ) -> BoxFuture<
        's,
        Result<
            BoxStream<'s, Result<StreamAppendResult<FleetRaft>, RPCError<FleetRaft>>>,
            RPCError<FleetRaft>,
        >,
    >
    where
        S: Stream<Item = AppendEntriesRequest<FleetRaft>> + OptionalSend + Unpin + 'static,
    {
        stream_append_sequential(self, piggyback_commits(input), option)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<FleetRaft>,
        option: RPCOption,
    ) -> Result<VoteResponse<FleetRaft>, RPCError<FleetRaft>> {
        self.call(RpcKind::Vote, encode(&rpc)?, &option).await
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<FleetRaft>,
        option: RPCOption,
    ) -> Result<VoteResponse<FleetRaft>, RPCError<FleetRaft>> {
        self.call(RpcKind::PreVote, encode(&rpc)?, &option).await
    }

    async fn full_snapshot(
        &mut self,
        vote: VoteOf<FleetRaft>,
        snapshot: SnapshotOf<FleetRaft, SnapshotData>,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<FleetRaft>, StreamingError<FleetRaft>> {
        let envelope = SnapshotEnvelope::new(vote, snapshot);
        let call = async {
            let payload = encode_off_runtime(envelope).await?;
            self.call::<SnapshotResponse<FleetRaft>>(RpcKind::InstallSnapshot, payload, &option)
                .await
        };
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
        self.call(RpcKind::TransferLeader, encode(&req)?, &option)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::capped_buffer::FIRST_CAPACITY;
    use openraft::RaftTypeConfig;
    use openraft::entry::RaftEntry;
    use openraft::type_config::alias::{EntryOf, LogIdOf};
    use openraft::vote::RaftLeaderIdExt;

    use crate::state::{Actor, Command, Request};

    fn entries_request(body_bytes: usize) -> AppendEntriesRequest<FleetRaft> {
        let leader = <FleetRaft as RaftTypeConfig>::LeaderId::new_committed(1, 1);
        let command = Command {
            at_ms: 1,
            actor: Actor::Operator,
            request: Request::PublishCapabilities {
                markdown: "x".repeat(body_bytes),
            },
        };
        AppendEntriesRequest {
            vote: VoteOf::<FleetRaft>::new(1, 1),
            prev_log_id: None,
            entries: vec![RaftEntry::new_normal(
                LogIdOf::<FleetRaft>::new(leader, 1),
                Box::new(command),
            )],
            leader_commit: None,
        }
    }

    #[tokio::test]
    async fn entries_are_encoded_alike_in_place_and_on_the_blocking_pool() {
        for size in [10, 2 * ON_RUNTIME_BYTES_MAX] {
            let rpc = entries_request(size);
            let expected = serde_json::to_vec(&rpc).unwrap();
            assert_eq!(encode_entries(rpc).await.unwrap(), expected, "{size} bytes");
        }
    }

    #[test]
    fn an_append_of_one_event_is_encoded_without_growing_its_buffer() {
        use crate::raft::type_config::node_id;
        use crate::state::event_log::{EventStatus, NewEvent};

        let leader = node_id("beast");
        let committed = <FleetRaft as RaftTypeConfig>::LeaderId::new_committed(7, leader);
        let log_id = |index| LogIdOf::<FleetRaft>::new(committed, index);
        // An event as `fleetctl events append` sends one, its log ids with indexes of
        // the most digits a `u64` has.
        let command = Command {
            at_ms: 1_800_000_000_000,
            actor: Actor::Operator,
            request: Request::AppendEvent(NewEvent {
                event_type: "session.update".into(),
                stream: "sessions".into(),
                room: "general".into(),
                to: "*".into(),
                correlation_id: Some("c".repeat(36)),
                status: EventStatus::Open,
                body: "b".repeat(120),
                request_id: Some("r".repeat(36)),
            }),
        };
        let mut entry = EntryOf::<FleetRaft>::new_normal(log_id(u64::MAX), Box::new(command));
        let mut rpc = AppendEntriesRequest::<FleetRaft> {
            vote: VoteOf::<FleetRaft>::new(7, leader),
            prev_log_id: Some(log_id(u64::MAX - 1)),
            entries: vec![entry.clone()],
            leader_commit: Some(log_id(u64::MAX - 1)),
        };
        let expected = serde_json::to_vec(&rpc).unwrap();

        // Encoded here, then as the leader sends it: carrying its log's JSON.
        entry.encode_within(usize::MAX).unwrap();
        for carried in [false, true] {
            if carried {
                rpc.entries = vec![entry.clone()];
            }
            let (buffer, encoded) = append_entries_json(&rpc, ON_RUNTIME_BYTES_MAX);
            encoded.unwrap();
            assert_eq!(buffer.bytes, expected, "carried: {carried}");
            assert_eq!(
                buffer.bytes.capacity(),
                FIRST_CAPACITY,
                "{} bytes outgrew the first capacity (carried: {carried})",
                buffer.bytes.len()
            );
        }
    }

    #[test]
    fn a_call_gets_openraft_budget_plus_time_for_its_payload() {
        let heartbeat = Duration::from_millis(100);
        assert_eq!(call_timeout(heartbeat, 200), heartbeat);
        assert_eq!(
            call_timeout(heartbeat, 4 * 1024 * 1024),
            Duration::from_millis(4_100)
        );
    }
}
