//! `fleetctl`: the command line of a Fleet, for people and agents.
//!
//! Global options come first (`--config`, `--node`, `-o`); each subcommand lives in
//! its own module and receives them.
//!
//! # Layout
//! - this file: the argument parser and the dispatch.
//! - `output.rs`: `OutputFormat` (`-o table|json`).
//! - `client_config.rs`: `ClientConfig`, the `fleetctl.toml` a fleet's operator uses.
//! - `connection.rs`: `Connection`, TLS and the operator token to the nodes' API.
//! - `init.rs`: `fleetctl init`, which creates a fleet's CA, certificates, tokens and configs.
//! - `status.rs`: `fleetctl status`, one table (or JSON) of every member.
//! - `membership.rs`: `fleetctl cluster init`, `fleetctl member add|remove`.
//! - `dev.rs`: `fleetctl dev`, a local three-node fleet in one command.
//! - `roles.rs`: `fleetctl roles watch`, role changes as they are committed.
//! - `node_watch.rs`: `NodeWatch`, one query read again as each command is applied.
//! - `drill.rs`: `fleetctl drill failover`, the failover drill and its report.
//! - `demo.rs`: `fleetctl demo`, a local fleet that deliberates, notifies and fails over.
//! - `scripted_agent.rs`: `fleetctl scripted-agent`, a stand-in agent for the
//!   `command` adapter.
//! - `deliberate.rs`: `fleetctl deliberate`, which opens a deliberation and follows it
//!   live until it is decided.
//! - `position.rs`: `fleetctl position` (a node's input) and `fleetctl override` (the
//!   operator's decision).
//! - `deliberations.rs`: `DeliberationReport`, the one shape every deliberation command
//!   prints; `fleetctl deliberations [show]` and `fleetctl notes`.
//! - `route_report.rs`: `RouteReport`, a route as printed in JSON (stable words).
//! - `send.rs`: `fleetctl send` (a message to a session on any machine, with its
//!   delivery report) and `fleetctl inbox`.
//! - `sessions.rs`: `fleetctl sessions [publish]`, the agents' sessions of every node.
//! - `events.rs`: `fleetctl events append|list|wait|ack`, the coordination event log.
//! - `artifacts.rs`: `fleetctl artifacts put|get`, content stored and verified by sha256.
//! - `bulletin.rs`: `fleetctl bulletin [post|ack|archive]`, the bulletin board.
//! - `capabilities.rs`: `fleetctl capabilities [publish]` and `fleetctl route`, who can
//!   do what and who should answer a question.
//! - `mcp.rs`: `fleetctl mcp`, the fleet's verbs as MCP tools over stdio for an agent
//!   gateway; `mcp_arguments.rs`: the tools' arguments and their JSON schemas.

mod artifacts;
mod bulletin;
mod capabilities;
mod client_config;
mod connection;
mod deliberate;
mod deliberations;
mod demo;
mod dev;
mod drill;
mod events;
mod init;
mod mcp;
mod mcp_arguments;
mod membership;
mod node_watch;
mod output;
mod position;
mod roles;
mod route_report;
mod scripted_agent;
mod send;
mod sessions;
mod status;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use client_config::ClientConfig;
use connection::Connection;
use output::OutputFormat;

/// Run and manage a Fleet of agent gateways.
#[derive(Debug, Parser)]
#[command(name = "fleetctl", version, about)]
struct Cli {
    #[command(flatten)]
    global: GlobalOptions,
    #[command(subcommand)]
    command: Command,
}

/// Options every subcommand accepts.
#[derive(Debug, Args)]
pub struct GlobalOptions {
    /// The client config (`fleetctl.toml`, as written by `fleetctl init`).
    #[arg(long, global = true, env = "FLEETCTL_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The node to talk through, acting as that node (default: any reachable one,
    /// acting as the operator).
    #[arg(long, global = true, value_name = "NAME")]
    pub node: Option<String>,
    /// How to print results.
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a new fleet: CA, node certificates, tokens and every config file.
    Init(init::InitArgs),
    /// Start a local fleet (one fleetd per node on loopback) and keep it running until Ctrl-C.
    Dev(DevArgs),
    /// Each member's Raft state, the leader, the roles; exits 1 without a quorum.
    Status,
    /// Bootstrap the fleet.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Add or remove a member.
    #[command(subcommand)]
    Member(MemberCommand),
    /// The primary and note-taker roles.
    #[command(subcommand)]
    Roles(RolesCommand),
    /// Open a deliberation and follow it live until it is decided.
    Deliberate(deliberate::DeliberateArgs),
    /// Give a node's position to a deliberation (as that node: `--node NAME`).
    Position(position::PositionArgs),
    /// End a deliberation at once with the operator's decision.
    Override(position::OverrideArgs),
    /// List deliberations, or show one in full.
    Deliberations(deliberations::DeliberationsArgs),
    /// Print the notes of a decided deliberation.
    Notes(deliberations::NotesArgs),
    /// Failover drills (R4).
    #[command(subcommand)]
    Drill(DrillCommand),
    /// A fresh local fleet whose agents deliberate, notify a local webhook and survive
    /// a failover drill; exits 0 when all of it worked.
    Demo(DemoArgs),
    /// Relay a message to an agent session on any machine; reports delivered, queued
    /// or failed.
    Send(send::SendArgs),
    /// Messages held for a node's sessions while its gateway is unreachable.
    Inbox(send::InboxArgs),
    /// The agents' sessions every node publishes, or publish one (`--node NAME`).
    Sessions(sessions::SessionsArgs),
    /// The coordination event log: append, list, wait for and acknowledge events.
    Events(events::EventsArgs),
    /// Content-addressed artifacts, verified by their sha256 on every read.
    Artifacts(artifacts::ArtifactsArgs),
    /// The bulletin board: items, acknowledgements, stale flags, archive.
    Bulletin(bulletin::BulletinArgs),
    /// Each node's CAPABILITIES.md, or publish this node's (`--node NAME`).
    Capabilities(capabilities::CapabilitiesArgs),
    /// Which node should answer a question, and whether it needs a deliberation.
    Route(capabilities::RouteArgs),
    /// Serve the fleet's verbs as MCP tools over stdio (JSON-RPC on stdin/stdout, logs
    /// on stderr), acting as the node of `--config`/`--node`; for an agent gateway.
    Mcp,
    /// A stand-in agent for the `command` adapter: answers every input request on
    /// stdin with the same stance.
    #[command(hide = true)]
    ScriptedAgent(scripted_agent::ScriptedAgentArgs),
}

#[derive(Debug, Subcommand)]
enum DrillCommand {
    /// Cuts a node (`--node NAME`; default: the primary) off from Raft traffic for a
    /// while, as if it had crashed, and reports how the roles failed over and back.
    Failover {
        /// How long the node stays cut off, in seconds (1..=600).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=600))]
        down_secs: u64,
    },
}

#[derive(Debug, Args)]
struct DemoArgs {
    /// Where the demo fleet lives (default: a fresh directory under the temp dir).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The first node's API port (each node uses two).
    #[arg(long, default_value_t = 7300)]
    base_port: u16,
}

#[derive(Debug, Subcommand)]
enum RolesCommand {
    /// Print the roles, then every change as it is committed, until Ctrl-C.
    Watch,
}

#[derive(Debug, Args)]
struct DevArgs {
    /// Where the fleet lives (created with `fleetctl init` when it holds none).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The nodes, in hierarchy order.
    #[arg(long, value_delimiter = ',', default_value = "beast,5070,mac")]
    nodes: Vec<String>,
    /// The first node's API port (each node uses two).
    #[arg(long, default_value_t = 7100)]
    base_port: u16,
    /// Raft transport of every node: quic, grpc or auto (default: as configured).
    #[arg(long)]
    transport: Option<String>,
}

#[derive(Debug, Subcommand)]
enum ClusterCommand {
    /// Bootstrap a new fleet from the `[peers]` of the node's config (once per fleet).
    Init {
        /// Fleet settings (a `config/fleet.toml`); default: the seeds' defaults.
        #[arg(long, value_name = "PATH")]
        settings: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum MemberCommand {
    /// Add a node: it joins as a learner and becomes a voter once caught up.
    Add {
        /// The node's name (its certificate must be issued for it).
        name: String,
        /// Its API address (`host:port`, TCP).
        #[arg(long)]
        api: String,
        /// Its Raft address (`host:port`, UDP).
        #[arg(long)]
        raft: String,
    },
    /// Remove a node from the voters and from the fleet's chains.
    Remove {
        /// The node's name.
        name: String,
    },
}

/// The connection the global options describe.
fn connect(global: &GlobalOptions) -> Result<Connection> {
    let path = global
        .config
        .clone()
        .context("no client config: pass --config DIR/fleetctl.toml or set FLEETCTL_CONFIG")?;
    connection_from(&path, global.node.clone())
}

fn connection_from(path: &Path, via: Option<String>) -> Result<Connection> {
    let config = ClientConfig::load(path)?;
    let ca_pem = std::fs::read_to_string(&config.ca_cert)
        .with_context(|| format!("cannot read the fleet CA {}", config.ca_cert.display()))?;
    let token = config.operator_token()?;
    Connection::new(config.endpoints.into_iter().collect(), ca_pem, token, via)
}

async fn run(cli: Cli) -> Result<ExitCode> {
    let json = cli.global.output == OutputFormat::Json;
    match cli.command {
        Command::Init(args) => init::run(&args, &cli.global)?,
        Command::Dev(args) => {
            let options = dev::DevOptions {
                dir: args.dir,
                nodes: args.nodes,
                base_port: args.base_port,
                transport: args.transport,
            };
            let mut fleet = dev::start(&options, |path| connection_from(path, None)).await?;
            let config = options.dir.join(ClientConfig::FILE_NAME);
            println!(
                "fleet running in {}; stop it with Ctrl-C",
                options.dir.display()
            );
            println!("  fleetctl --config {} status", config.display());
            for node in &options.nodes {
                println!("  {node}: {}/{node}/fleetd.log", options.dir.display());
            }
            tokio::signal::ctrl_c().await?;
            fleet.stop();
        }
        Command::Status => {
            let quorum = status::run(&connect(&cli.global)?, json).await?;
            if !quorum {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Cluster(ClusterCommand::Init { settings }) => {
            let reply = membership::init(&connect(&cli.global)?, settings.as_deref()).await?;
            membership::print(&reply, json)?;
        }
        Command::Member(MemberCommand::Add { name, api, raft }) => {
            let reply = membership::add(&connect(&cli.global)?, &name, &api, &raft).await?;
            membership::print(&reply, json)?;
        }
        Command::Roles(RolesCommand::Watch) => {
            let connection = connect(&cli.global)?;
            tokio::select! {
                watched = roles::watch(&connection, json) => watched?,
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Command::Drill(DrillCommand::Failover { down_secs }) => {
            // `--node` names the drill's target; the drill talks to every node.
            let path = cli.global.config.clone().context(
                "no client config: pass --config DIR/fleetctl.toml or set FLEETCTL_CONFIG",
            )?;
            let connection = connection_from(&path, None)?;
            let options = drill::DrillOptions {
                target: cli.global.node.clone(),
                down: std::time::Duration::from_secs(down_secs),
            };
            let outcome = drill::failover(&connection, &options).await?;
            drill::print(&outcome, cli.global.output)?;
            if !outcome.report.ok {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Demo(args) => {
            let options = demo::DemoOptions {
                dir: args.dir,
                base_port: args.base_port,
            };
            let progress = |line: &str| {
                if !json {
                    println!("{line}");
                }
            };
            let report = demo::run(&options, |path| connection_from(path, None), progress).await?;
            cli.global.output.print(&report, demo::print_table)?;
            if !report.ok {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::ScriptedAgent(args) => scripted_agent::run(&args)?,
        Command::Member(MemberCommand::Remove { name }) => {
            let reply = membership::remove(&connect(&cli.global)?, &name).await?;
            membership::print(&reply, json)?;
        }
        Command::Deliberate(args) => {
            deliberate::run(&connect(&cli.global)?, &args, cli.global.output).await?;
        }
        Command::Position(args) => {
            position::submit(&connect(&cli.global)?, &args, cli.global.output).await?;
        }
        Command::Override(args) => {
            position::override_decision(&connect(&cli.global)?, &args, cli.global.output).await?;
        }
        Command::Deliberations(args) => {
            deliberations::run(&connect(&cli.global)?, &args, cli.global.output).await?;
        }
        Command::Notes(args) => {
            deliberations::notes(&connect(&cli.global)?, &args, cli.global.output).await?;
        }
        Command::Send(args) => {
            if !send::run(&connect(&cli.global)?, &args, cli.global.output).await? {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Inbox(args) => {
            send::run_inbox(&connect(&cli.global)?, &args, cli.global.output).await?;
        }
        Command::Sessions(args) => {
            sessions::run(&connect(&cli.global)?, &args, cli.global.output).await?;
        }
        Command::Events(args) => {
            return events::run(&connect(&cli.global)?, &args, cli.global.output).await;
        }
        Command::Artifacts(args) => {
            artifacts::run(&connect(&cli.global)?, &args, cli.global.output).await?;
        }
        Command::Bulletin(args) => {
            bulletin::run(&connect(&cli.global)?, &args, cli.global.output).await?;
        }
        Command::Capabilities(args) => {
            capabilities::run(&connect(&cli.global)?, &args, cli.global.output).await?;
        }
        Command::Route(args) => {
            capabilities::run_route(&connect(&cli.global)?, &args, cli.global.output).await?;
        }
        Command::Mcp => mcp::run(connect(&cli.global)?).await?,
    }
    Ok(ExitCode::SUCCESS)
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("fleetctl: {error:#}");
            ExitCode::FAILURE
        }
    }
}
