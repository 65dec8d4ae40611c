//! `start`: wires a node from its config — identity and TLS, the RocksDB store, the
//! openraft instance, the QUIC and gRPC servers, the leader's driver and the effect
//! executor — and `RunningNode`, the handle that stops it.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::SnapshotPolicy;
use rustls::ClientConfig;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tower::util::MapResponseLayer;

use super::driver::run_driver;
use super::duty_runner::{DutySettings, run_duties};
use super::effects::run_effects;
use super::fleet_node::FleetNode;
use super::forwarder::Forwarder;
use super::health::{HealthSettings, run_health_monitor};
use super::snapshot_pacer::{SnapshotPacer, run_snapshot_pacer};
use super::succession::{SuccessionSettings, run_succession};
use crate::api::api_connection::ApiConnection;
use crate::api::auth::Authenticator;
use crate::api::error::mark_answered;
use crate::api::service::FleetApi;
use crate::config::{NodeConfig, TransportMode};
use crate::identity::{IdentityError, tls};
use crate::notify::RetryPolicy;
use crate::raft::network::{ClientMaker, FleetNetwork};
use crate::raft::rpc_handler::RaftRpcHandler;
use crate::raft::{LeaderContact, Peer, node_id};
use crate::state::NodeName;
use crate::store::open_store;
use crate::transport::{
    AutoClient, GrpcClient, GrpcRaftService, Isolation, QuicConnector, QuicServer, RpcClient,
};

/// Why a node could not start; each names the part and what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("identity: {0}")]
    Identity(String),
    #[error("storage at {path}: {reason}")]
    Store { path: String, reason: String },
    #[error("raft: {0}")]
    Raft(String),
    #[error("cannot listen on {addr} ({what}): {reason}")]
    Listen {
        addr: String,
        what: &'static str,
        reason: String,
    },
}

/// A started node; dropping it does not stop it, `shutdown` does.
pub struct RunningNode {
    pub node: Arc<FleetNode>,
    stop_api: oneshot::Sender<()>,
    tasks: Vec<JoinHandle<()>>,
    quic: QuicServer,
}

impl RunningNode {
    /// Stops serving, shuts Raft down, waits for the tasks.
    pub async fn shutdown(self) {
        let _ = self.stop_api.send(());
        self.quic.close().await;
        if let Err(error) = self.node.raft.shutdown().await {
            tracing::warn!(error = %error, "raft shutdown");
        }
        for task in self.tasks {
            task.abort();
        }
    }
}

/// Makes each peer's Raft client: QUIC, gRPC or auto, as configured.
struct TransportMaker {
    mode: TransportMode,
    quic: QuicConnector,
    /// The client API's TLS with this node's certificate: gRPC runs on the API port.
    api_tls: Arc<ClientConfig>,
    /// The auto clients, so status can say which transport each peer is on.
    auto_clients: AutoClients,
    /// Every client fails while the node is cut off by a drill.
    isolation: Isolation,
}

type AutoClients = Arc<Mutex<HashMap<String, Arc<AutoClient>>>>;

/// Resolves `host:port` (an IP address, or a name such as a MagicDNS one).
fn resolve(address: &str) -> Result<SocketAddr, String> {
    address
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve `{address}`: {e}"))?
        .next()
        .ok_or_else(|| format!("`{address}` resolves to no address"))
}

impl ClientMaker for TransportMaker {
    fn client_for(&self, peer: &Peer) -> Result<Arc<dyn RpcClient>, String> {
        let quic = || Ok::<_, String>(self.quic.client(&peer.name, resolve(&peer.raft_addr)?));
        let grpc = || {
            GrpcClient::new(&peer.name, resolve(&peer.api_addr)?, self.api_tls.clone())
                .map_err(|e| e.to_string())
        };
        let client: Arc<dyn RpcClient> = match self.mode {
            TransportMode::Quic => Arc::new(quic()?),
            TransportMode::Grpc => Arc::new(grpc()?),
            TransportMode::Auto => {
                let auto = Arc::new(AutoClient::new(quic()?, grpc()?));
                self.auto_clients
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(peer.name.clone(), auto.clone());
                auto
            }
        };
        Ok(self.isolation.client(client, &peer.name))
    }
}

/// Starts a node from its config.
pub async fn start(config: NodeConfig) -> Result<RunningNode, StartError> {
    let identity_error = |e: IdentityError| StartError::Identity(e.to_string());
    let name =
        NodeName::new(config.name.clone()).map_err(|e| StartError::Identity(e.to_string()))?;
    let ca = config.load_ca_cert().map_err(identity_error)?;
    let me = config.load_identity().map_err(identity_error)?;

    let id = node_id(&config.name);
    let (effects_tx, effects_rx) = mpsc::unbounded_channel();
    let store_dir = config.data_dir.join("raft");
    let (log_store, state_machine, state) =
        open_store(&store_dir, id, effects_tx).map_err(|e| StartError::Store {
            path: store_dir.display().to_string(),
            reason: e.to_string(),
        })?;

    let raft_config = openraft::Config {
        cluster_name: config.fleet.clone(),
        heartbeat_interval: config.raft.heartbeat_ms,
        election_timeout_min: config.raft.election_timeout_min_ms,
        election_timeout_max: config.raft.election_timeout_max_ms,
        // The runtime's `SnapshotPacer` decides when (by entries and by bytes).
        snapshot_policy: SnapshotPolicy::Never,
        max_in_snapshot_log_to_keep: config.raft.logs_kept_after_snapshot,
        enable_pre_vote: Some(true),
        // Replicate entries as soon as they are written here, while this node's own
        // fsync still runs: the leader's and the followers' disks work in parallel.
        broadcast_submitted_on_append: Some(true),
        ..Default::default()
    }
    .validate()
    .map_err(|e| StartError::Raft(e.to_string()))?;

    let rpc_timeout = Duration::from_millis(config.raft.rpc_timeout_ms);
    let raft_client_tls = tls::raft_client_config(&me, &ca).map_err(identity_error)?;
    let quic = QuicConnector::new(Arc::new(raft_client_tls)).map_err(|e| StartError::Listen {
        addr: "an ephemeral UDP port".into(),
        what: "raft client, QUIC over UDP",
        reason: e.to_string(),
    })?;
    // Raft over gRPC and writes forwarded to the leader call other nodes' API ports.
    let api_client_tls = Arc::new(tls::api_client_config(&ca, Some(&me)).map_err(identity_error)?);
    let auto_clients: AutoClients = Arc::new(Mutex::new(HashMap::new()));
    let isolation = Isolation::default();
    let maker = TransportMaker {
        isolation: isolation.clone(),
        mode: config.transport,
        quic,
        api_tls: api_client_tls.clone(),
        auto_clients: auto_clients.clone(),
    };
    let raft = openraft::Raft::new(
        id,
        Arc::new(raft_config),
        FleetNetwork::new(Arc::new(maker)),
        log_store,
        state_machine,
    )
    .await
    .map_err(|e| StartError::Raft(e.to_string()))?;

    let contact = LeaderContact::default();
    let handler = isolation.handler(Arc::new(RaftRpcHandler::new(raft.clone(), contact.clone())));
    let raft_server_tls = tls::raft_server_config(&me, &ca).map_err(identity_error)?;
    let quic_server = QuicServer::bind(
        config.raft_listen,
        Arc::new(raft_server_tls),
        handler.clone(),
    )
    .map_err(|e| StartError::Listen {
        addr: config.raft_listen.to_string(),
        what: "raft, QUIC over UDP",
        reason: e.to_string(),
    })?;

    let mode = config.transport;
    let transport_of = Box::new(move |peer: &str| -> &'static str {
        match mode {
            TransportMode::Auto => auto_clients
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(peer)
                .map_or("auto", |client| client.active()),
            other => other.as_str(),
        }
    });
    let peer = Peer {
        name: config.name.clone(),
        raft_addr: config.advertised_raft(),
        api_addr: config.advertised_api(),
    };
    let configured_peers = config
        .peers
        .iter()
        .map(|(name, addrs)| Peer {
            name: name.clone(),
            raft_addr: addrs.raft.clone(),
            api_addr: addrs.api.clone(),
        })
        .collect();
    let node = Arc::new(FleetNode {
        name: name.clone(),
        fleet: config.fleet.clone(),
        raft,
        state,
        peer,
        configured_peers,
        forwarder: Forwarder::new(api_client_tls, rpc_timeout * 5),
        quorum_stale_ms: 2 * config.raft.election_timeout_max_ms,
        leader_wait: Duration::from_millis(5 * config.raft.election_timeout_max_ms),
        transport_of,
        isolation,
    });

    let auth = Arc::new(Authenticator::new(name.clone(), config.auth.clone()));
    let listener = TcpListener::bind(config.api_listen)
        .await
        .map_err(|e| StartError::Listen {
            addr: config.api_listen.to_string(),
            what: "client API and raft fallback, gRPC over TCP",
            reason: e.to_string(),
        })?;
    let (stop_api, stopped) = oneshot::channel::<()>();
    let api_tls = tls::api_server_config(&me, &ca).map_err(identity_error)?;
    let api = tonic::transport::Server::builder()
        .layer(MapResponseLayer::new(mark_answered::<tonic::body::Body>))
        .add_service(FleetApi::new(node.clone(), auth).into_server())
        .add_service(GrpcRaftService::new(handler).into_server())
        .serve_with_incoming_shutdown(
            ApiConnection::accept_all(listener, Arc::new(api_tls)),
            async {
                let _ = stopped.await;
            },
        );
    let api_task = tokio::spawn(async move {
        if let Err(error) = api.await {
            tracing::error!(error = %error, "client API server stopped");
        }
    });
    let tasks = vec![
        api_task,
        tokio::spawn(run_driver(node.clone())),
        tokio::spawn(run_snapshot_pacer(
            node.clone(),
            SnapshotPacer {
                every_logs: config.raft.snapshot_every_logs,
            },
        )),
        tokio::spawn(run_health_monitor(
            node.clone(),
            HealthSettings {
                interval: Duration::from_millis(config.health.check_every_ms),
                unhealthy_after: Duration::from_millis(config.health.unhealthy_after_ms),
            },
        )),
        tokio::spawn(run_succession(
            node.clone(),
            contact,
            SuccessionSettings::from_timers(
                config.raft.heartbeat_ms,
                config.raft.election_timeout_min_ms,
                config.raft.election_timeout_max_ms,
            ),
        )),
        tokio::spawn(run_effects(name, effects_rx)),
        tokio::spawn(run_duties(
            node.clone(),
            DutySettings {
                agent: config.agent.clone(),
                sinks: config.notify.clone(),
                retry: RetryPolicy::default(),
                gateway: config.gateway.clone(),
            },
        )),
    ];
    tracing::info!(node = %config.name, api = %config.api_listen, raft = %config.raft_listen, transport = ?config.transport, "fleetd started");
    Ok(RunningNode {
        node,
        stop_api,
        tasks,
        quic: quic_server,
    })
}
