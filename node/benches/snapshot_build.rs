//! What building one snapshot costs as the event log grows.
//!
//! A snapshot takes a copy of the state under the state's lock (so applying goes on
//! while it encodes), then encodes that copy. This bench builds a state with `events`
//! appended events, as the write bench appends them, and times both steps the way the
//! state machine store takes them: the copy, then the encoding into a buffer made with
//! room to spare (twice the snapshot, as the store makes room for twice the last one);
//! then as many builds whose encoding goes into a buffer that grows as it fills, for
//! comparison. Each step is timed alone, after a pause,
//! with `fleetd`'s allocator (mimalloc).
//!
//! ```sh
//! cargo bench -p fleet-node --bench snapshot_build
//! # FLEET_BENCH_EVENTS=10000,100000,300000 (default), FLEET_BENCH_BUILDS=5 (default)
//! ```

mod support;

use std::time::{Duration, Instant};

use fleet_node::state::{Actor, Command, FleetSettings, FleetState, Request, Snapshot};
use support::{bench_event, listed, node};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The pause before each timed step, so that steps do not overlap with the allocator's
/// own work on what the last one freed.
const PAUSE: Duration = Duration::from_secs(1);

fn apply(state: &mut FleetState, at_ms: u64, actor: Actor, request: Request) {
    let applied = state.apply(Command {
        at_ms,
        actor,
        request,
    });
    applied.result.expect("the bench's commands are valid");
}

/// A bootstrapped state with `events` appended events, each with its own key.
fn state_with(events: u64) -> FleetState {
    let mut state = FleetState::default();
    let now = 1_774_447_500_000;
    apply(
        &mut state,
        now,
        Actor::Operator,
        Request::Bootstrap(FleetSettings::default_for("bench")),
    );
    for n in 0..events {
        apply(
            &mut state,
            now + n,
            Actor::Node(node("beast")),
            Request::AppendEvent(bench_event(format!("bench-{n}"))),
        );
    }
    state
}

/// Milliseconds `step` took, run alone after a pause, and what it returned.
fn timed<T>(step: impl FnOnce() -> T) -> (f64, T) {
    std::thread::sleep(PAUSE);
    let started = Instant::now();
    let made = step();
    (started.elapsed().as_secs_f64() * 1e3, made)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One snapshot build as the store makes it: the copy, then its encoding (into a buffer
/// with room for `room` bytes); both dropped before the next. Milliseconds of each.
fn build(state: &FleetState, room: usize) -> (f64, f64, usize) {
    let (copy_ms, copy) = timed(|| state.clone());
    let (encode_ms, bytes) = timed(|| Snapshot::encode_with_capacity(&copy, room));
    (copy_ms, encode_ms, bytes.len())
}

fn main() {
    let builds = listed("FLEET_BENCH_BUILDS", "5")[0].max(1);
    println!(
        "| events | snapshot MiB | copy ms | encode ms, buffer with room | encode ms, growing buffer |"
    );
    println!("|---|---|---|---|---|");
    for events in listed("FLEET_BENCH_EVENTS", "10000,100000,300000") {
        let state = state_with(events);
        let size = Snapshot::encode(&state).len();
        let (mut copies, mut with_room, mut growing) = (vec![], vec![], vec![]);
        for (room, encodes) in [(2 * size, &mut with_room), (0, &mut growing)] {
            for _ in 0..builds {
                let (copy_ms, encode_ms, encoded) = build(&state, room);
                assert_eq!(encoded, size, "the copy encodes as the state");
                copies.push(copy_ms);
                encodes.push(encode_ms);
            }
        }
        println!(
            "| {events} | {:.1} | {:.2} | {:.2} | {:.2} |",
            size as f64 / (1024.0 * 1024.0),
            median(copies),
            median(with_room),
            median(growing),
        );
    }
}
