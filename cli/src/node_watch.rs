//! `NodeWatch`: reads one query again and again as the fleet commits, for the commands
//! that follow something live (`roles watch`, `deliberate`, `drill`, `demo`).
//!
//! Each read waits on a node until it has applied a command newer than the last
//! answer, so a change shows as soon as that node applies it, without polling. When a
//! node stops answering, the watch moves on to the next one and starts again from
//! that node's own applied index (it may not have applied as far).

use std::time::Duration;

use anyhow::{Result, bail};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::RuleViolation;

use crate::connection::Connection;

/// How long to pause before asking the next node after one did not answer.
const NEXT_NODE_PAUSE: Duration = Duration::from_millis(100);

/// A live view of one query through the nodes of a connection.
pub struct NodeWatch<'a> {
    connection: &'a Connection,
    query: Query,
    nodes: Vec<String>,
    turn: usize,
    applied: u64,
    failures: usize,
    /// Print each switch to another node on stderr.
    pub verbose: bool,
}

impl<'a> NodeWatch<'a> {
    /// Watches `query` through `nodes` (in turn, on failure).
    pub fn new(connection: &'a Connection, query: Query, nodes: Vec<String>) -> Self {
        Self {
            connection,
            query,
            nodes,
            turn: 0,
            applied: 0,
            failures: 0,
            verbose: false,
        }
    }

    /// Watches `query` through the connection's candidates (the `--node` one alone).
    pub fn through_candidates(connection: &'a Connection, query: Query) -> Self {
        let nodes = connection.candidates();
        Self::new(connection, query, nodes)
    }

    /// The nodes this watch reads from.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }

    /// The next answer: once the node applied something after the last answer, or
    /// `wait` passed. Fails only when no node has answered for three rounds.
    pub async fn next(&mut self, wait: Duration) -> Result<Result<QueryAnswer, RuleViolation>> {
        loop {
            let node = &self.nodes[self.turn % self.nodes.len()];
            match self
                .connection
                .read_from(node, &self.query, self.applied + 1, wait)
                .await
            {
                Ok((answer, index)) => {
                    self.failures = 0;
                    self.applied = index;
                    return Ok(answer);
                }
                Err(error) => {
                    self.failures += 1;
                    if self.failures > 3 * self.nodes.len() {
                        bail!("no node answers: {error}");
                    }
                    if self.verbose {
                        eprintln!("fleetctl: {error}; trying the next node");
                    }
                    self.applied = 0;
                    self.turn += 1;
                    tokio::time::sleep(NEXT_NODE_PAUSE).await;
                }
            }
        }
    }
}
