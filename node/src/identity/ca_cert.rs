//! `CaCert`: the fleet CA's certificate, the only trust anchor of every verifier.

use std::path::Path;

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;

use super::error::IdentityError;
use super::pem_files::{certificates_from_pem, der_to_pem, read_text};

/// The common name of a fleet CA is this prefix followed by the fleet's name.
pub const CA_COMMON_NAME_PREFIX: &str = "Fleet CA ";

/// The fleet CA's certificate (no key): what nodes and clients trust.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaCert {
    der: CertificateDer<'static>,
    pem: String,
}

impl CaCert {
    /// The CA certificate from PEM text holding exactly one certificate.
    pub fn from_pem(pem: &str) -> Result<Self, IdentityError> {
        Self::from_pem_named("the CA certificate", pem)
    }

    /// The CA certificate from a PEM file (`ca.pem`).
    pub fn load(path: &Path) -> Result<Self, IdentityError> {
        Self::from_pem_named(&path.display().to_string(), &read_text(path)?)
    }

    /// The CA certificate from its DER encoding.
    pub fn from_der(der: CertificateDer<'static>) -> Self {
        let pem = der_to_pem("CERTIFICATE", der.as_ref());
        Self { der, pem }
    }

    fn from_pem_named(what: &str, pem: &str) -> Result<Self, IdentityError> {
        let mut certificates = certificates_from_pem(what, pem)?;
        if certificates.len() != 1 {
            return Err(IdentityError::Pem {
                what: what.to_owned(),
                reason: format!(
                    "holds {} certificates; a CA file holds exactly one",
                    certificates.len()
                ),
            });
        }
        Ok(Self::from_der(certificates.remove(0)))
    }

    /// The certificate, DER-encoded.
    pub fn der(&self) -> &CertificateDer<'static> {
        &self.der
    }

    /// The certificate, PEM-encoded.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// The fleet this CA belongs to, read from its common name `Fleet CA <fleet>`;
    /// `None` when the certificate is not a fleet CA.
    pub fn fleet(&self) -> Option<String> {
        let (_, parsed) = x509_parser::parse_x509_certificate(self.der.as_ref()).ok()?;
        let common_name = parsed.subject().iter_common_name().next()?.as_str().ok()?;
        common_name
            .strip_prefix(CA_COMMON_NAME_PREFIX)
            .filter(|fleet| !fleet.is_empty())
            .map(str::to_owned)
    }

    /// A root store that holds this CA and nothing else.
    pub fn root_store(&self) -> Result<RootCertStore, IdentityError> {
        let mut roots = RootCertStore::empty();
        roots
            .add(self.der.clone())
            .map_err(|e| IdentityError::Tls {
                config: "root store",
                reason: format!("the fleet CA certificate is not a usable trust anchor: {e}"),
            })?;
        Ok(roots)
    }
}
