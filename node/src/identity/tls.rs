//! TLS configurations for Raft (QUIC, mutual TLS) and the client API (gRPC over TLS).
//!
//! Every configuration trusts the fleet CA and nothing else: no system roots, no
//! web PKI. Raft requires a client certificate on both ends; the client API accepts
//! callers without one (operators and agents authenticate with tokens), but a
//! certificate that *is* presented must chain to the fleet CA. The ring provider is
//! passed explicitly, so no process-wide default has to be installed first.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, ServerConfig, SupportedProtocolVersion};

use super::ca_cert::CaCert;
use super::error::IdentityError;
use super::node_identity::NodeIdentity;

/// The ALPN protocol of node-to-node Raft traffic. A connection that negotiates
/// anything else is not a Raft peer.
pub const RAFT_ALPN: &[u8] = b"fleet-raft/1";

/// The crypto provider every Fleet TLS configuration uses (ring).
pub fn crypto_provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The Raft server's TLS configuration: presents this node's certificate, requires a
/// client certificate issued by the fleet CA, TLS 1.3 only (QUIC needs it), ALPN
/// [`RAFT_ALPN`]. The peer's name is `node_name_from_cert` of its first certificate.
pub fn raft_server_config(
    identity: &NodeIdentity,
    ca: &CaCert,
) -> Result<ServerConfig, IdentityError> {
    server_config(
        "Raft server",
        identity,
        ca,
        ClientCertificate::Required,
        &[&rustls::version::TLS13],
        RAFT_ALPN,
    )
}

/// Whether a server requires a client certificate (of the fleet CA either way).
enum ClientCertificate {
    Required,
    Optional,
}

/// A server configuration named `name` (for errors) that presents `identity` and
/// verifies client certificates against the fleet CA.
fn server_config(
    name: &'static str,
    identity: &NodeIdentity,
    ca: &CaCert,
    client: ClientCertificate,
    versions: &[&'static SupportedProtocolVersion],
    alpn: &[u8],
) -> Result<ServerConfig, IdentityError> {
    let error = |reason: String| IdentityError::Tls {
        config: name,
        reason,
    };
    let provider = crypto_provider();
    let verifier =
        WebPkiClientVerifier::builder_with_provider(Arc::new(ca.root_store()?), provider.clone());
    let verifier = match client {
        ClientCertificate::Required => verifier,
        ClientCertificate::Optional => verifier.allow_unauthenticated(),
    }
    .build()
    .map_err(|e| error(e.to_string()))?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| error(e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(identity.cert_chain.clone(), identity.key.clone_key())
        .map_err(|e| error(format!("the node certificate or key is unusable: {e}")))?;
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(config)
}

/// The Raft client's TLS configuration: presents this node's certificate and
/// verifies the server against the fleet CA, TLS 1.3 only, ALPN [`RAFT_ALPN`]. Dial a
/// peer with the server name `dns_name(peer)`.
pub fn raft_client_config(
    identity: &NodeIdentity,
    ca: &CaCert,
) -> Result<ClientConfig, IdentityError> {
    client_config(
        "Raft client",
        ca,
        Some(identity),
        &[&rustls::version::TLS13],
        RAFT_ALPN,
    )
}

/// A client configuration named `name` (for errors) that trusts the fleet CA alone and
/// presents `identity` when given.
fn client_config(
    name: &'static str,
    ca: &CaCert,
    identity: Option<&NodeIdentity>,
    versions: &[&'static SupportedProtocolVersion],
    alpn: &[u8],
) -> Result<ClientConfig, IdentityError> {
    let error = |reason: String| IdentityError::Tls {
        config: name,
        reason,
    };
    let builder = ClientConfig::builder_with_provider(crypto_provider())
        .with_protocol_versions(versions)
        .map_err(|e| error(e.to_string()))?
        .with_root_certificates(ca.root_store()?);
    let mut config = match identity {
        Some(identity) => builder
            .with_client_auth_cert(identity.cert_chain.clone(), identity.key.clone_key())
            .map_err(|e| error(format!("the node certificate or key is unusable: {e}")))?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(config)
}

/// The ALPN protocol of the client API: gRPC runs over HTTP/2.
pub const API_ALPN: &[u8] = b"h2";

/// The client API's server TLS configuration: presents this node's certificate;
/// client certificates are optional, but one that is presented must chain to the
/// fleet CA (the handshake fails otherwise). ALPN [`API_ALPN`]. The Raft gRPC fallback
/// shares this port, so its handler must itself require a peer certificate.
pub fn api_server_config(
    identity: &NodeIdentity,
    ca: &CaCert,
) -> Result<ServerConfig, IdentityError> {
    server_config(
        "client API server",
        identity,
        ca,
        ClientCertificate::Optional,
        rustls::DEFAULT_VERSIONS,
        API_ALPN,
    )
}

/// The client API's client TLS configuration, for an
/// [`ApiConnector`](crate::api::api_connector::ApiConnector): trusts only the fleet CA,
/// ALPN [`API_ALPN`], and presents `identity` when given (nodes do; operators usually
/// do not). The connector checks the server's name.
pub fn api_client_config(
    ca: &CaCert,
    identity: Option<&NodeIdentity>,
) -> Result<ClientConfig, IdentityError> {
    client_config(
        "client API client",
        ca,
        identity,
        rustls::DEFAULT_VERSIONS,
        API_ALPN,
    )
}
