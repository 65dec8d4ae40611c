//! The caller's node name, read from its certificate's DNS subject alternative name
//! `<name>.fleet`.
//!
//! Replace with `crate::identity::node_name_from_cert` once the identity module lands;
//! this private helper exists only so the transports can be built in parallel with it.
//! The TLS layer has already verified the chain to the fleet CA before this runs; this
//! only reads the name.

use rustls::pki_types::CertificateDer;

use crate::state::NodeName;

/// The DNS suffix of every node name in a fleet certificate.
pub(crate) const NODE_NAME_DNS_SUFFIX: &str = ".fleet";

/// The node name in `cert` (the end-entity certificate): its one DNS name ending in
/// `.fleet`, without the suffix, validated as a [`NodeName`].
// Replace with `crate::identity::node_name_from_cert`.
pub(crate) fn node_name_from_cert(cert: &CertificateDer<'_>) -> Result<String, String> {
    let parsed = webpki::EndEntityCert::try_from(cert)
        .map_err(|e| format!("the peer certificate cannot be parsed: {e}"))?;
    let mut names = parsed
        .valid_dns_names()
        .filter_map(|dns| dns.strip_suffix(NODE_NAME_DNS_SUFFIX));
    let name = names.next().ok_or_else(|| {
        format!(
            "the peer certificate names no node (no DNS name ending in `{NODE_NAME_DNS_SUFFIX}`)"
        )
    })?;
    if let Some(other) = names.next() {
        return Err(format!(
            "the peer certificate names two nodes (`{name}` and `{other}`); a node certificate names one"
        ));
    }
    NodeName::new(name)
        .map(|valid| valid.as_str().to_owned())
        .map_err(|e| format!("the peer certificate's node name is not valid: {e}"))
}

/// The node name in the first (end-entity) certificate of a presented chain.
pub(crate) fn node_name_from_chain(chain: &[CertificateDer<'_>]) -> Result<String, String> {
    let leaf = chain
        .first()
        .ok_or_else(|| "the peer presented no client certificate".to_owned())?;
    node_name_from_cert(leaf)
}
