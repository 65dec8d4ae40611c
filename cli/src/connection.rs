//! `Connection`: `fleetctl`'s way into a fleet — TLS to each node's client API with the
//! fleet CA, the operator token on every call, and the choice of node: the one named
//! with `--node` (acting as that node), else the first endpoint that answers.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use fleet_node::api::api_connector::{ApiConnector, api_endpoint};
use fleet_node::api::error::delivery_unknown;
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::api::service::API_MESSAGE_MAX_BYTES;
use fleet_node::identity::{CaCert, api_client_config};
use fleet_node::state::{Request, Response, RuleViolation};
use fleet_proto::api as wire;
use fleet_proto::api::fleet_client::FleetClient;
use rustls::ClientConfig;
use tonic::transport::Channel;
use tonic::{Code, Status};

/// How long one node may take to answer a status call before it counts as unreachable.
const STATUS_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a write keeps trying while no node can take it (no leader yet).
const LEADERLESS_RETRY: Duration = Duration::from_secs(10);
/// How long a write or read may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The fleet as `fleetctl` reaches it.
pub struct Connection {
    /// `(node, host:port)` in the order of the config.
    pub endpoints: Vec<(String, String)>,
    ca_pem: String,
    /// TLS that trusts the fleet CA alone.
    tls: Arc<ClientConfig>,
    token: String,
    /// `--node NAME`: talk through that node, acting as it.
    pub via: Option<String>,
}

impl Connection {
    /// A connection from its parts.
    pub fn new(
        endpoints: Vec<(String, String)>,
        ca_pem: String,
        token: String,
        via: Option<String>,
    ) -> Result<Self> {
        if let Some(node) = &via
            && !endpoints.iter().any(|(name, _)| name == node)
        {
            let known: Vec<&str> = endpoints.iter().map(|(n, _)| n.as_str()).collect();
            bail!(
                "--node {node}: no such endpoint in the fleetctl config (known: {})",
                known.join(", ")
            );
        }
        let ca = CaCert::from_pem(&ca_pem).context("the fleet CA of the fleetctl config")?;
        let tls = api_client_config(&ca, None).context("the fleet CA of the fleetctl config")?;
        Ok(Self {
            endpoints,
            ca_pem,
            tls: Arc::new(tls),
            token,
            via,
        })
    }

    /// The fleet CA in PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The operator token.
    pub fn token(&self) -> &str {
        &self.token
    }

    fn client(&self, node: &str, timeout: Duration) -> Result<FleetClient<Channel>> {
        let address = self
            .endpoints
            .iter()
            .find(|(name, _)| name == node)
            .map(|(_, address)| address.clone())
            .with_context(|| format!("no endpoint for {node}"))?;
        let connector = ApiConnector::new(self.tls.clone(), node)?;
        let channel = api_endpoint(&address)?
            .connect_timeout(timeout.min(Duration::from_secs(3)))
            .timeout(timeout)
            .connect_with_connector_lazy(connector);
        Ok(FleetClient::new(channel)
            .max_decoding_message_size(API_MESSAGE_MAX_BYTES)
            .max_encoding_message_size(API_MESSAGE_MAX_BYTES))
    }

    fn request<T>(&self, body: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(body);
        if let Ok(value) = format!("Bearer {}", self.token).parse() {
            request.metadata_mut().insert("authorization", value);
        }
        request
    }

    /// Reads `query` from `node` once it has applied `min_applied` (waiting at most
    /// `wait`); returns the answer and the node's applied index.
    pub async fn read_from(
        &self,
        node: &str,
        query: &Query,
        min_applied: u64,
        wait: Duration,
    ) -> Result<(Result<QueryAnswer, RuleViolation>, u64)> {
        self.read_with(node, query, false, min_applied, wait, false)
            .await
    }

    /// Reads `query` through the first node that answers, holding the answer until it
    /// is ready (a new matching event, a message's delivery report) or `wait` passes;
    /// the node is woken by each applied command, so news arrives as it commits.
    /// `linearizable` first brings the answer up to date with the leader.
    pub async fn read_until_ready(
        &self,
        query: &Query,
        linearizable: bool,
        wait: Duration,
    ) -> Result<Result<QueryAnswer, RuleViolation>> {
        let mut problems = Vec::new();
        for node in self.candidates() {
            match self
                .read_with(&node, query, linearizable, 0, wait, true)
                .await
            {
                Ok((answer, _)) => return Ok(answer),
                Err(error) => problems.push(error.to_string()),
            }
        }
        bail!("no node answered: {}", problems.join("; "))
    }

    async fn read_with(
        &self,
        node: &str,
        query: &Query,
        linearizable: bool,
        min_applied: u64,
        wait: Duration,
        until_ready: bool,
    ) -> Result<(Result<QueryAnswer, RuleViolation>, u64)> {
        let mut client = self.client(node, wait + STATUS_TIMEOUT)?;
        let body = wire::ReadRequest {
            query_json: serde_json::to_string(query)?,
            linearizable,
            min_applied_index: min_applied,
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            until_ready,
        };
        let call = client.read(self.request(body));
        let reply = tokio::time::timeout(wait + STATUS_TIMEOUT, call)
            .await
            .map_err(|_| anyhow!("{node}: no answer within {:?}", wait + STATUS_TIMEOUT))?
            .map_err(|status| anyhow!("{node}: {}", describe(&status)))?
            .into_inner();
        Ok((
            serde_json::from_str(&reply.answer_json)?,
            reply.applied_index,
        ))
    }

    /// The nodes to try, in order: the `--node` one alone, else every endpoint.
    pub fn candidates(&self) -> Vec<String> {
        match &self.via {
            Some(node) => vec![node.clone()],
            None => self
                .endpoints
                .iter()
                .map(|(name, _)| name.clone())
                .collect(),
        }
    }

    /// Commits `request` through the first node that answers (with `--node`, that
    /// node, acting as it); a follower forwards it to the leader. The outer error is
    /// "no node could take it"; the inner one is the rule the fleet refused it by.
    pub async fn write(&self, request: &Request) -> Result<Result<Response, RuleViolation>> {
        self.write_via(&self.candidates(), request).await
    }

    /// Like [`Connection::write`], through the first of `nodes` that answers.
    pub async fn write_via(
        &self,
        nodes: &[String],
        request: &Request,
    ) -> Result<Result<Response, RuleViolation>> {
        let request_json = serde_json::to_string(request)?;
        // While leadership moves (an election, a hand-over to the primary) every node
        // answers "unavailable" for a moment: try them all again until this passes.
        let deadline = std::time::Instant::now() + LEADERLESS_RETRY;
        loop {
            let mut problems = Vec::new();
            for node in nodes {
                let mut client = self.client(node, CALL_TIMEOUT)?;
                let body = wire::WriteRequest {
                    request_json: request_json.clone(),
                    as_node: self.via.is_some(),
                    forwarded_actor_json: String::new(),
                };
                match client.write(self.request(body)).await {
                    Ok(reply) => return decode_write(reply.into_inner()),
                    // It may have reached the node: sent again only if that is harmless.
                    Err(status) if delivery_unknown(&status) && !request.is_idempotent() => bail!(
                        "{node}: outcome unknown: the call broke once it reached the node ({}), \
                         so the {} may have committed; read the fleet's state before sending \
                         it again",
                        describe(&status),
                        request.name()
                    ),
                    Err(status) if status.code() == Code::Unavailable => {
                        problems.push(format!("{node}: {}", describe(&status)));
                    }
                    Err(status) => bail!("{node}: {}", describe(&status)),
                }
            }
            if std::time::Instant::now() > deadline {
                bail!("no node took the write: {}", problems.join("; "));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Reads `query` from the first node that answers (the `--node` one with `--node`),
    /// linearizably: the answer reflects every write committed before the read, even
    /// when that node has not applied them yet (it asks the leader).
    pub async fn read(&self, query: &Query) -> Result<Result<QueryAnswer, RuleViolation>> {
        let mut problems = Vec::new();
        for node in self.candidates() {
            match self
                .read_with(&node, query, true, 0, Duration::ZERO, false)
                .await
            {
                Ok((answer, _)) => return Ok(answer),
                Err(error) => problems.push(error.to_string()),
            }
        }
        bail!("no node answered: {}", problems.join("; "))
    }

    /// Asks `node` to cut itself off from Raft traffic for `down` (a failover drill).
    pub async fn isolate(&self, node: &str, down: Duration) -> Result<wire::IsolateReply> {
        let mut client = self.client(node, CALL_TIMEOUT)?;
        let body = wire::IsolateRequest {
            down_ms: u64::try_from(down.as_millis()).unwrap_or(u64::MAX),
        };
        let reply = client
            .isolate(self.request(body))
            .await
            .map_err(|status| anyhow!("{node}: {}", describe(&status)))?;
        Ok(reply.into_inner())
    }

    /// Every endpoint's own status, concurrently; an error for those that do not answer.
    pub async fn statuses(&self) -> Vec<(String, String, Result<wire::StatusReply, String>)> {
        let calls = self.endpoints.iter().map(|(name, address)| async move {
            // A bound on the whole call: a node that accepts TCP but never answers (a
            // stopped process, a sleeping laptop) must not hold up the others.
            let result = match self.client(name, STATUS_TIMEOUT) {
                Ok(mut client) => {
                    let call = client.status(self.request(wire::StatusRequest {}));
                    match tokio::time::timeout(STATUS_TIMEOUT, call).await {
                        Ok(answer) => answer
                            .map(tonic::Response::into_inner)
                            .map_err(|status| describe(&status)),
                        Err(_) => Err(format!("no answer within {STATUS_TIMEOUT:?}")),
                    }
                }
                Err(error) => Err(error.to_string()),
            };
            (name.clone(), address.clone(), result)
        });
        futures::future::join_all(calls).await
    }

    /// Sends a membership change to the leader (found from the nodes' statuses).
    pub async fn change_membership(
        &self,
        change: wire::membership_request::Change,
    ) -> Result<wire::MembershipReply> {
        let statuses = self.statuses().await;
        let leader = statuses
            .iter()
            .filter_map(|(_, _, s)| s.as_ref().ok())
            .map(|s| s.leader.clone())
            .find(|l| !l.is_empty());
        let target = match (&self.via, leader) {
            (Some(via), _) => via.clone(),
            (None, Some(leader)) => leader,
            (None, None) => statuses
                .iter()
                .find(|(_, _, s)| s.is_ok())
                .map(|(name, _, _)| name.clone())
                .ok_or_else(|| {
                    anyhow!(
                        "no node of the fleet answers: {}",
                        unreachable_list(&statuses)
                    )
                })?,
        };
        let mut client = self.client(&target, CALL_TIMEOUT)?;
        let reply = client
            .change_membership(self.request(wire::MembershipRequest {
                change: Some(change),
            }))
            .await
            .map_err(|status| anyhow!("{target}: {}", describe(&status)))?;
        Ok(reply.into_inner())
    }
}

fn decode_write(reply: wire::WriteReply) -> Result<Result<Response, RuleViolation>> {
    match reply.outcome {
        Some(wire::write_reply::Outcome::ResponseJson(json)) => {
            Ok(Ok(serde_json::from_str(&json)?))
        }
        Some(wire::write_reply::Outcome::Refusal(refusal)) => {
            match serde_json::from_str::<RuleViolation>(&refusal.violation_json) {
                Ok(violation) => Ok(Err(violation)),
                Err(_) => bail!("refused ({}): {}", refusal.code, refusal.message),
            }
        }
        None => bail!("the node sent an empty write reply"),
    }
}

fn describe(status: &Status) -> String {
    match status.code() {
        Code::Unavailable
            if status.message().contains("transport error") || status.message().is_empty() =>
        {
            "unreachable".into()
        }
        _ => status.message().to_string(),
    }
}

fn unreachable_list(statuses: &[(String, String, Result<wire::StatusReply, String>)]) -> String {
    statuses
        .iter()
        .map(|(name, _, s)| format!("{name} ({})", s.as_ref().err().map_or("ok", String::as_str)))
        .collect::<Vec<_>>()
        .join(", ")
}
