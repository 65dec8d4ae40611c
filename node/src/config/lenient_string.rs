//! Deserializes a string that may arrive as a number.
//!
//! figment parses environment values, so `FLEET_NAME=5070` reaches serde as the
//! integer 5070, not the string "5070". Node names such as `5070` must work either
//! way. Only integers are accepted: a float would already have lost digits.

use std::fmt;

use serde::Deserializer;
use serde::de::{Error, Visitor};

/// Deserializes a string, or an integer as its decimal digits.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    deserializer.deserialize_any(LenientString)
}

struct LenientString;

impl Visitor<'_> for LenientString {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: Error>(self, value: &str) -> Result<String, E> {
        Ok(value.to_owned())
    }

    fn visit_string<E: Error>(self, value: String) -> Result<String, E> {
        Ok(value)
    }

    fn visit_u64<E: Error>(self, value: u64) -> Result<String, E> {
        Ok(value.to_string())
    }

    fn visit_i64<E: Error>(self, value: i64) -> Result<String, E> {
        Ok(value.to_string())
    }

    fn visit_u128<E: Error>(self, value: u128) -> Result<String, E> {
        Ok(value.to_string())
    }

    fn visit_i128<E: Error>(self, value: i128) -> Result<String, E> {
        Ok(value.to_string())
    }
}
