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

/// The lines of a table: `headers`, then `rows`, each column as wide as its widest
/// cell, two spaces apart, without trailing spaces.
pub fn table_lines<R: AsRef<[String]>>(headers: &[&str], rows: &[R]) -> Vec<String> {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row.as_ref()) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut lines = vec![line(headers.to_vec())];
    lines.extend(
        rows.iter()
            .map(|row| line(row.as_ref().iter().map(String::as_str).collect())),
    );
    lines
}
