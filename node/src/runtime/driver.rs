//! `Driver`: the leader's clock for the state machine. While this node leads, it
//! proposes a `Tick` whenever the state's next deadline (a phase end, a due failback,
//! a session expiry) has passed, so time moves on even when nobody writes.

use std::sync::Arc;
use std::time::Duration;

use openraft::ServerState;
use openraft::async_runtime::WatchReceiver;

use super::fleet_node::{FleetNode, wall_clock_ms};
use crate::state::{Actor, Request};

/// How often the driver looks again when nothing is due; bounds how late a tick can be.
pub const DRIVER_IDLE_WAKE: Duration = Duration::from_millis(500);

/// Runs until the node shuts down.
pub async fn run_driver(node: Arc<FleetNode>) {
    let mut applied = node.state.subscribe();
    // Only a change of this node's Raft state matters here, not every write's progress.
    let mut server = node.raft.server_metrics();
    loop {
        let leading = server.borrow_watched().state == ServerState::Leader;
        let wait = if leading {
            let due = node.state.read(|state| state.next_deadline_ms());
            let now = wall_clock_ms();
            match due {
                Some(due) if due <= now => {
                    let actor = Actor::Leader(node.name.clone());
                    if let Err(error) = node.propose(actor, Request::Tick).await {
                        tracing::debug!(error = %error, "tick not committed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    continue;
                }
                Some(due) => Duration::from_millis(due - now).min(DRIVER_IDLE_WAKE),
                None => DRIVER_IDLE_WAKE,
            }
        } else {
            DRIVER_IDLE_WAKE
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            changed = applied.changed() => if changed.is_err() { return },
            changed = server.changed() => if changed.is_err() { return },
        }
    }
}
