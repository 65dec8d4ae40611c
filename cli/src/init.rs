//! `fleetctl init`: creates a new fleet in a directory — the CA, one certificate,
//! key and agent token per node, the operator token, each node's `fleetd.toml` and
//! the operator's `fleetctl.toml`.
//!
//! Layout written (for `--nodes beast,5070,mac`):
//! ```text
//! DIR/ca.pem  ca.key  operator.token  fleetctl.toml
//! DIR/beast/node.pem  node.key  agent.token  fleetd.toml
//! DIR/5070/…  DIR/mac/…
//! ```
//! Secrets (`ca.key`, `*.token`, `node.key`) are mode 0600. An existing fleet is
//! never overwritten: `init` refuses before it writes anything.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail, ensure};
use clap::Args;
use fleet_node::identity::pem_files::write_new_file;
use fleet_node::identity::{FleetCa, IssuedNodeCert, write_private_file};
use fleet_node::state::NodeName;
use serde::Serialize;

use crate::GlobalOptions;
use crate::client_config::ClientConfig;

/// Random bytes in a generated token (printed as hex, so 64 characters).
const TOKEN_BYTES: usize = 32;
/// The operator token's file name, at the top of the fleet directory.
const OPERATOR_TOKEN_FILE: &str = "operator.token";
/// The agent token's file name, in each node's directory.
const AGENT_TOKEN_FILE: &str = "agent.token";
/// Each node's config file name, in its directory.
const NODE_CONFIG_FILE: &str = "fleetd.toml";

/// Arguments of `fleetctl init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The directory to create the fleet in (created if missing; must not hold a fleet).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// The nodes, in hierarchy order, comma-separated (e.g. `beast,5070,mac`).
    #[arg(
        long,
        value_delimiter = ',',
        required_unless_present = "add",
        conflicts_with = "add",
        value_name = "NAMES"
    )]
    pub nodes: Vec<String>,
    /// Adds one node to the fleet already in DIR: a certificate from its CA, an agent
    /// token and a `fleetd.toml` on the next free ports (or from --base-port when
    /// given), and its endpoint in `fleetctl.toml`. Then start it and run
    /// `fleetctl member add`.
    #[arg(long, value_name = "NAME")]
    pub add: Option<String>,
    /// The fleet's name.
    #[arg(long, default_value = "home")]
    pub fleet: String,
    /// The IP address every node listens on and is reached at (edit each
    /// `fleetd.toml` for nodes on different machines).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// The first node's API port; node i uses base+2i (API, TCP) and base+2i+1 (Raft, UDP).
    #[arg(long)]
    pub base_port: Option<u16>,
}

/// The first API port when `--base-port` is not given.
const DEFAULT_BASE_PORT: u16 = 7100;

/// What `init` wrote, as `-o json` prints it.
#[derive(Debug, Serialize)]
struct InitReport {
    fleet: String,
    dir: PathBuf,
    ca_cert: PathBuf,
    ca_key: PathBuf,
    operator_token_file: PathBuf,
    client_config: PathBuf,
    nodes: Vec<NodeReport>,
}

/// One node's part of the report.
#[derive(Debug, Serialize)]
struct NodeReport {
    name: String,
    api: SocketAddr,
    raft: SocketAddr,
    config: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    agent_token_file: PathBuf,
}

/// A node's name and addresses.
struct Member {
    name: String,
    api: SocketAddr,
    raft: SocketAddr,
}

/// Runs `fleetctl init`.
pub fn run(args: &InitArgs, global: &GlobalOptions) -> anyhow::Result<()> {
    if let Some(name) = &args.add {
        return add_node(args, name, global);
    }
    let members = plan_members(args)?;
    let dir = &args.dir;
    refuse_existing_fleet(dir, &members)?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;

    let ca = FleetCa::generate(&args.fleet)?;
    ca.save(dir)?;
    write_private_file(&dir.join(OPERATOR_TOKEN_FILE), new_token()?.as_bytes())?;

    let mut nodes = Vec::with_capacity(members.len());
    for member in &members {
        let node_dir = dir.join(&member.name);
        std::fs::create_dir_all(&node_dir)
            .with_context(|| format!("cannot create {}", node_dir.display()))?;
        ca.issue_node_cert(&member.name)?.save(&node_dir)?;
        write_private_file(&node_dir.join(AGENT_TOKEN_FILE), new_token()?.as_bytes())?;
        let config = node_dir.join(NODE_CONFIG_FILE);
        write_new_file(
            &config,
            node_config_toml(&args.fleet, member, &members).as_bytes(),
        )?;
        nodes.push(NodeReport {
            name: member.name.clone(),
            api: member.api,
            raft: member.raft,
            config,
            cert: node_dir.join(IssuedNodeCert::CERT_FILE),
            key: node_dir.join(IssuedNodeCert::KEY_FILE),
            agent_token_file: node_dir.join(AGENT_TOKEN_FILE),
        });
    }

    let client_config = ClientConfig {
        fleet: args.fleet.clone(),
        ca_cert: PathBuf::from(FleetCa::CERT_FILE),
        operator_token_file: PathBuf::from(OPERATOR_TOKEN_FILE),
        endpoints: members
            .iter()
            .map(|member| (member.name.clone(), member.api.to_string()))
            .collect(),
    };
    let client_config_path = dir.join(ClientConfig::FILE_NAME);
    write_new_file(&client_config_path, client_config.to_toml().as_bytes())?;
    // Read it back as the other commands will, so a broken file fails here, not later.
    let written = ClientConfig::load(&client_config_path)?;
    ensure!(
        written.operator_token()?.len() == 2 * TOKEN_BYTES,
        "the operator token in {} did not read back",
        written.operator_token_file.display()
    );

    let report = InitReport {
        fleet: args.fleet.clone(),
        dir: dir.clone(),
        ca_cert: dir.join(FleetCa::CERT_FILE),
        ca_key: dir.join(FleetCa::KEY_FILE),
        operator_token_file: written.operator_token_file,
        client_config: client_config_path,
        nodes,
    };
    global.output.print(&report, print_table)
}

/// Checks the arguments and assigns each node its ports.
fn plan_members(args: &InitArgs) -> anyhow::Result<Vec<Member>> {
    NodeName::new(&args.fleet).with_context(|| format!("--fleet {:?}", args.fleet))?;
    ensure!(
        !args.nodes.is_empty(),
        "--nodes needs at least one node name"
    );
    ensure!(
        !args.host.is_unspecified(),
        "--host {} is not an address peers can dial; give the address nodes reach each other at",
        args.host
    );
    ensure!(args.base_port != Some(0), "--base-port must be at least 1");
    let mut seen = BTreeSet::new();
    let mut members = Vec::with_capacity(args.nodes.len());
    for (index, name) in args.nodes.iter().enumerate() {
        NodeName::new(name.as_str()).with_context(|| format!("--nodes: {name:?}"))?;
        ensure!(seen.insert(name.as_str()), "--nodes names `{name}` twice");
        let offset = u16::try_from(2 * index + 1).ok();
        let base_port = args.base_port.unwrap_or(DEFAULT_BASE_PORT);
        let raft_port = offset.and_then(|offset| base_port.checked_add(offset));
        let Some(raft_port) = raft_port else {
            bail!(
                "--base-port {} leaves no room for {} nodes (two ports each, up to 65535)",
                base_port,
                args.nodes.len()
            );
        };
        members.push(Member {
            name: name.clone(),
            api: SocketAddr::new(args.host, raft_port - 1),
            raft: SocketAddr::new(args.host, raft_port),
        });
    }
    Ok(members)
}

/// `init --add NAME`: one more node for the fleet in `args.dir`, issued by its CA.
fn add_node(args: &InitArgs, name: &str, global: &GlobalOptions) -> anyhow::Result<()> {
    NodeName::new(name).with_context(|| format!("--add {name:?}"))?;
    let dir = &args.dir;
    let client_config_path = dir.join(ClientConfig::FILE_NAME);
    let text = std::fs::read_to_string(&client_config_path).with_context(|| {
        format!(
            "--add needs an existing fleet in {}: cannot read {}",
            dir.display(),
            client_config_path.display()
        )
    })?;
    let mut client_config: ClientConfig = toml::from_str(&text)
        .with_context(|| format!("invalid client config {}", client_config_path.display()))?;
    ensure!(
        !client_config.endpoints.contains_key(name),
        "`{name}` is already a node of the fleet in {}",
        dir.display()
    );
    let ca = FleetCa::load(dir)?;
    let mut members = Vec::new();
    for (peer, api) in &client_config.endpoints {
        let config: toml::Value = toml::from_str(&std::fs::read_to_string(
            dir.join(peer).join(NODE_CONFIG_FILE),
        )?)?;
        let address = |key: &str| -> anyhow::Result<SocketAddr> {
            config
                .get(key)
                .and_then(toml::Value::as_str)
                .with_context(|| format!("{peer}/{NODE_CONFIG_FILE} has no {key}"))?
                .parse()
                .with_context(|| format!("{peer}/{NODE_CONFIG_FILE}: {key} is not an address"))
        };
        members.push(Member {
            name: peer.clone(),
            api: api
                .parse()
                .with_context(|| format!("endpoint of {peer} is not an address"))?,
            raft: address("advertise_raft")?,
        });
    }
    let api_port = match args.base_port {
        Some(port) => port,
        None => {
            let highest = members
                .iter()
                .flat_map(|m| [m.api.port(), m.raft.port()])
                .max()
                .unwrap_or(DEFAULT_BASE_PORT);
            highest
                .checked_add(1)
                .context("no free port above the fleet's highest")?
        }
    };
    let raft_port = api_port
        .checked_add(1)
        .context("--base-port leaves no room for the Raft port")?;
    let member = Member {
        name: name.to_owned(),
        api: SocketAddr::new(args.host, api_port),
        raft: SocketAddr::new(args.host, raft_port),
    };
    members.push(Member {
        name: member.name.clone(),
        api: member.api,
        raft: member.raft,
    });
    refuse_existing_fleet(dir, std::slice::from_ref(&member)).or_else(|error| {
        // The fleet-wide files exist by design; only the new node's must not.
        let node_dir = dir.join(name);
        if node_dir.exists() {
            Err(error)
        } else {
            Ok(())
        }
    })?;
    let node_dir = dir.join(name);
    std::fs::create_dir_all(&node_dir)
        .with_context(|| format!("cannot create {}", node_dir.display()))?;
    ca.issue_node_cert(name)?.save(&node_dir)?;
    write_private_file(&node_dir.join(AGENT_TOKEN_FILE), new_token()?.as_bytes())?;
    let config = node_dir.join(NODE_CONFIG_FILE);
    write_new_file(
        &config,
        node_config_toml(ca.fleet(), &member, &members).as_bytes(),
    )?;
    client_config
        .endpoints
        .insert(name.to_owned(), member.api.to_string());
    std::fs::write(&client_config_path, client_config.to_toml())
        .with_context(|| format!("cannot write {}", client_config_path.display()))?;
    let report = NodeReport {
        name: name.to_owned(),
        api: member.api,
        raft: member.raft,
        config,
        cert: node_dir.join(IssuedNodeCert::CERT_FILE),
        key: node_dir.join(IssuedNodeCert::KEY_FILE),
        agent_token_file: node_dir.join(AGENT_TOKEN_FILE),
    };
    global.output.print(&report, |node| {
        println!(
            "Added node `{}` to {}: API {}, Raft {}",
            node.name,
            dir.display(),
            node.api,
            node.raft
        );
        println!(
            "Next: `fleetd --config {}`, then `fleetctl member add {} --api {} --raft {}`.",
            node.config.display(),
            node.name,
            node.api,
            node.raft
        );
    })
}

/// Refuses before writing anything if `dir` already holds any file `init` would write.
fn refuse_existing_fleet(dir: &Path, members: &[Member]) -> anyhow::Result<()> {
    let mut paths = vec![
        dir.join(FleetCa::CERT_FILE),
        dir.join(FleetCa::KEY_FILE),
        dir.join(OPERATOR_TOKEN_FILE),
        dir.join(ClientConfig::FILE_NAME),
    ];
    for member in members {
        let node_dir = dir.join(&member.name);
        paths.extend([
            node_dir.join(IssuedNodeCert::CERT_FILE),
            node_dir.join(IssuedNodeCert::KEY_FILE),
            node_dir.join(AGENT_TOKEN_FILE),
            node_dir.join(NODE_CONFIG_FILE),
        ]);
    }
    if let Some(existing) = paths.iter().find(|path| path.exists()) {
        bail!(
            "{} already holds a fleet ({} exists); nothing was written. Choose another --dir, or remove the old fleet first",
            dir.display(),
            existing.display()
        );
    }
    Ok(())
}

/// A fresh token: 32 random bytes as hex.
fn new_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness for a token: {e}"))?;
    Ok(hex::encode(bytes))
}

/// The `fleetd.toml` of `member`: a valid `NodeConfig` with every key commented.
fn node_config_toml(fleet: &str, member: &Member, members: &[Member]) -> String {
    let quote = |text: &str| toml::Value::String(text.to_owned()).to_string();
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = write!(
        text,
        "# fleetd configuration of node `{name}`, written by `fleetctl init`.\n\
         # Override any key from the environment: FLEET_<KEY>, `__` between levels\n\
         # (FLEET_RAFT__HEARTBEAT_MS=50). Relative paths resolve against this directory.\n\
         # On a real machine, set the addresses to the ones the other nodes can dial\n\
         # (for example its Tailscale IP) and update [peers] on every node alike.\n\n\
         # The node's name: its identity, and the name in node.pem.\n\
         name = {name_value}\n\
         # The fleet's name; ca.pem is `Fleet CA {fleet}`.\n\
         fleet = {fleet_value}\n\
         # Where RocksDB keeps the Raft log and state.\n\
         data_dir = \"data\"\n\
         # Where fleetd writes its process id.\n\
         pid_file = \"fleetd.pid\"\n\
         # Threads for the node's tasks; one keeps a write's hand-offs on one thread.\n\
         worker_threads = 1\n\
         # TCP: gRPC over TLS for fleetctl and agents, and the Raft gRPC fallback.\n\
         api_listen = {api}\n\
         # UDP: Raft over QUIC with mutual TLS.\n\
         raft_listen = {raft}\n\
         # How the other nodes reach this one.\n\
         advertise_api = {api}\n\
         advertise_raft = {raft}\n\
         # Raft transport: quic, grpc or auto (QUIC, gRPC fallback).\n\
         transport = \"auto\"\n\n\
         [tls]\n\
         # The fleet CA certificate; peers are checked against it alone.\n\
         ca_cert = \"../{ca_cert}\"\n\
         # This node's certificate and private key (mode 0600).\n\
         cert = \"{cert}\"\n\
         key = \"{key}\"\n\n\
         [auth]\n\
         # The operator's token (full control).\n\
         operator_token_file = \"../{operator_token}\"\n\
         # This machine's agent token: it acts as `{name}` and nothing else.\n\
         agent_token_file = \"{agent_token}\"\n\n\
         [raft]\n\
         # Leader heartbeat interval, ms (below election_timeout_min_ms).\n\
         heartbeat_ms = 100\n\
         # Election timeout range, ms.\n\
         election_timeout_min_ms = 200\n\
         election_timeout_max_ms = 400\n\
         # Snapshot (and purge the log) after at least this many entries, once the\n\
         # log since the last snapshot is as large as that snapshot.\n\
         snapshot_every_logs = 5000\n\
         # Entries kept before the snapshot when the log is purged.\n\
         logs_kept_after_snapshot = 1000\n\
         # Timeout of one Raft RPC, ms.\n\
         rpc_timeout_ms = 1000\n\n\
         # The initial members, for `fleetctl cluster init`.\n",
        name = member.name,
        name_value = quote(&member.name),
        fleet_value = quote(fleet),
        api = quote(&member.api.to_string()),
        raft = quote(&member.raft.to_string()),
        ca_cert = FleetCa::CERT_FILE,
        cert = IssuedNodeCert::CERT_FILE,
        key = IssuedNodeCert::KEY_FILE,
        operator_token = OPERATOR_TOKEN_FILE,
        agent_token = AGENT_TOKEN_FILE,
    );
    for peer in members {
        let _ = write!(
            text,
            "[peers.{}]\napi = {}\nraft = {}\n\n",
            peer.name,
            quote(&peer.api.to_string()),
            quote(&peer.raft.to_string()),
        );
    }
    text
}

fn print_table(report: &InitReport) {
    println!(
        "Created fleet `{}` in {}",
        report.fleet,
        report.dir.display()
    );
    println!("  CA certificate   {}", report.ca_cert.display());
    println!(
        "  CA key           {}  (keep it off the nodes)",
        report.ca_key.display()
    );
    println!(
        "  operator token   {}",
        report.operator_token_file.display()
    );
    println!("  fleetctl config  {}", report.client_config.display());
    println!();
    println!(
        "{:<8} {:<22} {:<22} CONFIG",
        "NODE", "API (TCP)", "RAFT (UDP)"
    );
    for node in &report.nodes {
        println!(
            "{:<8} {:<22} {:<22} {}",
            node.name,
            node.api.to_string(),
            node.raft.to_string(),
            node.config.display()
        );
    }
    println!();
    println!(
        "Next: copy each node's directory, ca.pem and operator.token to its machine, then run \
         `fleetd --config <node>/fleetd.toml` there."
    );
}
