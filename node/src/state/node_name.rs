//! `NodeName`: the validated name of a fleet node (`beast`, `5070`, `mac`).
//!
//! A node's name is its identity everywhere: in certificates, in the hierarchy, in
//! every input it gives. Names are short lowercase words so they read well in
//! notifications and file names and cannot smuggle separators into paths or keys.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::RuleViolation;

/// The longest node name accepted, in bytes.
pub const NODE_NAME_MAX_LEN: usize = 32;

/// A node's name: 1–32 characters of `a-z`, `0-9` and `-`, starting with a letter or digit.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct NodeName(String);

impl NodeName {
    /// Validates `name` as a node name; the error says which character or length was wrong.
    pub fn new(name: impl Into<String>) -> Result<Self, RuleViolation> {
        let name = name.into();
        let invalid = |reason: String| RuleViolation::InvalidField {
            field: "node name".into(),
            reason,
        };
        if name.is_empty() || name.len() > NODE_NAME_MAX_LEN {
            return Err(invalid(format!(
                "`{name}` must be 1 to {NODE_NAME_MAX_LEN} characters long"
            )));
        }
        if let Some(bad) = name
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
        {
            return Err(invalid(format!(
                "`{name}` contains `{bad}`; use lowercase letters, digits and `-`"
            )));
        }
        if name.starts_with('-') {
            return Err(invalid(format!(
                "`{name}` must start with a letter or digit"
            )));
        }
        Ok(Self(name))
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for NodeName {
    type Err = RuleViolation;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<String> for NodeName {
    type Error = RuleViolation;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<NodeName> for String {
    fn from(value: NodeName) -> Self {
        value.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_fleet_names() {
        for name in ["beast", "5070", "mac", "gpu-box-2"] {
            assert_eq!(NodeName::new(name).unwrap().as_str(), name);
        }
    }

    #[test]
    fn refuses_names_that_could_break_paths_or_keys() {
        for name in ["", "Beast", "a/b", "-x", "a b", &"x".repeat(33)] {
            let error = NodeName::new(name).unwrap_err().to_string();
            assert!(error.contains("node name"), "{error}");
        }
    }
}
