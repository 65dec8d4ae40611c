//! `AgentConfig`: the `[agent]` table of a node's config — how this node asks its own
//! agent for a deliberation input.
//!
//! Three adapters: `manual` (nobody is asked; a person or the agent runs
//! `fleetctl position`), `command` (a program gets the request on stdin and prints
//! the answer) and `openai` (the agent gateway's OpenAI-compatible chat API, answered
//! by a forced tool call). Each adapter has its own keys; a key of another adapter is
//! refused rather than ignored, so a half-edited config cannot silently do the wrong
//! thing.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};

use crate::config::{ConfigError, SecretToken, lenient_string};

/// The longest answer margin accepted: half of seed 002's one-minute phase. A larger
/// margin would leave the agent almost no time to think.
pub const ANSWER_MARGIN_MS_MAX: u64 = 30_000;

/// The default answer margin: enough to submit the answer through Raft before the
/// phase deadline on a home network.
pub const ANSWER_MARGIN_MS_DEFAULT: u64 = 2_000;

/// Which way the local agent is asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentAdapter {
    /// Nobody is asked; inputs arrive through `fleetctl position`.
    #[default]
    Manual,
    /// A program without a shell: the request JSON on stdin, the answer JSON on stdout.
    Command,
    /// The agent gateway's OpenAI-compatible chat completions endpoint.
    OpenAi,
}

impl AgentAdapter {
    /// The name as written in the config file.
    pub fn name(self) -> &'static str {
        match self {
            Self::Manual => "manual",
            Self::Command => "command",
            Self::OpenAi => "openai",
        }
    }
}

impl fmt::Display for AgentAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The `[agent]` table. Optional: without it the node is `manual` and its workspace
/// is `workspace` next to the config file.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// `manual` (default), `command` or `openai`.
    pub adapter: AgentAdapter,
    /// The agent's workspace; deliberation notes go to `<workspace>/memory/`.
    /// Relative to the config file's directory.
    pub workspace: PathBuf,
    /// `adapter = "command"`: the program and its arguments, run without a shell. A
    /// program containing `/` is relative to the config file's directory; a bare name
    /// is looked up in `PATH`.
    pub command: Option<Vec<String>>,
    /// `adapter = "openai"`: the gateway's chat completions endpoint (http or https).
    pub url: Option<String>,
    /// `adapter = "openai"`: the model (or agent) name the gateway routes to.
    #[serde(deserialize_with = "lenient_option_string")]
    pub model: Option<String>,
    /// `adapter = "openai"`: a file holding the gateway's bearer token (one line),
    /// relative to the config file's directory.
    pub token_file: Option<PathBuf>,
    /// The bearer token read from `token_file` by [`AgentConfig::resolve_against`];
    /// never written in the config itself, so it stays out of files people share.
    #[serde(skip)]
    pub token: Option<SecretToken>,
    /// How long before the phase deadline we stop waiting for the agent, leaving time
    /// to commit its answer. At most 30 000.
    pub answer_margin_ms: u64,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            adapter: AgentAdapter::Manual,
            workspace: PathBuf::from("workspace"),
            command: None,
            url: None,
            model: None,
            token_file: None,
            token: None,
            answer_margin_ms: ANSWER_MARGIN_MS_DEFAULT,
        }
    }
}

/// `model = 4` from an environment variable arrives as a number; it is still a name.
fn lenient_option_string<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    lenient_string::deserialize(deserializer).map(Some)
}

const KEY_COMMAND: &str = "agent.command";
const KEY_URL: &str = "agent.url";
const KEY_MODEL: &str = "agent.model";
const KEY_TOKEN_FILE: &str = "agent.token_file";
const KEY_ANSWER_MARGIN: &str = "agent.answer_margin_ms";

impl AgentConfig {
    /// The directory the agent's notes go to: `<workspace>/memory`.
    pub fn memory_dir(&self) -> PathBuf {
        self.workspace.join("memory")
    }

    /// Makes the workspace, the token file and a command program with a `/` relative
    /// to `base` (the config file's directory), and reads the bearer token when the
    /// adapter is `openai`. A missing or empty token file is refused naming
    /// `agent.token_file`.
    pub fn resolve_against(&mut self, base: &Path) -> Result<(), ConfigError> {
        self.workspace = anchored(base, &self.workspace);
        if let Some(program) = self.command.as_mut().and_then(|argv| argv.first_mut()) {
            // A bare name is left for PATH lookup, as a shell would; only a path is
            // anchored to the config file, so `./agent.sh` works from any directory.
            if program.contains('/') {
                *program = anchored(base, Path::new(program))
                    .to_string_lossy()
                    .into_owned();
            }
        }
        if let Some(file) = self.token_file.as_mut() {
            *file = anchored(base, file);
            // Another adapter's token file is refused by `validate`, naming the
            // adapter; reading it here would report a less helpful missing file.
            if self.adapter == AgentAdapter::OpenAi {
                let what = "the gateway's bearer token";
                self.token = Some(SecretToken::read_bearer_file(KEY_TOKEN_FILE, file, what)?);
            }
        }
        Ok(())
    }

    /// Refuses what cannot work, naming the key: a `command` adapter without a
    /// program, an `openai` adapter without url, model or token, a url that is not
    /// http(s), a key of another adapter, and an answer margin over 30 000 ms.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.answer_margin_ms > ANSWER_MARGIN_MS_MAX {
            return Err(ConfigError::invalid(
                KEY_ANSWER_MARGIN,
                format!(
                    "{} ms is more than {ANSWER_MARGIN_MS_MAX} ms (half a phase); the agent would have almost no time to answer",
                    self.answer_margin_ms
                ),
            ));
        }
        self.refuse_keys_of_other_adapters()?;
        match self.adapter {
            AgentAdapter::Manual => Ok(()),
            AgentAdapter::Command => self.validate_command(),
            AgentAdapter::OpenAi => self.validate_openai(),
        }
    }

    fn refuse_keys_of_other_adapters(&self) -> Result<(), ConfigError> {
        let keys = [
            (KEY_COMMAND, self.command.is_some(), AgentAdapter::Command),
            (KEY_URL, self.url.is_some(), AgentAdapter::OpenAi),
            (KEY_MODEL, self.model.is_some(), AgentAdapter::OpenAi),
            (
                KEY_TOKEN_FILE,
                self.token_file.is_some(),
                AgentAdapter::OpenAi,
            ),
        ];
        for (key, set, owner) in keys {
            if set && owner != self.adapter {
                return Err(ConfigError::invalid(
                    key,
                    format!(
                        "is used only by adapter = \"{owner}\", but adapter is \"{}\"; remove it or change the adapter",
                        self.adapter
                    ),
                ));
            }
        }
        Ok(())
    }

    fn validate_command(&self) -> Result<(), ConfigError> {
        let Some(argv) = &self.command else {
            return Err(ConfigError::invalid(
                KEY_COMMAND,
                "is required with adapter = \"command\": the program and its arguments, e.g. [\"/usr/local/bin/fleet-agent\", \"--fast\"]",
            ));
        };
        match argv.first() {
            Some(program) if !program.trim().is_empty() => Ok(()),
            _ => Err(ConfigError::invalid(
                KEY_COMMAND,
                "has no program: its first element must name the program to run (no shell is used)",
            )),
        }
    }

    fn validate_openai(&self) -> Result<(), ConfigError> {
        let Some(url) = &self.url else {
            return Err(ConfigError::invalid(
                KEY_URL,
                "is required with adapter = \"openai\": the gateway's chat completions endpoint, e.g. http://127.0.0.1:18789/v1/chat/completions",
            ));
        };
        check_http_url(KEY_URL, url)?;
        if self
            .model
            .as_deref()
            .is_none_or(|model| model.trim().is_empty())
        {
            return Err(ConfigError::invalid(
                KEY_MODEL,
                "is required with adapter = \"openai\": the model or agent name the gateway routes to",
            ));
        }
        if self.token_file.is_none() {
            return Err(ConfigError::invalid(
                KEY_TOKEN_FILE,
                "is required with adapter = \"openai\": a file holding the gateway's bearer token",
            ));
        }
        if self.token.is_none() {
            return Err(ConfigError::invalid(
                KEY_TOKEN_FILE,
                "was not read; the config must be resolved against its directory first",
            ));
        }
        Ok(())
    }
}

/// `path` relative to `base` (an absolute `path` stays as it is), without `./`
/// steps, so messages and logs show the path plainly.
pub(crate) fn anchored(base: &Path, path: &Path) -> PathBuf {
    base.join(path).components().collect()
}

/// Refuses, naming `key`, a URL that is not http(s) with a host.
pub(crate) fn check_http_url(key: &str, url: &str) -> Result<(), ConfigError> {
    let parsed = reqwest::Url::parse(url).map_err(|error| {
        ConfigError::invalid(
            key,
            format!("`{url}` is not a URL ({error}); use http:// or https://"),
        )
    })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(ConfigError::invalid(
            key,
            format!("`{url}` is not an http:// or https:// URL with a host"),
        ));
    }
    Ok(())
}
