//! `TestClient`: the client API of one node, spoken directly over gRPC with TLS and
//! the operator token, so tests can write and read without going through a CLI.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use fleet_node::api::api_connector::{ApiConnector, api_endpoint};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::api::service::API_MESSAGE_MAX_BYTES;
use fleet_node::identity::{CaCert, api_client_config};
use fleet_node::state::event_log::{EventFilter, EventStatus, NewEvent};
use fleet_node::state::{Request, Response, RuleViolation};
use fleet_proto::api as wire;
use fleet_proto::api::fleet_client::FleetClient;
use tonic::codegen::http::Uri;
use tonic::metadata::MetadataValue;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use crate::bare_grpc::BareGrpcClient;

/// The address (`host:port`) of `node`'s client API, as `DIR/fleetctl.toml` names it
/// for the fleet initialised in `dir`.
pub fn api_address(dir: &Path, node: &str) -> Result<String> {
    let config: toml::Value = toml::from_str(&fs::read_to_string(dir.join("fleetctl.toml"))?)?;
    config
        .get("endpoints")
        .and_then(|e| e.get(node))
        .and_then(|a| a.as_str())
        .map(str::to_string)
        .with_context(|| format!("no endpoint for {node} in fleetctl.toml"))
}

/// An event append on `stream` whose body is also its idempotency key: the body names
/// the write, so the bodies a node holds are a history to check acknowledged writes
/// against.
pub fn keyed_append(stream: &str, body: &str) -> Request {
    Request::AppendEvent(NewEvent {
        request_id: Some(body.into()),
        ..test_event(stream, body)
    })
}

/// Like [`keyed_append`] without the key: each time it commits, it appends once more.
pub fn unkeyed_append(stream: &str, body: &str) -> Request {
    Request::AppendEvent(test_event(stream, body))
}

fn test_event(stream: &str, body: &str) -> NewEvent {
    NewEvent {
        event_type: "test.write".into(),
        stream: stream.into(),
        room: "tests".into(),
        to: "*".into(),
        correlation_id: None,
        status: EventStatus::Open,
        body: body.into(),
        request_id: None,
    }
}

/// What a client of `node`'s API in the fleet initialised in `dir` connects with, as
/// `fleetctl` does: the API's address, a connector under the fleet CA, and the
/// operator token.
fn api_access(dir: &Path, node: &str) -> Result<(String, ApiConnector, String)> {
    let address = api_address(dir, node)?;
    let ca = CaCert::load(&dir.join("ca.pem"))?;
    let token = fs::read_to_string(dir.join("operator.token"))?
        .trim()
        .to_string();
    let connector = ApiConnector::new(Arc::new(api_client_config(&ca, None)?), node)?;
    Ok((address, connector, token))
}

/// A [`BareGrpcClient`] on a connection of its own to `node`'s client API (of the
/// fleet initialised in `dir`), made as `fleetctl` makes one: TLS under the fleet CA,
/// the operator token on every call. Its writes go to [`WRITE_PATH`].
pub async fn bare_api_client(dir: &Path, node: &str) -> Result<BareGrpcClient> {
    let (address, mut connector, token) = api_access(dir, node)?;
    let origin = format!("http://{address}");
    let tls = tower_service::Service::call(&mut connector, origin.parse::<Uri>()?).await?;
    BareGrpcClient::handshake(tls.into_inner(), &origin, Some(&format!("Bearer {token}"))).await
}

/// The path of the client API's `Write` method, for a [`BareGrpcClient`].
pub const WRITE_PATH: &str = "/fleet.api.v1.Fleet/Write";

/// The client API's message for committing `request` as the operator (or as the node
/// called with `as_node`).
pub fn write_request(request: &Request, as_node: bool) -> Result<wire::WriteRequest> {
    Ok(wire::WriteRequest {
        request_json: serde_json::to_string(request)?,
        as_node,
        forwarded_actor_json: String::new(),
    })
}

/// What a write's `reply` says: the response, or the rule the write broke.
pub fn write_outcome(reply: wire::WriteReply) -> Result<Result<Response, RuleViolation>> {
    Ok(match reply.outcome {
        Some(wire::write_reply::Outcome::ResponseJson(json)) => Ok(serde_json::from_str(&json)?),
        Some(wire::write_reply::Outcome::Refusal(refusal)) => {
            Err(serde_json::from_str(&refusal.violation_json)?)
        }
        None => bail!("empty write reply"),
    })
}

/// A connection to one node's client API.
#[derive(Clone)]
pub struct TestClient {
    client: FleetClient<Channel>,
    token: String,
    pub node: String,
}

impl TestClient {
    /// Connects to `node` of the fleet initialised in `dir`; a call gives up after 10 s.
    pub async fn connect(dir: &Path, node: &str) -> Result<Self> {
        Self::connect_with_timeout(dir, node, Duration::from_secs(10)).await
    }

    /// Like [`TestClient::connect`], with calls that give up after `timeout`.
    pub async fn connect_with_timeout(dir: &Path, node: &str, timeout: Duration) -> Result<Self> {
        let (address, connector, token) = api_access(dir, node)?;
        let channel = api_endpoint(&address)?
            .connect_timeout(Duration::from_secs(2))
            .timeout(timeout)
            .connect_with_connector_lazy(connector);
        Ok(Self {
            client: FleetClient::new(channel)
                .max_decoding_message_size(API_MESSAGE_MAX_BYTES)
                .max_encoding_message_size(API_MESSAGE_MAX_BYTES),
            token,
            node: node.to_string(),
        })
    }

    /// This client, sending calls of any size: the node's own limit is what refuses them.
    pub fn without_send_limit(mut self) -> Self {
        self.client = self.client.max_encoding_message_size(usize::MAX);
        self
    }

    fn request<T>(&self, body: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(body);
        let value: MetadataValue<_> = format!("Bearer {}", self.token)
            .parse()
            .expect("a token is ASCII");
        request.metadata_mut().insert("authorization", value);
        request
    }

    /// Commits `request` as the operator (or as this node with `as_node`).
    pub async fn write(
        &mut self,
        request: &Request,
        as_node: bool,
    ) -> Result<(Result<Response, RuleViolation>, u64)> {
        let reply = self
            .send_write(request, as_node)
            .await?
            .map_err(|s| anyhow!("{}: {}", s.code(), s.message()))?;
        let log_index = reply.log_index;
        Ok((write_outcome(reply)?, log_index))
    }

    /// Sends `request` like [`TestClient::write`]; gives the reply as it came, or the
    /// status the call failed with.
    pub async fn send_write(
        &mut self,
        request: &Request,
        as_node: bool,
    ) -> Result<Result<wire::WriteReply, tonic::Status>> {
        let body = write_request(request, as_node)?;
        let answer = self.client.write(self.request(body)).await;
        Ok(answer.map(tonic::Response::into_inner))
    }

    /// Reads `query`, waiting until this node has applied `min_applied`.
    pub async fn read(
        &mut self,
        query: &Query,
        linearizable: bool,
        min_applied: u64,
    ) -> Result<QueryAnswer> {
        self.read_with(query, linearizable, min_applied, false, 10_000)
            .await
    }

    /// The bodies of the fleet's first 1,000 events, as this node answers (see
    /// [`TestClient::read`]).
    pub async fn event_bodies(
        &mut self,
        linearizable: bool,
        min_applied: u64,
    ) -> Result<BTreeSet<String>> {
        let query = Query::Events {
            filter: EventFilter::default(),
            since: 0,
            limit: 1_000,
        };
        match self.read(&query, linearizable, min_applied).await? {
            QueryAnswer::Events { events, .. } => Ok(events.into_iter().map(|e| e.body).collect()),
            other => bail!("unexpected answer {other:?}"),
        }
    }

    /// Reads `query` from this node's state, held by the node until the answer is
    /// ready (a matching event, a message's report) or `wait_ms` passes.
    pub async fn read_until_ready(&mut self, query: &Query, wait_ms: u64) -> Result<QueryAnswer> {
        self.read_with(query, false, 0, true, wait_ms).await
    }

    async fn read_with(
        &mut self,
        query: &Query,
        linearizable: bool,
        min_applied: u64,
        until_ready: bool,
        wait_ms: u64,
    ) -> Result<QueryAnswer> {
        let body = wire::ReadRequest {
            query_json: serde_json::to_string(query)?,
            linearizable,
            min_applied_index: min_applied,
            wait_ms,
            until_ready,
        };
        let reply = self
            .client
            .read(self.request(body))
            .await
            .map_err(|s| anyhow!("{}: {}", s.code(), s.message()))?;
        let answer: Result<QueryAnswer, RuleViolation> =
            serde_json::from_str(&reply.into_inner().answer_json)?;
        Ok(answer?)
    }

    /// This node's status.
    pub async fn status(&mut self) -> Result<wire::StatusReply> {
        let reply = self
            .client
            .status(self.request(wire::StatusRequest {}))
            .await
            .map_err(|s| anyhow!("{}: {}", s.code(), s.message()))?;
        Ok(reply.into_inner())
    }
}

/// Calls `target`'s API in the fleet of `fleet_dir` presenting the node certificate of
/// `node` from `cert_dir` (another fleet's directory for a stranger).
pub async fn call_with_node_cert(
    fleet_dir: &Path,
    cert_dir: &Path,
    node: &str,
    target: &str,
) -> Result<()> {
    use tonic::transport::Identity;
    let address = api_address(fleet_dir, target)?;
    let ca = fs::read_to_string(fleet_dir.join("ca.pem"))?;
    let identity = Identity::from_pem(
        fs::read_to_string(cert_dir.join(node).join("node.pem"))?,
        fs::read_to_string(cert_dir.join(node).join("node.key"))?,
    );
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(ca))
        .identity(identity)
        .domain_name(format!("{target}.fleet"));
    let channel = Endpoint::from_shared(format!("https://{address}"))?
        .tls_config(tls)?
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(5))
        .connect()
        .await?;
    let token = fs::read_to_string(fleet_dir.join("operator.token"))?
        .trim()
        .to_string();
    let mut client = FleetClient::new(channel);
    let mut request = tonic::Request::new(wire::StatusRequest {});
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("ASCII token"),
    );
    client
        .status(request)
        .await
        .map_err(|s| anyhow!("{}: {}", s.code(), s.message()))?;
    Ok(())
}
