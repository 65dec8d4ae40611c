//! `NodeIdentity`: a node's certificate chain and private key, and the name they prove.

use std::path::Path;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::error::IdentityError;
use super::naming::node_name_from_cert;
use super::pem_files::{
    certificates_from_pem, der_to_pem, private_key_from_pem, private_key_label, read_text,
};

/// What a node presents in every TLS handshake: its name (read from its own
/// certificate), the certificate chain (leaf first) and its private key.
pub struct NodeIdentity {
    /// The node's name, as its certificate states it (`<name>.fleet`).
    pub name: String,
    /// The node certificate first, then any intermediates (usually none).
    pub cert_chain: Vec<CertificateDer<'static>>,
    /// The node's private key.
    pub key: PrivateKeyDer<'static>,
}

impl NodeIdentity {
    /// Loads the certificate chain and key from PEM files (`node.pem`, `node.key`).
    /// The name comes from the leaf certificate; see [`NodeIdentity::ensure_name`].
    pub fn load(cert_path: &Path, key_path: &Path) -> Result<Self, IdentityError> {
        let cert_what = cert_path.display().to_string();
        let cert_chain = certificates_from_pem(&cert_what, &read_text(cert_path)?)?;
        let key = private_key_from_pem(&key_path.display().to_string(), &read_text(key_path)?)?;
        Self::from_parts(&cert_what, cert_chain, key)
    }

    /// The identity from PEM text: certificate chain and private key.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, IdentityError> {
        let what = "the node certificate";
        let cert_chain = certificates_from_pem(what, cert_pem)?;
        let key = private_key_from_pem("the node key", key_pem)?;
        Self::from_parts(what, cert_chain, key)
    }

    fn from_parts(
        what: &str,
        cert_chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Self, IdentityError> {
        let name = cert_chain
            .first()
            .and_then(node_name_from_cert)
            .ok_or_else(|| IdentityError::NotANodeCertificate {
                what: what.to_owned(),
            })?;
        Ok(Self {
            name,
            cert_chain,
            key,
        })
    }

    /// Refuses the identity unless its certificate is for `expected` (the node name
    /// in the configuration): a node must not start under another node's certificate.
    pub fn ensure_name(&self, expected: &str) -> Result<(), IdentityError> {
        if self.name == expected {
            Ok(())
        } else {
            Err(IdentityError::NameMismatch {
                expected: expected.to_owned(),
                found: self.name.clone(),
            })
        }
    }

    /// The certificate chain as PEM text.
    pub fn cert_chain_pem(&self) -> String {
        self.cert_chain
            .iter()
            .map(|cert| der_to_pem("CERTIFICATE", cert.as_ref()))
            .collect()
    }

    /// The private key as PEM text.
    pub fn key_pem(&self) -> String {
        der_to_pem(private_key_label(&self.key), self.key.secret_der())
    }
}

impl Clone for NodeIdentity {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            cert_chain: self.cert_chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

impl std::fmt::Debug for NodeIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("NodeIdentity")
            .field("name", &self.name)
            .field("cert_chain_len", &self.cert_chain.len())
            .finish_non_exhaustive()
    }
}
