//! `TlsFiles`: where a node's certificate, key and the fleet CA are.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The `[tls]` section. Relative paths resolve against the config file's directory.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsFiles {
    /// The fleet CA certificate (`ca.pem`); the only certificate peers are checked
    /// against.
    pub ca_cert: PathBuf,
    /// This node's certificate (`node.pem`), issued by `fleetctl init` for its name.
    pub cert: PathBuf,
    /// This node's private key (`node.key`); keep it mode 0600.
    pub key: PathBuf,
}

impl Default for TlsFiles {
    fn default() -> Self {
        Self {
            ca_cert: PathBuf::from("ca.pem"),
            cert: PathBuf::from("node.pem"),
            key: PathBuf::from("node.key"),
        }
    }
}

impl TlsFiles {
    /// Makes every relative path relative to `base` (the config file's directory).
    pub(crate) fn resolve_against(&mut self, base: &Path) {
        for path in [&mut self.ca_cert, &mut self.cert, &mut self.key] {
            *path = base.join(&*path);
        }
    }
}
