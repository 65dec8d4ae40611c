//! `ApiError`: what a client call can fail with, separated by what the caller can do.

use std::error::Error;
use std::io;

use tonic::codegen::http;
use tonic::metadata::MetadataValue;
use tonic::{Code, ConnectError, Status};

/// Metadata a node sets on every error it answers a call with. A node that forwarded
/// a write tells by it the leader's answer from a call that failed on the way, whose
/// write may or may not have reached the leader.
pub const ANSWERED_BY_NODE: &str = "fleet-answered-by-node";

/// Marks `response` as answered by this node when it carries its gRPC status in its
/// headers: a call refused at once, by this node's code (an [`ApiError`], marked
/// already) or by tonic itself (a message over the size limit, an unknown method).
/// The client API's server passes every answer through it.
pub fn mark_answered<B>(mut response: http::Response<B>) -> http::Response<B> {
    let headers = response.headers_mut();
    if headers.contains_key("grpc-status") {
        headers.insert(ANSWERED_BY_NODE, http::HeaderValue::from_static("1"));
    }
    response
}

/// A failed client call. A rule the request broke is not an error here: it is a
/// normal reply (`Refusal`) because the command was committed and answered.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The caller is not who it must be; the message says which credential to use.
    #[error("{0}")]
    Unauthenticated(String),
    /// The request could not be parsed; the message names the field.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// No leader can be reached: the fleet has no quorum right now.
    #[error("no quorum: {0}")]
    NoQuorum(String),
    /// The leader could not be reached to forward the request.
    #[error("could not forward to the leader {leader}: {reason}")]
    Forward { leader: String, reason: String },
    /// The write may or may not commit: its entry was appended, then the node lost
    /// the lead before it committed, or the call that forwarded it to the leader
    /// broke once connected. The message says how to go on safely.
    #[error("outcome unknown: {0}")]
    OutcomeUnknown(String),
    /// The node is stopping.
    #[error("this node is shutting down")]
    ShuttingDown,
    /// Anything else; the message is verbatim.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<ApiError> for Status {
    fn from(error: ApiError) -> Self {
        let code = match &error {
            ApiError::Unauthenticated(_) => Code::Unauthenticated,
            ApiError::BadRequest(_) => Code::InvalidArgument,
            ApiError::NoQuorum(_) | ApiError::Forward { .. } | ApiError::ShuttingDown => {
                Code::Unavailable
            }
            ApiError::OutcomeUnknown(_) => Code::Unknown,
            ApiError::Internal(_) => Code::Internal,
        };
        let mut status = Status::new(code, error.to_string());
        status
            .metadata_mut()
            .insert(ANSWERED_BY_NODE, MetadataValue::from_static("1"));
        status
    }
}

/// Whether the call that failed with `status` failed before it was connected to the
/// node it called, so that its request was never sent: the connector failed (refused,
/// unreachable, a TLS handshake), or did not connect in time.
fn never_connected(status: &Status) -> bool {
    let mut cause: Option<&(dyn Error + 'static)> = status.source();
    while let Some(error) = cause {
        let timed_out_connecting = error
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::TimedOut);
        if error.is::<ConnectError>() || timed_out_connecting {
            return true;
        }
        cause = error.source();
    }
    false
}

/// Whether a node answered the call that failed with `status` (rather than the call
/// failing on the way).
fn answered_by_node(status: &Status) -> bool {
    status.metadata().contains_key(ANSWERED_BY_NODE)
}

/// Whether the request of a call that failed with `status` may have reached the node
/// all the same: no node answered, and the call failed once it was connected (it
/// broke, or no answer came in time). A write sent so is sent again only when its
/// repeat is harmless.
pub fn delivery_unknown(status: &Status) -> bool {
    !answered_by_node(status) && !never_connected(status)
}

impl ApiError {
    /// The answer of `leader` to a write forwarded to it, as the forwarding node gives
    /// it to its own caller; `None` when no node answered `status`: the call failed on
    /// the way.
    pub fn relayed(status: &Status, leader: &str) -> Option<Self> {
        if !answered_by_node(status) {
            return None;
        }
        let message = status.message();
        let without = |prefix: &str| message.strip_prefix(prefix).unwrap_or(message).to_string();
        Some(match status.code() {
            Code::InvalidArgument => Self::BadRequest(without("bad request: ")),
            Code::Unknown => Self::OutcomeUnknown(without("outcome unknown: ")),
            // The leader did not take the write: it has no quorum, could not forward
            // it in turn, or refused this node's credentials.
            Code::Unavailable | Code::Unauthenticated => Self::Forward {
                leader: leader.to_string(),
                reason: message.to_string(),
            },
            _ => Self::Internal(without("internal error: ")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forwarded_writes_answer_is_relayed_only_when_a_node_gave_it() {
        let answered = |error: ApiError| ApiError::relayed(&Status::from(error), "beast");
        assert!(matches!(
            answered(ApiError::NoQuorum("1 of 3 voters reachable".into())),
            Some(ApiError::Forward { leader, reason }) if leader == "beast" && reason.contains("no quorum")
        ));
        assert!(matches!(
            answered(ApiError::OutcomeUnknown("mac lost the lead".into())),
            Some(ApiError::OutcomeUnknown(why)) if why == "mac lost the lead"
        ));
        assert!(matches!(
            answered(ApiError::BadRequest("request_json: eof".into())),
            Some(ApiError::BadRequest(why)) if why == "request_json: eof"
        ));
        // The same codes made up by the client for a call that failed on the way.
        for code in [Code::Unavailable, Code::Unknown, Code::Cancelled] {
            assert!(ApiError::relayed(&Status::new(code, "transport error"), "beast").is_none());
        }
    }

    fn failed_call(error: impl Error + Send + Sync + 'static) -> Status {
        Status::from_error(Box::new(error))
    }

    #[test]
    fn a_call_is_never_connected_only_when_connecting_failed() {
        let refused = ConnectError(Box::new(io::Error::from(io::ErrorKind::ConnectionRefused)));
        assert!(never_connected(&failed_call(refused)));
        let slow = io::Error::new(io::ErrorKind::TimedOut, "connect timed out");
        assert!(never_connected(&failed_call(slow)));
        // Broken after the request went out, or answered by a node: it may be taken.
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert!(!never_connected(&failed_call(reset)));
        assert!(!never_connected(&failed_call(tonic::TimeoutExpired(()))));
        assert!(!never_connected(&Status::from(ApiError::NoQuorum(
            "1 of 3".into()
        ))));
    }
}
