//! Fleet identity end to end: the CA issues node certificates that carry the node's
//! name, and real TLS handshakes over loopback sockets admit this fleet's nodes and
//! refuse everyone else — on the Raft configurations and on the client API.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use fleet_node::api::api_connection::{ApiConnection, CallerCertificates};
use fleet_node::api::api_connector::{ApiConnector, api_endpoint};
use fleet_node::identity::{
    CaCert, FleetCa, IdentityError, IssuedNodeCert, NodeIdentity, RAFT_ALPN, api_client_config,
    api_server_config, dns_name, node_name_from_cert, raft_client_config, raft_server_config,
};
use fleet_proto::raft::RaftMessage;
use fleet_proto::raft::raft_transport_client::RaftTransportClient;
use fleet_proto::raft::raft_transport_server::{RaftTransport, RaftTransportServer};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, ServerConfig, ServerConnection};

const SOCKET_TIMEOUT: Duration = Duration::from_secs(10);
const GREETING: &[u8] = b"welcome";

/// The fleet of these tests: its CA and three node identities.
struct Fleet {
    ca: FleetCa,
    beast: NodeIdentity,
    gpu_box: NodeIdentity,
}

fn fleet() -> Fleet {
    let ca = FleetCa::generate("home").unwrap();
    let identity = |name: &str| ca.issue_node_cert(name).unwrap().to_identity().unwrap();
    Fleet {
        beast: identity("beast"),
        gpu_box: identity("5070"),
        ca,
    }
}

/// What one end of a handshake saw.
#[derive(Debug)]
struct Seen {
    peer_name: Option<String>,
    alpn: Option<Vec<u8>>,
}

/// Runs one TLS session over a loopback TCP socket: the server greets, the client
/// reads the greeting. Returns what each end saw, or its error.
fn handshake(
    server_config: ServerConfig,
    client_config: ClientConfig,
    server_name: &str,
) -> (Result<Seen, String>, Result<Seen, String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (mut socket, _) = listener.accept().map_err(|e| e.to_string())?;
        socket.set_read_timeout(Some(SOCKET_TIMEOUT)).unwrap();
        let mut connection =
            ServerConnection::new(Arc::new(server_config)).map_err(|e| e.to_string())?;
        let mut stream = rustls::Stream::new(&mut connection, &mut socket);
        stream
            .write_all(GREETING)
            .and_then(|()| stream.flush())
            .map_err(|e| e.to_string())?;
        Ok(seen(
            connection.peer_certificates(),
            connection.alpn_protocol(),
        ))
    });

    let client = (|| {
        let mut socket = TcpStream::connect(address).map_err(|e| e.to_string())?;
        socket.set_read_timeout(Some(SOCKET_TIMEOUT)).unwrap();
        let name = ServerName::try_from(server_name.to_owned()).map_err(|e| e.to_string())?;
        let mut connection =
            ClientConnection::new(Arc::new(client_config), name).map_err(|e| e.to_string())?;
        let mut stream = rustls::Stream::new(&mut connection, &mut socket);
        let mut greeting = [0; GREETING.len()];
        stream
            .read_exact(&mut greeting)
            .map_err(|e| e.to_string())?;
        assert_eq!(greeting, GREETING);
        Ok(seen(
            connection.peer_certificates(),
            connection.alpn_protocol(),
        ))
    })();
    (server.join().unwrap(), client)
}

fn seen(
    certificates: Option<&[rustls::pki_types::CertificateDer<'_>]>,
    alpn: Option<&[u8]>,
) -> Seen {
    Seen {
        peer_name: certificates
            .and_then(|chain| chain.first())
            .and_then(node_name_from_cert),
        alpn: alpn.map(<[u8]>::to_vec),
    }
}

#[test]
fn node_certificates_carry_the_node_name() {
    let fleet = fleet();
    assert_eq!(dns_name("5070"), "5070.fleet");
    assert_eq!(fleet.beast.name, "beast");
    assert_eq!(fleet.gpu_box.name, "5070");
    assert_eq!(
        node_name_from_cert(&fleet.gpu_box.cert_chain[0]).as_deref(),
        Some("5070")
    );
    assert_eq!(
        node_name_from_cert(fleet.ca.ca_cert().der()),
        None,
        "the CA is no node"
    );
    assert_eq!(fleet.ca.ca_cert().fleet().as_deref(), Some("home"));
    assert!(matches!(
        fleet.ca.issue_node_cert("Not A Name"),
        Err(IdentityError::InvalidNodeName { .. })
    ));
    assert!(matches!(
        FleetCa::generate("my fleet"),
        Err(IdentityError::InvalidFleetName { .. })
    ));
}

#[test]
fn a_fleet_node_is_admitted_and_each_end_learns_the_others_name() {
    let fleet = fleet();
    let ca = fleet.ca.ca_cert();
    let (server, client) = handshake(
        raft_server_config(&fleet.beast, ca).unwrap(),
        raft_client_config(&fleet.gpu_box, ca).unwrap(),
        &dns_name("beast"),
    );
    let server = server.expect("the server admits a fleet node");
    let client = client.expect("the client accepts a fleet server");
    assert_eq!(server.peer_name.as_deref(), Some("5070"));
    assert_eq!(client.peer_name.as_deref(), Some("beast"));
    assert_eq!(server.alpn.as_deref(), Some(RAFT_ALPN));
    assert_eq!(client.alpn.as_deref(), Some(RAFT_ALPN));
}

#[test]
fn a_client_with_a_certificate_of_another_ca_is_refused() {
    let fleet = fleet();
    // Same fleet name, same node name: only the CA differs.
    let impostor_ca = FleetCa::generate("home").unwrap();
    let impostor = impostor_ca
        .issue_node_cert("5070")
        .unwrap()
        .to_identity()
        .unwrap();
    let ca = fleet.ca.ca_cert();
    // The impostor trusts the real CA, so it gets as far as presenting its certificate.
    let (server, client) = handshake(
        raft_server_config(&fleet.beast, ca).unwrap(),
        raft_client_config(&impostor, ca).unwrap(),
        &dns_name("beast"),
    );
    let server_error = server.expect_err("the server must refuse a foreign certificate");
    // Same CA name, other key: the issuer is found by name and its signature fails.
    assert!(
        ["UnknownIssuer", "unknown issuer", "BadSignature"]
            .iter()
            .any(|reason| server_error.contains(reason)),
        "{server_error}"
    );
    assert!(client.is_err(), "the client must not get the greeting");
}

#[test]
fn a_client_without_a_certificate_is_refused() {
    let fleet = fleet();
    let ca = fleet.ca.ca_cert();
    let anonymous = ClientConfig::builder_with_provider(fleet_node::identity::crypto_provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(ca.root_store().unwrap())
        .with_no_client_auth();
    let (server, client) = handshake(
        raft_server_config(&fleet.beast, ca).unwrap(),
        anonymous,
        &dns_name("beast"),
    );
    let server_error = server.expect_err("Raft requires a client certificate");
    assert!(server_error.contains("certificate"), "{server_error}");
    assert!(client.is_err());
}

#[test]
fn a_client_refuses_a_server_of_another_ca_or_another_name() {
    let fleet = fleet();
    let impostor = FleetCa::generate("home")
        .unwrap()
        .issue_node_cert("beast")
        .unwrap()
        .to_identity()
        .unwrap();
    let ca = fleet.ca.ca_cert();
    let (_, client) = handshake(
        raft_server_config(&impostor, ca).unwrap(),
        raft_client_config(&fleet.gpu_box, ca).unwrap(),
        &dns_name("beast"),
    );
    let client_error = client.expect_err("a server of another CA is refused");
    assert!(
        ["UnknownIssuer", "BadSignature"]
            .iter()
            .any(|reason| client_error.contains(reason)),
        "{client_error}"
    );

    // The real beast, dialled as `mac`: the certificate is valid but for another node.
    let (_, client) = handshake(
        raft_server_config(&fleet.beast, ca).unwrap(),
        raft_client_config(&fleet.gpu_box, ca).unwrap(),
        &dns_name("mac"),
    );
    let client_error = client.expect_err("a server with another node's name is refused");
    assert!(
        client_error.contains("not valid for name \"mac.fleet\""),
        "{client_error}"
    );
}

#[test]
fn the_ca_and_node_files_round_trip_with_private_keys_kept_private() {
    let dir = tempfile::tempdir().unwrap();
    let ca = FleetCa::generate("home").unwrap();
    ca.save(dir.path()).unwrap();
    assert!(matches!(
        ca.save(dir.path()),
        Err(IdentityError::AlreadyExists { .. })
    ));

    let loaded = FleetCa::load(dir.path()).unwrap();
    assert_eq!(loaded.fleet(), "home");
    assert_eq!(loaded.ca_cert(), ca.ca_cert());
    let ca_cert = CaCert::load(&dir.path().join(FleetCa::CERT_FILE)).unwrap();
    assert_eq!(&ca_cert, ca.ca_cert());

    // A certificate issued by the reloaded CA is trusted by the original CA's certificate.
    let node_dir = dir.path().join("mac");
    std::fs::create_dir(&node_dir).unwrap();
    loaded
        .issue_node_cert("mac")
        .unwrap()
        .save(&node_dir)
        .unwrap();
    let mac = NodeIdentity::load(
        &node_dir.join(IssuedNodeCert::CERT_FILE),
        &node_dir.join(IssuedNodeCert::KEY_FILE),
    )
    .unwrap();
    assert_eq!(mac.name, "mac");
    mac.ensure_name("mac").unwrap();
    assert!(matches!(
        mac.ensure_name("beast"),
        Err(IdentityError::NameMismatch { .. })
    ));
    let beast = ca.issue_node_cert("beast").unwrap().to_identity().unwrap();
    let (server, client) = handshake(
        raft_server_config(&beast, &ca_cert).unwrap(),
        raft_client_config(&mac, &ca_cert).unwrap(),
        &dns_name("beast"),
    );
    assert_eq!(server.unwrap().peer_name.as_deref(), Some("mac"));
    assert_eq!(client.unwrap().peer_name.as_deref(), Some("beast"));

    // The PEM re-encoding gives the same identity back.
    let again = NodeIdentity::from_pem(&mac.cert_chain_pem(), &mac.key_pem()).unwrap();
    assert_eq!(again.cert_chain, mac.cert_chain);
    assert_eq!(again.key.secret_der(), mac.key.secret_der());

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for key in [
            dir.path().join(FleetCa::KEY_FILE),
            node_dir.join(IssuedNodeCert::KEY_FILE),
        ] {
            let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", key.display());
        }
    }

    // A key that is not the CA's is refused.
    let other_key = FleetCa::generate("home").unwrap().key_pem();
    assert!(FleetCa::from_pem(ca.cert_pem(), &other_key).is_err());
}

/// A stand-in for the API: answers `Vote` with the caller's certificate name.
struct WhoAmI;

#[tonic::async_trait]
impl RaftTransport for WhoAmI {
    async fn append_entries(
        &self,
        _: tonic::Request<RaftMessage>,
    ) -> Result<tonic::Response<RaftMessage>, tonic::Status> {
        Err(tonic::Status::unimplemented("test service"))
    }

    type AppendStreamStream =
        futures::stream::BoxStream<'static, Result<RaftMessage, tonic::Status>>;

    async fn append_stream(
        &self,
        _: tonic::Request<tonic::Streaming<RaftMessage>>,
    ) -> Result<tonic::Response<Self::AppendStreamStream>, tonic::Status> {
        Err(tonic::Status::unimplemented("test service"))
    }

    async fn vote(
        &self,
        request: tonic::Request<RaftMessage>,
    ) -> Result<tonic::Response<RaftMessage>, tonic::Status> {
        let from = CallerCertificates::of(&request)
            .and_then(|chain| chain.first().and_then(node_name_from_cert))
            .unwrap_or_default();
        Ok(tonic::Response::new(RaftMessage {
            from,
            ..RaftMessage::default()
        }))
    }

    async fn pre_vote(
        &self,
        _: tonic::Request<RaftMessage>,
    ) -> Result<tonic::Response<RaftMessage>, tonic::Status> {
        Err(tonic::Status::unimplemented("test service"))
    }

    async fn install_snapshot(
        &self,
        _: tonic::Request<RaftMessage>,
    ) -> Result<tonic::Response<RaftMessage>, tonic::Status> {
        Err(tonic::Status::unimplemented("test service"))
    }

    async fn transfer_leader(
        &self,
        _: tonic::Request<RaftMessage>,
    ) -> Result<tonic::Response<RaftMessage>, tonic::Status> {
        Err(tonic::Status::unimplemented("test service"))
    }
}

/// Calls `Vote` on `address` and returns the name the server saw.
async fn who_am_i(
    address: std::net::SocketAddr,
    ca: &CaCert,
    identity: Option<&NodeIdentity>,
    server_node: &str,
) -> Result<String, String> {
    let tls = api_client_config(ca, identity).map_err(|e| e.to_string())?;
    let connector = ApiConnector::new(Arc::new(tls), server_node).map_err(|e| e.to_string())?;
    let channel = api_endpoint(&address.to_string())
        .map_err(|e| e.to_string())?
        .connect_timeout(SOCKET_TIMEOUT)
        .timeout(SOCKET_TIMEOUT)
        .connect_with_connector(connector)
        .await
        .map_err(|e| format!("{e:?}"))?;
    let reply = RaftTransportClient::new(channel)
        .vote(RaftMessage::default())
        .await
        .map_err(|status| format!("{status:?}"))?;
    Ok(reply.into_inner().from)
}

#[tokio::test]
async fn the_api_admits_anonymous_and_fleet_callers_and_refuses_foreign_certificates() {
    let fleet = fleet();
    let ca = fleet.ca.ca_cert().clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let tls = Arc::new(api_server_config(&fleet.beast, &ca).unwrap());
    let server = tonic::transport::Server::builder()
        .add_service(RaftTransportServer::new(WhoAmI))
        .serve_with_incoming(ApiConnection::accept_all(listener, tls));
    let server = tokio::spawn(server);

    // A caller that connects and never starts its handshake holds nobody else up.
    let _silent = tokio::net::TcpStream::connect(address).await.unwrap();
    assert_eq!(
        who_am_i(address, &ca, None, "beast").await.unwrap(),
        "",
        "an operator without a certificate is let in (tokens decide)"
    );
    assert_eq!(
        who_am_i(address, &ca, Some(&fleet.gpu_box), "beast")
            .await
            .unwrap(),
        "5070"
    );

    let impostor = FleetCa::generate("home")
        .unwrap()
        .issue_node_cert("5070")
        .unwrap()
        .to_identity()
        .unwrap();
    assert!(
        who_am_i(address, &ca, Some(&impostor), "beast")
            .await
            .is_err(),
        "a certificate of another CA is refused"
    );
    assert!(
        who_am_i(address, &ca, None, "mac").await.is_err(),
        "the server must be the node the client asked for"
    );
    server.abort();
}
