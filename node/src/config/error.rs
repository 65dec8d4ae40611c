//! `ConfigError`: why a node's configuration was refused, always naming the key.

use std::path::PathBuf;

use figment::error::Kind;

/// Why the configuration cannot be used. Every variant names the key (as written in
/// the TOML file, dotted: `raft.heartbeat_ms`) so the operator knows what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file does not exist.
    #[error("config file {path} does not exist")]
    FileMissing { path: PathBuf },

    /// A value could not be read: wrong type, unknown key, missing key, bad syntax.
    #[error("{key}: {reason}{}", origin_suffix(.origin))]
    Value {
        key: String,
        reason: String,
        /// Where the value came from: the file, or the environment variable.
        origin: Option<String>,
    },

    /// A value was read but breaks a rule.
    #[error("{key}: {reason}")]
    Invalid { key: String, reason: String },

    /// A value must be below another one.
    #[error("{key} ({value}) must be below {bound_key} ({bound})")]
    NotBelow {
        key: &'static str,
        value: u64,
        bound_key: &'static str,
        bound: u64,
    },

    /// A token is still the documented placeholder.
    #[error(
        "{key} is the documented placeholder `{placeholder}`; set a secret of at least {min} characters (for example `openssl rand -hex 32`)"
    )]
    PlaceholderToken {
        key: String,
        placeholder: &'static str,
        min: usize,
    },

    /// A token is too short or too long.
    #[error("{key} is {len} characters long; a token needs {min} to {max}")]
    TokenLength {
        key: String,
        len: usize,
        min: usize,
        max: usize,
    },

    /// A required token is set neither inline nor by file.
    #[error("{key} is not set; set it or {file_key}")]
    TokenMissing {
        key: &'static str,
        file_key: &'static str,
    },

    /// A token is set both inline and by file, so which one counts would be a guess.
    #[error("{key} and {file_key} are both set; keep one")]
    TokenConflict {
        key: &'static str,
        file_key: &'static str,
    },

    /// A token file could not be read.
    #[error("{key}: cannot read {path}: {source}")]
    TokenFile {
        key: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ConfigError {
    /// The dotted key this error is about.
    pub fn key(&self) -> String {
        match self {
            Self::FileMissing { .. } => String::new(),
            Self::Value { key, .. }
            | Self::Invalid { key, .. }
            | Self::PlaceholderToken { key, .. }
            | Self::TokenLength { key, .. } => key.clone(),
            Self::NotBelow { key, .. }
            | Self::TokenMissing { key, .. }
            | Self::TokenConflict { key, .. }
            | Self::TokenFile { key, .. } => (*key).to_owned(),
        }
    }

    /// Shorthand for [`ConfigError::Invalid`].
    pub fn invalid(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid {
            key: key.into(),
            reason: reason.into(),
        }
    }

    /// The first error figment reported, with its key spelled as in the file and
    /// its origin (the file, or the exact environment variable).
    pub(crate) fn from_figment(error: figment::Error) -> Self {
        let mut key: Vec<String> = error.path.clone();
        // For these kinds figment's path may end at the enclosing table, with the
        // field itself only in the kind; it is added unless the path already has it.
        let field = match &error.kind {
            Kind::MissingField(field) => Some(field.to_string()),
            Kind::UnknownField(field, _) => Some(field.clone()),
            _ => None,
        };
        if let Some(field) = field
            && key.last() != Some(&field)
        {
            key.push(field);
        }
        let origin = error.metadata.as_ref().map(|metadata| {
            match (&metadata.source, env_prefix(&metadata.name)) {
                (Some(source), _) => format!("{source}"),
                (None, Some(prefix)) => format!(
                    "environment variable {prefix}{}",
                    key.join("__").to_ascii_uppercase()
                ),
                (None, None) => metadata.name.to_string(),
            }
        });
        let key = if key.is_empty() {
            "(file)".to_owned()
        } else {
            key.join(".")
        };
        Self::Value {
            key,
            reason: error.kind.to_string(),
            origin,
        }
    }
}

/// The prefix of an environment provider, from figment's metadata name
/// "`FLEET_` environment variable(s)".
fn env_prefix(metadata_name: &str) -> Option<&str> {
    let rest = metadata_name.strip_prefix('`')?;
    let (prefix, tail) = rest.split_once('`')?;
    tail.contains("environment").then_some(prefix)
}

fn origin_suffix(origin: &Option<String>) -> String {
    origin
        .as_ref()
        .map(|origin| format!(" (from {origin})"))
        .unwrap_or_default()
}
