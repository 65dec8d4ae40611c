//! `Confidence` as agents write it: `"low"`, `"medium"` or `"high"`, in any case.
//!
//! The replicated state keeps `Confidence` in its own encoding; agents (scripts and
//! language models) see and answer the seed's three words in lowercase, and an
//! answer's `"High"` or `"MEDIUM"` is as good as `"high"`. Use with
//! `#[serde(with = "confidence_text")]`.

use serde::de::Error;
use serde::{Deserialize, Deserializer, Serializer};

use crate::state::Confidence;

/// The three words, as agents are told to write them.
pub const CONFIDENCE_WORDS: [&str; 3] = ["low", "medium", "high"];

/// The lowercase word for `confidence`.
pub fn word(confidence: Confidence) -> &'static str {
    match confidence {
        Confidence::Low => CONFIDENCE_WORDS[0],
        Confidence::Medium => CONFIDENCE_WORDS[1],
        Confidence::High => CONFIDENCE_WORDS[2],
    }
}

/// Writes the lowercase word.
pub fn serialize<S: Serializer>(confidence: &Confidence, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(word(*confidence))
}

/// Reads the word in any case; anything else names the three words allowed.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Confidence, D::Error> {
    let text = String::deserialize(deserializer)?;
    text.parse().map_err(|_| {
        D::Error::custom(format!(
            "confidence `{text}` is not one of {}",
            CONFIDENCE_WORDS.join(", ")
        ))
    })
}
