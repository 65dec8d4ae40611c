//! Fleet identity: the fleet's certificate authority, each node's certificate, and
//! the TLS configurations that admit only this fleet's nodes (K3).
//!
//! A node's name *is* its identity. Its certificate carries the name twice: as the
//! subject's common name and as the single DNS name `<name>.fleet`. Peers are
//! verified against the fleet CA alone (never the system roots), and a verified
//! peer's name is read back from its certificate with [`node_name_from_cert`] —
//! never from anything the peer says in a payload.
//!
//! # Layout
//! - [`fleet_ca`]: `FleetCa`, generating, saving, loading the CA and issuing node
//!   certificates.
//! - [`issued_node_cert`]: `IssuedNodeCert`, a freshly issued certificate and key.
//! - [`ca_cert`]: `CaCert`, the CA certificate every verifier trusts.
//! - [`node_identity`]: `NodeIdentity`, a node's certificate chain and key.
//! - [`naming`]: the naming convention (`dns_name`, `node_name_from_cert`).
//! - [`tls`]: rustls and tonic TLS configurations for Raft and the client API.
//! - [`pem_files`]: reading and writing PEM and secret files.
//! - [`error`]: the `IdentityError` type.

pub mod ca_cert;
pub mod error;
pub mod fleet_ca;
pub mod issued_node_cert;
pub mod naming;
pub mod node_identity;
pub mod pem_files;
pub mod tls;

pub use ca_cert::CaCert;
pub use error::IdentityError;
pub use fleet_ca::FleetCa;
pub use issued_node_cert::IssuedNodeCert;
pub use naming::{FLEET_DNS_SUFFIX, dns_name, node_name_from_cert};
pub use node_identity::NodeIdentity;
pub use pem_files::write_private_file;
pub use tls::{
    API_ALPN, RAFT_ALPN, api_client_config, api_server_config, crypto_provider, raft_client_config,
    raft_server_config,
};
