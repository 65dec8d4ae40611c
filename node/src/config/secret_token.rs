//! `SecretToken`: a bearer token that is compared in constant time and never printed.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Deserializer};
use subtle::ConstantTimeEq;

use super::{ConfigError, lenient_string};

/// The placeholder the example configs ship with. A node refuses to start with it.
pub const TOKEN_PLACEHOLDER: &str = "CHANGE-ME-TO-A-SECRET";
/// The shortest token accepted, in bytes.
pub const TOKEN_LEN_MIN: usize = 16;
/// The longest token accepted, in bytes.
pub const TOKEN_LEN_MAX: usize = 1024;

/// A secret token. `Debug` shows only its length; [`SecretToken::matches`] compares
/// in constant time so a caller cannot learn it byte by byte from response times.
#[derive(Clone)]
pub struct SecretToken(String);

impl SecretToken {
    /// Wraps a token; leading and trailing whitespace (a file's newline) is dropped.
    pub fn new(token: impl AsRef<str>) -> Self {
        Self(token.as_ref().trim().to_owned())
    }

    /// Whether `presented` is this token, compared in constant time (only the length
    /// can be told apart).
    pub fn matches(&self, presented: &str) -> bool {
        self.0.as_bytes().ct_eq(presented.as_bytes()).into()
    }

    /// The token's length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the token is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether this is the documented placeholder.
    pub fn is_placeholder(&self) -> bool {
        self.matches(TOKEN_PLACEHOLDER)
    }

    /// The token itself, to send it as a bearer token. Do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Reads the bearer token for another service from `path` (one line); a missing
    /// or empty file is refused naming `key`, and `what` says whose token belongs in it.
    pub fn read_bearer_file(
        key: &'static str,
        path: &Path,
        what: &str,
    ) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::TokenFile {
            key,
            path: path.to_path_buf(),
            source,
        })?;
        let token = Self::new(text);
        if token.is_empty() {
            return Err(ConfigError::invalid(
                key,
                format!("{} is empty; put {what} in it", path.display()),
            ));
        }
        Ok(token)
    }
}

impl PartialEq for SecretToken {
    /// Constant-time too, so comparing configs cannot leak a token either.
    fn eq(&self, other: &Self) -> bool {
        self.matches(&other.0)
    }
}

impl Eq for SecretToken {}

impl fmt::Debug for SecretToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretToken(<{} bytes>)", self.0.len())
    }
}

impl<'de> Deserialize<'de> for SecretToken {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        lenient_string::deserialize(deserializer).map(Self::new)
    }
}
