//! `Router`: which node should answer a question, and whether it needs a deliberation
//! (R3, D5, D6, S4).
//!
//! The responder is the node whose declared specialties the question falls in (the
//! specialty override of R3), then the node whose published *I Can Do* items share
//! words with it, then the primary. Ties go to the higher rank in the hierarchy.
//! Whether to deliberate follows seed 002: time-sensitive questions skip deliberation
//! (emergency bypass); tier 1 always deliberates; a question that spans several
//! nodes' specialties, or is tier 2, deliberates if positions conflict; a simple
//! specialty question or a general tier-3 one is answered by the responder alone.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::capabilities::CapabilityManifest;
use super::node_name::NodeName;
use super::settings::FleetSettings;
use super::tier::{Tier, words_of};

/// What to do with a question.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Advice {
    /// Tier 1: deliberate.
    Deliberate,
    /// Tier 2 or cross-domain: deliberate; it stops after round 1 if positions agree.
    DeliberateIfConflict,
    /// Tier 3: the responder answers; a deliberation is optional.
    ResponderAnswers,
    /// Time-sensitive: skip deliberation, the responder answers now.
    EmergencyBypass,
}

impl Advice {
    /// Whether a deliberation should be opened.
    pub fn needs_deliberation(self) -> bool {
        matches!(self, Self::Deliberate | Self::DeliberateIfConflict)
    }
}

/// The answer to `route`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// The node that should answer.
    pub responder: Option<NodeName>,
    pub tier: Tier,
    pub advice: Advice,
    pub needs_deliberation: bool,
    /// Why, in one sentence per step.
    pub reason: String,
    /// Nodes whose specialties matched, with the matching terms.
    pub specialists: Vec<(NodeName, Vec<String>)>,
}

/// Words that mark a question as time-sensitive.
const URGENT_WORDS: &[&str] = &[
    "urgent",
    "emergency",
    "asap",
    "outage",
    "immediately",
    "down",
];

/// Common words that say nothing about a domain.
const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "with", "how", "what", "which", "should", "would", "could", "that",
    "this", "from", "into", "our", "your", "can", "does", "do", "is", "are", "to", "of", "on",
    "in", "a", "an", "we", "i", "it", "or", "be", "by", "at", "as", "who", "why", "you", "all",
    "any", "has", "was", "not", "get", "use", "new", "now", "out", "one", "its", "let", "may",
    "yes", "but",
];

/// The shortest word that can name a domain: `gpu`, `dns`, `nas` count.
const DOMAIN_WORD_LEN_MIN: usize = 3;

/// Routes questions against the fleet's settings and published manifests.
pub struct Router<'a> {
    pub settings: &'a FleetSettings,
    pub manifests: &'a BTreeMap<NodeName, CapabilityManifest>,
    pub primary: Option<&'a NodeName>,
}

impl Router<'_> {
    /// The node whose specialties best match `question`, if any matches.
    pub fn specialist(&self, question: &str) -> Option<NodeName> {
        self.specialists(question)
            .into_iter()
            .next()
            .map(|(node, _)| node)
    }

    /// Nodes whose specialties match `question`, best first (most terms, then rank).
    pub fn specialists(&self, question: &str) -> Vec<(NodeName, Vec<String>)> {
        let words: Vec<String> = words_of(question).iter().map(|w| stem(w)).collect();
        let mut matches: Vec<(NodeName, Vec<String>)> = self
            .settings
            .hierarchy
            .iter()
            .filter_map(|node| {
                let terms: Vec<String> = self
                    .settings
                    .specialties
                    .get(node)?
                    .iter()
                    .filter(|term| contains_phrase(&words, term))
                    .cloned()
                    .collect();
                (!terms.is_empty()).then(|| (node.clone(), terms))
            })
            .collect();
        // Stable sort keeps hierarchy order among equals.
        matches.sort_by_key(|(_, terms)| std::cmp::Reverse(terms.len()));
        matches
    }

    /// The node whose *I Can Do* items share the most words with `question`.
    fn capable(&self, question: &str) -> Option<(NodeName, String)> {
        let words: Vec<String> = words_of(question)
            .iter()
            .filter(|w| w.len() >= DOMAIN_WORD_LEN_MIN && !STOP_WORDS.contains(&w.as_str()))
            .map(|w| stem(w))
            .collect();
        self.settings
            .hierarchy
            .iter()
            .filter_map(|node| {
                let manifest = self.manifests.get(node)?;
                manifest
                    .can_do
                    .iter()
                    .map(|item| {
                        let item_words: Vec<String> =
                            words_of(item).iter().map(|w| stem(w)).collect();
                        let shared = words.iter().filter(|w| item_words.contains(w)).count();
                        (shared, item)
                    })
                    .filter(|(shared, _)| *shared > 0)
                    .max_by_key(|(shared, _)| *shared)
                    .map(|(shared, item)| (shared, node.clone(), item.clone()))
            })
            .max_by(|a, b| {
                a.0.cmp(&b.0)
                    .then_with(|| self.rank(&b.1).cmp(&self.rank(&a.1)))
            })
            .map(|(_, node, item)| (node, item))
    }

    fn rank(&self, node: &NodeName) -> usize {
        self.settings.rank(node).unwrap_or(usize::MAX)
    }

    /// Routes `question`; `urgent` marks it time-sensitive whatever its words.
    pub fn route(&self, question: &str, urgent: bool) -> Route {
        let specialists = self.specialists(question);
        let (tier, tier_reason) = Tier::classify(question);
        let (responder, responder_reason) = match specialists.first() {
            Some((node, terms)) => (
                Some(node.clone()),
                format!("{node} is the specialist ({})", terms.join(", ")),
            ),
            None => match self.capable(question) {
                Some((node, item)) => {
                    (Some(node.clone()), format!("{node} can do it (\"{item}\")"))
                }
                None => (
                    self.primary.cloned(),
                    self.primary.map_or_else(
                        || "no specialist matched and there is no primary".into(),
                        |p| format!("no specialist matched; the primary {p} answers"),
                    ),
                ),
            },
        };
        let words = words_of(question);
        let urgent_word = words.iter().find(|w| URGENT_WORDS.contains(&w.as_str()));
        let (advice, advice_reason) = if urgent || urgent_word.is_some() {
            let why = urgent_word.map_or_else(
                || "marked urgent".to_string(),
                |w| format!("time-sensitive (`{w}`)"),
            );
            (
                Advice::EmergencyBypass,
                format!("{why}: emergency bypass, no deliberation"),
            )
        } else if tier == Tier::One {
            (Advice::Deliberate, tier_reason)
        } else if specialists.len() >= 2 {
            let nodes: Vec<String> = specialists.iter().map(|(n, _)| n.to_string()).collect();
            (
                Advice::DeliberateIfConflict,
                format!(
                    "cross-domain ({}): deliberate if positions conflict",
                    nodes.join(", ")
                ),
            )
        } else if tier == Tier::Two {
            (Advice::DeliberateIfConflict, tier_reason)
        } else if specialists.len() == 1 {
            (
                Advice::ResponderAnswers,
                "a simple specialty question needs no deliberation".into(),
            )
        } else {
            (Advice::ResponderAnswers, tier_reason)
        };
        Route {
            responder,
            tier,
            advice,
            needs_deliberation: advice.needs_deliberation(),
            reason: format!("{responder_reason}; {advice_reason}"),
            specialists,
        }
    }
}

/// A crude, deterministic stem: drops a plural `s` from longer words.
fn stem(word: &str) -> String {
    if word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") {
        word[..word.len() - 1].to_string()
    } else {
        word.to_string()
    }
}

/// Whether the words of `phrase` occur consecutively in `words` (both stemmed).
fn contains_phrase(words: &[String], phrase: &str) -> bool {
    let phrase: Vec<String> = words_of(phrase).iter().map(|w| stem(w)).collect();
    !phrase.is_empty()
        && words
            .windows(phrase.len())
            .any(|window| window == phrase.as_slice())
}
