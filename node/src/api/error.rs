//! `ApiError`: what a client call can fail with, separated by what the caller can do.

use tonic::{Code, Status};

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
            ApiError::Internal(_) => Code::Internal,
        };
        Status::new(code, error.to_string())
    }
}
