//! The Raft transports against real sockets on 127.0.0.1: QUIC and gRPC round trips with
//! mutual TLS, concurrency over one QUIC connection, appends on gRPC's append stream
//! (and unary to a peer without it), refusal of a foreign certificate, unreachable
//! peers, reconnecting to a restarted server, and the gRPC fallback.
//!
//! Certificates are made here with rcgen: a test fleet CA with node certificates naming
//! `<name>.fleet`, and a second CA that the fleet does not trust.

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use fleet_node::api::api_connection::ApiConnection;
use fleet_node::identity::{CaCert, NodeIdentity, api_client_config, api_server_config};
use fleet_node::transport::{
    AutoClient, GrpcClient, GrpcRaftService, QuicConnector, QuicServer, RpcClient, RpcHandler,
    RpcKind, TransportError,
};
use fleet_proto::raft::RaftMessage;
use fleet_proto::raft::raft_transport_client::RaftTransportClient;
use fleet_proto::raft::raft_transport_server::{RaftTransport, RaftTransportServer};
use futures::future::{BoxFuture, join_all};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore};
use tokio::task::JoinHandle;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Server};
use tonic::{Request, Response, Status};

/// Generous: these tests assert behaviour, not speed.
const TIMEOUT: Duration = Duration::from_secs(5);

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A certificate authority made for one test.
struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A node's certificate and key, in the forms rustls and tonic take.
struct NodeCert {
    der: CertificateDer<'static>,
    key_der: Vec<u8>,
    cert_pem: String,
    key_pem: String,
}

impl NodeCert {
    fn key(&self) -> PrivateKeyDer<'static> {
        PrivatePkcs8KeyDer::from(self.key_der.clone()).into()
    }

    /// The client API's TLS presenting this certificate and trusting `ca`, as a
    /// node calls another node's API port (Raft over gRPC).
    fn api_tls(&self, ca: &TestCa) -> Result<Arc<ClientConfig>> {
        let identity = NodeIdentity::from_pem(&self.cert_pem, &self.key_pem)?;
        Ok(Arc::new(api_client_config(
            &CaCert::from_der(ca.der()),
            Some(&identity),
        )?))
    }
}

impl TestCa {
    fn new(name: &str) -> Result<TestCa> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.distinguished_name.push(DnType::CommonName, name);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        Ok(TestCa { issuer })
    }

    fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    fn pem(&self) -> Certificate {
        Certificate::from_pem(self.issuer.pem())
    }

    fn roots(&self) -> Result<Arc<RootCertStore>> {
        let mut roots = RootCertStore::empty();
        roots.add(self.der())?;
        Ok(Arc::new(roots))
    }

    /// A node certificate naming `<name>.fleet`, for both server and client use.
    fn node(&self, name: &str) -> Result<NodeCert> {
        let mut params = CertificateParams::new(vec![format!("{name}.fleet")])?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &*self.issuer)?;
        Ok(NodeCert {
            der: cert.der().clone(),
            key_der: key.serialize_der(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// QUIC server TLS for `node`, requiring client certificates of this CA.
    fn server_tls(&self, node: &NodeCert) -> Result<Arc<rustls::ServerConfig>> {
        let verifier =
            WebPkiClientVerifier::builder_with_provider(self.roots()?, provider()).build()?;
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_client_cert_verifier(verifier)
            .with_single_cert(vec![node.der.clone()], node.key())?;
        Ok(Arc::new(config))
    }

    /// QUIC client TLS trusting this CA and presenting `node`.
    fn client_tls(&self, node: &NodeCert) -> Result<Arc<rustls::ClientConfig>> {
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_root_certificates(self.roots()?)
            .with_client_auth_cert(vec![node.der.clone()], node.key())?;
        Ok(Arc::new(config))
    }
}

/// Answers `<from>|<kind>|<payload>` and counts the calls it served; a payload that
/// starts with `slow` is answered after [`SLOW_ANSWER`]. Notes the task each call came
/// in on: the appends of one gRPC append stream share its task, unary calls have one
/// each.
#[derive(Default)]
struct EchoHandler {
    calls: AtomicUsize,
    tasks: std::sync::Mutex<Vec<Option<tokio::task::Id>>>,
}

/// How long [`EchoHandler`] takes over a `slow` payload.
const SLOW_ANSWER: Duration = Duration::from_millis(800);

impl EchoHandler {
    /// How many distinct tasks the calls since the last look came in on.
    fn tasks_since_last_look(&self) -> usize {
        let mut tasks = self.tasks.lock().unwrap();
        let distinct: std::collections::HashSet<_> = tasks.drain(..).collect();
        distinct.len()
    }
}

impl RpcHandler for EchoHandler {
    fn handle(
        &self,
        from: String,
        kind: RpcKind,
        payload: Bytes,
    ) -> BoxFuture<'static, Result<Bytes, String>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.tasks.lock().unwrap().push(tokio::task::try_id());
        Box::pin(async move {
            if payload.as_ref() == b"fail" {
                return Err(format!("{from} asked to fail"));
            }
            if payload.starts_with(b"slow") {
                tokio::time::sleep(SLOW_ANSWER).await;
            }
            let mut reply = format!("{from}|{kind}|").into_bytes();
            reply.extend_from_slice(&payload);
            Ok(Bytes::from(reply))
        })
    }
}

/// The fleet's gRPC API server as the node runs it: TLS with optional client auth.
struct GrpcServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn start_grpc(ca: &TestCa, node: &NodeCert, handler: Arc<EchoHandler>) -> Result<GrpcServer> {
    start_grpc_serving(ca, node, GrpcRaftService::new(handler).into_server()).await
}

/// A gRPC server as `node` for `service` (the fleet's, or a stand-in for another build).
async fn start_grpc_serving<S: RaftTransport>(
    ca: &TestCa,
    node: &NodeCert,
    service: RaftTransportServer<S>,
) -> Result<GrpcServer> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let tls = api_server_config(
        &NodeIdentity::from_pem(&node.cert_pem, &node.key_pem)?,
        &CaCert::from_der(ca.der()),
    )?;
    let router = Server::builder().add_service(service);
    let task = tokio::spawn(async move {
        router
            .serve_with_incoming(ApiConnection::accept_all(listener, Arc::new(tls)))
            .await
            .expect("the gRPC test server runs");
    });
    Ok(GrpcServer { addr, task })
}

/// `beast`'s gRPC server answering with `handler`, and `mac`'s client of it.
async fn grpc_from_mac_to_beast(handler: Arc<EchoHandler>) -> Result<(GrpcServer, GrpcClient)> {
    let ca = TestCa::new("test fleet CA")?;
    let server = start_grpc(&ca, &ca.node("beast")?, handler).await?;
    let client = GrpcClient::new("beast", server.addr, ca.node("mac")?.api_tls(&ca)?)?;
    Ok((server, client))
}

fn free_udp_port() -> Result<SocketAddr> {
    Ok(UdpSocket::bind("127.0.0.1:0")?.local_addr()?)
}

fn free_tcp_port() -> Result<SocketAddr> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

fn localhost() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

#[tokio::test]
async fn quic_round_trip_names_the_caller() -> Result<()> {
    let ca = TestCa::new("test fleet CA")?;
    let handler = Arc::new(EchoHandler::default());
    let server = QuicServer::bind(
        localhost(),
        ca.server_tls(&ca.node("beast")?)?,
        handler.clone(),
    )?;
    let connector = QuicConnector::new(ca.client_tls(&ca.node("mac")?)?)?;
    let client = connector.client("beast", server.local_addr());

    let reply = client
        .call(RpcKind::Vote, Bytes::from_static(b"hello"), TIMEOUT)
        .await?;
    assert_eq!(reply.as_ref(), b"mac|vote|hello");
    let reply = client
        .call(RpcKind::AppendEntries, Bytes::new(), TIMEOUT)
        .await?;
    assert_eq!(reply.as_ref(), b"mac|append-entries|");

    let error = client
        .call(RpcKind::Vote, Bytes::from_static(b"fail"), TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        TransportError::Remote {
            peer: "beast".into(),
            kind: RpcKind::Vote,
            message: "mac asked to fail".into(),
        }
    );
    assert_eq!(server.open_connections(), 1, "calls share one connection");
    Ok(())
}

#[tokio::test]
async fn quic_carries_a_large_payload() -> Result<()> {
    let ca = TestCa::new("test fleet CA")?;
    let server = QuicServer::bind(
        localhost(),
        ca.server_tls(&ca.node("beast")?)?,
        Arc::new(EchoHandler::default()),
    )?;
    let connector = QuicConnector::new(ca.client_tls(&ca.node("mac")?)?)?;
    let client = connector.client("beast", server.local_addr());
    let snapshot = Bytes::from(vec![7u8; 8 * 1024 * 1024]);
    let reply = client
        .call(
            RpcKind::InstallSnapshot,
            snapshot.clone(),
            Duration::from_secs(60),
        )
        .await?;
    assert_eq!(
        &reply[..b"mac|install-snapshot|".len()],
        b"mac|install-snapshot|"
    );
    assert_eq!(&reply[b"mac|install-snapshot|".len()..], snapshot.as_ref());

    let oversized = Bytes::from(vec![0u8; fleet_node::transport::PAYLOAD_MAX_BYTES + 1]);
    let error = client
        .call(RpcKind::InstallSnapshot, oversized, TIMEOUT)
        .await
        .unwrap_err();
    assert!(matches!(error, TransportError::Protocol { .. }), "{error}");
    Ok(())
}

#[tokio::test]
async fn grpc_round_trip_names_the_caller() -> Result<()> {
    let handler = Arc::new(EchoHandler::default());
    let (_server, client) = grpc_from_mac_to_beast(handler.clone()).await?;

    let reply = client
        .call(RpcKind::TransferLeader, Bytes::from_static(b"hi"), TIMEOUT)
        .await?;
    assert_eq!(reply.as_ref(), b"mac|transfer-leader|hi");
    let reply = client
        .call(RpcKind::InstallSnapshot, Bytes::from_static(b"s"), TIMEOUT)
        .await?;
    assert_eq!(reply.as_ref(), b"mac|install-snapshot|s");

    let error = client
        .call(RpcKind::AppendEntries, Bytes::from_static(b"fail"), TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        TransportError::Remote {
            peer: "beast".into(),
            kind: RpcKind::AppendEntries,
            message: "mac asked to fail".into(),
        }
    );
    Ok(())
}

#[tokio::test]
async fn a_hundred_concurrent_calls_share_one_quic_connection() -> Result<()> {
    let ca = TestCa::new("test fleet CA")?;
    let server = QuicServer::bind(
        localhost(),
        ca.server_tls(&ca.node("beast")?)?,
        Arc::new(EchoHandler::default()),
    )?;
    let connector = QuicConnector::new(ca.client_tls(&ca.node("5070")?)?)?;
    let client = connector.client("beast", server.local_addr());

    let calls = (0..100).map(|i| {
        let client = &client;
        async move {
            let payload = Bytes::from(format!("call {i}"));
            let reply = client
                .call(RpcKind::AppendEntries, payload, Duration::from_secs(20))
                .await;
            (i, reply)
        }
    });
    for (i, reply) in join_all(calls).await {
        let reply = reply.with_context(|| format!("call {i}"))?;
        assert_eq!(reply, Bytes::from(format!("5070|append-entries|call {i}")));
    }
    assert_eq!(server.open_connections(), 1);
    Ok(())
}

#[tokio::test]
async fn a_certificate_of_another_ca_is_refused_over_quic() -> Result<()> {
    let fleet = TestCa::new("test fleet CA")?;
    let other = TestCa::new("another CA")?;
    let handler = Arc::new(EchoHandler::default());
    let server = QuicServer::bind(
        localhost(),
        fleet.server_tls(&fleet.node("beast")?)?,
        handler.clone(),
    )?;
    // Trusts the fleet's CA, but its own certificate comes from the other CA.
    let impostor = other.node("mac")?;
    let intruder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(fleet.roots()?)
        .with_client_auth_cert(vec![impostor.der.clone()], impostor.key())?;
    let connector = QuicConnector::new(Arc::new(intruder))?;
    let client = connector.client("beast", server.local_addr());

    let error = client
        .call(RpcKind::Vote, Bytes::from_static(b"let me in"), TIMEOUT)
        .await
        .unwrap_err();
    assert!(
        matches!(error, TransportError::Unreachable { .. }),
        "refused as unreachable, got {error}"
    );
    assert_eq!(handler.calls.load(Ordering::SeqCst), 0);
    Ok(())
}

#[tokio::test]
async fn grpc_appends_share_one_stream_and_each_gets_its_own_reply() -> Result<()> {
    let handler = Arc::new(EchoHandler::default());
    let (_server, client) = grpc_from_mac_to_beast(handler.clone()).await?;
    let append = |payload: &'static str, timeout| {
        let client = client.clone();
        async move {
            let payload = Bytes::from_static(payload.as_bytes());
            client.call(RpcKind::AppendEntries, payload, timeout).await
        }
    };

    // Appends one after another travel on one stream (its task answers them all);
    // votes are unary calls, a task each.
    for i in 0..20 {
        let payload = format!("entry {i}");
        let reply = client
            .call(
                RpcKind::AppendEntries,
                Bytes::from(payload.clone()),
                TIMEOUT,
            )
            .await?;
        assert_eq!(reply, format!("mac|append-entries|{payload}").as_bytes());
    }
    assert_eq!(handler.tasks_since_last_look(), 1, "one stream's task");
    for _ in 0..2 {
        client
            .call(RpcKind::Vote, Bytes::from_static(b"v"), TIMEOUT)
            .await?;
    }
    assert_eq!(handler.tasks_since_last_look(), 2, "a task per unary call");

    // An append sent while another is in flight (a heartbeat) does not wait for it.
    let slow = tokio::spawn(append("slow append", TIMEOUT));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let reply = append("heartbeat", TIMEOUT).await?;
    assert_eq!(reply.as_ref(), b"mac|append-entries|heartbeat");
    assert!(!slow.is_finished(), "the heartbeat came back first");
    assert_eq!(slow.await??.as_ref(), b"mac|append-entries|slow append");

    // An append that misses its deadline takes the stream with it: the late reply
    // answers nobody, and the next append gets its own.
    let error = append("slow, and late", Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(matches!(error, TransportError::Timeout { .. }), "{error}");
    let reply = append("next", TIMEOUT).await?;
    assert_eq!(reply.as_ref(), b"mac|append-entries|next");
    tokio::time::sleep(SLOW_ANSWER).await;
    let reply = append("after the late reply", TIMEOUT).await?;
    assert_eq!(reply.as_ref(), b"mac|append-entries|after the late reply");

    // So does an append whose caller gives up on it (drops the call) midway.
    let dropped = tokio::spawn(append("slow, then dropped", TIMEOUT));
    tokio::time::sleep(Duration::from_millis(100)).await;
    dropped.abort();
    assert!(dropped.await.unwrap_err().is_cancelled());
    let reply = append("after the dropped one", TIMEOUT).await?;
    assert_eq!(reply.as_ref(), b"mac|append-entries|after the dropped one");

    // The handler's failure comes back on the stream as a remote error, and the
    // stream goes on.
    let error = append("fail", TIMEOUT).await.unwrap_err();
    assert!(matches!(error, TransportError::Remote { .. }), "{error}");
    handler.tasks_since_last_look();
    for payload in ["one", "two"] {
        append(payload, TIMEOUT).await?;
    }
    assert_eq!(handler.tasks_since_last_look(), 1, "still one stream");
    Ok(())
}

/// A peer of a build without the append stream: the unary methods of the real
/// service, and `Unimplemented` for the stream.
struct UnaryOnlyPeer(GrpcRaftService);

#[tonic::async_trait]
impl RaftTransport for UnaryOnlyPeer {
    async fn append_entries(&self, request: Request<RaftMessage>) -> Reply {
        self.0.append_entries(request).await
    }

    type AppendStreamStream = futures::stream::BoxStream<'static, Result<RaftMessage, Status>>;

    async fn append_stream(
        &self,
        _: Request<tonic::Streaming<RaftMessage>>,
    ) -> Result<Response<Self::AppendStreamStream>, Status> {
        Err(Status::unimplemented("not in this build"))
    }

    async fn vote(&self, request: Request<RaftMessage>) -> Reply {
        self.0.vote(request).await
    }

    async fn pre_vote(&self, request: Request<RaftMessage>) -> Reply {
        self.0.pre_vote(request).await
    }

    async fn install_snapshot(&self, request: Request<RaftMessage>) -> Reply {
        self.0.install_snapshot(request).await
    }

    async fn transfer_leader(&self, request: Request<RaftMessage>) -> Reply {
        self.0.transfer_leader(request).await
    }
}

type Reply = Result<Response<RaftMessage>, Status>;

#[tokio::test]
async fn grpc_appends_go_unary_to_a_peer_without_the_append_stream() -> Result<()> {
    let ca = TestCa::new("test fleet CA")?;
    let handler = Arc::new(EchoHandler::default());
    let peer = UnaryOnlyPeer(GrpcRaftService::new(handler.clone()));
    let server =
        start_grpc_serving(&ca, &ca.node("beast")?, RaftTransportServer::new(peer)).await?;
    let client = GrpcClient::new("beast", server.addr, ca.node("mac")?.api_tls(&ca)?)?;
    for payload in ["one", "two", "three"] {
        let reply = client
            .call(RpcKind::AppendEntries, Bytes::from(payload), TIMEOUT)
            .await?;
        assert_eq!(reply, format!("mac|append-entries|{payload}").as_bytes());
    }
    assert_eq!(handler.tasks_since_last_look(), 3, "a unary call each");
    Ok(())
}

#[tokio::test]
async fn a_certificate_of_another_ca_or_none_is_refused_over_grpc() -> Result<()> {
    let fleet = TestCa::new("test fleet CA")?;
    let other = TestCa::new("another CA")?;
    let handler = Arc::new(EchoHandler::default());
    let server = start_grpc(&fleet, &fleet.node("beast")?, handler.clone()).await?;

    let intruder = GrpcClient::new("beast", server.addr, other.node("mac")?.api_tls(&fleet)?)?;
    let error = intruder
        .call(RpcKind::Vote, Bytes::from_static(b"let me in"), TIMEOUT)
        .await
        .unwrap_err();
    assert!(
        matches!(error, TransportError::Unreachable { .. }),
        "refused as unreachable, got {error}"
    );

    // The API port takes calls without a client certificate (tokens), but not Raft's.
    let anonymous_tls = ClientTlsConfig::new()
        .ca_certificate(fleet.pem())
        .domain_name("beast.fleet");
    let channel = Endpoint::from_shared(format!("https://{}", server.addr))?
        .tls_config(anonymous_tls)?
        .connect()
        .await?;
    let status = RaftTransportClient::new(channel)
        .vote(RaftMessage {
            encoding_version: 1,
            from: "mac".into(),
            payload: Bytes::from_static(b"let me in"),
            error: None,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unauthenticated, "{status}");

    assert_eq!(handler.calls.load(Ordering::SeqCst), 0);
    Ok(())
}

#[tokio::test]
async fn nobody_listening_is_unreachable() -> Result<()> {
    let ca = TestCa::new("test fleet CA")?;
    let mac = ca.node("mac")?;
    let connector = QuicConnector::new(ca.client_tls(&mac)?)?;
    let quic = connector.client("beast", free_udp_port()?);
    let error = quic
        .call(RpcKind::Vote, Bytes::new(), Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(
        matches!(error, TransportError::Unreachable { .. }),
        "{error}"
    );

    let grpc = GrpcClient::new("beast", free_tcp_port()?, mac.api_tls(&ca)?)?;
    let error = grpc
        .call(RpcKind::Vote, Bytes::new(), TIMEOUT)
        .await
        .unwrap_err();
    assert!(
        matches!(error, TransportError::Unreachable { .. }),
        "{error}"
    );
    Ok(())
}

#[tokio::test]
async fn the_same_client_reaches_a_restarted_server() -> Result<()> {
    let ca = TestCa::new("test fleet CA")?;
    let tls = ca.server_tls(&ca.node("beast")?)?;
    let server = QuicServer::bind(localhost(), tls.clone(), Arc::new(EchoHandler::default()))?;
    let addr = server.local_addr();
    let connector = QuicConnector::new(ca.client_tls(&ca.node("mac")?)?)?;
    let client = connector.client("beast", addr);
    let reply = client
        .call(RpcKind::Vote, Bytes::from_static(b"before"), TIMEOUT)
        .await?;
    assert_eq!(reply.as_ref(), b"mac|vote|before");

    drop(server);
    // The old endpoint frees its port once its connections have drained.
    let mut restarted = None;
    for _ in 0..100 {
        match QuicServer::bind(addr, tls.clone(), Arc::new(EchoHandler::default())) {
            Ok(server) => {
                restarted = Some(server);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let _restarted = restarted.context("the port was not free again within 5 s")?;

    // The old connection was closed by the server; the next call opens a new one.
    let reply = client
        .call(RpcKind::Vote, Bytes::from_static(b"after"), TIMEOUT)
        .await?;
    assert_eq!(reply.as_ref(), b"mac|vote|after");
    Ok(())
}

#[tokio::test]
async fn auto_client_falls_back_to_grpc_when_quic_gets_no_answer() -> Result<()> {
    let ca = TestCa::new("test fleet CA")?;
    let mac = ca.node("mac")?;
    let grpc_server = start_grpc(&ca, &ca.node("beast")?, Arc::new(EchoHandler::default())).await?;
    let connector = QuicConnector::new(ca.client_tls(&mac)?)?;
    let auto = AutoClient::new(
        connector.client("beast", free_udp_port()?),
        GrpcClient::new("beast", grpc_server.addr, mac.api_tls(&ca)?)?,
    );
    assert_eq!(auto.active(), "quic");

    let reply = auto
        .call(RpcKind::Vote, Bytes::from_static(b"via grpc"), TIMEOUT)
        .await?;
    assert_eq!(reply.as_ref(), b"mac|vote|via grpc");
    assert_eq!(auto.active(), "grpc");

    // Within the back-off, calls go straight to gRPC.
    let reply = auto
        .call(
            RpcKind::AppendEntries,
            Bytes::from_static(b"again"),
            TIMEOUT,
        )
        .await?;
    assert_eq!(reply.as_ref(), b"mac|append-entries|again");
    assert_eq!(auto.active(), "grpc");
    Ok(())
}

#[tokio::test]
async fn auto_client_uses_quic_when_it_connects() -> Result<()> {
    let ca = TestCa::new("test fleet CA")?;
    let mac = ca.node("mac")?;
    let quic_server = QuicServer::bind(
        localhost(),
        ca.server_tls(&ca.node("beast")?)?,
        Arc::new(EchoHandler::default()),
    )?;
    let connector = QuicConnector::new(ca.client_tls(&mac)?)?;
    // Nothing listens for gRPC: QUIC must carry the call.
    let auto = AutoClient::new(
        connector.client("beast", quic_server.local_addr()),
        GrpcClient::new("beast", free_tcp_port()?, mac.api_tls(&ca)?)?,
    );
    let reply = auto
        .call(RpcKind::Vote, Bytes::from_static(b"via quic"), TIMEOUT)
        .await?;
    assert_eq!(reply.as_ref(), b"mac|vote|via quic");
    assert_eq!(auto.active(), "quic");
    Ok(())
}
