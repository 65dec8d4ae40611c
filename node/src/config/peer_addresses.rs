//! `PeerAddresses`: where one initial member of the fleet is reached.

use serde::Deserialize;

use super::error::ConfigError;

/// One `[peers.<name>]` entry: a member `fleetctl cluster init` starts the fleet with.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerAddresses {
    /// The peer's client API (and Raft gRPC fallback), `host:port` on TCP.
    pub api: String,
    /// The peer's Raft QUIC endpoint, `host:port` on UDP.
    pub raft: String,
}

/// Checks that `value` is `host:port` with a non-empty host and a port from 1 to
/// 65535; `key` names the field in the error. Hosts are not resolved here: a name
/// may only resolve once the tailnet is up.
pub(crate) fn check_host_port(key: &str, value: &str) -> Result<(), ConfigError> {
    let invalid = |reason: &str| ConfigError::invalid(key, format!("{value:?} {reason}"));
    let (host, port) = value
        .rsplit_once(':')
        .ok_or_else(|| invalid("is not host:port"))?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() || host.chars().any(char::is_whitespace) {
        return Err(invalid("has no valid host before the port"));
    }
    match port.parse::<u16>() {
        Ok(port) if port > 0 => Ok(()),
        _ => Err(invalid("needs a port from 1 to 65535 after the last `:`")),
    }
}
