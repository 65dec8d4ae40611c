//! What the state benches share: node names, the event the write bench appends, and
//! the lists of numbers they read from the environment.

use fleet_node::state::NodeName;
use fleet_node::state::event_log::{EventStatus, NewEvent};

/// The node called `name`.
pub fn node(name: &str) -> NodeName {
    NodeName::new(name).expect("a valid node name")
}

/// The comma-separated numbers in environment variable `variable`, else in `default`.
pub fn listed(variable: &str, default: &str) -> Vec<u64> {
    std::env::var(variable)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .unwrap_or_else(|_| panic!("{variable}: {n}"))
        })
        .collect()
}

/// The event the write bench appends (a small record), with idempotency key `key`.
pub fn bench_event(key: String) -> NewEvent {
    NewEvent {
        event_type: "task.request".into(),
        stream: "project/bench".into(),
        room: "delegation".into(),
        to: "*".into(),
        correlation_id: None,
        status: EventStatus::Open,
        body: "a small record of about sixty bytes, as the write bench sends".into(),
        request_id: Some(key),
    }
}
