//! `TransportMode`: which transport carries this node's Raft traffic.

use std::fmt;
use std::str::FromStr;

use serde::Deserialize;

/// How this node reaches its peers for Raft.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum TransportMode {
    /// QUIC over UDP only.
    Quic,
    /// gRPC over TLS on TCP only, for networks that block UDP.
    Grpc,
    /// QUIC, falling back to gRPC for a peer that QUIC cannot reach.
    #[default]
    Auto,
}

impl TransportMode {
    /// Every accepted spelling, in the order the docs list them.
    pub const NAMES: [&str; 3] = ["quic", "grpc", "auto"];

    /// The mode's name in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Quic => "quic",
            Self::Grpc => "grpc",
            Self::Auto => "auto",
        }
    }
}

impl FromStr for TransportMode {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "quic" => Ok(Self::Quic),
            "grpc" => Ok(Self::Grpc),
            "auto" => Ok(Self::Auto),
            other => Err(format!(
                "{other:?} is not one of {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

impl TryFrom<String> for TransportMode {
    type Error = String;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl fmt::Display for TransportMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
