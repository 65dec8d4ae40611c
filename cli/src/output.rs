//! `OutputFormat`: how a command prints its result (`-o table|json`).

use clap::ValueEnum;
use serde::Serialize;

/// How to print a command's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Readable text and tables.
    Table,
    /// One JSON document, for scripts and agents.
    Json,
}

impl OutputFormat {
    /// Prints `report` as pretty JSON, or calls `table` to print it for people.
    pub fn print<T: Serialize>(self, report: &T, table: impl FnOnce(&T)) -> anyhow::Result<()> {
        match self {
            Self::Json => println!("{}", serde_json::to_string_pretty(report)?),
            Self::Table => table(report),
        }
        Ok(())
    }
}
