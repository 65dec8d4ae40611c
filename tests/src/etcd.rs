//! etcd 3.4 (Debian's `etcd-server`) as the benchmarks' yardstick: `EtcdCluster`
//! starts three members on loopback with default settings, and the generated client
//! of the subset of etcd's v3 API in `proto/etcd_kv.proto` talks to them.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tempfile::TempDir;
use tonic::transport::{Channel, Endpoint};

use crate::bare_grpc::BareGrpcClient;
use crate::process_fleet::free_port_range;

/// The generated etcd v3 types and clients (`etcdserverpb`).
pub mod pb {
    tonic::include_proto!("etcdserverpb");
}

/// Three etcd members on 127.0.0.1, stopped (killed) when dropped.
pub struct EtcdCluster {
    dir: TempDir,
    /// Each member's process; `None` while it is killed.
    children: Vec<Option<Child>>,
    /// Each member's command line, to start it again after a kill.
    commands: Vec<Vec<String>>,
    /// Each member's client URL (`http://127.0.0.1:port`).
    pub client_urls: Vec<String>,
}

impl EtcdCluster {
    /// The process ids of the members that run.
    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().flatten().map(Child::id).collect()
    }

    /// Whether an `etcd` binary is on the `PATH`.
    pub fn available() -> bool {
        Command::new("etcd")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Starts three members with etcd's default settings (only names, addresses and
    /// data directories are given) and waits until they have a leader.
    pub async fn start() -> Result<Self> {
        let dir = tempfile::Builder::new().prefix("etcd-bench-").tempdir()?;
        let base = free_port_range(6);
        let peer = |i: u16| format!("http://127.0.0.1:{}", base + 2 * i + 1);
        let client_urls: Vec<String> = (0..3)
            .map(|i| format!("http://127.0.0.1:{}", base + 2 * i))
            .collect();
        let initial = (0..3)
            .map(|i| format!("m{i}={}", peer(i)))
            .collect::<Vec<_>>()
            .join(",");
        let commands: Vec<Vec<String>> = (0..3u16)
            .map(|i| {
                let data: PathBuf = dir.path().join(format!("m{i}"));
                vec![
                    "--name".into(),
                    format!("m{i}"),
                    "--data-dir".into(),
                    data.display().to_string(),
                    "--listen-client-urls".into(),
                    client_urls[usize::from(i)].clone(),
                    "--advertise-client-urls".into(),
                    client_urls[usize::from(i)].clone(),
                    "--listen-peer-urls".into(),
                    peer(i),
                    "--initial-advertise-peer-urls".into(),
                    peer(i),
                    "--initial-cluster".into(),
                    initial.clone(),
                    "--initial-cluster-state".into(),
                    "new".into(),
                    "--initial-cluster-token".into(),
                    "fleet-bench".into(),
                ]
            })
            .collect();
        let mut cluster = Self {
            dir,
            children: vec![None, None, None],
            commands,
            client_urls,
        };
        for member in 0..3 {
            cluster.start_member(member)?;
        }
        cluster.leader_url(Duration::from_secs(30)).await?;
        Ok(cluster)
    }

    /// Starts member `member` (0, 1, 2) with its original command line; after a kill it
    /// rejoins from its data directory.
    pub fn start_member(&mut self, member: usize) -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("m{member}.log")))?;
        let child = Command::new("etcd")
            .args(&self.commands[member])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting etcd")?;
        self.children[member] = Some(child);
        Ok(())
    }

    /// `kill -9` of member `member`.
    pub fn kill_member(&mut self, member: usize) -> Result<()> {
        if let Some(mut child) = self.children[member].take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// The client URL of the current leader, waiting up to `timeout` for one.
    pub async fn leader_url(&self, timeout: Duration) -> Result<String> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            for url in &self.client_urls {
                let Ok(channel) = channel(url).await else {
                    continue;
                };
                let mut client = pb::maintenance_client::MaintenanceClient::new(channel);
                if let Ok(status) = client.status(pb::StatusRequest {}).await {
                    let status = status.into_inner();
                    let member = status.header.map_or(0, |h| h.member_id);
                    if status.leader != 0 && status.leader == member {
                        return Ok(url.clone());
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("etcd elected no leader within {timeout:?}")
    }
}

/// A [`BareGrpcClient`] on a plaintext connection of its own to the member at `url`
/// (`http://host:port`), as [`channel`] connects. Its writes go to [`PUT_PATH`].
pub async fn bare_client(url: &str) -> Result<BareGrpcClient> {
    let address = url
        .strip_prefix("http://")
        .with_context(|| format!("`{url}` is not an http:// URL"))?;
    let stream = tokio::net::TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    BareGrpcClient::handshake(stream, url, None).await
}

/// The path of etcd's `KV.Put`, for a [`BareGrpcClient`].
pub const PUT_PATH: &str = "/etcdserverpb.KV/Put";

/// A connected channel to `url`.
pub async fn channel(url: &str) -> Result<Channel> {
    Ok(Endpoint::from_shared(url.to_string())?
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(10))
        .tcp_nodelay(true)
        .connect()
        .await?)
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for child in self.children.iter_mut().flatten() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
