//! `ClientConfig`: `fleetctl.toml`, what an operator's `fleetctl` needs to reach the
//! fleet — the CA to trust, the operator token, and each node's API address.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// The client configuration. Relative paths resolve against the file's directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    /// The fleet's name.
    pub fleet: String,
    /// The fleet CA certificate, the only one nodes are checked against.
    pub ca_cert: PathBuf,
    /// A file holding the token every call presents: the operator token, or on an
    /// agent's machine the node's agent token (then the key may be written
    /// `token_file`, and every call acts as that node only).
    #[serde(alias = "token_file")]
    pub operator_token_file: PathBuf,
    /// Each node's API address (`host:port`), by node name.
    pub endpoints: BTreeMap<String, String>,
}

impl ClientConfig {
    /// The file name `fleetctl init` writes.
    pub const FILE_NAME: &str = "fleetctl.toml";

    /// Reads `path` and resolves its relative paths against the file's directory.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the client config {}", path.display()))?;
        let mut config: Self = toml::from_str(&text)
            .with_context(|| format!("invalid client config {}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        config.ca_cert = base.join(&config.ca_cert);
        config.operator_token_file = base.join(&config.operator_token_file);
        Ok(config)
    }

    /// The token, read from `operator_token_file`.
    pub fn operator_token(&self) -> anyhow::Result<String> {
        let token = std::fs::read_to_string(&self.operator_token_file).with_context(|| {
            format!(
                "cannot read the token file {}",
                self.operator_token_file.display()
            )
        })?;
        Ok(token.trim().to_owned())
    }

    /// The file's text, with a comment on every key.
    pub fn to_toml(&self) -> String {
        let quote = |text: &str| toml::Value::String(text.to_owned()).to_string();
        let path = |path: &Path| quote(&path.to_string_lossy());
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = writeln!(
            text,
            "# fleetctl's configuration for fleet `{}`; select it with --config or FLEETCTL_CONFIG.\n\
             # Relative paths resolve against this file's directory.\n\n\
             # The fleet's name.\nfleet = {}\n\n\
             # The fleet CA certificate: nodes are trusted only if they present a certificate it issued.\n\
             ca_cert = {}\n\n\
             # The operator token (keep the file mode 0600).\n\
             operator_token_file = {}\n\n\
             # Each node's API address (gRPC over TLS), by node name.\n[endpoints]",
            self.fleet,
            quote(&self.fleet),
            path(&self.ca_cert),
            path(&self.operator_token_file),
        );
        for (node, address) in &self.endpoints {
            let _ = writeln!(text, "{node} = {}", quote(address));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agents_config_names_its_token_file_plainly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(ClientConfig::FILE_NAME);
        std::fs::write(dir.path().join("agent.token"), "mac-agent-token\n").unwrap();
        std::fs::write(
            &path,
            "fleet = \"home\"\nca_cert = \"ca.pem\"\ntoken_file = \"agent.token\"\n\
             [endpoints]\nmac = \"127.0.0.1:7100\"\n",
        )
        .unwrap();
        let config = ClientConfig::load(&path).unwrap();
        assert_eq!(config.operator_token().unwrap(), "mac-agent-token");
    }
}
