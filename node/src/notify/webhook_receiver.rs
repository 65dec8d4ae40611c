//! `WebhookReceiver`: a small local HTTP/1.1 server that records every request and
//! answers with scripted statuses, so notification delivery can be watched end to
//! end without any traffic leaving the machine (`fleetctl demo`, the tests).
//!
//! It is written by hand on tokio because it needs very little: one request per
//! connection (`Connection: close`), a `Content-Length` body, and bounded sizes and
//! times so that a broken client can neither exhaust it nor hang it.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use reqwest::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::received_request::{ReceivedRequest, RequestHead, parse_head};

/// The largest request head accepted.
const HEAD_BYTES_MAX: usize = 64 * 1024;
/// The largest body accepted.
const BODY_BYTES_MAX: usize = 1024 * 1024;
/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The pause after a failed `accept` (out of file descriptors), so the loop does not spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// A running receiver. Dropping it stops the server and closes open connections.
#[derive(Debug)]
pub struct WebhookReceiver {
    address: SocketAddr,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// The number of requests recorded, for [`WebhookReceiver::wait_for`].
    count: watch::Sender<usize>,
}

#[derive(Debug, Default)]
struct State {
    received: Vec<ReceivedRequest>,
    scripted: VecDeque<(u16, Option<u64>)>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // The lock guards plain data with no invariant a panicking holder could break.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl WebhookReceiver {
    /// Binds `address` (use `127.0.0.1:0` for a free port) and starts serving.
    pub async fn start(address: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            count: watch::Sender::new(0),
        });
        let server = tokio::spawn(serve(listener, Arc::clone(&shared)));
        Ok(Self {
            address,
            shared,
            server,
        })
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The URL to configure as a webhook: `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.address)
    }

    /// Every request answered so far, in arrival order.
    pub fn received(&self) -> Vec<ReceivedRequest> {
        self.shared.state().received.clone()
    }

    /// Waits until at least `count` requests were received or `timeout` passed, and
    /// returns what was received (possibly fewer: the caller's assertion says why).
    pub async fn wait_for(&self, count: usize, timeout: Duration) -> Vec<ReceivedRequest> {
        self.wait_until(timeout, |received| received.len() >= count)
            .await
    }

    /// Waits until `done` holds for the requests received so far or `timeout` passed,
    /// and returns them. Deliveries are at least once, so a caller that waits for a
    /// particular notification says which, rather than how many requests.
    pub async fn wait_until(
        &self,
        timeout: Duration,
        done: impl Fn(&[ReceivedRequest]) -> bool,
    ) -> Vec<ReceivedRequest> {
        // Subscribed before the first look, so no request slips between the two.
        let mut changes = self.shared.count.subscribe();
        let _ = tokio::time::timeout(timeout, async {
            while !done(&self.received()) {
                if changes.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        self.received()
    }

    /// Queues responses for the next requests: a status, and a `Retry-After` in
    /// seconds. They are used in order; once used up, requests get `200`.
    pub fn respond_with(&self, statuses: Vec<(u16, Option<u64>)>) {
        self.shared.state().scripted.extend(statuses);
    }
}

impl Drop for WebhookReceiver {
    fn drop(&mut self) {
        // The connection tasks live in the server task's JoinSet, so they stop too.
        self.server.abort();
    }
}

async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    connections.spawn(answer(stream, Arc::clone(&shared)));
                }
                Err(error) => {
                    tracing::warn!(error = %error, "webhook receiver cannot accept");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                }
            },
            // Reaps finished connections so the set does not grow without bound.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Reads one request, records it, answers it and closes the connection.
async fn answer(mut stream: TcpStream, shared: Arc<Shared>) {
    let (status, retry_after) =
        match tokio::time::timeout(READ_TIMEOUT, read_request(&mut stream)).await {
            Ok(Ok(request)) => {
                let mut state = shared.state();
                let response = state.scripted.pop_front().unwrap_or((200, None));
                // Recorded before the answer goes out, so a client that has its
                // answer always finds its request in `received`.
                state.received.push(request);
                let count = state.received.len();
                drop(state);
                shared.count.send_replace(count);
                response
            }
            Ok(Err(Refusal::Answer(status, reason))) => {
                let _ = write_response(&mut stream, status, None, reason).await;
                return;
            }
            Ok(Err(Refusal::Closed)) => return,
            Err(_elapsed) => {
                let _ = write_response(&mut stream, 408, None, "the request took too long").await;
                return;
            }
        };
    let _ = write_response(&mut stream, status, retry_after, "").await;
}

/// Why no request was recorded.
enum Refusal {
    /// Answer with this status and reason.
    Answer(u16, &'static str),
    /// The client went away.
    Closed,
}

impl From<io::Error> for Refusal {
    fn from(_: io::Error) -> Self {
        Self::Closed
    }
}

async fn read_request(stream: &mut TcpStream) -> Result<ReceivedRequest, Refusal> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(end) = find(&buffer, b"\r\n\r\n") {
            break end;
        }
        if buffer.len() > HEAD_BYTES_MAX {
            return Err(Refusal::Answer(431, "the request head is too large"));
        }
        if read_more(stream, &mut buffer).await? == 0 {
            return Err(Refusal::Closed);
        }
    };
    let RequestHead {
        mut request,
        content_length,
        expect_continue,
    } = parse_head(&buffer[..head_end], BODY_BYTES_MAX)
        .map_err(|(status, reason)| Refusal::Answer(status, reason))?;
    let mut body = buffer.split_off(head_end + 4);
    if body.len() < content_length && expect_continue {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }
    while body.len() < content_length {
        if read_more(stream, &mut body).await? == 0 {
            return Err(Refusal::Closed);
        }
    }
    // Bytes past the body would be a pipelined request, which `Connection: close`
    // tells the client not to send.
    body.truncate(content_length);
    request.body = String::from_utf8_lossy(&body).into_owned();
    Ok(request)
}

async fn read_more(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> io::Result<usize> {
    let mut chunk = [0u8; 8192];
    let read = stream.read(&mut chunk).await?;
    buffer.extend_from_slice(&chunk[..read]);
    Ok(read)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

async fn write_response(
    stream: &mut TcpStream,
    status: u16,
    retry_after: Option<u64>,
    reason: &str,
) -> io::Result<()> {
    let phrase = StatusCode::from_u16(status)
        .ok()
        .and_then(|code| code.canonical_reason())
        .unwrap_or("Status");
    let body = if (200..300).contains(&status) {
        serde_json::json!({ "ok": true })
    } else if reason.is_empty() {
        serde_json::json!({ "ok": false })
    } else {
        serde_json::json!({ "ok": false, "error": reason })
    }
    .to_string();
    let mut response = format!(
        "HTTP/1.1 {status} {phrase}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(seconds) = retry_after {
        response.push_str(&format!("Retry-After: {seconds}\r\n"));
    }
    response.push_str("\r\n");
    response.push_str(&body);
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}
