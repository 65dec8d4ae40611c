//! `IssuedNodeCert`: a node certificate and key fresh from the fleet CA, as PEM.

use std::path::Path;

use super::error::IdentityError;
use super::node_identity::NodeIdentity;
use super::pem_files::{write_new_file, write_private_file};

/// A node's newly issued certificate and private key, PEM-encoded.
pub struct IssuedNodeCert {
    /// The node the certificate was issued for.
    pub name: String,
    /// The node certificate (just the leaf; peers hold the CA).
    pub cert_pem: String,
    /// The node's private key (PKCS#8).
    pub key_pem: String,
}

impl IssuedNodeCert {
    /// The certificate's file name inside a node's directory.
    pub const CERT_FILE: &str = "node.pem";
    /// The key's file name inside a node's directory.
    pub const KEY_FILE: &str = "node.key";

    /// Writes `node.pem` and `node.key` (mode 0600) into `dir`, which must exist.
    /// Refuses to overwrite either file.
    pub fn save(&self, dir: &Path) -> Result<(), IdentityError> {
        let cert_path = dir.join(Self::CERT_FILE);
        let key_path = dir.join(Self::KEY_FILE);
        for path in [&cert_path, &key_path] {
            if path.exists() {
                return Err(IdentityError::AlreadyExists { path: path.clone() });
            }
        }
        write_private_file(&key_path, self.key_pem.as_bytes())?;
        write_new_file(&cert_path, self.cert_pem.as_bytes())
    }

    /// The identity this certificate gives its node.
    pub fn to_identity(&self) -> Result<NodeIdentity, IdentityError> {
        NodeIdentity::from_pem(&self.cert_pem, &self.key_pem)
    }
}

impl std::fmt::Debug for IssuedNodeCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("IssuedNodeCert")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
