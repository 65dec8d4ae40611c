//! `CapabilityManifest`: what a node's agents can do, have learned, and need (S4, seed 000).
//!
//! Each node publishes its `CAPABILITIES.md` with three sections — *I Can Do*, *I've
//! Learned*, *I Need From Others* — as bullet lists. The parsed manifest feeds routing;
//! the markdown is kept verbatim so any node can show it.

use serde::{Deserialize, Serialize};

use super::error::RuleViolation;
use super::limits::{MANIFEST_BYTES_MAX, check_size};

/// A parsed capability manifest.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityManifest {
    /// "I Can Do".
    pub can_do: Vec<String>,
    /// "I've Learned".
    pub learned: Vec<String>,
    /// "I Need From Others".
    pub needs: Vec<String>,
    /// The markdown as published.
    pub markdown: String,
    pub published_at_ms: u64,
}

#[derive(Clone, Copy)]
enum Section {
    CanDo,
    Learned,
    Needs,
}

impl CapabilityManifest {
    /// Parses a `CAPABILITIES.md`. Headings are matched loosely (any level, any case,
    /// straight or curly apostrophe); bullets are `-` or `*` lines under them.
    pub fn parse(markdown: &str, now: u64) -> Result<Self, RuleViolation> {
        check_size("capabilities", markdown.as_bytes(), MANIFEST_BYTES_MAX)?;
        let mut manifest = Self {
            markdown: markdown.into(),
            published_at_ms: now,
            ..Self::default()
        };
        let mut section = None;
        let mut headings_found = 0;
        for line in markdown.lines() {
            let line = line.trim();
            if let Some(heading) = line.strip_prefix('#') {
                let heading = heading
                    .trim_start_matches('#')
                    .trim()
                    .to_lowercase()
                    .replace('’', "'");
                section = if heading.starts_with("i can do") {
                    Some(Section::CanDo)
                } else if heading.starts_with("i've learned")
                    || heading.starts_with("i have learned")
                {
                    Some(Section::Learned)
                } else if heading.starts_with("i need") {
                    Some(Section::Needs)
                } else {
                    None
                };
                headings_found += usize::from(section.is_some());
                continue;
            }
            let Some(item) = line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")) else {
                continue;
            };
            let item = item.trim().to_string();
            match section {
                Some(Section::CanDo) => manifest.can_do.push(item),
                Some(Section::Learned) => manifest.learned.push(item),
                Some(Section::Needs) => manifest.needs.push(item),
                None => {}
            }
        }
        if headings_found == 0 {
            return Err(RuleViolation::invalid(
                "capabilities",
                "no `## I Can Do`, `## I've Learned` or `## I Need From Others` section found",
            ));
        }
        Ok(manifest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_seed_manifest() {
        let markdown = "# CAPABILITIES.md — Infra\n## I Can Do\n- Cloudflare Pages deployment\n- Tailscale networking, SSH recovery\n## I’ve Learned\n- Config writes can crash gateway\n## I Need From Others\n- PA: credential requests\n";
        let manifest = CapabilityManifest::parse(markdown, 5).unwrap();
        assert_eq!(manifest.can_do.len(), 2);
        assert_eq!(manifest.learned, ["Config writes can crash gateway"]);
        assert_eq!(manifest.needs, ["PA: credential requests"]);
    }

    #[test]
    fn a_file_without_sections_is_refused() {
        let error = CapabilityManifest::parse("just text", 0).unwrap_err();
        assert!(error.to_string().contains("I Can Do"), "{error}");
    }
}
