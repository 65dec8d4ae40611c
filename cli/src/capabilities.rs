//! `fleetctl capabilities [NODE]`, `fleetctl capabilities publish FILE` and `fleetctl
//! route "<question>"`: what each node's agents can do, and who should answer (S4).
//!
//! A node publishes its `CAPABILITIES.md` (*I Can Do*, *I've Learned*, *I Need From
//! Others*) as itself (`--node NAME`); the fleet parses and keeps it. `route` asks the
//! fleet which node should answer a question — the specialist, else the node whose
//! *I Can Do* fits, else the primary — and whether the question needs a deliberation.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::capabilities::CapabilityManifest;
use fleet_node::state::router::{Advice, Route};
use fleet_node::state::{NodeName, Request, Response, RuleViolation};
use serde::Serialize;

use crate::connection::Connection;
use crate::output::OutputFormat;
use crate::route_report::RouteReport;

/// `fleetctl capabilities`: every node's manifest (or one node's), or `publish` one.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CapabilitiesArgs {
    /// Only this node's manifest.
    #[arg(value_name = "NODE")]
    pub of_node: Option<String>,
    #[command(subcommand)]
    pub command: Option<CapabilitiesCommand>,
}

#[derive(Debug, Subcommand)]
pub enum CapabilitiesCommand {
    /// Publish this node's CAPABILITIES.md (as the node: `--node NAME`).
    Publish {
        /// The markdown file.
        file: PathBuf,
    },
}

/// `fleetctl route "<question>"`.
#[derive(Debug, Args)]
pub struct RouteArgs {
    /// The question.
    pub question: String,
    /// Time-sensitive: skip deliberation, the responder answers now.
    #[arg(long)]
    pub urgent: bool,
}

/// One node's manifest as `fleetctl` shows it.
#[derive(Debug, Serialize)]
pub struct NodeCapabilities {
    pub node: String,
    /// "I Can Do".
    pub can_do: Vec<String>,
    /// "I've Learned".
    pub learned: Vec<String>,
    /// "I Need From Others".
    pub needs: Vec<String>,
    pub published_at_ms: u64,
    /// The markdown as published.
    pub markdown: String,
}

impl NodeCapabilities {
    fn new(node: &NodeName, manifest: CapabilityManifest) -> Self {
        Self {
            node: node.to_string(),
            can_do: manifest.can_do,
            learned: manifest.learned,
            needs: manifest.needs,
            published_at_ms: manifest.published_at_ms,
            markdown: manifest.markdown,
        }
    }
}

/// Publishes `markdown` as the connection's node's manifest; returns it as parsed.
pub async fn publish_capabilities(
    connection: &Connection,
    markdown: &str,
) -> Result<Result<CapabilityManifest, RuleViolation>> {
    let request = Request::PublishCapabilities {
        markdown: markdown.to_string(),
    };
    match connection.write(&request).await? {
        Ok(Response::Capabilities(manifest)) => Ok(Ok(*manifest)),
        Ok(other) => bail!("unexpected answer to a capabilities publish: {other:?}"),
        Err(violation) => Ok(Err(violation)),
    }
}

/// Publishes the manifest in the file at `path`.
pub async fn publish_capabilities_file(
    connection: &Connection,
    path: &Path,
) -> Result<Result<CapabilityManifest, RuleViolation>> {
    let markdown = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {} as text", path.display()))?;
    publish_capabilities(connection, &markdown).await
}

/// The published manifests, of `node` only when given, in node order.
pub async fn capabilities(
    connection: &Connection,
    node: Option<&str>,
) -> Result<Result<Vec<NodeCapabilities>, RuleViolation>> {
    let node = match node.map(NodeName::new).transpose() {
        Ok(node) => node,
        Err(violation) => return Ok(Err(violation)),
    };
    match connection.read(&Query::Capabilities { node }).await? {
        Ok(QueryAnswer::Capabilities(manifests)) => Ok(Ok(manifests
            .into_iter()
            .map(|(node, manifest)| NodeCapabilities::new(&node, manifest))
            .collect())),
        Ok(other) => bail!("unexpected answer to a capabilities read: {other:?}"),
        Err(violation) => Ok(Err(violation)),
    }
}

/// Which node should answer `question`, and whether it needs a deliberation.
pub async fn route(
    connection: &Connection,
    question: &str,
    urgent: bool,
) -> Result<Result<Route, RuleViolation>> {
    let query = Query::Route {
        question: question.to_string(),
        urgent,
    };
    match connection.read(&query).await? {
        Ok(QueryAnswer::Route(route)) => Ok(Ok(route)),
        Ok(other) => bail!("unexpected answer to a route read: {other:?}"),
        Err(violation) => Ok(Err(violation)),
    }
}

/// Runs `fleetctl capabilities [NODE]` and `fleetctl capabilities publish FILE`.
pub async fn run(
    connection: &Connection,
    args: &CapabilitiesArgs,
    output: OutputFormat,
) -> Result<()> {
    if let Some(CapabilitiesCommand::Publish { file }) = &args.command {
        let manifest = publish_capabilities_file(connection, file)
            .await?
            .map_err(|v| anyhow!(v))?;
        let node = connection.via.clone().unwrap_or_default();
        return output.print(&manifest, |manifest| {
            println!(
                "published {node}'s capabilities: {} I can do, {} learned, {} needed from others",
                manifest.can_do.len(),
                manifest.learned.len(),
                manifest.needs.len()
            );
        });
    }
    let manifests = capabilities(connection, args.of_node.as_deref())
        .await?
        .map_err(|v| anyhow!(v))?;
    output.print(&manifests, |manifests| {
        if manifests.is_empty() {
            match &args.of_node {
                Some(node) => println!("{node} has not published its capabilities"),
                None => println!("no node has published its capabilities"),
            }
        }
        print!("{}", manifest_text(manifests));
    })
}

/// Each node's three sections, every item in full.
fn manifest_text(manifests: &[NodeCapabilities]) -> String {
    let mut out = String::new();
    for (index, manifest) in manifests.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{}\n", manifest.node));
        for (title, items) in [
            ("I Can Do", &manifest.can_do),
            ("I've Learned", &manifest.learned),
            ("I Need From Others", &manifest.needs),
        ] {
            out.push_str(&format!("  {title}:\n"));
            if items.is_empty() {
                out.push_str("    (none)\n");
            }
            for item in items {
                out.push_str(&format!("    - {item}\n"));
            }
        }
    }
    out
}

/// A stable name of the advice for people: what to do with the question.
pub fn advice_text(advice: Advice) -> &'static str {
    match advice {
        Advice::Deliberate => "deliberate (tier 1 always does)",
        Advice::DeliberateIfConflict => "deliberate if positions conflict",
        Advice::ResponderAnswers => "no: the responder answers",
        Advice::EmergencyBypass => "no: emergency bypass, the responder answers now",
    }
}

/// Runs `fleetctl route`.
pub async fn run_route(
    connection: &Connection,
    args: &RouteArgs,
    output: OutputFormat,
) -> Result<()> {
    let route = route(connection, &args.question, args.urgent)
        .await?
        .map_err(|v| anyhow!(v))?;
    let advice = advice_text(route.advice);
    output.print(&RouteReport::of(&route), |route| {
        let responder = route.responder.as_deref().unwrap_or("none");
        println!("responder:   {responder}");
        println!("deliberate:  {advice}");
        println!("tier:        {}", route.tier);
        println!("reason:      {}", route.reason);
        for specialist in &route.specialists {
            println!(
                "specialist:  {} ({})",
                specialist.node,
                specialist.terms.join(", ")
            );
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_is_shown_even_when_empty() {
        let manifest = NodeCapabilities {
            node: "5070".into(),
            can_do: vec!["GPU inference".into()],
            learned: vec![],
            needs: vec!["beast: DNS changes".into()],
            published_at_ms: 0,
            markdown: String::new(),
        };
        assert_eq!(
            manifest_text(&[manifest]),
            "5070\n  I Can Do:\n    - GPU inference\n  I've Learned:\n    (none)\n  I Need From Others:\n    - beast: DNS changes\n"
        );
    }
}
