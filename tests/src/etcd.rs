//! etcd 3.4 (Debian's `etcd-server`) as the benchmarks' yardstick: `EtcdCluster`
//! starts three members on loopback with default settings, and the generated client
//! of the subset of etcd's v3 API in `proto/etcd_kv.proto` talks to them.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tempfile::TempDir;
use tonic::transport::{Channel, Endpoint};

use crate::process_fleet::free_port_range;

/// The generated etcd v3 types and clients (`etcdserverpb`).
pub mod pb {
    tonic::include_proto!("etcdserverpb");
}

/// Three etcd members on 127.0.0.1, stopped (killed) when dropped.
pub struct EtcdCluster {
    _dir: TempDir,
    children: Vec<Child>,
    /// Each member's client URL (`http://127.0.0.1:port`).
    pub client_urls: Vec<String>,
}

impl EtcdCluster {
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
        let mut children = Vec::new();
        for i in 0..3u16 {
            let data: PathBuf = dir.path().join(format!("m{i}"));
            let log = std::fs::File::create(dir.path().join(format!("m{i}.log")))?;
            let child = Command::new("etcd")
                .args(["--name", &format!("m{i}")])
                .arg("--data-dir")
                .arg(&data)
                .args(["--listen-client-urls", &client_urls[usize::from(i)]])
                .args(["--advertise-client-urls", &client_urls[usize::from(i)]])
                .args(["--listen-peer-urls", &peer(i)])
                .args(["--initial-advertise-peer-urls", &peer(i)])
                .args(["--initial-cluster", &initial])
                .args(["--initial-cluster-state", "new"])
                .args(["--initial-cluster-token", "fleet-bench"])
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()
                .context("starting etcd")?;
            children.push(child);
        }
        let cluster = Self {
            _dir: dir,
            children,
            client_urls,
        };
        cluster.leader_url(Duration::from_secs(30)).await?;
        Ok(cluster)
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
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
