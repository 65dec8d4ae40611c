//! `Tier`: how much deliberation a question needs (seed 002, D6), and how a question
//! is classified into one.
//!
//! Tier 1 always deliberates (client deliverables, infrastructure changes affecting
//! several systems, security, fleet protocol changes); tier 2 deliberates only if the
//! first-round positions conflict; tier 3 is optional. Classification is by words of
//! the question, deterministic so every node routes a question the same way.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::RuleViolation;

/// The deliberation tier of a question.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Tier {
    /// Always deliberate.
    One,
    /// Deliberate only if positions conflict.
    Two,
    /// Deliberation is optional; the responder may answer alone.
    Three,
}

/// Words that make a question tier 1, with the seed's reason for each group.
const TIER_ONE_SIGNS: &[(&str, &[&str])] = &[
    (
        "a client deliverable",
        &["client", "customer", "deliverable", "deliverables"],
    ),
    (
        "a security decision",
        &[
            "security",
            "secure",
            "vulnerability",
            "cve",
            "credential",
            "credentials",
            "secret",
            "secrets",
            "password",
            "firewall",
            "breach",
            "exploit",
            "permissions",
        ],
    ),
    (
        "an infrastructure change affecting several systems",
        &[
            "migrate",
            "migration",
            "infrastructure",
            "cross-system",
            "fleet-wide",
            "network",
        ],
    ),
    (
        "a fleet protocol change",
        &["protocol", "hierarchy", "coordination"],
    ),
];

/// Words that make a question tier 2.
const TIER_TWO_SIGNS: &[(&str, &[&str])] = &[
    (
        "a technical implementation approach",
        &[
            "implement",
            "implementation",
            "approach",
            "design",
            "architecture",
            "refactor",
        ],
    ),
    (
        "resource allocation",
        &["allocate", "allocation", "assign", "capacity", "budget"],
    ),
    (
        "a complex troubleshooting strategy",
        &[
            "troubleshoot",
            "troubleshooting",
            "debug",
            "diagnose",
            "strategy",
            "intermittent",
        ],
    ),
];

impl Tier {
    /// The tier number, 1 to 3.
    pub fn number(self) -> u8 {
        match self {
            Self::One => 1,
            Self::Two => 2,
            Self::Three => 3,
        }
    }

    /// The tier for a number 1 to 3.
    pub fn from_number(number: u8) -> Result<Self, RuleViolation> {
        match number {
            1 => Ok(Self::One),
            2 => Ok(Self::Two),
            3 => Ok(Self::Three),
            other => Err(RuleViolation::invalid(
                "tier",
                format!(
                    "{other} is not a tier; use 1 (always deliberate), 2 (if positions conflict) or 3 (optional)"
                ),
            )),
        }
    }

    /// Classifies a question by its words; returns the tier and the reason.
    pub fn classify(question: &str) -> (Self, String) {
        let words = words_of(question);
        let find = |signs: &[(&'static str, &[&str])]| {
            signs.iter().find_map(|(reason, sign_words)| {
                words
                    .iter()
                    .find(|w| sign_words.contains(&w.as_str()))
                    .map(|w| format!("{reason} (`{w}`)"))
            })
        };
        if let Some(reason) = find(TIER_ONE_SIGNS) {
            return (Self::One, format!("tier 1, always deliberate: {reason}"));
        }
        if let Some(reason) = find(TIER_TWO_SIGNS) {
            return (
                Self::Two,
                format!("tier 2, deliberate if positions conflict: {reason}"),
            );
        }
        (
            Self::Three,
            "tier 3, deliberation optional: a general question".into(),
        )
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tier {}", self.number())
    }
}

impl FromStr for Tier {
    type Err = RuleViolation;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let number = s
            .trim()
            .trim_start_matches("tier")
            .trim()
            .parse::<u8>()
            .map_err(|_| RuleViolation::invalid("tier", format!("`{s}` is not 1, 2 or 3")))?;
        Self::from_number(number)
    }
}

/// Lowercase words of `text`: runs of letters, digits and `-`.
pub(crate) fn words_of(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .map(|w| w.trim_matches('-'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_examples_classify_as_the_seed_says() {
        let (tier, reason) =
            Tier::classify("Should we migrate to Azure or AWS for email security?");
        assert_eq!(tier, Tier::One, "{reason}");
        let (tier, _) = Tier::classify("How do I restart a service on Linux?");
        assert_eq!(tier, Tier::Three);
        let (tier, _) = Tier::classify("Which approach should we take to implement caching?");
        assert_eq!(tier, Tier::Two);
    }

    #[test]
    fn tiers_parse_from_numbers_and_refuse_others() {
        assert_eq!("2".parse::<Tier>().unwrap(), Tier::Two);
        assert_eq!("tier 1".parse::<Tier>().unwrap(), Tier::One);
        assert!(
            "4".parse::<Tier>()
                .unwrap_err()
                .to_string()
                .contains("tier")
        );
    }
}
