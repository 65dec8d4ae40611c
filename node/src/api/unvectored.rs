//! `Unvectored`: a byte stream that tells HTTP/2 it takes no vectored writes, so that
//! a gRPC message leaves in one write.
//!
//! The HTTP/2 writer under hyper (the `h2` crate) copies a frame's payload into its
//! write buffer only below a threshold (256 bytes when the connection takes vectored
//! writes, 1024 when it does not); a larger payload is sent on its own, and the frames
//! after it wait for the next flush. A unary answer is three frames (headers, the
//! message, the trailers with `grpc-status`); a unary call is the headers, sent at
//! once, then the message and an empty frame that ends the stream. A typical message
//! carries a few hundred bytes (an event, a Raft append): over a TLS stream that
//! reports vectored writes, which tokio-rustls always does, an answer took two TLS
//! records and two `writev` calls, a call three, and the other end woke for each.
//! Wrapped in an `Unvectored`, a message of up to 1 KiB goes out with the frames after
//! it: an answer in one record, a call in two (measured in `docs/benchmarks-log.md`).
//!
//! Both ends of the client API use it: [`ApiConnection`](super::api_connection) for a
//! caller accepted by `fleetd`, [`ApiConnector`](super::api_connector) for a call to a
//! node (`fleetctl`, a follower forwarding to its leader, Raft over gRPC).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `S`, reporting no vectored writes.
#[derive(Debug)]
pub struct Unvectored<S>(S);

impl<S> Unvectored<S> {
    /// Wraps `stream`.
    pub fn new(stream: S) -> Self {
        Self(stream)
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &S {
        &self.0
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Unvectored<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Unvectored<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }

    /// No: so HTTP/2 copies payloads up to 1 KiB into its buffer (see the module docs).
    fn is_write_vectored(&self) -> bool {
        false
    }
}
