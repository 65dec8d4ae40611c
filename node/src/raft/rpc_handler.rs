//! `RaftRpcHandler`: serves Raft RPCs that arrive over any transport by handing them
//! to the local openraft instance.

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use openraft::Raft;
use openraft::storage::RaftStateMachine;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::type_config::FleetRaft;
use super::wire::{SnapshotData, SnapshotEnvelope};
use crate::transport::{RpcHandler, RpcKind};

/// Decodes an RPC, calls the local Raft, encodes its answer.
pub struct RaftRpcHandler<SM>
where
    SM: RaftStateMachine<FleetRaft, SnapshotData = SnapshotData>,
{
    raft: Raft<FleetRaft, SM>,
}

impl<SM> RaftRpcHandler<SM>
where
    SM: RaftStateMachine<FleetRaft, SnapshotData = SnapshotData>,
{
    /// A handler for `raft`.
    pub fn new(raft: Raft<FleetRaft, SM>) -> Self {
        Self { raft }
    }
}

fn decode<T: DeserializeOwned>(kind: RpcKind, payload: &[u8]) -> Result<T, String> {
    serde_json::from_slice(payload).map_err(|e| format!("undecodable {kind} request: {e}"))
}

fn encode<T: Serialize>(answer: &T) -> Result<Bytes, String> {
    serde_json::to_vec(answer)
        .map(Bytes::from)
        .map_err(|e| format!("unencodable answer: {e}"))
}

impl<SM> RpcHandler for RaftRpcHandler<SM>
where
    SM: RaftStateMachine<FleetRaft, SnapshotData = SnapshotData>,
{
    fn handle(
        &self,
        from: String,
        kind: RpcKind,
        payload: Bytes,
    ) -> BoxFuture<'static, Result<Bytes, String>> {
        let raft = self.raft.clone();
        async move {
            tracing::trace!(%from, %kind, bytes = payload.len(), "raft rpc");
            match kind {
                RpcKind::AppendEntries => {
                    encode(&raft.append_entries(decode(kind, &payload)?).await)
                }
                RpcKind::Vote => encode(&raft.vote(decode(kind, &payload)?).await),
                RpcKind::PreVote => encode(&raft.pre_vote(decode(kind, &payload)?).await),
                RpcKind::TransferLeader => {
                    let answer = raft
                        .handle_transfer_leader(decode(kind, &payload)?)
                        .await
                        .map_err(openraft::error::RaftError::<FleetRaft>::Fatal);
                    encode(&answer)
                }
                RpcKind::InstallSnapshot => {
                    let envelope: SnapshotEnvelope = decode(kind, &payload)?;
                    let (vote, snapshot) = envelope.into_parts();
                    let answer = raft
                        .install_full_snapshot(vote, snapshot)
                        .await
                        .map_err(openraft::error::RaftError::<FleetRaft>::Fatal);
                    encode(&answer)
                }
            }
        }
        .boxed()
    }
}
