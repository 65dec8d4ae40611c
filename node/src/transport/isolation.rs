//! `Isolation`: cuts this node off from Raft traffic for a while, as if it had crashed —
//! the failover drill's fault (R4).
//!
//! While isolated, every outgoing Raft RPC fails as `Unreachable` and every incoming
//! one is refused, in both transports; the client API keeps answering so the operator
//! can watch. The isolation ends by itself at its deadline, so a drill whose `fleetctl`
//! dies midway cannot leave a node cut off.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;

use super::{RpcClient, RpcHandler, RpcKind, TransportError};

/// The longest one isolation may last.
pub const ISOLATION_MAX: Duration = Duration::from_secs(600);

/// Whether, and until when, this node is cut off from Raft traffic. Clones share it.
#[derive(Clone, Debug, Default)]
pub struct Isolation {
    until: Arc<Mutex<Option<Instant>>>,
}

impl Isolation {
    /// Cuts the node off for `duration` (at most [`ISOLATION_MAX`]) from now.
    pub fn isolate_for(&self, duration: Duration) {
        let until = Instant::now() + duration.min(ISOLATION_MAX);
        *self.until.lock().unwrap_or_else(|p| p.into_inner()) = Some(until);
    }

    /// Whether the node is cut off right now.
    pub fn is_isolated(&self) -> bool {
        self.until
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|until| Instant::now() < until)
    }

    /// Wraps a peer's client so its calls fail while isolated.
    pub fn client(&self, inner: Arc<dyn RpcClient>, peer: &str) -> Arc<dyn RpcClient> {
        Arc::new(IsolatedClient {
            inner,
            peer: peer.to_string(),
            isolation: self.clone(),
        })
    }

    /// Wraps the RPC handler so it refuses calls while isolated.
    pub fn handler(&self, inner: Arc<dyn RpcHandler>) -> Arc<dyn RpcHandler> {
        Arc::new(IsolatedHandler {
            inner,
            isolation: self.clone(),
        })
    }
}

struct IsolatedClient {
    inner: Arc<dyn RpcClient>,
    peer: String,
    isolation: Isolation,
}

impl RpcClient for IsolatedClient {
    fn call(
        &self,
        kind: RpcKind,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Bytes, TransportError>> {
        if self.isolation.is_isolated() {
            let error = TransportError::Unreachable {
                peer: self.peer.clone(),
                reason: "this node is cut off by a failover drill".into(),
            };
            return async move { Err(error) }.boxed();
        }
        self.inner.call(kind, payload, timeout)
    }
}

struct IsolatedHandler {
    inner: Arc<dyn RpcHandler>,
    isolation: Isolation,
}

impl RpcHandler for IsolatedHandler {
    fn handle(
        &self,
        from: String,
        kind: RpcKind,
        payload: Bytes,
    ) -> BoxFuture<'static, Result<Bytes, String>> {
        if self.isolation.is_isolated() {
            return async { Err("cut off by a failover drill".to_string()) }.boxed();
        }
        self.inner.handle(from, kind, payload)
    }
}
