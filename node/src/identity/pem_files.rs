//! Reading and writing the identity's files: PEM text in, PEM text out, and secrets
//! written readable by their owner only.
//!
//! Files are created, never overwritten: losing a fleet's CA key to a mistyped
//! directory cannot be undone, so a write into an existing path is refused.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::error::IdentityError;

/// The width of a PEM body line (RFC 7468).
const PEM_LINE_LEN: usize = 64;

/// Writes `contents` to a new file at `path`, readable and writable by its owner only
/// (mode 0600 on Unix). Refuses to overwrite an existing file.
pub fn write_private_file(path: &Path, contents: &[u8]) -> Result<(), IdentityError> {
    write_new(path, contents, true)
}

/// Writes `contents` to a new file at `path` with the usual permissions. Refuses to
/// overwrite an existing file.
pub fn write_new_file(path: &Path, contents: &[u8]) -> Result<(), IdentityError> {
    write_new(path, contents, false)
}

fn write_new(path: &Path, contents: &[u8], private: bool) -> Result<(), IdentityError> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    // On other platforms the file inherits the directory's permissions; Fleet's
    // nodes run on Linux and macOS.
    #[cfg(not(unix))]
    let _ = private;
    let mut file = options.open(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            IdentityError::AlreadyExists {
                path: path.to_path_buf(),
            }
        } else {
            IdentityError::Write {
                path: path.to_path_buf(),
                source,
            }
        }
    })?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .map_err(|source| IdentityError::Write {
            path: path.to_path_buf(),
            source,
        })
}

/// Reads a whole text file, naming the path on failure.
pub(crate) fn read_text(path: &Path) -> Result<String, IdentityError> {
    std::fs::read_to_string(path).map_err(|source| IdentityError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Encodes DER bytes as a PEM block with the given label (`CERTIFICATE`, …).
pub(crate) fn der_to_pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(PEM_LINE_LEN) {
        // Base64 output is ASCII, so every chunk is valid UTF-8.
        pem.push_str(std::str::from_utf8(line).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {label}-----\n"));
    pem
}

/// The PEM label for a private key's encoding.
pub(crate) fn private_key_label(key: &PrivateKeyDer<'_>) -> &'static str {
    match key {
        PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
        PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
        _ => "PRIVATE KEY",
    }
}

/// Every certificate in PEM text; `what` names the source in errors. At least one
/// certificate is required.
pub(crate) fn certificates_from_pem(
    what: &str,
    pem: &str,
) -> Result<Vec<CertificateDer<'static>>, IdentityError> {
    let certificates = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| IdentityError::Pem {
            what: what.to_owned(),
            reason: e.to_string(),
        })?;
    if certificates.is_empty() {
        return Err(IdentityError::Pem {
            what: what.to_owned(),
            reason: "holds no CERTIFICATE block".to_owned(),
        });
    }
    Ok(certificates)
}

/// The first private key in PEM text; `what` names the source in errors.
pub(crate) fn private_key_from_pem(
    what: &str,
    pem: &str,
) -> Result<PrivateKeyDer<'static>, IdentityError> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| IdentityError::Pem {
        what: what.to_owned(),
        reason: format!("no usable private key: {e}"),
    })
}
