//! `fleetctl bulletin [post|ack|archive]`: the fleet's bulletin board of seed 000 (S3).
//!
//! Items read `[Source → Target|All] Subject`; the source is the authenticated caller.
//! Each target acknowledges for itself (as a node: `--node NAME`). The fleet flags an
//! item stale once it has gone unacknowledged for its `bulletin_stale_ms` (48 h), and
//! the list shows that flag in its `STATE` column; archiving (the operator's) takes old
//! items out of the list without deleting them (`--all` shows them).

use anyhow::{Result, anyhow, bail};
use chrono::{DateTime, NaiveDate};
use clap::{Args, Subcommand};
use fleet_node::api::query::{BulletinListing, Query, QueryAnswer};
use fleet_node::state::bulletin::{BulletinItem, Recipient};
use fleet_node::state::{Request, Response, RuleViolation};
use serde::Serialize;

use crate::connection::Connection;
use crate::events::BodyArgs;
use crate::output::{OutputFormat, table_lines};

/// `fleetctl bulletin`: the list, or `post`, `ack`, `archive`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BulletinArgs {
    /// Only items addressed to this name (items to All included).
    #[arg(long = "for", value_name = "NODE")]
    pub for_name: Option<String>,
    /// Include archived items.
    #[arg(long)]
    pub all: bool,
    #[command(subcommand)]
    pub command: Option<BulletinCommand>,
}

#[derive(Debug, Subcommand)]
pub enum BulletinCommand {
    /// Post an item, as this node (`--node NAME`) or the operator.
    Post {
        /// `all`, a node, or an agent name such as `infra`.
        #[arg(long, value_name = "infra|all|NODE")]
        to: String,
        /// The one-line subject.
        #[arg(long)]
        subject: String,
        #[command(flatten)]
        body: BodyArgs,
    },
    /// Acknowledge an item as this node (`--node NAME`).
    Ack {
        /// The item, e.g. `b-7`.
        id: String,
    },
    /// Archive every item posted before a day (UTC midnight). Operator only.
    Archive {
        /// The first day whose items stay, e.g. `2026-05-01`.
        #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_day)]
        before: NaiveDate,
    },
}

fn parse_day(text: &str) -> Result<NaiveDate, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a day like 2026-05-01"))
}

/// The start of `day` in UTC, in ms since the Unix epoch.
pub fn start_of_day_ms(day: NaiveDate) -> u64 {
    let millis = day
        .and_hms_opt(0, 0, 0)
        .map_or(0, |midnight| midnight.and_utc().timestamp_millis());
    u64::try_from(millis).unwrap_or(0)
}

/// What `archive` reports.
#[derive(Debug, Serialize)]
pub struct ArchiveReport {
    pub before_ms: u64,
    pub archived: usize,
}

/// Bulletin items, with whether each is acknowledged and stale as of the read.
pub async fn list_bulletin(
    connection: &Connection,
    for_name: Option<&str>,
    include_archived: bool,
) -> Result<Result<Vec<BulletinListing>, RuleViolation>> {
    let query = Query::Bulletin {
        // Names are kept in lowercase, as `Recipient::parse` stores them.
        for_name: for_name.map(|name| name.trim().to_ascii_lowercase()),
        include_archived,
    };
    match connection.read(&query).await? {
        Ok(QueryAnswer::Bulletin(listings)) => Ok(Ok(listings)),
        Ok(other) => bail!("unexpected answer to a bulletin read: {other:?}"),
        Err(violation) => Ok(Err(violation)),
    }
}

/// Posts an item to `to` (`all` or a name), authored by the connection's actor.
pub async fn post_bulletin(
    connection: &Connection,
    to: &str,
    subject: &str,
    body: &str,
) -> Result<Result<BulletinItem, RuleViolation>> {
    let to = match Recipient::parse(to) {
        Ok(to) => to,
        Err(violation) => return Ok(Err(violation)),
    };
    let request = Request::PostBulletin {
        to,
        subject: subject.to_string(),
        body: body.to_string(),
    };
    item(connection.write(&request).await?)
}

/// Acknowledges item `id` as the connection's node.
pub async fn ack_bulletin(
    connection: &Connection,
    id: &str,
) -> Result<Result<BulletinItem, RuleViolation>> {
    let request = Request::AckBulletin {
        id: id.trim().to_string(),
    };
    item(connection.write(&request).await?)
}

fn item(written: Result<Response, RuleViolation>) -> Result<Result<BulletinItem, RuleViolation>> {
    match written {
        Ok(Response::Bulletin(item)) => Ok(Ok(*item)),
        Ok(other) => bail!("unexpected answer to a bulletin write: {other:?}"),
        Err(violation) => Ok(Err(violation)),
    }
}

/// Archives every item posted before `before_ms`; returns how many.
pub async fn archive_bulletin(
    connection: &Connection,
    before_ms: u64,
) -> Result<Result<usize, RuleViolation>> {
    match connection
        .write(&Request::ArchiveBulletin { before_ms })
        .await?
    {
        Ok(Response::Archived { count }) => Ok(Ok(count)),
        Ok(other) => bail!("unexpected answer to a bulletin archive: {other:?}"),
        Err(violation) => Ok(Err(violation)),
    }
}

/// Runs `fleetctl bulletin …`.
pub async fn run(connection: &Connection, args: &BulletinArgs, output: OutputFormat) -> Result<()> {
    match &args.command {
        None => {
            let listings = list_bulletin(connection, args.for_name.as_deref(), args.all)
                .await?
                .map_err(|v| anyhow!(v))?;
            output.print(&listings, |listings| print!("{}", table(listings)))
        }
        Some(BulletinCommand::Post { to, subject, body }) => {
            let body = body.read()?.map_err(|v| anyhow!(v))?;
            let item = post_bulletin(connection, to, subject, &body)
                .await?
                .map_err(|v| anyhow!(v))?;
            output.print(&item, |item| {
                println!("posted {}: {}", item.id, item.heading());
            })
        }
        Some(BulletinCommand::Ack { id }) => {
            let item = ack_bulletin(connection, id)
                .await?
                .map_err(|v| anyhow!(v))?;
            output.print(&item, |item| {
                let by: Vec<&str> = item.acks.keys().map(String::as_str).collect();
                println!(
                    "{} acknowledged: {} (acked by {})",
                    item.id,
                    item.heading(),
                    by.join(", ")
                );
            })
        }
        Some(BulletinCommand::Archive { before }) => {
            let before_ms = start_of_day_ms(*before);
            let archived = archive_bulletin(connection, before_ms)
                .await?
                .map_err(|v| anyhow!(v))?;
            let report = ArchiveReport {
                before_ms,
                archived,
            };
            output.print(&report, |report| {
                println!(
                    "archived {} item(s) posted before {before}",
                    report.archived
                );
            })
        }
    }
}

/// `open`, `acknowledged`, `STALE` (in capitals, so it stands out) or `archived`.
fn state(listing: &BulletinListing) -> &'static str {
    if listing.item.archived {
        "archived"
    } else if listing.stale {
        "STALE"
    } else if listing.acknowledged {
        "acknowledged"
    } else {
        "open"
    }
}

/// `2026-04-06 14:30 UTC`.
fn posted_at(at_ms: u64) -> String {
    i64::try_from(at_ms)
        .ok()
        .and_then(DateTime::from_timestamp_millis)
        .map_or_else(
            || at_ms.to_string(),
            |at| at.format("%Y-%m-%d %H:%M UTC").to_string(),
        )
}

/// The list as a table, each row followed by the item's body, verbatim and indented.
fn table(listings: &[BulletinListing]) -> String {
    if listings.is_empty() {
        return "the bulletin board is empty\n".to_string();
    }
    let headers = ["ID", "POSTED", "ITEM", "ACKED BY", "STATE"];
    let rows: Vec<[String; 5]> = listings
        .iter()
        .map(|listing| {
            let acked: Vec<&str> = listing.item.acks.keys().map(String::as_str).collect();
            [
                listing.item.id.clone(),
                posted_at(listing.item.posted_at_ms),
                listing.item.heading(),
                if acked.is_empty() {
                    "-".to_string()
                } else {
                    acked.join(", ")
                },
                state(listing).to_string(),
            ]
        })
        .collect();
    let mut lines = table_lines(&headers, &rows).into_iter();
    let mut out = String::new();
    if let Some(header) = lines.next() {
        out.push_str(&header);
        out.push('\n');
    }
    for (line, listing) in lines.zip(listings) {
        out.push_str(&line);
        out.push('\n');
        for body_line in listing.item.body.lines() {
            out.push_str("    ");
            out.push_str(body_line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn archive_days_start_at_utc_midnight() {
        let day = parse_day("2026-04-06").unwrap();
        assert_eq!(start_of_day_ms(day), 1_775_433_600_000);
        assert_eq!(
            posted_at(1_775_433_600_000 + 52_200_000),
            "2026-04-06 14:30 UTC"
        );
        assert!(parse_day("April 6").is_err());
    }

    #[test]
    fn stale_items_are_flagged_and_bodies_follow_their_row() {
        let listing = BulletinListing {
            item: BulletinItem {
                id: "b-1".into(),
                from: "mac".into(),
                to: Recipient::Named("infra".into()),
                subject: "CF billing renewal".into(),
                body: "May need a payment method update.".into(),
                posted_at_ms: 1_775_433_600_000,
                acks: BTreeMap::new(),
                archived: false,
            },
            acknowledged: false,
            stale: true,
        };
        let printed = table(&[listing]);
        let lines: Vec<&str> = printed.lines().collect();
        assert_eq!(lines.len(), 3, "{printed}");
        assert!(lines[0].starts_with("ID"), "{printed}");
        assert!(
            lines[1].contains("[mac → infra] CF billing renewal"),
            "{printed}"
        );
        assert!(lines[1].ends_with("STALE"), "{printed}");
        assert_eq!(lines[2], "    May need a payment method update.");
    }
}
