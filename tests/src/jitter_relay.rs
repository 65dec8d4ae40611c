//! `JitterRelay`: a UDP relay in front of one node's Raft (QUIC) port that delays every
//! datagram, both ways, by a random time in a range — jittered latency between nodes,
//! in user space, where the kernel offers no `netem`.
//!
//! Each sender gets its own upstream socket, so the node sees one peer per sender and
//! its replies find their way back. Datagrams are delayed independently, so they may
//! also arrive out of order, as on a real network.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Result;
use tokio::net::UdpSocket;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

/// The largest datagram relayed (QUIC keeps well below it).
const DATAGRAM_MAX: usize = 65_536;

/// A delay drawn per datagram between `min` and `max`.
#[derive(Clone, Copy, Debug)]
pub struct Jitter {
    pub min: Duration,
    pub max: Duration,
}

/// A running relay; it stops when dropped.
pub struct JitterRelay {
    /// Where senders send to, instead of the node.
    pub address: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for JitterRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A small xorshift generator: the delays need spread, not cryptographic quality.
struct Delays {
    state: AtomicU64,
    jitter: Jitter,
}

impl Delays {
    fn next(&self) -> Duration {
        let mut x = self.state.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state.store(x, Ordering::Relaxed);
        let span = self.jitter.max.saturating_sub(self.jitter.min).as_micros() as u64;
        self.jitter.min + Duration::from_micros(if span == 0 { 0 } else { x % span })
    }
}

impl JitterRelay {
    /// Relays datagrams sent to a new loopback port on to `target`, delayed by `jitter`.
    pub async fn start(target: SocketAddr, jitter: Jitter, seed: u64) -> Result<Self> {
        let listener = Arc::new(UdpSocket::bind("127.0.0.1:0").await?);
        let address = listener.local_addr()?;
        let delays = Arc::new(Delays {
            state: AtomicU64::new(seed | 1),
            jitter,
        });
        let task = tokio::spawn(relay(listener, target, delays));
        Ok(Self { address, task })
    }
}

async fn relay(listener: Arc<UdpSocket>, target: SocketAddr, delays: Arc<Delays>) {
    let upstreams: Mutex<HashMap<SocketAddr, Arc<UdpSocket>>> = Mutex::new(HashMap::new());
    let mut buffer = vec![0u8; DATAGRAM_MAX];
    loop {
        let Ok((length, sender)) = listener.recv_from(&mut buffer).await else {
            return;
        };
        let upstream = {
            let mut upstreams = upstreams.lock().await;
            match upstreams.get(&sender) {
                Some(socket) => socket.clone(),
                None => {
                    let Ok(socket) = UdpSocket::bind("127.0.0.1:0").await else {
                        continue;
                    };
                    if socket.connect(target).await.is_err() {
                        continue;
                    }
                    let socket = Arc::new(socket);
                    tokio::spawn(replies(
                        socket.clone(),
                        listener.clone(),
                        sender,
                        delays.clone(),
                    ));
                    upstreams.insert(sender, socket.clone());
                    socket
                }
            }
        };
        let datagram = buffer[..length].to_vec();
        let delay = delays.next();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = upstream.send(&datagram).await;
        });
    }
}

/// Carries the node's replies on `upstream` back to `sender`, delayed too.
async fn replies(
    upstream: Arc<UdpSocket>,
    listener: Arc<UdpSocket>,
    sender: SocketAddr,
    delays: Arc<Delays>,
) {
    let mut buffer = vec![0u8; DATAGRAM_MAX];
    while let Ok(length) = upstream.recv(&mut buffer).await {
        let datagram = buffer[..length].to_vec();
        let delay = delays.next();
        let listener = listener.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = listener.send_to(&datagram, sender).await;
        });
    }
}
