//! `SinkConfig`: one notification sink of this node, read from `[[notify]]` in the
//! node's TOML file.
//!
//! The file keeps every kind's keys flat (`url`, `topic`, `token_file`, `command`), as
//! an operator writes them; [`SinkConfig`] turns them into one [`SinkKind`] variant
//! per kind. A key that the kind does not use is remembered rather than dropped, so
//! [`validate_all`] can refuse it by name instead of silently ignoring a typo in the
//! kind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::{ConfigError, SecretToken};

/// The attempt timeout when `timeout_ms` is not set.
pub const SINK_TIMEOUT_MS_DEFAULT: u64 = 10_000;
/// The shortest attempt timeout accepted: below it even a local receiver may not answer.
pub const SINK_TIMEOUT_MS_MIN: u64 = 100;
/// The longest attempt timeout accepted: a delivery loop must not stall for longer.
pub const SINK_TIMEOUT_MS_MAX: u64 = 120_000;
/// The longest sink name accepted.
pub const SINK_NAME_LEN_MAX: usize = 64;
/// The longest ntfy topic accepted (ntfy's own limit).
pub const NTFY_TOPIC_LEN_MAX: usize = 64;

/// One configured sink: where this node delivers operator notifications.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "SinkConfigFile")]
pub struct SinkConfig {
    /// Unique on this node. Delivery state is replicated per sink name, so the same
    /// sink must carry the same name on every node, or a new primary delivers again.
    pub name: String,
    /// Where and how to deliver.
    pub kind: SinkKind,
    /// How long one attempt may take, in milliseconds, connection included.
    pub timeout_ms: u64,
    /// Keys set in the file that this kind does not use; [`validate_all`] refuses them.
    unused_keys: Vec<&'static str>,
}

/// What a sink is, with the settings its kind needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SinkKind {
    /// An ntfy server: `POST {url}/{topic}`.
    Ntfy {
        /// The server's base URL, like `https://ntfy.sh`.
        url: String,
        /// The topic to publish to.
        topic: String,
        /// The file holding an access token, if the topic is protected.
        token_file: Option<PathBuf>,
        /// The token read from `token_file` by [`SinkConfig::resolve_against`].
        token: Option<SecretToken>,
    },
    /// A Discord channel webhook (the full webhook URL).
    Discord {
        /// The webhook URL; it contains Discord's secret, so it is never logged.
        url: String,
    },
    /// A Slack incoming webhook (the full webhook URL).
    Slack {
        /// The webhook URL; it contains Slack's secret, so it is never logged.
        url: String,
    },
    /// Any HTTP endpoint that accepts the generic JSON notification.
    Webhook {
        /// The endpoint's URL.
        url: String,
        /// The file holding a bearer token, if the endpoint wants one.
        token_file: Option<PathBuf>,
        /// The token read from `token_file` by [`SinkConfig::resolve_against`].
        token: Option<SecretToken>,
    },
    /// A local program, run without a shell, given the generic JSON on stdin.
    Command {
        /// The program: a path, or a bare name looked up on `PATH`.
        program: PathBuf,
        /// Its arguments.
        args: Vec<String>,
    },
}

impl SinkKind {
    /// The kind's name as written in the config file.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Ntfy { .. } => "ntfy",
            Self::Discord { .. } => "discord",
            Self::Slack { .. } => "slack",
            Self::Webhook { .. } => "webhook",
            Self::Command { .. } => "command",
        }
    }

    /// The URL of an HTTP sink; `None` for a command.
    pub fn url(&self) -> Option<&str> {
        match self {
            Self::Ntfy { url, .. }
            | Self::Discord { url }
            | Self::Slack { url }
            | Self::Webhook { url, .. } => Some(url),
            Self::Command { .. } => None,
        }
    }
}

impl SinkConfig {
    /// A sink with the default timeout, as if read from a file with only `name`,
    /// `kind` and its keys set.
    pub fn new(name: impl Into<String>, kind: SinkKind) -> Self {
        Self {
            name: name.into(),
            kind,
            timeout_ms: SINK_TIMEOUT_MS_DEFAULT,
            unused_keys: Vec::new(),
        }
    }

    /// Sets the attempt timeout.
    pub fn with_timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.timeout_ms = timeout_ms;
        self
    }

    /// Resolves relative paths against `base` (the config file's directory) and reads
    /// the token file. A command program is resolved only when it contains a `/`, so
    /// a bare name is still looked up on `PATH`. A token file that cannot be read or
    /// holds only whitespace is refused; the error names the key by the sink's name,
    /// `notify.phone.token_file`. Use [`resolve_all`] for keys like
    /// `notify[0].token_file`, as [`validate_all`] names them.
    pub fn resolve_against(&mut self, base: &Path) -> Result<(), ConfigError> {
        let prefix = format!("notify.{}", self.name);
        self.resolve_with_prefix(&prefix, base)
    }

    fn resolve_with_prefix(&mut self, key_prefix: &str, base: &Path) -> Result<(), ConfigError> {
        match &mut self.kind {
            SinkKind::Ntfy {
                token_file, token, ..
            }
            | SinkKind::Webhook {
                token_file, token, ..
            } => {
                if let Some(path) = token_file {
                    *path = base.join(&*path);
                    *token = Some(read_token(&format!("{key_prefix}.token_file"), path)?);
                }
            }
            SinkKind::Command { program, .. } => {
                // A bare name is meant for `PATH`; only a path with a directory part is
                // relative to the config file, as a shell would treat it from there.
                if program.is_relative() && program.to_string_lossy().contains('/') {
                    *program = base.join(&*program);
                }
            }
            SinkKind::Discord { .. } | SinkKind::Slack { .. } => {}
        }
        Ok(())
    }
}

/// [`SinkConfig::resolve_against`] for every sink, with errors naming
/// `notify[i].token_file`.
pub fn resolve_all(sinks: &mut [SinkConfig], base: &Path) -> Result<(), ConfigError> {
    for (index, sink) in sinks.iter_mut().enumerate() {
        sink.resolve_with_prefix(&format!("notify[{index}]"), base)?;
    }
    Ok(())
}

fn read_token(key: &str, path: &Path) -> Result<SecretToken, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        ConfigError::invalid(
            key,
            format!(
                "cannot read {}: {error}; the file must hold the token on one line",
                path.display()
            ),
        )
    })?;
    let token = SecretToken::new(text);
    if token.is_empty() {
        return Err(ConfigError::invalid(
            key,
            format!(
                "{} is empty; write the token into it or remove token_file",
                path.display()
            ),
        ));
    }
    Ok(token)
}

/// Refuses sinks that cannot work, naming the key (`notify[1].url`) and what is
/// allowed: bad or duplicate names, URLs that are not `http://` or `https://`, a
/// missing or malformed ntfy topic, keys the kind does not use, an empty command,
/// and timeouts outside `100..=120000` ms.
pub fn validate_all(sinks: &[SinkConfig]) -> Result<(), ConfigError> {
    let mut first_index_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, sink) in sinks.iter().enumerate() {
        let key = |field: &str| format!("notify[{index}].{field}");
        check_name(&key("name"), &sink.name)?;
        if let Some(first) = first_index_of.insert(sink.name.as_str(), index) {
            return Err(ConfigError::invalid(
                key("name"),
                format!(
                    "`{}` is also the name of notify[{first}]; each sink needs its own name",
                    sink.name
                ),
            ));
        }
        if let Some(unused) = sink.unused_keys.first() {
            return Err(ConfigError::invalid(
                key(unused),
                format!(
                    "kind {} does not use {unused}; {}",
                    sink.kind.name(),
                    keys_of_kind(sink.kind.name())
                ),
            ));
        }
        if let Some(url) = sink.kind.url() {
            check_url(&key("url"), url)?;
        }
        match &sink.kind {
            SinkKind::Ntfy { topic, .. } => check_topic(&key("topic"), topic)?,
            SinkKind::Command { program, .. } if program.as_os_str().is_empty() => {
                return Err(ConfigError::invalid(
                    key("command"),
                    "is empty; give the program and its arguments, like [\"/usr/local/bin/notify-me\", \"--flag\"]",
                ));
            }
            _ => {}
        }
        if !(SINK_TIMEOUT_MS_MIN..=SINK_TIMEOUT_MS_MAX).contains(&sink.timeout_ms) {
            return Err(ConfigError::invalid(
                key("timeout_ms"),
                format!(
                    "{} is outside {SINK_TIMEOUT_MS_MIN}..={SINK_TIMEOUT_MS_MAX} (milliseconds per attempt)",
                    sink.timeout_ms
                ),
            ));
        }
    }
    Ok(())
}

fn check_name(key: &str, name: &str) -> Result<(), ConfigError> {
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
    if name.is_empty() || name.len() > SINK_NAME_LEN_MAX || !name.chars().all(allowed) {
        return Err(ConfigError::invalid(
            key,
            format!(
                "`{name}` is not a sink name; use 1 to {SINK_NAME_LEN_MAX} lowercase letters, digits, `-` or `_`"
            ),
        ));
    }
    Ok(())
}

fn check_url(key: &str, url: &str) -> Result<(), ConfigError> {
    let allowed = "use an http:// or https:// URL with a host";
    if url.is_empty() {
        return Err(ConfigError::invalid(key, format!("is not set; {allowed}")));
    }
    // The URL itself is left out of the message: Discord and Slack webhook URLs
    // carry their secret in the path.
    let parsed = reqwest::Url::parse(url)
        .map_err(|error| ConfigError::invalid(key, format!("is not a URL ({error}); {allowed}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ConfigError::invalid(
            key,
            format!("scheme `{}` is not allowed; {allowed}", parsed.scheme()),
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(ConfigError::invalid(key, format!("has no host; {allowed}")));
    }
    Ok(())
}

fn check_topic(key: &str, topic: &str) -> Result<(), ConfigError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if topic.is_empty() {
        return Err(ConfigError::invalid(
            key,
            "is required for kind ntfy; name the topic to publish to",
        ));
    }
    if topic.len() > NTFY_TOPIC_LEN_MAX || !topic.chars().all(allowed) {
        return Err(ConfigError::invalid(
            key,
            format!(
                "`{topic}` is not an ntfy topic; use 1 to {NTFY_TOPIC_LEN_MAX} letters, digits, `-` or `_`"
            ),
        ));
    }
    Ok(())
}

fn keys_of_kind(kind: &str) -> &'static str {
    match kind {
        "ntfy" => "ntfy takes url, topic and token_file",
        "discord" | "slack" => "it takes url only",
        "webhook" => "webhook takes url and token_file",
        _ => "command takes command only",
    }
}

/// The kinds a file may name.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum KindName {
    Ntfy,
    Discord,
    Slack,
    Webhook,
    Command,
}

/// `[[notify]]` exactly as written, before it becomes a [`SinkConfig`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SinkConfigFile {
    name: String,
    kind: KindName,
    url: Option<String>,
    topic: Option<String>,
    token_file: Option<PathBuf>,
    command: Option<Vec<String>>,
    #[serde(default = "default_timeout_ms")]
    timeout_ms: u64,
}

fn default_timeout_ms() -> u64 {
    SINK_TIMEOUT_MS_DEFAULT
}

impl From<SinkConfigFile> for SinkConfig {
    /// Never fails: a missing key becomes an empty value and an unused one is
    /// remembered, so that [`validate_all`] can name it with the sink's index.
    fn from(file: SinkConfigFile) -> Self {
        let mut unused_keys = Vec::new();
        let mut unused = |set: bool, key: &'static str| {
            if set {
                unused_keys.push(key);
            }
        };
        let uses_url = !matches!(file.kind, KindName::Command);
        let uses_token = matches!(file.kind, KindName::Ntfy | KindName::Webhook);
        unused(!uses_url && file.url.is_some(), "url");
        unused(
            !matches!(file.kind, KindName::Ntfy) && file.topic.is_some(),
            "topic",
        );
        unused(!uses_token && file.token_file.is_some(), "token_file");
        unused(
            !matches!(file.kind, KindName::Command) && file.command.is_some(),
            "command",
        );
        let url = file.url.unwrap_or_default();
        let kind = match file.kind {
            KindName::Ntfy => SinkKind::Ntfy {
                url,
                topic: file.topic.unwrap_or_default(),
                token_file: file.token_file,
                token: None,
            },
            KindName::Discord => SinkKind::Discord { url },
            KindName::Slack => SinkKind::Slack { url },
            KindName::Webhook => SinkKind::Webhook {
                url,
                token_file: file.token_file,
                token: None,
            },
            KindName::Command => {
                let mut words = file.command.unwrap_or_default().into_iter();
                SinkKind::Command {
                    program: PathBuf::from(words.next().unwrap_or_default()),
                    args: words.collect(),
                }
            }
        };
        Self {
            name: file.name,
            kind,
            timeout_ms: file.timeout_ms,
            unused_keys,
        }
    }
}
