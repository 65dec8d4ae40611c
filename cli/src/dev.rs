//! `fleetctl dev --dir DIR`: a local fleet in one command — `fleetctl init` (unless DIR
//! already holds a fleet), one `fleetd` process per node on loopback, the fleet
//! bootstrapped, and everything stopped on Ctrl-C. Each node can be killed and started
//! again by hand with `fleetd --config DIR/<node>/fleetd.toml`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::connection::Connection;

/// What `fleetctl dev` needs to know.
pub struct DevOptions {
    pub dir: PathBuf,
    pub nodes: Vec<String>,
    pub base_port: u16,
    /// `quic`, `grpc` or `auto`; passed to every node as `FLEET_TRANSPORT`.
    pub transport: Option<String>,
}

/// The running processes of a dev fleet; they are stopped when this is dropped.
pub struct DevFleet {
    children: Vec<(String, Child)>,
}

impl DevFleet {
    /// Stops every node with SIGTERM, then SIGKILL after a grace period.
    pub fn stop(&mut self) {
        for (_, child) in &self.children {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for (_, child) in &mut self.children {
            while Instant::now() < deadline {
                if matches!(child.try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        self.children.clear();
    }
}

impl Drop for DevFleet {
    fn drop(&mut self) {
        self.stop();
    }
}

fn sibling_binary(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let path = exe
        .parent()
        .context("fleetctl has no directory")?
        .join(name);
    if !path.exists() {
        bail!(
            "{} not found next to fleetctl; build the workspace (`cargo build`)",
            path.display()
        );
    }
    Ok(path)
}

/// Makes the fleet if needed, starts the nodes and bootstraps; returns when a leader
/// has committed the fleet settings.
pub async fn start(
    options: &DevOptions,
    make_connection: impl Fn(&Path) -> Result<Connection>,
) -> Result<DevFleet> {
    let client_config = options.dir.join("fleetctl.toml");
    if !client_config.exists() {
        let status = Command::new(std::env::current_exe()?)
            .arg("init")
            .arg("--dir")
            .arg(&options.dir)
            .arg("--nodes")
            .arg(options.nodes.join(","))
            .arg("--base-port")
            .arg(options.base_port.to_string())
            .stdout(Stdio::null())
            .status()?;
        if !status.success() {
            bail!("fleetctl init failed for {}", options.dir.display());
        }
    }
    let fleetd = sibling_binary("fleetd")?;
    let mut fleet = DevFleet {
        children: Vec::new(),
    };
    let connection = make_connection(&client_config)?;
    for (node, _) in &connection.endpoints {
        let node_dir = options.dir.join(node);
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(node_dir.join("fleetd.log"))
            .with_context(|| format!("opening {}/fleetd.log", node_dir.display()))?;
        let mut command = Command::new(&fleetd);
        command
            .arg("--config")
            .arg(node_dir.join("fleetd.toml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        if let Some(transport) = &options.transport {
            command.env("FLEET_TRANSPORT", transport);
        }
        let child = command
            .spawn()
            .with_context(|| format!("starting fleetd for {node}"))?;
        fleet.children.push((node.clone(), child));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for (node, child) in &mut fleet.children {
            if let Ok(Some(status)) = child.try_wait() {
                let log = fs::read_to_string(options.dir.join(node.as_str()).join("fleetd.log"))
                    .unwrap_or_default();
                bail!("fleetd for {node} exited ({status}):\n{}", tail(&log, 20));
            }
        }
        match crate::membership::init(&connection, None).await {
            Ok(_) => break,
            Err(error) if Instant::now() > deadline => bail!("the fleet did not come up: {error}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    Ok(fleet)
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
