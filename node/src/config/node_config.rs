//! `NodeConfig`: everything one `fleetd` needs to know about itself, loaded from a
//! TOML file with `FLEET_*` environment overrides and validated before start.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Toml};
use serde::Deserialize;

use super::auth_config::AuthConfig;
use super::error::ConfigError;
use super::health_timing::HealthTiming;
use super::lenient_string;
use super::peer_addresses::{PeerAddresses, check_host_port};
use super::raft_timing::RaftTiming;
use super::tls_files::TlsFiles;
use super::transport_mode::TransportMode;
use crate::agent::AgentConfig;
use crate::gateway::GatewayConfig;
use crate::identity::{CaCert, IdentityError, NodeIdentity};
use crate::notify::{SinkConfig, resolve_all, validate_all};
use crate::state::{NodeName, RuleViolation};

/// The prefix of environment overrides: `FLEET_RAFT__HEARTBEAT_MS=50` sets
/// `raft.heartbeat_ms` (`__` separates the levels).
pub const ENV_PREFIX: &str = "FLEET_";

/// The most worker threads a node may ask for.
pub const WORKER_THREADS_MAX: usize = 64;

/// The longest spin window a node may ask for, in microseconds.
pub const SPIN_WINDOW_US_MAX: u64 = 10_000;

/// The top-level keys. Environment variables with the prefix but another first
/// level (`FLEET_CONFIG`, say, for a launcher) are left alone rather than refused.
const TOP_LEVEL_KEYS: [&str; 19] = [
    "name",
    "pid_file",
    "worker_threads",
    "spin_window_us",
    "fleet",
    "data_dir",
    "api_listen",
    "raft_listen",
    "advertise_api",
    "advertise_raft",
    "transport",
    "tls",
    "auth",
    "raft",
    "health",
    "peers",
    "agent",
    "notify",
    "gateway",
];

/// One node's configuration. See `config/beast.toml` for a documented example.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// The node's name, which is its identity: it must match the name in its
    /// certificate (`<name>.fleet`). Lowercase letters, digits and `-`.
    #[serde(deserialize_with = "lenient_string::deserialize")]
    pub name: String,
    /// The fleet's name; the fleet CA's common name is `Fleet CA <fleet>`.
    #[serde(deserialize_with = "lenient_string::deserialize")]
    pub fleet: String,
    /// Where the node keeps its RocksDB (Raft log, vote, state machine).
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// Where `fleetd` writes its process id at start, if set (so scripts and
    /// `fleetctl dev` can stop or kill it).
    #[serde(default)]
    pub pid_file: Option<PathBuf>,
    /// The threads that run the node's tasks (Raft, its transports, the client API).
    /// One by default: a write passes from task to task a dozen times, and on one
    /// thread each pass is a queue push, where across threads it wakes a sleeping
    /// one. Snapshots and multi-MiB entries are encoded on a separate blocking pool
    /// either way, and the log is written by its own thread.
    #[serde(default = "default_worker_threads")]
    pub worker_threads: usize,
    /// For how many microseconds after a lone write to its log (one entry, finding the
    /// log writer idle) the CPUs are kept awake (`runtime/spin_window.rs`): by a CPU
    /// latency request that makes idle CPUs poll where the process may make one, else
    /// by a thread at idle priority that spins. So the write's next hand-offs find a
    /// CPU awake; 0 turns it off. None while the node is idle or its writes come faster
    /// than the disk syncs them or several at a time. Unset, the host decides: 1000,
    /// or 0 where the kernel's `haltpoll` idle driver polls before halting or where no
    /// idle driver runs on an AMD CPU ([`spin_window::window_for`]).
    ///
    /// [`spin_window::window_for`]: crate::runtime::spin_window::window_for
    #[serde(default)]
    pub spin_window_us: Option<u64>,
    /// TCP address of the gRPC-over-TLS server: clients, agents, and the Raft gRPC
    /// fallback.
    #[serde(default = "default_api_listen")]
    pub api_listen: SocketAddr,
    /// UDP address of the Raft QUIC endpoint.
    #[serde(default = "default_raft_listen")]
    pub raft_listen: SocketAddr,
    /// How others reach the API (`host:port`, e.g. the Tailscale IP); defaults to
    /// `api_listen`.
    #[serde(default)]
    pub advertise_api: Option<String>,
    /// How others reach Raft over QUIC (`host:port`); defaults to `raft_listen`.
    #[serde(default)]
    pub advertise_raft: Option<String>,
    /// Which transport carries Raft: `quic`, `grpc` or `auto` (QUIC, gRPC fallback).
    #[serde(default)]
    pub transport: TransportMode,
    /// The certificate files.
    #[serde(default)]
    pub tls: TlsFiles,
    /// The operator's and the local agent's tokens.
    #[serde(default)]
    pub auth: AuthConfig,
    /// Raft timers and snapshot policy.
    #[serde(default)]
    pub raft: RaftTiming,
    /// How the leader judges the members' health, which the roles follow.
    #[serde(default)]
    pub health: HealthTiming,
    /// The initial members, by name, for `fleetctl cluster init`.
    #[serde(default)]
    pub peers: BTreeMap<String, PeerAddresses>,
    /// How this node asks its own agent for deliberation inputs, and the agent's
    /// workspace (where the notes go).
    #[serde(default)]
    pub agent: AgentConfig,
    /// Where this node delivers the operator's notifications while it is primary.
    /// Use the same sink names on every node: delivery is recorded per name.
    #[serde(default)]
    pub notify: Vec<SinkConfig>,
    /// Where this node hands messages relayed to its sessions: its agent gateway.
    #[serde(default)]
    pub gateway: GatewayConfig,
}

fn default_data_dir() -> PathBuf {
    PathBuf::from("data")
}

fn default_worker_threads() -> usize {
    1
}

fn default_api_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 7100))
}

fn default_raft_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 7101))
}

impl NodeConfig {
    /// Loads `path` with `FLEET_*` environment overrides, resolves relative paths
    /// against the file's directory, reads token files and validates. Every error
    /// names the key.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::load_with(path, Env::prefixed(ENV_PREFIX))
    }

    /// Like [`NodeConfig::load`] with another environment provider (another prefix,
    /// or a filtered one). It is split on `__` here; pass it unsplit.
    pub fn load_with(path: &Path, env: Env) -> Result<Self, ConfigError> {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        if !path.is_file() {
            return Err(ConfigError::FileMissing { path });
        }
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let env = env.split("__").filter(|key| {
            let first = key.as_str().split('.').next().unwrap_or_default();
            TOP_LEVEL_KEYS
                .iter()
                .any(|known| known.eq_ignore_ascii_case(first))
        });
        let mut config: Self = Figment::new()
            .merge(Toml::file_exact(&path))
            .merge(env)
            .extract()
            .map_err(ConfigError::from_figment)?;
        config.resolve_against(&base)?;
        config.validate()?;
        Ok(config)
    }

    /// Makes relative paths (from the file or the environment) relative to `base`,
    /// and reads token files.
    fn resolve_against(&mut self, base: &Path) -> Result<(), ConfigError> {
        self.data_dir = base.join(&self.data_dir);
        self.pid_file = self.pid_file.as_ref().map(|file| base.join(file));
        self.tls.resolve_against(base);
        self.agent.resolve_against(base)?;
        resolve_all(&mut self.notify, base)?;
        self.gateway.resolve_against(base)?;
        self.auth.read_token_files(base)
    }

    /// Checks every rule that needs no file or network; each error names its key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_name("name", &self.name)?;
        check_name("fleet", &self.fleet)?;
        if self.data_dir.as_os_str().is_empty() {
            return Err(ConfigError::invalid("data_dir", "must not be empty"));
        }
        if !(1..=WORKER_THREADS_MAX).contains(&self.worker_threads) {
            return Err(ConfigError::invalid(
                "worker_threads",
                format!(
                    "{} is outside 1..={WORKER_THREADS_MAX}",
                    self.worker_threads
                ),
            ));
        }
        if let Some(window) = self.spin_window_us
            && window > SPIN_WINDOW_US_MAX
        {
            return Err(ConfigError::invalid(
                "spin_window_us",
                format!("{window} is outside 0..={SPIN_WINDOW_US_MAX}"),
            ));
        }
        check_advertise(
            "advertise_api",
            self.advertise_api.as_deref(),
            "api_listen",
            self.api_listen,
        )?;
        check_advertise(
            "advertise_raft",
            self.advertise_raft.as_deref(),
            "raft_listen",
            self.raft_listen,
        )?;
        for (key, path) in [
            ("tls.ca_cert", &self.tls.ca_cert),
            ("tls.cert", &self.tls.cert),
            ("tls.key", &self.tls.key),
        ] {
            if path.as_os_str().is_empty() {
                return Err(ConfigError::invalid(key, "must not be empty"));
            }
        }
        self.auth.validate()?;
        self.raft.validate()?;
        self.health.validate(self.raft.heartbeat_ms)?;
        self.agent.validate()?;
        validate_all(&self.notify)?;
        self.gateway.validate()?;
        for (peer, addresses) in &self.peers {
            check_name(&format!("peers.{peer}"), peer)?;
            check_host_port(&format!("peers.{peer}.api"), &addresses.api)?;
            check_host_port(&format!("peers.{peer}.raft"), &addresses.raft)?;
        }
        Ok(())
    }

    /// The API address others dial: `advertise_api`, else `api_listen`.
    pub fn advertised_api(&self) -> String {
        self.advertise_api
            .clone()
            .unwrap_or_else(|| self.api_listen.to_string())
    }

    /// The Raft address others dial: `advertise_raft`, else `raft_listen`.
    pub fn advertised_raft(&self) -> String {
        self.advertise_raft
            .clone()
            .unwrap_or_else(|| self.raft_listen.to_string())
    }

    /// Loads the fleet CA certificate and refuses one of another fleet.
    pub fn load_ca_cert(&self) -> Result<CaCert, IdentityError> {
        let ca = CaCert::load(&self.tls.ca_cert)?;
        match ca.fleet() {
            Some(fleet) if fleet == self.fleet => Ok(ca),
            Some(fleet) => Err(IdentityError::FleetMismatch {
                expected: self.fleet.clone(),
                found: fleet,
            }),
            None => Err(IdentityError::NotAFleetCa {
                what: self.tls.ca_cert.display().to_string(),
            }),
        }
    }

    /// Loads this node's certificate and key and refuses them unless they were
    /// issued for `name`.
    pub fn load_identity(&self) -> Result<NodeIdentity, IdentityError> {
        let identity = NodeIdentity::load(&self.tls.cert, &self.tls.key)?;
        identity.ensure_name(&self.name)?;
        Ok(identity)
    }
}

/// Node and fleet names follow the same rules (`state::NodeName`).
fn check_name(key: &str, value: &str) -> Result<(), ConfigError> {
    match NodeName::new(value) {
        Ok(_) => Ok(()),
        Err(RuleViolation::InvalidField { reason, .. }) => Err(ConfigError::invalid(key, reason)),
        Err(other) => Err(ConfigError::invalid(key, other.to_string())),
    }
}

/// An advertised address must be `host:port`; without one, the listen address must
/// be dialable, which a wildcard (`0.0.0.0`, `::`) is not.
fn check_advertise(
    key: &str,
    advertised: Option<&str>,
    listen_key: &str,
    listen: SocketAddr,
) -> Result<(), ConfigError> {
    match advertised {
        Some(address) => check_host_port(key, address),
        None if listen.ip().is_unspecified() => Err(ConfigError::invalid(
            key,
            format!(
                "must be set because {listen_key} ({listen}) listens on every interface; peers need an address they can dial"
            ),
        )),
        None => Ok(()),
    }
}
