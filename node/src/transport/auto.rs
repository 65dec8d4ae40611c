//! `AutoClient`: Raft RPCs to one peer over QUIC, falling back to gRPC when QUIC cannot
//! connect (UDP blocked) but gRPC can.
//!
//! QUIC is tried again after a back-off, so a path that was blocked only for a while
//! returns to QUIC. A peer that neither transport reaches is reported as
//! unreachable and the client goes back to trying QUIC first.

use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use tokio::time::Instant;
use tracing::{info, instrument};

use super::{GrpcClient, QuicClient, RpcClient, RpcKind, TransportError};

/// Which transport calls go over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Quic,
    /// gRPC, until QUIC is worth another try at `quic_retry_at`.
    Grpc {
        quic_retry_at: Instant,
    },
}

/// Calls one peer over QUIC, or over gRPC while QUIC cannot connect.
#[derive(Debug)]
pub struct AutoClient {
    quic: QuicClient,
    grpc: GrpcClient,
    quic_retry_after: Duration,
    route: Mutex<Route>,
}

impl AutoClient {
    /// How long calls stay on gRPC before QUIC is tried again, unless set otherwise.
    pub const QUIC_RETRY_AFTER_DEFAULT: Duration = Duration::from_secs(30);

    /// A client for one peer, given its QUIC and gRPC clients; it starts on QUIC.
    pub fn new(quic: QuicClient, grpc: GrpcClient) -> AutoClient {
        AutoClient {
            quic,
            grpc,
            quic_retry_after: Self::QUIC_RETRY_AFTER_DEFAULT,
            route: Mutex::new(Route::Quic),
        }
    }

    /// Sets how long calls stay on gRPC after a fallback before QUIC is tried again.
    pub fn with_quic_retry_after(mut self, quic_retry_after: Duration) -> AutoClient {
        self.quic_retry_after = quic_retry_after;
        self
    }

    /// The transport in use, for status output: `"quic"` or `"grpc"`.
    pub fn active(&self) -> &'static str {
        match self.route() {
            Route::Quic => "quic",
            Route::Grpc { .. } => "grpc",
        }
    }

    fn route(&self) -> Route {
        *self
            .route
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn set_route(&self, route: Route) {
        let mut current = self
            .route
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if *current != route {
            let peer = self.quic.peer_name();
            match route {
                Route::Quic => info!(peer, "Raft transport: trying QUIC again"),
                Route::Grpc { .. } => info!(peer, "Raft transport: QUIC unreachable, using gRPC"),
            }
        }
        *current = route;
    }

    #[instrument(level = "debug", skip_all, fields(peer = %self.quic.peer_name(), %kind))]
    async fn call_by(
        &self,
        kind: RpcKind,
        payload: Bytes,
        timeout: Duration,
    ) -> Result<Bytes, TransportError> {
        let start = Instant::now();
        let deadline = start + timeout;
        if let Route::Grpc { quic_retry_at } = self.route()
            && start < quic_retry_at
        {
            let result = self.grpc.call(kind, payload, timeout).await;
            if matches!(result, Err(TransportError::Unreachable { .. })) {
                // Neither path may work now (the peer is down); start over with QUIC.
                self.set_route(Route::Quic);
            }
            return result;
        }
        // Half the budget at most for opening a QUIC connection, so a blocked UDP path
        // leaves time to try gRPC within the same call. An open connection is reused
        // at once.
        match self.quic.connect(timeout / 2).await {
            Ok(()) => {
                self.set_route(Route::Quic);
                let remaining = deadline.saturating_duration_since(Instant::now());
                self.quic.call(kind, payload, remaining).await
            }
            Err(quic_error @ TransportError::Unreachable { .. }) => {
                let remaining = deadline.saturating_duration_since(Instant::now());
                match self.grpc.call(kind, payload, remaining).await {
                    // Neither transport reaches the peer: report QUIC's reason, stay on QUIC.
                    Err(TransportError::Unreachable { .. }) => Err(quic_error),
                    // A timeout does not show that gRPC connected: stay on QUIC.
                    result @ Err(TransportError::Timeout { .. }) => result,
                    // The peer answered over gRPC (even with an error): use it for a while.
                    result => {
                        self.set_route(Route::Grpc {
                            quic_retry_at: Instant::now() + self.quic_retry_after,
                        });
                        result
                    }
                }
            }
            Err(other) => Err(other),
        }
    }
}

impl RpcClient for AutoClient {
    fn call(
        &self,
        kind: RpcKind,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Bytes, TransportError>> {
        Box::pin(self.call_by(kind, payload, timeout))
    }
}
