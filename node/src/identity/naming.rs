//! The naming convention that ties a node's name to its certificate.
//!
//! A node certificate has the node's name as its common name and exactly one DNS
//! subject alternative name, `<name>.fleet`. Clients dial a node by that DNS name
//! (whatever its address), and servers learn a verified client's name from it. Other
//! code relies on this convention; change it only together with every user.

use rustls::pki_types::CertificateDer;
use x509_parser::extensions::GeneralName;

use crate::state::NodeName;

/// The DNS suffix of every node's certificate name.
pub const FLEET_DNS_SUFFIX: &str = ".fleet";

/// The DNS name in `node`'s certificate, and the TLS server name to dial it by:
/// `5070` → `5070.fleet`.
pub fn dns_name(node: &str) -> String {
    format!("{node}{FLEET_DNS_SUFFIX}")
}

/// The node name a certificate was issued for, or `None` when it is not a node
/// certificate (unparsable, not exactly one DNS name, not `<valid name>.fleet`).
///
/// This only reads the name; it does not verify the certificate. Call it on a
/// peer certificate that the TLS handshake has already verified against the fleet CA.
pub fn node_name_from_cert(cert: &CertificateDer<'_>) -> Option<String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let alternative_names = parsed.subject_alternative_name().ok()??;
    let mut dns_names =
        alternative_names
            .value
            .general_names
            .iter()
            .filter_map(|name| match name {
                GeneralName::DNSName(dns) => Some(*dns),
                _ => None,
            });
    let only = dns_names.next()?;
    if dns_names.next().is_some() {
        return None;
    }
    let name = only.strip_suffix(FLEET_DNS_SUFFIX)?;
    NodeName::new(name)
        .ok()
        .map(|name| name.as_str().to_owned())
}
