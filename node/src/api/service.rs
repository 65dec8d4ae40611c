//! `FleetApi`: the gRPC client API of a node (`fleet.api.v1.Fleet`), a thin edge
//! that authenticates the caller, decodes the request and hands it to the node.

use std::sync::Arc;
use std::time::Duration;

use fleet_proto::api as wire;
use fleet_proto::api::fleet_server::{Fleet, FleetServer};
use tonic::{Request, Response, Status};

use super::api_connection::CallerCertificates;
use super::auth::{Authenticator, Credentials};
use super::error::ApiError;
use super::query::Query;
use crate::raft::Peer;
use crate::runtime::FleetNode;
use crate::state::{Actor, FleetSettings};
use crate::transport::isolation::ISOLATION_MAX;

/// The client API service of one node.
pub struct FleetApi {
    node: Arc<FleetNode>,
    auth: Arc<Authenticator>,
}

/// The largest client API message either way: an artifact at its 4 MiB limit, in
/// base64 inside JSON, with room to spare. Every client of the API uses it too.
pub const API_MESSAGE_MAX_BYTES: usize = 8 * 1024 * 1024;

impl FleetApi {
    /// The service for `node`.
    pub fn new(node: Arc<FleetNode>, auth: Arc<Authenticator>) -> Self {
        Self { node, auth }
    }

    /// The tonic server to add to the node's router.
    pub fn into_server(self) -> FleetServer<Self> {
        FleetServer::new(self)
            .max_decoding_message_size(API_MESSAGE_MAX_BYTES)
            .max_encoding_message_size(API_MESSAGE_MAX_BYTES)
    }

    fn actor<T>(
        &self,
        request: &Request<T>,
        as_node: bool,
        forwarded: &str,
    ) -> Result<Actor, ApiError> {
        let token = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        let forwarded_actor: Option<Actor> = if forwarded.is_empty() {
            None
        } else {
            Some(
                serde_json::from_str(forwarded)
                    .map_err(|e| ApiError::BadRequest(format!("forwarded_actor_json: {e}")))?,
            )
        };
        // A leader's own commands (health, ticks) are proposed by that leader only:
        // forwarded, they would be a stale leader's view committed by its successor.
        if let Some(Actor::Leader(node)) = &forwarded_actor {
            return Err(ApiError::BadRequest(format!(
                "forwarded_actor_json: {node} acting as leader cannot be forwarded"
            )));
        }
        // Only a forwarded call or one without a token is judged by the caller's
        // certificate; parsing it costs every other call for nothing.
        let peer_node = if forwarded_actor.is_some() || token.is_none() {
            CallerCertificates::of(request)
                .and_then(|chain| chain.first().and_then(crate::identity::node_name_from_cert))
        } else {
            None
        };
        self.auth.authenticate(&Credentials {
            token,
            peer_node: peer_node.as_deref(),
            as_node,
            forwarded_actor,
        })
    }

    fn operator_only<T>(&self, request: &Request<T>, action: &str) -> Result<(), Status> {
        match self.actor(request, false, "")? {
            Actor::Operator => Ok(()),
            other => Err(Status::permission_denied(format!(
                "{other} may not {action}: only the operator may"
            ))),
        }
    }
}

#[tonic::async_trait]
impl Fleet for FleetApi {
    async fn write(
        &self,
        request: Request<wire::WriteRequest>,
    ) -> Result<Response<wire::WriteReply>, Status> {
        let actor = self.actor(
            &request,
            request.get_ref().as_node,
            &request.get_ref().forwarded_actor_json,
        )?;
        let body = request.into_inner();
        let parsed = serde_json::from_str(&body.request_json).map_err(|e| {
            ApiError::BadRequest(format!("request_json is not a fleet request: {e}"))
        })?;
        let committed = self.node.propose(actor, parsed).await?;
        let outcome = match committed.result {
            Ok(response) => wire::write_reply::Outcome::ResponseJson(
                serde_json::to_string(&response).map_err(|e| ApiError::Internal(e.to_string()))?,
            ),
            Err(violation) => wire::write_reply::Outcome::Refusal(wire::Refusal {
                code: violation.code().into(),
                message: violation.to_string(),
                violation_json: serde_json::to_string(&violation).unwrap_or_default(),
            }),
        };
        Ok(Response::new(wire::WriteReply {
            outcome: Some(outcome),
            log_index: committed.log_index,
            leader: committed.leader,
        }))
    }

    async fn read(
        &self,
        request: Request<wire::ReadRequest>,
    ) -> Result<Response<wire::ReadReply>, Status> {
        self.actor(&request, false, "")?;
        let body = request.into_inner();
        let query: Query = serde_json::from_str(&body.query_json)
            .map_err(|e| ApiError::BadRequest(format!("query_json is not a fleet query: {e}")))?;
        let wait = Duration::from_millis(body.wait_ms);
        let started = tokio::time::Instant::now();
        let (mut answer, mut applied_index) = self
            .node
            .read(&query, body.linearizable, body.min_applied_index, wait)
            .await?;
        if body.until_ready && answer.as_ref().is_ok_and(|a| !Query::is_ready(a)) {
            let left = wait.saturating_sub(started.elapsed());
            (answer, applied_index) = self
                .node
                .read_when_ready(&query, applied_index, left)
                .await?;
        }
        Ok(Response::new(wire::ReadReply {
            answer_json: serde_json::to_string(&answer)
                .map_err(|e| ApiError::Internal(e.to_string()))?,
            applied_index,
        }))
    }

    async fn status(
        &self,
        request: Request<wire::StatusRequest>,
    ) -> Result<Response<wire::StatusReply>, Status> {
        self.actor(&request, false, "")?;
        Ok(Response::new(self.node.status()))
    }

    async fn change_membership(
        &self,
        request: Request<wire::MembershipRequest>,
    ) -> Result<Response<wire::MembershipReply>, Status> {
        self.operator_only(&request, "change membership")?;
        let reply = match request.into_inner().change {
            Some(wire::membership_request::Change::Init(init)) => {
                let settings: Option<FleetSettings> = if init.settings_toml.is_empty() {
                    None
                } else {
                    Some(
                        toml::from_str(&init.settings_toml)
                            .map_err(|e| ApiError::BadRequest(format!("fleet settings: {e}")))?,
                    )
                };
                self.node.init_cluster(settings).await?
            }
            Some(wire::membership_request::Change::Add(add)) => {
                self.node
                    .add_member(Peer {
                        name: add.name,
                        raft_addr: add.raft_addr,
                        api_addr: add.api_addr,
                    })
                    .await?
            }
            Some(wire::membership_request::Change::Remove(remove)) => {
                self.node.remove_member(&remove.name).await?
            }
            None => {
                return Err(ApiError::BadRequest("change: give init, add or remove".into()).into());
            }
        };
        Ok(Response::new(reply))
    }

    async fn isolate(
        &self,
        request: Request<wire::IsolateRequest>,
    ) -> Result<Response<wire::IsolateReply>, Status> {
        self.operator_only(&request, "start a failover drill")?;
        let down_ms = request.into_inner().down_ms;
        let max_ms = u64::try_from(ISOLATION_MAX.as_millis()).unwrap_or(u64::MAX);
        if down_ms == 0 || down_ms > max_ms {
            return Err(ApiError::BadRequest(format!(
                "down_ms: {down_ms} is outside 1..={max_ms}"
            ))
            .into());
        }
        let was_leader = self.node.is_leader();
        tracing::warn!(
            down_ms,
            was_leader,
            "failover drill: cut off from raft traffic"
        );
        self.node
            .isolation
            .isolate_for(Duration::from_millis(down_ms));
        Ok(Response::new(wire::IsolateReply {
            node: self.node.name.to_string(),
            was_leader,
        }))
    }
}
