//! `ProcessFleet`: real `fleetd` processes made and driven the way an operator would:
//! `fleetctl init` writes the certificates and configs, each node is started with
//! `fleetd --config DIR/<node>/fleetd.toml`, `fleetctl cluster init` bootstraps.

use std::collections::BTreeMap;
use std::fs;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tempfile::TempDir;

use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::NodeName;

use crate::client::{TestClient, api_address};

/// The directory holding the workspace's built binaries.
pub fn binary_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    // target/<profile>/deps/<test> → target/<profile>
    exe.parent()
        .and_then(Path::parent)
        .expect("test binaries live in target/<profile>/deps")
        .to_path_buf()
}

/// A binary of the workspace, e.g. `fleetd`.
pub fn binary(name: &str) -> PathBuf {
    let path = binary_dir().join(name);
    assert!(
        path.exists(),
        "{} is not built; run the tests through cargo",
        path.display()
    );
    path
}

/// The stderr of a `fleetctl` command that must have been refused (exit code 1).
///
/// # Panics
/// If it exited otherwise: the test fails there, showing what it printed.
pub fn refused(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(1),
        "expected a refusal; stdout: {}; stderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `fleetctl status -o json` for the fleet whose `fleetctl.toml` is in `dir`, whatever
/// its exit code (it exits 1 without a quorum).
pub fn status_of(dir: &Path) -> Result<serde_json::Value> {
    let output = Command::new(binary("fleetctl"))
        .arg("--config")
        .arg(dir.join("fleetctl.toml"))
        .args(["status", "-o", "json"])
        .stdin(Stdio::null())
        .output()?;
    serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "fleetctl status printed no JSON: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// Polls [`status_of`] until `check` accepts it, for at most `timeout`.
pub fn wait_for_status_of(
    dir: &Path,
    what: &str,
    timeout: Duration,
    check: impl Fn(&serde_json::Value) -> bool,
) -> Result<serde_json::Value> {
    let deadline = Instant::now() + timeout;
    let mut last = serde_json::Value::Null;
    while Instant::now() < deadline {
        if let Ok(status) = status_of(dir) {
            if check(&status) {
                return Ok(status);
            }
            last = status;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("{what}: not within {timeout:?}; last status: {last}")
}

/// The lowest port a test fleet listens on.
const TEST_PORTS_START: u16 = 20_000;
/// How many ports above it a test fleet may take: all below 32768, where Linux's
/// default range of ephemeral ports starts, so that no outgoing connection of another
/// test takes a port as its source between the check below and `fleetd`'s bind.
const TEST_PORTS: u16 = 12_000;

/// Finds `count` consecutive ports free for both TCP and UDP on 127.0.0.1.
pub fn free_port_range(count: u16) -> u16 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let seed = u64::from(std::process::id()) ^ u64::from(nanos);
    let span = TEST_PORTS - count;
    let mut candidate = TEST_PORTS_START + (seed.wrapping_mul(7919) % u64::from(span)) as u16;
    loop {
        let free = (0..count).all(|offset| {
            let port = candidate + offset;
            TcpListener::bind(("127.0.0.1", port)).is_ok()
                && UdpSocket::bind(("127.0.0.1", port)).is_ok()
        });
        if free {
            return candidate;
        }
        candidate = TEST_PORTS_START + (candidate - TEST_PORTS_START + count * 7 + 13) % span;
    }
}

/// The last `count` lines of `text`.
fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

/// A fleet of real processes in a temporary directory.
pub struct ProcessFleet {
    dir: TempDir,
    pub nodes: Vec<String>,
    children: BTreeMap<String, Child>,
    /// Extra environment for every `fleetd` (e.g. `FLEET_TRANSPORT=grpc`).
    pub env: Vec<(String, String)>,
}

impl ProcessFleet {
    /// Gives every `fleetd` started from now on elections of 1–2 s instead of the
    /// default 200–400 ms: multi-MiB entries keep both cores of a small machine busy
    /// for a while in an unoptimised build, which must not depose the leader in a test
    /// that is not about elections.
    pub fn with_long_elections(&mut self) {
        for (key, value) in [
            ("FLEET_RAFT__ELECTION_TIMEOUT_MIN_MS", "1000"),
            ("FLEET_RAFT__ELECTION_TIMEOUT_MAX_MS", "2000"),
        ] {
            self.env.push((key.into(), value.into()));
        }
    }

    /// `fleetctl init` for `nodes` on free loopback ports; nothing is started yet.
    pub fn init(nodes: &[&str]) -> Result<Self> {
        let dir = tempfile::Builder::new().prefix("fleet-test-").tempdir()?;
        let base = free_port_range(2 * nodes.len() as u16);
        let fleet = Self {
            dir,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            children: BTreeMap::new(),
            env: Vec::new(),
        };
        let output = fleet.fleetctl_raw(&[
            "init",
            "--dir",
            fleet.dir.path().to_str().unwrap(),
            "--nodes",
            &nodes.join(","),
            "--base-port",
            &base.to_string(),
        ])?;
        if !output.status.success() {
            bail!(
                "fleetctl init failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(fleet)
    }

    /// The fleet's directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `DIR/<node>/fleetd.toml`.
    pub fn config_path(&self, node: &str) -> PathBuf {
        self.dir().join(node).join("fleetd.toml")
    }

    /// Starts `fleetd` for `node`, its output appended to `DIR/<node>/fleetd.log`.
    pub fn start(&mut self, node: &str) -> Result<()> {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir().join(node).join("fleetd.log"))?;
        let mut command = Command::new(binary("fleetd"));
        command
            .arg("--config")
            .arg(self.config_path(node))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        for (key, value) in &self.env {
            command.env(key, value);
        }
        let child = command
            .spawn()
            .with_context(|| format!("starting fleetd for {node}"))?;
        self.children.insert(node.to_string(), child);
        Ok(())
    }

    /// Starts every node.
    pub fn start_all(&mut self) -> Result<()> {
        for node in self.nodes.clone() {
            self.start(&node)?;
        }
        Ok(())
    }

    /// The process ids of the nodes that run.
    pub fn pids(&self) -> Vec<u32> {
        self.children.values().map(Child::id).collect()
    }

    /// `kill -9` of `node`, waiting for it to be gone.
    pub fn kill(&mut self, node: &str) -> Result<()> {
        let mut child = self
            .children
            .remove(node)
            .with_context(|| format!("{node} is not running"))?;
        child.kill()?;
        child.wait()?;
        Ok(())
    }

    /// Sends a signal (`STOP`, `CONT`) to `node`'s process.
    pub fn signal(&self, node: &str, signal: &str) -> Result<()> {
        let child = self
            .children
            .get(node)
            .with_context(|| format!("{node} is not running"))?;
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()?;
        if !status.success() {
            bail!("kill -{signal} {node} failed");
        }
        Ok(())
    }

    /// Runs `fleetctl` with the fleet's client config.
    pub fn fleetctl(&self, args: &[&str]) -> Result<Output> {
        let config = self.dir().join("fleetctl.toml");
        let mut all = vec!["--config", config.to_str().unwrap()];
        all.extend_from_slice(args);
        self.fleetctl_raw(&all)
    }

    fn fleetctl_raw(&self, args: &[&str]) -> Result<Output> {
        Ok(Command::new(binary("fleetctl"))
            .args(args)
            .stdin(Stdio::null())
            .output()?)
    }

    /// Runs `fleetctl … -o json` and parses its output; fails with stderr if it failed.
    pub fn fleetctl_json(&self, args: &[&str]) -> Result<serde_json::Value> {
        let mut all = args.to_vec();
        all.extend_from_slice(&["-o", "json"]);
        let output = self.fleetctl(&all)?;
        if !output.status.success() {
            bail!(
                "fleetctl {} failed: {}{}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr),
                String::from_utf8_lossy(&output.stdout)
            );
        }
        Ok(serde_json::from_slice(&output.stdout)?)
    }

    /// A client that talks to `node` with the operator token.
    pub async fn client(&self, node: &str) -> Result<TestClient> {
        TestClient::connect(self.dir(), node).await
    }

    /// Bootstraps the fleet through `node` once every running node listens, and waits
    /// until a leader has committed the fleet's settings.
    pub fn bootstrap(&self, node: &str) -> Result<serde_json::Value> {
        self.bootstrap_with(node, &[])
    }

    /// Like [`ProcessFleet::bootstrap`], with more arguments for `cluster init`
    /// (`--settings FILE`).
    pub fn bootstrap_with(&self, node: &str, extra: &[&str]) -> Result<serde_json::Value> {
        let mut args = vec!["--node", node, "cluster", "init"];
        args.extend_from_slice(extra);
        self.await_listening(Instant::now() + Duration::from_secs(20))?;
        self.fleetctl_json(&args)
    }

    /// Waits until every running node accepts connections on its client API port, which
    /// `fleetd` opens last, after its Raft listener. Bootstrapping before then would
    /// send the first vote to a node not yet listening, and the next vote comes only an
    /// election timeout later (a minute, in tests that lengthen it).
    fn await_listening(&self, deadline: Instant) -> Result<()> {
        for node in self.children.keys() {
            let address = api_address(self.dir(), node)?;
            while TcpStream::connect(&address).is_err() {
                if Instant::now() >= deadline {
                    bail!(
                        "{node} never listened on {address}; its fleetd log ends:\n{}",
                        last_lines(&self.log(node), 20)
                    );
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    /// Bootstraps through `node` with the documented fleet settings but a failback hold
    /// of `hold_ms`, so tests of roles coming back need not wait the default 10 s.
    pub fn bootstrap_with_failback_hold(
        &self,
        node: &str,
        hold_ms: u64,
    ) -> Result<serde_json::Value> {
        let settings = self.dir().join("fleet.toml");
        let defaults =
            fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../config/fleet.toml"))?;
        let changed = defaults.replace(
            "failback_hold_ms = 10000",
            &format!("failback_hold_ms = {hold_ms}"),
        );
        if changed == defaults {
            bail!("config/fleet.toml no longer says `failback_hold_ms = 10000`");
        }
        fs::write(&settings, changed)?;
        self.bootstrap_with(node, &["--settings", settings.to_str().unwrap_or_default()])
    }

    /// Waits until `fleetctl status` reports a leader other than `not`, and returns it.
    pub fn wait_for_leader(&self, not: Option<&str>, timeout: Duration) -> Result<String> {
        let deadline = Instant::now() + timeout;
        let mut last = String::new();
        while Instant::now() < deadline {
            match self.fleetctl_json(&["status"]) {
                Ok(status) => {
                    let leader = status["leader"].as_str().unwrap_or_default().to_string();
                    if !leader.is_empty() && Some(leader.as_str()) != not {
                        return Ok(leader);
                    }
                    last = status.to_string();
                }
                Err(error) => last = error.to_string(),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!("no leader within {timeout:?}; last status: {last}")
    }

    /// `fleetctl status -o json` whatever its exit code (it exits 1 without a quorum).
    pub fn status(&self) -> Result<serde_json::Value> {
        status_of(self.dir())
    }

    /// Polls `fleetctl status` until `check` accepts it, for at most `timeout`.
    pub fn wait_for_status(
        &self,
        what: &str,
        timeout: Duration,
        check: impl Fn(&serde_json::Value) -> bool,
    ) -> Result<serde_json::Value> {
        wait_for_status_of(self.dir(), what, timeout, check)
    }

    /// `nodes` started and bootstrapped through Beast, with Beast primary and every
    /// member's health committed, so every participant is expected to speak in every
    /// round. For tests that do not run in a tokio runtime themselves.
    pub fn start_all_healthy(nodes: &[&str], timeout: Duration) -> Result<Self> {
        let mut fleet = Self::init(nodes)?;
        fleet.start_all()?;
        fleet.bootstrap("beast")?;
        fleet.wait_for_status("beast primary", timeout, |s| {
            s["quorum"] == true && s["primary"] == "beast"
        })?;
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(fleet.wait_until_all_healthy("beast", timeout))?;
        Ok(fleet)
    }

    /// Waits until the leader has committed every member as healthy (the state, not
    /// only the leader's monitor, decides who is expected to speak), asking `via`.
    pub async fn wait_until_all_healthy(&self, via: &str, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let names = self
            .nodes
            .iter()
            .map(|n| NodeName::new(n.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        loop {
            if let Ok(mut client) = self.client(via).await
                && let Ok(QueryAnswer::Overview { roles, .. }) =
                    client.read(&Query::Overview, true, 0).await
                && names.iter().all(|n| roles.is_healthy(n))
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the members' health was not committed within {timeout:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A node's log so far, for failure messages.
    pub fn log(&self, node: &str) -> String {
        fs::read_to_string(self.dir().join(node).join("fleetd.log")).unwrap_or_default()
    }

    /// The last `count` lines of `node`'s `fleetd.log`, for a failure's message.
    pub fn log_tail(&self, node: &str, count: usize) -> String {
        last_lines(&self.log(node), count)
    }
}

impl Drop for ProcessFleet {
    fn drop(&mut self) {
        for child in self.children.values_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
