//! `ArtifactStore`: content-addressed artifacts of the event log (S2, seed 004).
//!
//! An artifact is stored under the sha256 of its content. The hash the caller gives is
//! checked before anything is stored, and checked again on every read, so a corrupt
//! copy is reported instead of served. Sizes are limits, never truncation points.
//! A stored artifact never changes, so it is held in an [`Arc`]: the copy of the state
//! a snapshot encodes shares it rather than copying up to 4 MiB of content.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::error::RuleViolation;
use super::limits::{
    ARTIFACT_BYTES_MAX, METADATA_BYTES_MAX, NAME_BYTES_MAX, check_size, check_text,
};

/// One stored artifact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// Lowercase hex sha256 of `content`.
    pub sha256: String,
    pub media_type: String,
    /// Free-form key/value metadata (file name, correlation id, …).
    pub metadata: BTreeMap<String, String>,
    #[serde(with = "base64_bytes")]
    pub content: Vec<u8>,
    pub put_by: String,
    pub put_at_ms: u64,
}

/// All artifacts by sha256.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactStore {
    pub artifacts: BTreeMap<String, Arc<Artifact>>,
}

/// The lowercase hex sha256 of `content`.
pub fn sha256_hex(content: &[u8]) -> String {
    hex::encode(Sha256::digest(content))
}

impl ArtifactStore {
    /// Stores `content` if it hashes to `sha256`; storing the same content again is a no-op.
    pub fn put(
        &mut self,
        by: &str,
        sha256: &str,
        media_type: &str,
        metadata: BTreeMap<String, String>,
        content: Vec<u8>,
        now: u64,
    ) -> Result<(&Artifact, bool), RuleViolation> {
        check_size("artifact", &content, ARTIFACT_BYTES_MAX)?;
        check_text("media_type", media_type, NAME_BYTES_MAX)?;
        let metadata_size: usize = metadata.iter().map(|(k, v)| k.len() + v.len()).sum();
        if metadata_size > METADATA_BYTES_MAX {
            return Err(RuleViolation::TooLarge {
                field: "metadata".into(),
                size: metadata_size,
                limit: METADATA_BYTES_MAX,
            });
        }
        let claimed = sha256.trim().to_ascii_lowercase();
        let actual = sha256_hex(&content);
        if claimed != actual {
            return Err(RuleViolation::ArtifactHashMismatch { claimed, actual });
        }
        let fresh = !self.artifacts.contains_key(&actual);
        if fresh {
            self.artifacts.insert(
                actual.clone(),
                Arc::new(Artifact {
                    sha256: actual.clone(),
                    media_type: media_type.into(),
                    metadata,
                    content,
                    put_by: by.into(),
                    put_at_ms: now,
                }),
            );
        }
        Ok((self.artifacts[&actual].as_ref(), fresh))
    }

    /// The artifact `sha256`, verified against its hash before it is returned.
    pub fn get(&self, sha256: &str) -> Result<&Artifact, RuleViolation> {
        let key = sha256.trim().to_ascii_lowercase();
        let artifact = self
            .artifacts
            .get(&key)
            .ok_or(RuleViolation::UnknownArtifact {
                sha256: key.clone(),
            })?;
        let actual = sha256_hex(&artifact.content);
        if actual != artifact.sha256 {
            return Err(RuleViolation::ArtifactCorrupt {
                sha256: key,
                actual,
            });
        }
        Ok(artifact)
    }
}

/// Serialises bytes as base64 text, so snapshots stay compact and readable JSON.
pub(crate) mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_stored_under_its_hash_and_verified_on_read() {
        let mut store = ArtifactStore::default();
        let content = b"diff --git a/x b/x".to_vec();
        let sha = sha256_hex(&content);
        store
            .put(
                "mac",
                &sha,
                "text/x-diff",
                BTreeMap::new(),
                content.clone(),
                1,
            )
            .unwrap();
        assert_eq!(store.get(&sha).unwrap().content, content);

        Arc::make_mut(store.artifacts.get_mut(&sha).unwrap())
            .content
            .push(b'!');
        assert_eq!(store.get(&sha).unwrap_err().code(), "artifact_corrupt");
    }

    #[test]
    fn a_wrong_hash_is_refused_and_nothing_is_stored() {
        let mut store = ArtifactStore::default();
        let error = store
            .put(
                "mac",
                &"0".repeat(64),
                "text/plain",
                BTreeMap::new(),
                b"x".to_vec(),
                1,
            )
            .unwrap_err();
        assert_eq!(error.code(), "artifact_hash_mismatch");
        assert!(store.artifacts.is_empty());
    }

    #[test]
    fn an_oversized_artifact_is_refused_with_the_limit() {
        let mut store = ArtifactStore::default();
        let content = vec![0u8; ARTIFACT_BYTES_MAX + 1];
        let sha = sha256_hex(&content);
        let error = store
            .put(
                "mac",
                &sha,
                "application/octet-stream",
                BTreeMap::new(),
                content,
                1,
            )
            .unwrap_err();
        assert!(error.to_string().contains("4194304"), "{error}");
    }
}
