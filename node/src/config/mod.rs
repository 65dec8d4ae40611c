//! The node's own configuration: one typed [`NodeConfig`], read from a TOML file with
//! `FLEET_*` environment overrides (K5), and validated before the node starts.
//!
//! Fleet-wide rules (hierarchy, phase length, …) are not here: they are replicated
//! `state::FleetSettings`. This is what differs per machine: the node's name,
//! addresses, certificate files, tokens and Raft timing.
//!
//! Every refusal names the key it is about (`raft.heartbeat_ms`, `auth.operator_token`)
//! so the operator knows which line, or which `FLEET_…` variable, to fix.
//!
//! # Layout
//! - [`node_config`]: `NodeConfig`, loading (`load`, `load_with`) and `validate`.
//! - [`tls_files`], [`auth_config`], [`raft_timing`], [`health_timing`],
//!   [`peer_addresses`]: its sections.
//! - [`transport_mode`]: `quic | grpc | auto`.
//! - [`secret_token`]: a token compared in constant time and never printed.
//! - [`lenient_string`]: strings that an environment variable may spell as a number.
//! - [`error`]: the `ConfigError` type.

pub mod auth_config;
pub mod error;
pub mod health_timing;
pub mod lenient_string;
pub mod node_config;
pub mod peer_addresses;
pub mod raft_timing;
pub mod secret_token;
pub mod tls_files;
pub mod transport_mode;

pub use auth_config::AuthConfig;
pub use error::ConfigError;
pub use health_timing::HealthTiming;
pub use node_config::{ENV_PREFIX, NodeConfig};
pub use peer_addresses::PeerAddresses;
pub use raft_timing::RaftTiming;
pub use secret_token::{SecretToken, TOKEN_LEN_MAX, TOKEN_LEN_MIN, TOKEN_PLACEHOLDER};
pub use tls_files::TlsFiles;
pub use transport_mode::TransportMode;
