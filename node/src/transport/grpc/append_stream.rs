//! `AppendStream`: appends to one peer on one long-lived gRPC stream (`AppendStream`).
//!
//! A unary call opens an HTTP/2 stream per append: the request's headers go in a TLS
//! record of their own (hyper sends a body only once the stream is open), and the peer
//! starts a task, answers with headers, the message and trailers. On this stream an
//! append is one message each way. The peer answers the messages in order, one by one,
//! so the caller sends the next request only after the last reply, and any failure
//! (a missed deadline included) leaves the stream unusable: the caller drops it and the
//! next append opens a new one.

use fleet_proto::raft::RaftMessage;
use fleet_proto::raft::raft_transport_client::RaftTransportClient;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;
use tonic::{Status, Streaming};

/// An open append stream: where requests go in, where replies come out.
pub(super) struct AppendStream {
    requests: mpsc::Sender<RaftMessage>,
    replies: Streaming<RaftMessage>,
}

impl AppendStream {
    /// Opens the stream; returns once the peer has accepted it (one round trip).
    pub(super) async fn open(client: &mut RaftTransportClient<Channel>) -> Result<Self, Status> {
        // The one request in flight, and room for nothing more: the caller waits for
        // each reply before it sends again.
        let (requests, outgoing) = mpsc::channel(1);
        let replies = client
            .append_stream(ReceiverStream::new(outgoing))
            .await?
            .into_inner();
        Ok(Self { requests, replies })
    }

    /// Sends one request and waits for its reply.
    pub(super) async fn call(&mut self, request: RaftMessage) -> Result<RaftMessage, Status> {
        self.requests
            .send(request)
            .await
            .map_err(|_| Status::unavailable("the append stream is closed"))?;
        self.replies
            .message()
            .await?
            .ok_or_else(|| Status::unavailable("the peer ended the append stream"))
    }
}
