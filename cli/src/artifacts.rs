//! `fleetctl artifacts put|get`: content-addressed artifacts of the event log (S2).
//!
//! `put` hashes the content here and sends it with its sha256; the fleet checks the
//! hash again before storing it. `get` checks that the content it received hashes to
//! the id it asked for before it prints or writes a single byte, so a corrupt copy is
//! an error that names both hashes, never a file on disk. Sizes are limits, never
//! truncation points: a file past [`ARTIFACT_BYTES_MAX`] is refused before it is sent.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::artifacts::{Artifact, sha256_hex};
use fleet_node::state::limits::ARTIFACT_BYTES_MAX;
use fleet_node::state::{Request, Response, RuleViolation};
use serde::Serialize;

use crate::connection::Connection;
use crate::events::too_large;
use crate::output::OutputFormat;

/// The media type of an artifact unless `--media-type` names one.
pub const MEDIA_TYPE_DEFAULT: &str = "application/octet-stream";
/// The metadata key `put` records the file's name under.
pub const FILE_NAME_KEY: &str = "file_name";

/// `fleetctl artifacts`.
#[derive(Debug, Args)]
pub struct ArtifactsArgs {
    #[command(subcommand)]
    pub command: ArtifactsCommand,
}

#[derive(Debug, Subcommand)]
pub enum ArtifactsCommand {
    /// Store a file under its sha256 and print the id.
    Put {
        /// The file (at most 4 MiB).
        file: PathBuf,
        /// Its media type, e.g. `text/x-diff`.
        #[arg(long, default_value = MEDIA_TYPE_DEFAULT)]
        media_type: String,
        /// Metadata to keep with it (repeat for several); the file's name is kept as
        /// `file_name`.
        #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = parse_metadata)]
        metadata: Vec<(String, String)>,
    },
    /// Fetch an artifact, verify its sha256, and print it or write it to a file.
    Get {
        /// The artifact's sha256 (hex).
        sha256: String,
        /// Write the content here instead of to stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

fn parse_metadata(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .ok_or_else(|| format!("`{text}` is not KEY=VALUE"))
}

/// What the fleet stored.
#[derive(Debug, Serialize)]
pub struct StoredArtifact {
    pub sha256: String,
    pub size: usize,
    /// True when the fleet already held this content.
    pub repeated: bool,
}

/// A fetched artifact without its content, for when the content went to a file.
#[derive(Debug, Serialize)]
pub struct ArtifactSummary {
    pub sha256: String,
    pub media_type: String,
    pub metadata: BTreeMap<String, String>,
    pub size: usize,
    pub put_by: String,
    pub put_at_ms: u64,
    pub written_to: PathBuf,
}

/// Stores `content` under its sha256 (computed here). Content past
/// [`ARTIFACT_BYTES_MAX`] is refused with the fleet's own limit without being sent.
pub async fn put_artifact(
    connection: &Connection,
    content: Vec<u8>,
    media_type: &str,
    metadata: BTreeMap<String, String>,
) -> Result<Result<StoredArtifact, RuleViolation>> {
    if let Some(violation) = too_large("artifact", content.len() as u64, ARTIFACT_BYTES_MAX) {
        return Ok(Err(violation));
    }
    let request = Request::PutArtifact {
        sha256: sha256_hex(&content),
        media_type: media_type.to_string(),
        metadata,
        content,
    };
    match connection.write(&request).await? {
        Ok(Response::ArtifactStored {
            sha256,
            size,
            repeated,
        }) => Ok(Ok(StoredArtifact {
            sha256,
            size,
            repeated,
        })),
        Ok(other) => bail!("unexpected answer to an artifact put: {other:?}"),
        Err(violation) => Ok(Err(violation)),
    }
}

/// Stores the file at `path`, its name kept as [`FILE_NAME_KEY`]. Its size is checked
/// before it is read, so an oversized file is refused without being loaded or sent.
pub async fn put_artifact_file(
    connection: &Connection,
    path: &Path,
    media_type: &str,
    mut metadata: BTreeMap<String, String>,
) -> Result<Result<StoredArtifact, RuleViolation>> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if let Some(violation) = too_large("artifact", size, ARTIFACT_BYTES_MAX) {
        return Ok(Err(violation));
    }
    let content = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
        metadata
            .entry(FILE_NAME_KEY.to_string())
            .or_insert_with(|| name.to_string());
    }
    put_artifact(connection, content, media_type, metadata).await
}

/// Fetches artifact `sha256` and returns it only if its content hashes to that id; a
/// mismatch is [`RuleViolation::ArtifactCorrupt`], naming both hashes.
pub async fn get_artifact(
    connection: &Connection,
    sha256: &str,
) -> Result<Result<Artifact, RuleViolation>> {
    let wanted = sha256.trim().to_ascii_lowercase();
    let query = Query::Artifact {
        sha256: wanted.clone(),
    };
    let artifact = match connection.read(&query).await? {
        Ok(QueryAnswer::Artifact(artifact)) => *artifact,
        Ok(other) => bail!("unexpected answer to an artifact read: {other:?}"),
        Err(violation) => return Ok(Err(violation)),
    };
    Ok(verified(artifact, &wanted))
}

/// `artifact` if its content hashes to `wanted`.
fn verified(artifact: Artifact, wanted: &str) -> Result<Artifact, RuleViolation> {
    let actual = sha256_hex(&artifact.content);
    if actual == wanted {
        Ok(artifact)
    } else {
        Err(RuleViolation::ArtifactCorrupt {
            sha256: wanted.to_string(),
            actual,
        })
    }
}

/// Runs `fleetctl artifacts put|get`.
pub async fn run(
    connection: &Connection,
    args: &ArtifactsArgs,
    output: OutputFormat,
) -> Result<()> {
    match &args.command {
        ArtifactsCommand::Put {
            file,
            media_type,
            metadata,
        } => {
            let metadata = metadata.iter().cloned().collect();
            let stored = put_artifact_file(connection, file, media_type, metadata)
                .await?
                .map_err(|v| anyhow!(v))?;
            output.print(&stored, |stored| println!("{}", stored.sha256))
        }
        ArtifactsCommand::Get { sha256, out } => {
            let artifact = get_artifact(connection, sha256)
                .await?
                .map_err(|v| anyhow!(v))?;
            let Some(path) = out else {
                return match output {
                    OutputFormat::Json => output.print(&artifact, |_| {}),
                    OutputFormat::Table => {
                        let mut stdout = std::io::stdout().lock();
                        stdout.write_all(&artifact.content)?;
                        stdout.flush()?;
                        Ok(())
                    }
                };
            };
            std::fs::write(path, &artifact.content)
                .with_context(|| format!("cannot write {}", path.display()))?;
            let summary = ArtifactSummary {
                sha256: artifact.sha256,
                media_type: artifact.media_type,
                metadata: artifact.metadata,
                size: artifact.content.len(),
                put_by: artifact.put_by,
                put_at_ms: artifact.put_at_ms,
                written_to: path.clone(),
            };
            output.print(&summary, |summary| {
                println!(
                    "wrote {} bytes to {} (sha256 {} verified)",
                    summary.size,
                    summary.written_to.display(),
                    summary.sha256
                );
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(content: &[u8]) -> Artifact {
        Artifact {
            sha256: sha256_hex(content),
            media_type: "text/plain".into(),
            metadata: BTreeMap::new(),
            content: content.to_vec(),
            put_by: "mac".into(),
            put_at_ms: 1,
        }
    }

    #[test]
    fn content_that_does_not_hash_to_its_id_is_refused_naming_both_hashes() {
        let good = sha256_hex(b"patch");
        assert!(verified(artifact(b"patch"), &good).is_ok());

        let mut tampered = artifact(b"patch");
        tampered.content.push(b'!');
        let error = verified(tampered, &good).unwrap_err();
        assert_eq!(error.code(), "artifact_corrupt");
        let message = error.to_string();
        assert!(message.contains(&good), "{message}");
        assert!(message.contains(&sha256_hex(b"patch!")), "{message}");
    }

    #[test]
    fn metadata_is_key_equals_value() {
        assert_eq!(
            parse_metadata("branch=main=x"),
            Ok(("branch".to_string(), "main=x".to_string()))
        );
        assert!(parse_metadata("branch").is_err());
    }
}
