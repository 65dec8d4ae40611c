//! `FleetCa`: the fleet's certificate authority — generate it once, keep `ca.key`
//! safe, and issue one certificate per node.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, date_time_ymd,
};

use super::ca_cert::{CA_COMMON_NAME_PREFIX, CaCert};
use super::error::IdentityError;
use super::issued_node_cert::IssuedNodeCert;
use super::naming::dns_name;
use super::pem_files::{read_text, write_new_file, write_private_file};
use crate::state::NodeName;

/// How many years a fleet CA is valid.
const CA_VALIDITY_YEARS: i32 = 30;
/// How many years a node certificate is valid. Re-issuing is one `fleetctl` command,
/// but a home fleet should not stop on a forgotten renewal after a year or two.
const NODE_VALIDITY_YEARS: i32 = 10;

/// The fleet's certificate authority: its certificate and its signing key.
pub struct FleetCa {
    fleet: String,
    certificate: CaCert,
    issuer: Issuer<'static, KeyPair>,
}

impl FleetCa {
    /// The CA certificate's file name.
    pub const CERT_FILE: &str = "ca.pem";
    /// The CA key's file name.
    pub const KEY_FILE: &str = "ca.key";

    /// Generates a new CA for `fleet` (ECDSA P-256, common name `Fleet CA <fleet>`).
    pub fn generate(fleet: &str) -> Result<Self, IdentityError> {
        check_fleet_name(fleet)?;
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(|source| {
            IdentityError::Generate {
                action: "generate the CA key".to_owned(),
                source,
            }
        })?;
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(
            DnType::CommonName,
            format!("{CA_COMMON_NAME_PREFIX}{fleet}"),
        );
        params
            .distinguished_name
            .push(DnType::OrganizationName, "Fleet");
        // The CA signs node certificates only, never another CA.
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        set_validity(&mut params, CA_VALIDITY_YEARS);
        let certificate = params
            .self_signed(&key)
            .map_err(|source| IdentityError::Generate {
                action: "self-sign the CA certificate".to_owned(),
                source,
            })?;
        Ok(Self {
            fleet: fleet.to_owned(),
            certificate: CaCert::from_der(certificate.der().clone()),
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA from its certificate and key in PEM text.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, IdentityError> {
        let certificate = CaCert::from_pem(cert_pem)?;
        let fleet = certificate
            .fleet()
            .ok_or_else(|| IdentityError::NotAFleetCa {
                what: "the CA certificate".to_owned(),
            })?;
        let key = KeyPair::from_pem(key_pem).map_err(|e| IdentityError::Pem {
            what: "the CA key".to_owned(),
            reason: e.to_string(),
        })?;
        if key.public_key_raw() != public_key_of(&certificate)? {
            return Err(IdentityError::Pem {
                what: "the CA key".to_owned(),
                reason: "it does not belong to the CA certificate".to_owned(),
            });
        }
        let issuer = Issuer::from_ca_cert_der(certificate.der(), key).map_err(|source| {
            IdentityError::Generate {
                action: "use the CA certificate as an issuer".to_owned(),
                source,
            }
        })?;
        Ok(Self {
            fleet,
            certificate,
            issuer,
        })
    }

    /// Loads `ca.pem` and `ca.key` from `dir`.
    pub fn load(dir: &Path) -> Result<Self, IdentityError> {
        let cert_pem = read_text(&dir.join(Self::CERT_FILE))?;
        let key_pem = read_text(&dir.join(Self::KEY_FILE))?;
        Self::from_pem(&cert_pem, &key_pem)
    }

    /// Writes `ca.pem` and `ca.key` (mode 0600) into `dir`, which must exist.
    /// Refuses to overwrite either file: a fleet's CA is never replaced by accident.
    pub fn save(&self, dir: &Path) -> Result<(), IdentityError> {
        let cert_path = dir.join(Self::CERT_FILE);
        let key_path = dir.join(Self::KEY_FILE);
        for path in [&cert_path, &key_path] {
            if path.exists() {
                return Err(IdentityError::AlreadyExists { path: path.clone() });
            }
        }
        write_private_file(&key_path, self.key_pem().as_bytes())?;
        write_new_file(&cert_path, self.certificate.pem().as_bytes())
    }

    /// The fleet's name.
    pub fn fleet(&self) -> &str {
        &self.fleet
    }

    /// The CA certificate, for verifiers.
    pub fn ca_cert(&self) -> &CaCert {
        &self.certificate
    }

    /// The CA certificate as PEM text.
    pub fn cert_pem(&self) -> &str {
        self.certificate.pem()
    }

    /// The CA's private key as PEM text (PKCS#8). Keep it off the nodes.
    pub fn key_pem(&self) -> String {
        self.issuer.key().serialize_pem()
    }

    /// Issues a certificate and fresh key for `node`: common name `node`, the single
    /// DNS name `<node>.fleet`, usable as both TLS server and client.
    pub fn issue_node_cert(&self, node: &str) -> Result<IssuedNodeCert, IdentityError> {
        NodeName::new(node).map_err(|e| IdentityError::InvalidNodeName {
            name: node.to_owned(),
            reason: e.to_string(),
        })?;
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(|source| {
            IdentityError::Generate {
                action: format!("generate the key of node `{node}`"),
                source,
            }
        })?;
        let mut params = CertificateParams::new(vec![dns_name(node)]).map_err(|source| {
            IdentityError::Generate {
                action: format!("name the certificate of node `{node}`"),
                source,
            }
        })?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, node);
        params
            .distinguished_name
            .push(DnType::OrganizationName, format!("Fleet {}", self.fleet));
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        // Every node both serves Raft and API calls and dials its peers.
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        set_validity(&mut params, NODE_VALIDITY_YEARS);
        let certificate =
            params
                .signed_by(&key, &self.issuer)
                .map_err(|source| IdentityError::Generate {
                    action: format!("sign the certificate of node `{node}`"),
                    source,
                })?;
        Ok(IssuedNodeCert {
            name: node.to_owned(),
            cert_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

impl std::fmt::Debug for FleetCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The signing key stays out of logs.
        f.debug_struct("FleetCa")
            .field("fleet", &self.fleet)
            .finish_non_exhaustive()
    }
}

/// Fleet names follow the node-name rules, so they read well in the CA's name and in
/// idempotency keys.
fn check_fleet_name(fleet: &str) -> Result<(), IdentityError> {
    NodeName::new(fleet)
        .map(drop)
        .map_err(|e| IdentityError::InvalidFleetName {
            name: fleet.to_owned(),
            reason: e.to_string(),
        })
}

/// The raw public key of a certificate, to match a key against it.
fn public_key_of(certificate: &CaCert) -> Result<Vec<u8>, IdentityError> {
    let (_, parsed) =
        x509_parser::parse_x509_certificate(certificate.der().as_ref()).map_err(|e| {
            IdentityError::Pem {
                what: "the CA certificate".to_owned(),
                reason: format!("not a valid X.509 certificate: {e}"),
            }
        })?;
    Ok(parsed.public_key().subject_public_key.data.to_vec())
}

/// Sets a validity window from January 1st of last year to `years` after this year.
/// Starting a year back absorbs clock skew between machines; the calendar year is
/// computed from the mean Gregorian year, which is exact enough for a window that
/// starts a whole year early.
fn set_validity(params: &mut CertificateParams, years: i32) {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let year = 1970 + i32::try_from(seconds / 31_556_952).unwrap_or(0);
    params.not_before = date_time_ymd(year - 1, 1, 1);
    params.not_after = date_time_ymd(year + years, 1, 1);
}
