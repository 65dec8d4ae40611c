//! `ApiConnection`: one TLS connection to the client API port, accepted and shaken
//! hands with here rather than inside tonic, so that a gRPC answer leaves in one write.
//!
//! The HTTP/2 writer under hyper (the `h2` crate) copies a frame's payload into its
//! write buffer only below a threshold (256 bytes when the connection takes vectored writes, 1024 when it does
//! not); a larger payload is sent on its own, and the frames after it wait for the
//! next flush. A unary answer is three frames (headers, the message, the trailers
//! with `grpc-status`), and a typical one (an event echoed back) is 300 bytes: over a
//! TLS stream that reports vectored writes, which tokio-rustls always does, each
//! answer took two TLS records and two `writev` calls, and the client woke twice.
//! An `ApiConnection` reports no vectored writes, so answers up to 1 KiB go out whole.
//!
//! Handshakes run concurrently (at most [`HANDSHAKES_MAX`] at once) and each must
//! finish within [`HANDSHAKE_TIMEOUT`], so a caller that stalls cannot hold the port.
//! The caller's verified certificate chain, if it presented one, reaches every request
//! as [`CallerCertificates`] in its extensions.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use rustls::ServerConfig;
use rustls::pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::server::Connected;

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

/// A client API connection after its TLS handshake.
pub struct ApiConnection {
    tls: TlsStream<TcpStream>,
    caller: CallerCertificates,
}

impl ApiConnection {
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
        let chain = tls.get_ref().1.peer_certificates().unwrap_or_default();
        let caller = CallerCertificates(Arc::new(
            chain.iter().map(|cert| cert.clone().into_owned()).collect(),
        ));
        Ok(Self { tls, caller })
    }
}

impl Connected for ApiConnection {
    type ConnectInfo = CallerCertificates;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.caller.clone()
    }
}

impl AsyncRead for ApiConnection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tls).poll_read(cx, buf)
    }
}

impl AsyncWrite for ApiConnection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tls).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tls).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tls).poll_shutdown(cx)
    }

    /// No: so HTTP/2 copies payloads up to 1 KiB into its buffer (see the module docs).
    fn is_write_vectored(&self) -> bool {
        false
    }
}
