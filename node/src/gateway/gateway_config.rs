//! `GatewayConfig`: the `[gateway]` table of a node's config — where this node hands
//! relayed messages to its local agent gateway.
//!
//! Optional: without `hook_url`, messages to this node's sessions wait in their inbox
//! (`fleetctl inbox`) and the sender is told so.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::agent::agent_config::{anchored, check_http_url};
use crate::config::{ConfigError, SecretToken};

const KEY_HOOK_URL: &str = "gateway.hook_url";
const KEY_TOKEN_FILE: &str = "gateway.token_file";
const KEY_TIMEOUT: &str = "gateway.timeout_ms";

/// The longest a hook call may take before the gateway counts as unreachable.
const TIMEOUT_MS_MAX: u64 = 60_000;

/// The `[gateway]` table.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// The gateway's inbound agent hook, e.g. `http://127.0.0.1:18789/hooks/agent`.
    pub hook_url: Option<String>,
    /// A file holding the hook's bearer token (one line), relative to the config
    /// file's directory.
    pub token_file: Option<PathBuf>,
    /// How long one hook call may take, in ms.
    pub timeout_ms: u64,
    /// The token read from `token_file`; never written in the config itself.
    #[serde(skip)]
    pub token: Option<SecretToken>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            hook_url: None,
            token_file: None,
            timeout_ms: 5_000,
            token: None,
        }
    }
}

impl GatewayConfig {
    /// How long one hook call may take.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// Anchors the token file to `base` (the config file's directory) and reads it;
    /// a missing or empty file is refused naming `gateway.token_file`.
    pub fn resolve_against(&mut self, base: &Path) -> Result<(), ConfigError> {
        let Some(file) = self.token_file.as_mut() else {
            return Ok(());
        };
        *file = anchored(base, file);
        let what = "the gateway hook's bearer token";
        self.token = Some(SecretToken::read_bearer_file(KEY_TOKEN_FILE, file, what)?);
        Ok(())
    }

    /// Refuses, naming the key, a hook URL that is not http(s), a token without a
    /// hook, and a timeout of 0 or over a minute.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(url) = &self.hook_url {
            check_http_url(KEY_HOOK_URL, url)?;
        } else if self.token_file.is_some() {
            return Err(ConfigError::invalid(
                KEY_TOKEN_FILE,
                "is set but gateway.hook_url is not; set the hook the token is for",
            ));
        }
        if self.timeout_ms == 0 || self.timeout_ms > TIMEOUT_MS_MAX {
            return Err(ConfigError::invalid(
                KEY_TIMEOUT,
                format!("{} ms is outside 1..={TIMEOUT_MS_MAX} ms", self.timeout_ms),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_hook_url_or_timeout_is_refused_by_its_key() {
        let config = GatewayConfig {
            hook_url: Some("ftp://gateway".into()),
            ..GatewayConfig::default()
        };
        let error = config.validate().unwrap_err().to_string();
        assert!(error.starts_with(KEY_HOOK_URL), "{error}");
        let config = GatewayConfig {
            timeout_ms: 0,
            ..GatewayConfig::default()
        };
        let error = config.validate().unwrap_err().to_string();
        assert!(error.starts_with(KEY_TIMEOUT), "{error}");
    }

    #[test]
    fn a_token_without_a_hook_is_refused() {
        let config = GatewayConfig {
            token_file: Some("hook.token".into()),
            ..GatewayConfig::default()
        };
        let error = config.validate().unwrap_err().to_string();
        assert!(error.starts_with(KEY_TOKEN_FILE), "{error}");
    }

    #[test]
    fn an_empty_token_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hook.token"), "\n").unwrap();
        let mut config = GatewayConfig {
            hook_url: Some("http://127.0.0.1:18789/hooks/agent".into()),
            token_file: Some("hook.token".into()),
            ..GatewayConfig::default()
        };
        let error = config.resolve_against(dir.path()).unwrap_err().to_string();
        assert!(error.contains(KEY_TOKEN_FILE), "{error}");
    }
}
