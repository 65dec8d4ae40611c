//! `BareGrpcClient`: unary gRPC calls made straight on one HTTP/2 connection with
//! `h2`, the write bench's load generator.
//!
//! A call through tonic's `Channel` passes through three tasks besides the caller's: the
//! channel's buffer, hyper's connection task, and a task hyper starts for each call to
//! await its answer. On a two-core host the bench's clients share the cores with the
//! servers they measure, so every hop a client pays is CPU the servers do not get, the
//! same for every system measured. Here the caller's own task sends the request and
//! awaits the answer, and one task per connection reads and writes the socket: the
//! protocol is the same (headers, one length-prefixed message, the status in the
//! trailers), and the servers cannot tell the difference.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;
use tokio::io::{AsyncRead, AsyncWrite};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::codegen::http::{HeaderValue, Method, Request, Uri};

/// How long a call waits for its answer before it fails.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// One HTTP/2 connection to a gRPC server, its calls made from the caller's task.
#[derive(Clone)]
pub struct BareGrpcClient {
    send: h2::client::SendRequest<Bytes>,
    /// `http://host:port`: every call's URI but its path.
    origin: Uri,
    /// Sent as `authorization` with every call, when set.
    authorization: Option<HeaderValue>,
}

impl BareGrpcClient {
    /// Speaks HTTP/2 over `io` (plain TCP or TLS, already connected) to the server at
    /// `origin` (`http://host:port`), with `authorization` on every call; a task of the
    /// current runtime drives the connection until the last clone is dropped.
    pub async fn handshake<S>(io: S, origin: &str, authorization: Option<&str>) -> Result<Self>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (send, connection) = h2::client::handshake(io)
            .await
            .with_context(|| format!("HTTP/2 handshake with {origin}"))?;
        tokio::spawn(async move {
            // Ends when the connection closes; a call on it then fails by itself.
            let _ = connection.await;
        });
        Ok(Self {
            send,
            origin: origin.parse()?,
            authorization: authorization.map(HeaderValue::from_str).transpose()?,
        })
    }

    /// Calls the unary method `path` (`/package.Service/Method`) with `request`; gives
    /// up after [`CALL_TIMEOUT`], as a `TestClient`'s call does.
    pub async fn call<Reply: Message + Default>(
        &self,
        path: &'static str,
        request: &impl Message,
    ) -> Result<Reply> {
        tokio::time::timeout(CALL_TIMEOUT, self.exchange(path, request))
            .await
            .with_context(|| format!("{path} did not answer within {CALL_TIMEOUT:?}"))?
    }

    /// The URI of the method `path`, without parsing anything again.
    fn uri(&self, path: &'static str) -> Result<Uri> {
        let mut parts = self.origin.clone().into_parts();
        parts.path_and_query = Some(PathAndQuery::from_static(path));
        Ok(Uri::from_parts(parts)?)
    }

    async fn exchange<Reply: Message + Default>(
        &self,
        path: &'static str,
        request: &impl Message,
    ) -> Result<Reply> {
        let encoded_len = request.encoded_len();
        let mut message = BytesMut::with_capacity(5 + encoded_len);
        message.put_u8(0); // not compressed
        message.put_u32(u32::try_from(encoded_len)?);
        request.encode(&mut message)?;

        let mut head = Request::builder()
            .method(Method::POST)
            .uri(self.uri(path)?)
            .header("content-type", "application/grpc")
            .header("te", "trailers");
        if let Some(authorization) = &self.authorization {
            head = head.header("authorization", authorization);
        }
        let mut send = self.send.clone().ready().await?;
        let (answer, mut body) = send.send_request(head.body(())?, false)?;
        body.send_data(message.freeze(), true)?;

        let (head, mut body) = answer.await?.into_parts();
        if head.status != 200 {
            bail!("{path} answered HTTP {}", head.status);
        }
        let mut reply = BytesMut::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk?;
            body.flow_control().release_capacity(chunk.len())?;
            reply.extend_from_slice(&chunk);
        }
        // A call that fails at once answers its status in the headers alone.
        let trailers = body.trailers().await?.unwrap_or(head.headers);
        let text = |name| {
            trailers
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
        };
        let status = text("grpc-status").unwrap_or("missing");
        if status != "0" {
            let message = text("grpc-message").unwrap_or_default();
            bail!("{path} answered grpc-status {status}: {message}");
        }
        if reply.len() < 5 || reply[0] != 0 {
            bail!("{path} answered no uncompressed message");
        }
        let length = u32::from_be_bytes(reply[1..5].try_into()?) as usize;
        let Some(encoded) = reply.get(5..5 + length) else {
            bail!(
                "{path} answered {} bytes of a {length}-byte message",
                reply.len() - 5
            );
        };
        Ok(Reply::decode(encoded)?)
    }
}
