//! `ApiConnector`: dials a node's client API port for tonic and shakes hands with TLS
//! here rather than inside tonic, so that the connection is [`Unvectored`] and a
//! call's message leaves in one write with the end of its stream.
//!
//! Every caller of a node's API uses it: `fleetctl`, a follower forwarding a write to
//! its leader, and Raft's gRPC transport. The channel's endpoint names the address
//! with `http://` ([`api_endpoint`]): TLS is this connector's, so tonic must not add
//! its own.

use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tonic::codegen::http::Uri;
use tonic::transport::Endpoint;

use super::unvectored::Unvectored;
use crate::identity::{IdentityError, dns_name};

/// The endpoint of a node's API at `addr` (`host:port`), for a channel made with
/// [`Endpoint::connect_with_connector_lazy`] and an [`ApiConnector`].
pub fn api_endpoint(addr: &str) -> Result<Endpoint, tonic::transport::Error> {
    Endpoint::from_shared(format!("http://{addr}"))
}

/// Connects to one node's API: TCP without Nagle's algorithm, then TLS under a
/// configuration that trusts the fleet CA, expecting the node's certificate.
#[derive(Clone)]
pub struct ApiConnector {
    tls: TlsConnector,
    server_name: ServerName<'static>,
}

impl ApiConnector {
    /// A connector to the node `server_node` (whatever address is dialled, its
    /// certificate must name `<server_node>.fleet`) under `tls`.
    pub fn new(tls: Arc<ClientConfig>, server_node: &str) -> Result<Self, IdentityError> {
        let name = dns_name(server_node);
        let server_name = ServerName::try_from(name.clone()).map_err(|e| IdentityError::Tls {
            config: "client API client",
            reason: format!("`{name}` is not a server name: {e}"),
        })?;
        Ok(Self {
            tls: TlsConnector::from(tls),
            server_name,
        })
    }

    async fn connect(self, uri: Uri) -> io::Result<TokioIo<Unvectored<TlsStream<TcpStream>>>> {
        let (Some(host), Some(port)) = (uri.host(), uri.port_u16()) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{uri}` names no host and port"),
            ));
        };
        // An IPv6 address comes bracketed in a URI.
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let failed = |what: String, e: io::Error| {
            io::Error::new(
                e.kind(),
                format!("cannot connect to {host}:{port}: {what}{e}"),
            )
        };
        let stream = TcpStream::connect((host, port))
            .await
            .map_err(|e| failed(String::new(), e))?;
        // A small request must not wait for the node's delayed acknowledgement.
        stream.set_nodelay(true)?;
        let tls = (self.tls.connect(self.server_name.clone(), stream).await)
            .map_err(|e| failed(format!("TLS with {}: ", self.server_name.to_str()), e))?;
        Ok(TokioIo::new(Unvectored::new(tls)))
    }
}

impl tower_service::Service<Uri> for ApiConnector {
    type Response = TokioIo<Unvectored<TlsStream<TcpStream>>>;
    type Error = io::Error;
    type Future = BoxFuture<'static, io::Result<Self::Response>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        Box::pin(self.clone().connect(uri))
    }
}

impl std::fmt::Debug for ApiConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiConnector")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}
