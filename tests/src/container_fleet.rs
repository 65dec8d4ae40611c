//! `ContainerFleet`: one `fleetd` per Docker container, as on machines of their own,
//! so a test can cut a node off the network or freeze it whole.
//!
//! The fleet is made as an operator would make one across machines: `fleetctl init`,
//! then each `fleetd.toml` edited to the addresses the other nodes dial. Every
//! container sits on two networks the fleet creates: *peers*, which carries Raft (QUIC
//! on UDP, or gRPC on the API port) and the writes a follower forwards to its leader,
//! and *clients*, on which the test (on the host) reaches each node's client API. A
//! node taken off the peers network is partitioned from the other nodes yet still
//! answers clients, as a machine would whose link to the others fails while a local
//! agent still talks to it. Containers and networks are removed on drop.

use std::fs;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tempfile::TempDir;

use crate::client::TestClient;
use crate::docker::{docker, docker_usable};
use crate::fleetd_image::FleetdImage;
use crate::process_fleet::binary;

/// Every node's client API (and gRPC Raft) port, on its own address.
const API_PORT: u16 = 7100;
/// Every node's QUIC Raft port.
const RAFT_PORT: u16 = 7101;
/// Where the fleet's directory is mounted in each container.
const MOUNT: &str = "/fleet";

/// One network the fleet created: its name and the first three octets of its /24
/// (empty until created).
#[derive(Default)]
struct Network {
    name: String,
    prefix: String,
}

impl Network {
    /// The address of the `index`-th node on this network (.11, .12, …).
    fn address(&self, index: usize) -> String {
        format!("{}.{}", self.prefix, 11 + index)
    }
}

/// Three (or more) `fleetd` containers and the fleet directory they share.
pub struct ContainerFleet {
    dir: TempDir,
    /// The prefix of every container's and network's name.
    id: String,
    /// The nodes, in hierarchy order.
    pub nodes: Vec<String>,
    peers: Network,
    clients: Network,
}

impl ContainerFleet {
    /// Starts `nodes` in containers with `FLEET_TRANSPORT=transport` and bootstraps the
    /// fleet through the first. `None` where no Docker engine answers (see
    /// [`docker_usable`]).
    pub fn start(nodes: &[&str], transport: &str) -> Result<Option<Self>> {
        if !docker_usable()? {
            return Ok(None);
        }
        let image = FleetdImage::of_this_build()?;
        let dir = tempfile::Builder::new()
            .prefix("fleet-containers-")
            .tempdir()?;
        let id = format!("fleet-test-{}", unique_suffix());
        let mut fleet = Self {
            dir,
            id,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            peers: Network::default(),
            clients: Network::default(),
        };
        let init = Command::new(binary("fleetctl"))
            .arg("init")
            .arg("--dir")
            .arg(fleet.dir())
            .args(["--nodes", &nodes.join(",")])
            .stdin(Stdio::null())
            .output()?;
        if !init.status.success() {
            bail!(
                "fleetctl init failed: {}",
                String::from_utf8_lossy(&init.stderr)
            );
        }
        fleet.peers = create_network(&format!("{}-peers", fleet.id), 233)?;
        fleet.clients = create_network(&format!("{}-clients", fleet.id), 234)?;
        fleet.address_configs()?;
        let owner = fs::metadata(fleet.dir())?;
        let user = format!("{}:{}", owner.uid(), owner.gid());
        let volume = format!("{}:{MOUNT}", fleet.dir().display());
        for (index, node) in fleet.nodes.iter().enumerate() {
            let container = fleet.container(node);
            let config = format!("{MOUNT}/{node}/fleetd.toml");
            docker(&[
                "create",
                "--name",
                &container,
                "--network",
                &fleet.peers.name,
                "--ip",
                &fleet.peers.address(index),
                "--user",
                &user,
                "--volume",
                &volume,
                "--env",
                &format!("FLEET_TRANSPORT={transport}"),
                &image.name,
                "--config",
                &config,
            ])?;
            docker(&[
                "network",
                "connect",
                "--ip",
                &fleet.clients.address(index),
                &fleet.clients.name,
                &container,
            ])?;
            docker(&["start", &container])?;
        }
        fleet.await_listening(Duration::from_secs(30))?;
        let bootstrap = fleet.fleetctl(&["--node", nodes[0], "cluster", "init"])?;
        if !bootstrap.status.success() {
            bail!(
                "cluster init failed: {}\n{}",
                String::from_utf8_lossy(&bootstrap.stderr),
                fleet.log(nodes[0])
            );
        }
        Ok(Some(fleet))
    }

    /// The fleet's directory (certificates, configs, each node's RocksDB).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn container(&self, node: &str) -> String {
        format!("{}-{node}", self.id)
    }

    fn index(&self, node: &str) -> Result<usize> {
        self.nodes
            .iter()
            .position(|n| n == node)
            .with_context(|| format!("{node} is not in the fleet"))
    }

    /// Points every node at the others' peer addresses and listens on all of the
    /// container's addresses; `fleetctl.toml` at the client addresses.
    fn address_configs(&self) -> Result<()> {
        let peer_api = |i: usize| format!("{}:{API_PORT}", self.peers.address(i));
        let peer_raft = |i: usize| format!("{}:{RAFT_PORT}", self.peers.address(i));
        for (index, node) in self.nodes.iter().enumerate() {
            let path = self.dir().join(node).join("fleetd.toml");
            let mut config: toml::Table = toml::from_str(&fs::read_to_string(&path)?)?;
            config.insert("api_listen".into(), format!("0.0.0.0:{API_PORT}").into());
            config.insert("raft_listen".into(), format!("0.0.0.0:{RAFT_PORT}").into());
            config.insert("advertise_api".into(), peer_api(index).into());
            config.insert("advertise_raft".into(), peer_raft(index).into());
            let peers = config
                .get_mut("peers")
                .and_then(toml::Value::as_table_mut)
                .context("fleetd.toml has no [peers]")?;
            for (peer_index, peer) in self.nodes.iter().enumerate() {
                let mut addresses = toml::Table::new();
                addresses.insert("api".into(), peer_api(peer_index).into());
                addresses.insert("raft".into(), peer_raft(peer_index).into());
                peers.insert(peer.clone(), addresses.into());
            }
            fs::write(&path, toml::to_string(&config)?)?;
        }
        let path = self.dir().join("fleetctl.toml");
        let mut client: toml::Table = toml::from_str(&fs::read_to_string(&path)?)?;
        let mut endpoints = toml::Table::new();
        for (index, node) in self.nodes.iter().enumerate() {
            let address = format!("{}:{API_PORT}", self.clients.address(index));
            endpoints.insert(node.clone(), address.into());
        }
        client.insert("endpoints".into(), endpoints.into());
        fs::write(&path, toml::to_string(&client)?)?;
        Ok(())
    }

    /// Waits until every node accepts connections on its client address.
    fn await_listening(&self, within: Duration) -> Result<()> {
        let deadline = Instant::now() + within;
        for (index, node) in self.nodes.iter().enumerate() {
            let address: SocketAddr = format!("{}:{API_PORT}", self.clients.address(index))
                .parse()
                .context("a node's client address")?;
            while TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_err() {
                if Instant::now() > deadline {
                    bail!("{node} never listened on {address}:\n{}", self.log(node));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Ok(())
    }

    /// Runs `fleetctl --config DIR/fleetctl.toml ARGS`.
    pub fn fleetctl(&self, args: &[&str]) -> Result<std::process::Output> {
        Ok(Command::new(binary("fleetctl"))
            .arg("--config")
            .arg(self.dir().join("fleetctl.toml"))
            .args(args)
            .stdin(Stdio::null())
            .output()?)
    }

    /// A client of `node`'s API, on the clients network, with the operator token.
    pub async fn client(&self, node: &str) -> Result<TestClient> {
        TestClient::connect(self.dir(), node).await
    }

    /// Waits until one of `asked` names a leader other than `not` in its own status.
    pub async fn wait_for_leader(
        &self,
        asked: &[&str],
        not: Option<&str>,
        within: Duration,
    ) -> Result<String> {
        let deadline = Instant::now() + within;
        let mut last = String::new();
        while Instant::now() < deadline {
            for node in asked {
                match self.client(node).await?.status().await {
                    Ok(status) if !status.leader.is_empty() && Some(&*status.leader) != not => {
                        return Ok(status.leader);
                    }
                    Ok(status) => last = format!("{node}: leader {:?}", status.leader),
                    Err(error) => last = format!("{node}: {error}"),
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("no leader other than {not:?} within {within:?}; last: {last}")
    }

    /// Takes `node` off the peers network: it reaches no other node, and none reaches
    /// it, while clients still do.
    pub fn cut_off(&self, node: &str) -> Result<()> {
        docker(&[
            "network",
            "disconnect",
            &self.peers.name,
            &self.container(node),
        ])?;
        Ok(())
    }

    /// Puts `node` back on the peers network at its address.
    pub fn reconnect(&self, node: &str) -> Result<()> {
        let address = self.peers.address(self.index(node)?);
        docker(&[
            "network",
            "connect",
            "--ip",
            &address,
            &self.peers.name,
            &self.container(node),
        ])?;
        Ok(())
    }

    /// Freezes every process of `node`'s container (`docker pause`: the cgroup freezer),
    /// as a machine that stalls: its sockets stay open, nothing runs.
    pub fn pause(&self, node: &str) -> Result<()> {
        docker(&["pause", &self.container(node)])?;
        Ok(())
    }

    /// Lets a paused `node` run again.
    pub fn unpause(&self, node: &str) -> Result<()> {
        docker(&["unpause", &self.container(node)])?;
        Ok(())
    }

    /// The last lines `node`'s `fleetd` wrote, for failure messages.
    pub fn log(&self, node: &str) -> String {
        Command::new("docker")
            .args(["logs", "--tail", "40", &self.container(node)])
            .output()
            .map(|out| {
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                )
            })
            .unwrap_or_else(|error| format!("(docker logs failed: {error})"))
    }
}

impl Drop for ContainerFleet {
    fn drop(&mut self) {
        for node in &self.nodes {
            let _ = docker(&["rm", "--force", &self.container(node)]);
        }
        for network in [&self.peers, &self.clients] {
            if !network.name.is_empty() {
                let _ = docker(&["network", "rm", &network.name]);
            }
        }
    }
}

/// The nanoseconds of the clock's current second: a cheap source of variety.
fn clock_nanos() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
}

/// A suffix no other test running now has: the process id and the clock's nanoseconds.
fn unique_suffix() -> String {
    format!("{:x}{:08x}", std::process::id(), clock_nanos())
}

/// Creates a bridge network `name` on a free `10.<second>.x.0/24`, trying another `x`
/// when Docker says the range is taken.
fn create_network(name: &str, second: u8) -> Result<Network> {
    let mut third =
        (u64::from(std::process::id()).wrapping_mul(7919) ^ u64::from(clock_nanos())) % 250;
    let mut last = None;
    for _ in 0..20 {
        let prefix = format!("10.{second}.{third}");
        let subnet = format!("{prefix}.0/24");
        match docker(&["network", "create", "--subnet", &subnet, name]) {
            Ok(_) => {
                return Ok(Network {
                    name: name.to_string(),
                    prefix,
                });
            }
            Err(error) => last = Some(error),
        }
        third = (third + 37) % 250;
    }
    Err(last.expect("tried at least once")).context(format!("creating network {name}"))
}
