//! `RaftRpcHandler`: serves Raft RPCs that arrive over any transport by handing them
//! to the local openraft instance, and notes in the [`LeaderContact`] when each
//! `AppendEntries` arrived and when it was accepted.

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use openraft::Raft;
use openraft::raft::AppendEntriesResponse;
use openraft::storage::RaftStateMachine;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::leader_contact::LeaderContact;
use super::network::ON_RUNTIME_BYTES_MAX;
use super::type_config::FleetRaft;
use super::wire::{SnapshotData, SnapshotEnvelope, decode_append_entries};
use crate::transport::{RpcHandler, RpcKind};

/// Decodes an RPC, calls the local Raft, encodes its answer.
pub struct RaftRpcHandler<SM>
where
    SM: RaftStateMachine<FleetRaft, SnapshotData = SnapshotData>,
{
    raft: Raft<FleetRaft, SM>,
    contact: LeaderContact,
}

impl<SM> RaftRpcHandler<SM>
where
    SM: RaftStateMachine<FleetRaft, SnapshotData = SnapshotData>,
{
    /// A handler for `raft` that records leaders' contacts in `contact`.
    pub fn new(raft: Raft<FleetRaft, SM>, contact: LeaderContact) -> Self {
        Self { raft, contact }
    }
}

/// Decodes a request; a large one (entries carrying an artifact, a snapshot) on the
/// blocking pool, so that it never holds up the runtime's workers, which serve the
/// leader's heartbeats meanwhile.
async fn decode<T: DeserializeOwned + Send + 'static>(
    kind: RpcKind,
    payload: Bytes,
) -> Result<T, String> {
    decode_by(kind, payload, |json| serde_json::from_slice(json)).await
}

/// Like [`decode`], with `decoder` (an append's entries keep the JSON they came as).
async fn decode_by<T: Send + 'static>(
    kind: RpcKind,
    payload: Bytes,
    decoder: fn(&[u8]) -> serde_json::Result<T>,
) -> Result<T, String> {
    let large = payload.len() > ON_RUNTIME_BYTES_MAX;
    let decode = move || decoder(&payload).map_err(|e| format!("undecodable {kind} request: {e}"));
    if !large {
        return decode();
    }
    tokio::task::spawn_blocking(decode)
        .await
        .map_err(|e| format!("decoding a {kind} request failed: {e}"))?
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
        let contact = self.contact.clone();
        async move {
            tracing::trace!(%from, %kind, bytes = payload.len(), "raft rpc");
            match kind {
                RpcKind::AppendEntries => {
                    // The leader is alive when its message arrives, however long this
                    // node then takes to decode and append it (a large artifact).
                    contact.record();
                    let append = decode_by(kind, payload, decode_append_entries).await?;
                    let answer = raft.append_entries(append).await;
                    // Refused only for a higher vote: any other answer means this node
                    // took the sender as its leader (and renewed its lease).
                    if answer
                        .as_ref()
                        .is_ok_and(|a| !matches!(a, AppendEntriesResponse::HigherVote(_)))
                    {
                        contact.record();
                    }
                    encode(&answer)
                }
                RpcKind::Vote => encode(&raft.vote(decode(kind, payload).await?).await),
                RpcKind::PreVote => encode(&raft.pre_vote(decode(kind, payload).await?).await),
                RpcKind::TransferLeader => {
                    let answer = raft
                        .handle_transfer_leader(decode(kind, payload).await?)
                        .await
                        .map_err(openraft::error::RaftError::<FleetRaft>::Fatal);
                    encode(&answer)
                }
                RpcKind::InstallSnapshot => {
                    let envelope: SnapshotEnvelope = decode(kind, payload).await?;
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
