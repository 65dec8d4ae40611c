//! `QuicConnector`: a node's one client-side QUIC endpoint, from which it makes a
//! [`QuicClient`] per peer.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use quinn::Endpoint;
use quinn::crypto::rustls::QuicClientConfig;
use tracing::debug;

use super::{ALPN_PROTOCOL, QuicClient, tls_setup_error};

/// A client endpoint bound to an ephemeral UDP port, shared by the clients of all peers.
#[derive(Clone, Debug)]
pub struct QuicConnector {
    endpoint: Endpoint,
}

impl QuicConnector {
    /// Binds the client endpoint (dual-stack where the host allows it, else IPv4).
    ///
    /// `tls` must trust the fleet CA, present this node's certificate, and offer TLS 1.3;
    /// its ALPN list is replaced by the Raft transport's. Must be called within a tokio
    /// runtime.
    pub fn new(tls: Arc<rustls::ClientConfig>) -> io::Result<QuicConnector> {
        let mut tls = (*tls).clone();
        tls.alpn_protocols = vec![ALPN_PROTOCOL.to_vec()];
        let crypto =
            QuicClientConfig::try_from(Arc::new(tls)).map_err(|e| tls_setup_error("client", e))?;
        let mut config = quinn::ClientConfig::new(Arc::new(crypto));
        config.transport_config(super::transport_config());
        let mut endpoint =
            Endpoint::client(SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0))).or_else(|error| {
                debug!(error = %error, "no IPv6 UDP socket; the QUIC client uses IPv4 only");
                Endpoint::client(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)))
            })?;
        endpoint.set_default_client_config(config);
        Ok(QuicConnector { endpoint })
    }

    /// A client for the peer `peer_name` at `addr`. It connects on its first call; the
    /// peer's certificate must name `<peer_name>.fleet`.
    pub fn client(&self, peer_name: &str, addr: SocketAddr) -> QuicClient {
        QuicClient::new(self.endpoint.clone(), peer_name, addr)
    }

    /// The local address of the client endpoint.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.endpoint.local_addr()
    }
}
