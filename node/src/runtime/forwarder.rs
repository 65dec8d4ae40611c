//! `Forwarder`: sends a write or a linearizable read that reached a follower on to the
//! leader's client API, authenticated with this node's fleet certificate and carrying
//! the actor this node authenticated — so the user never has to find the leader.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleet_proto::api as wire;
use fleet_proto::api::fleet_client::FleetClient;
use rustls::ClientConfig;
use tonic::transport::Channel;

use super::fleet_node::Committed;
use crate::api::api_connector::{ApiConnector, api_endpoint};
use crate::api::error::{ApiError, delivery_unknown};
use crate::api::query::{Query, QueryAnswer};
use crate::api::service::API_MESSAGE_MAX_BYTES;
use crate::raft::Peer;
use crate::state::{Actor, Request, RuleViolation};

/// Cached channels to other nodes' client APIs.
pub struct Forwarder {
    tls: Arc<ClientConfig>,
    timeout: Duration,
    channels: Mutex<HashMap<(String, String), Channel>>,
}

impl Forwarder {
    /// A forwarder that calls under `tls` (the client API's, with this node's
    /// certificate) and gives up after `timeout`.
    pub fn new(tls: Arc<ClientConfig>, timeout: Duration) -> Self {
        Self {
            tls,
            timeout,
            channels: Mutex::new(HashMap::new()),
        }
    }

    fn client(&self, leader: &Peer) -> Result<FleetClient<Channel>, ApiError> {
        let key = (leader.name.clone(), leader.api_addr.clone());
        let mut channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(channel) = channels.get(&key) {
            return Ok(api_client(channel.clone()));
        }
        let forward_error = |reason: String| ApiError::Forward {
            leader: leader.name.clone(),
            reason,
        };
        let connector = ApiConnector::new(self.tls.clone(), &leader.name)
            .map_err(|e| forward_error(e.to_string()))?;
        let channel = api_endpoint(&leader.api_addr)
            .map_err(|e| forward_error(e.to_string()))?
            // Shorter than a call's timeout, so that a leader that cannot be reached is
            // told from one that took the call and did not answer.
            .connect_timeout(self.timeout / 2)
            .timeout(self.timeout)
            .connect_with_connector_lazy(connector);
        channels.insert(key, channel.clone());
        Ok(api_client(channel))
    }

    /// Forwards a write to `leader`.
    pub async fn write(
        &self,
        leader: &Peer,
        actor: &Actor,
        request: &Request,
    ) -> Result<Committed, ApiError> {
        let forward_error = |reason: String| ApiError::Forward {
            leader: leader.name.clone(),
            reason,
        };
        let mut client = self.client(leader)?;
        let call = client.write(wire::WriteRequest {
            request_json: to_json(request)?,
            as_node: false,
            forwarded_actor_json: to_json(actor)?,
        });
        // Once the call may have reached the leader, only a harmless repeat may be
        // reported as not taken: `fleetctl` sends those again.
        let unknown = |cause: String| {
            ApiError::OutcomeUnknown(format!(
                "the forwarded {} may have reached the leader {} and committed ({cause}); \
                 read the fleet's state before sending it again",
                request.name(),
                leader.name
            ))
        };
        let reply = match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(reply)) => reply.into_inner(),
            Ok(Err(status)) => {
                return Err(match ApiError::relayed(&status, &leader.name) {
                    Some(answer) => answer,
                    None if delivery_unknown(&status) && !request.is_idempotent() => {
                        unknown(format!("the call broke: {}", status.message()))
                    }
                    None => forward_error(status.message().to_string()),
                });
            }
            Err(_) if request.is_idempotent() => {
                return Err(forward_error(format!(
                    "no answer within {:?}",
                    self.timeout
                )));
            }
            Err(_) => return Err(unknown(format!("no answer within {:?}", self.timeout))),
        };
        // The leader answered: the write was committed, so a reply that cannot be read
        // is a fault, not a reason to send it again.
        let undecodable = |what: String| {
            ApiError::Internal(format!(
                "the leader {} committed the forwarded {}, but its reply {what}",
                leader.name,
                request.name()
            ))
        };
        let result = match reply.outcome {
            Some(wire::write_reply::Outcome::ResponseJson(json)) => Ok(serde_json::from_str(&json)
                .map_err(|e| undecodable(format!("cannot be decoded: {e}")))?),
            Some(wire::write_reply::Outcome::Refusal(refusal)) => {
                Err(refusal_to_violation(refusal))
            }
            None => return Err(undecodable("is empty".into())),
        };
        Ok(Committed {
            result,
            log_index: reply.log_index,
            leader: reply.leader,
        })
    }

    /// Forwards a linearizable read to `leader`.
    pub async fn read(
        &self,
        leader: &Peer,
        query: &Query,
        min_applied: u64,
        wait: Duration,
    ) -> Result<(Result<QueryAnswer, RuleViolation>, u64), ApiError> {
        let forward_error = |reason: String| ApiError::Forward {
            leader: leader.name.clone(),
            reason,
        };
        let mut client = self.client(leader)?;
        let call = client.read(wire::ReadRequest {
            query_json: to_json(query)?,
            linearizable: true,
            min_applied_index: min_applied,
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            until_ready: false,
        });
        let bound = self.timeout + wait.min(super::fleet_node::READ_WAIT_MAX);
        let reply = tokio::time::timeout(bound, call)
            .await
            .map_err(|_| forward_error(format!("no answer within {bound:?}")))?
            .map_err(|status| forward_error(status.message().to_string()))?
            .into_inner();
        let answer: Result<QueryAnswer, RuleViolation> =
            serde_json::from_str(&reply.answer_json)
                .map_err(|e| forward_error(format!("undecodable reply: {e}")))?;
        Ok((answer, reply.applied_index))
    }
}

/// A client of the leader's API that takes messages as large as the API allows.
fn api_client(channel: Channel) -> FleetClient<Channel> {
    FleetClient::new(channel)
        .max_decoding_message_size(API_MESSAGE_MAX_BYTES)
        .max_encoding_message_size(API_MESSAGE_MAX_BYTES)
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, ApiError> {
    serde_json::to_string(value).map_err(|e| ApiError::Internal(e.to_string()))
}

/// A refusal that travelled over the wire, back as a rule violation of the same rule.
fn refusal_to_violation(refusal: wire::Refusal) -> RuleViolation {
    serde_json::from_str(&refusal.violation_json).unwrap_or(RuleViolation::InvalidField {
        field: refusal.code,
        reason: refusal.message,
    })
}
