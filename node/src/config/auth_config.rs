//! `AuthConfig`: the tokens that operators and this machine's agent present.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::error::ConfigError;
use super::secret_token::{SecretToken, TOKEN_LEN_MAX, TOKEN_LEN_MIN, TOKEN_PLACEHOLDER};

/// The `[auth]` section. Each token is given inline or by file, not both; a file
/// (relative to the config file) keeps the secret out of the config and the
/// environment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// The operator's token: full control of the fleet. Required (inline or by file).
    pub operator_token: Option<SecretToken>,
    /// A file holding the operator's token (one line).
    pub operator_token_file: Option<PathBuf>,
    /// The token of this machine's local agent: it may act as this node and only
    /// this node. Optional; without it no local agent is admitted by token.
    pub agent_token: Option<SecretToken>,
    /// A file holding the agent's token (one line).
    pub agent_token_file: Option<PathBuf>,
}

/// The keys of one token, for error messages.
struct TokenKeys {
    inline: &'static str,
    file: &'static str,
}

const OPERATOR: TokenKeys = TokenKeys {
    inline: "auth.operator_token",
    file: "auth.operator_token_file",
};
const AGENT: TokenKeys = TokenKeys {
    inline: "auth.agent_token",
    file: "auth.agent_token_file",
};

impl AuthConfig {
    /// Whether `presented` is the operator's token (constant-time comparison).
    pub fn is_operator_token(&self, presented: &str) -> bool {
        self.operator_token
            .as_ref()
            .is_some_and(|token| token.matches(presented))
    }

    /// Whether `presented` is this machine's agent token (constant-time comparison).
    pub fn is_agent_token(&self, presented: &str) -> bool {
        self.agent_token
            .as_ref()
            .is_some_and(|token| token.matches(presented))
    }

    /// Resolves token files against `base` and reads them into the tokens.
    pub(crate) fn read_token_files(&mut self, base: &Path) -> Result<(), ConfigError> {
        read_token_file(
            &OPERATOR,
            &mut self.operator_token,
            &mut self.operator_token_file,
            base,
        )?;
        read_token_file(
            &AGENT,
            &mut self.agent_token,
            &mut self.agent_token_file,
            base,
        )
    }

    /// Refuses a missing operator token, placeholders, tokens of the wrong length,
    /// and an agent token equal to the operator's (the agent would be the operator).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let Some(operator) = &self.operator_token else {
            return Err(ConfigError::TokenMissing {
                key: OPERATOR.inline,
                file_key: OPERATOR.file,
            });
        };
        check_token(key_of(&OPERATOR, &self.operator_token_file), operator)?;
        if let Some(agent) = &self.agent_token {
            let key = key_of(&AGENT, &self.agent_token_file);
            check_token(key, agent)?;
            if agent.matches(operator.expose()) {
                return Err(ConfigError::invalid(
                    key,
                    "equals the operator token; the agent would have the operator's rights",
                ));
            }
        }
        Ok(())
    }
}

fn read_token_file(
    keys: &TokenKeys,
    token: &mut Option<SecretToken>,
    file: &mut Option<PathBuf>,
    base: &Path,
) -> Result<(), ConfigError> {
    let Some(path) = file.as_mut() else {
        return Ok(());
    };
    if token.is_some() {
        return Err(ConfigError::TokenConflict {
            key: keys.inline,
            file_key: keys.file,
        });
    }
    *path = base.join(&*path);
    let text = std::fs::read_to_string(&*path).map_err(|source| ConfigError::TokenFile {
        key: keys.file,
        path: path.clone(),
        source,
    })?;
    *token = Some(SecretToken::new(text));
    Ok(())
}

/// The key to blame: the file's when the token came from a file.
fn key_of(keys: &TokenKeys, file: &Option<PathBuf>) -> &'static str {
    if file.is_some() {
        keys.file
    } else {
        keys.inline
    }
}

fn check_token(key: &str, token: &SecretToken) -> Result<(), ConfigError> {
    if token.is_placeholder() {
        return Err(ConfigError::PlaceholderToken {
            key: key.to_owned(),
            placeholder: TOKEN_PLACEHOLDER,
            min: TOKEN_LEN_MIN,
        });
    }
    if !(TOKEN_LEN_MIN..=TOKEN_LEN_MAX).contains(&token.len()) {
        return Err(ConfigError::TokenLength {
            key: key.to_owned(),
            len: token.len(),
            min: TOKEN_LEN_MIN,
            max: TOKEN_LEN_MAX,
        });
    }
    Ok(())
}
