//! `IdentityError`: everything that can go wrong with certificates, keys and TLS
//! configuration, each naming the file, node or rule involved.

use std::path::PathBuf;

/// Why a certificate, key or TLS configuration could not be made or loaded.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A file that would be written exists already; nothing is overwritten.
    #[error(
        "{path} exists already; remove it or choose another directory, nothing was overwritten"
    )]
    AlreadyExists { path: PathBuf },

    /// A PEM file (or text) is malformed or holds no usable item.
    #[error("{what}: {reason}")]
    Pem { what: String, reason: String },

    /// rcgen could not generate a key or sign a certificate.
    #[error("cannot {action}: {source}")]
    Generate {
        action: String,
        #[source]
        source: rcgen::Error,
    },

    /// A node name does not follow the naming rules.
    #[error("invalid node name `{name}`: {reason}")]
    InvalidNodeName { name: String, reason: String },

    /// A fleet name does not follow the naming rules.
    #[error("invalid fleet name `{name}`: {reason}")]
    InvalidFleetName { name: String, reason: String },

    /// A certificate does not carry a node name (`<name>.fleet` as its only DNS name).
    #[error("{what} is not a fleet node certificate: it needs exactly one DNS name `<node>.fleet`")]
    NotANodeCertificate { what: String },

    /// A certificate is not a fleet CA (its common name is not `Fleet CA <fleet>`).
    #[error("{what} is not a fleet CA certificate: its common name must be `Fleet CA <fleet>`")]
    NotAFleetCa { what: String },

    /// The certificate belongs to another node than the one configured.
    #[error("the certificate is for node `{found}`, but this node is configured as `{expected}`")]
    NameMismatch { expected: String, found: String },

    /// The CA certificate belongs to another fleet.
    #[error(
        "the CA certificate is for fleet `{found}`, but this node is configured for fleet `{expected}`"
    )]
    FleetMismatch { expected: String, found: String },

    /// rustls refused to build a configuration from these certificates and key.
    #[error("cannot build the {config} TLS configuration: {reason}")]
    Tls {
        config: &'static str,
        reason: String,
    },
}
