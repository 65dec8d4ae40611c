//! `ApiConnection`: one TLS connection to the client API port, accepted and shaken
//! hands with here rather than inside tonic, so that it is [`Unvectored`] and a gRPC
//! answer leaves in one write.
//!
//! Handshakes run concurrently (at most [`HANDSHAKES_MAX`] at once) and each must
//! finish within [`HANDSHAKE_TIMEOUT`], so a caller that stalls cannot hold the port.
//! The caller's verified certificate chain, if it presented one, reaches every request
//! as [`CallerCertificates`] in its extensions.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use rustls::ServerConfig;
use rustls::pki_types::CertificateDer;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::server::Connected;

use super::unvectored::Unvectored;

/// How long a caller may take over the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The most handshakes in progress at once; further connections wait in the backlog.
pub const HANDSHAKES_MAX: usize = 64;

/// The certificate chain a caller presented and the fleet CA verified (empty if it
/// presented none); tonic puts it in every request's extensions.
#[derive(Clone, Debug, Default)]
pub struct CallerCertificates(Arc<Vec<CertificateDer<'static>>>);

impl CallerCertificates {
    /// The caller's verified chain, leaf first; `None` without a certificate.
    pub fn of<T>(request: &tonic::Request<T>) -> Option<&[CertificateDer<'static>]> {
        request
            .extensions()
            .get::<Self>()
            .map(|certs| certs.0.as_slice())
            .filter(|chain| !chain.is_empty())
    }
}

/// A client API connection after its TLS handshake, reporting no vectored writes.
pub type ApiConnection = Unvectored<TlsStream<TcpStream>>;

impl Unvectored<TlsStream<TcpStream>> {
    /// Accepts connections on `listener` and shakes hands with each under `tls`.
    /// Failed handshakes come out as errors, which tonic logs and skips.
    pub fn accept_all(
        listener: TcpListener,
        tls: Arc<ServerConfig>,
    ) -> impl Stream<Item = io::Result<Self>> {
        let acceptor = TlsAcceptor::from(tls);
        TcpListenerStream::new(listener)
            .map(move |accepted| Self::handshake(acceptor.clone(), accepted))
            .buffer_unordered(HANDSHAKES_MAX)
    }

    async fn handshake(acceptor: TlsAcceptor, accepted: io::Result<TcpStream>) -> io::Result<Self> {
        let stream = accepted?;
        // Nagle's algorithm off: a small reply must not wait for the caller's delayed
        // acknowledgement (some 40 ms on Linux).
        stream.set_nodelay(true)?;
        let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream))
            .await
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("TLS handshake not finished within {HANDSHAKE_TIMEOUT:?}"),
                )
            })??;
        Ok(Unvectored::new(tls))
    }
}

impl Connected for ApiConnection {
    type ConnectInfo = CallerCertificates;

    fn connect_info(&self) -> Self::ConnectInfo {
        let chain = self.get_ref().get_ref().1.peer_certificates();
        CallerCertificates(Arc::new(
            chain
                .unwrap_or_default()
                .iter()
                .map(|cert| cert.clone().into_owned())
                .collect(),
        ))
    }
}
