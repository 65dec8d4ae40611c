//! What encoding and decoding one `AppendEntries` request costs per entry: in JSON, as
//! the Raft transports and the log store encode entries, beside two binary encodings
//! that were weighed against it (postcard, which writes fields by position, and
//! MessagePack with field names, which keeps JSON's tolerance of added fields).
//!
//! The request carries `entries` entries of the event the write bench appends, as the
//! leader sends them to a follower; every encoding is checked to decode to the same
//! request. Figures are nanoseconds per entry, with `fleetd`'s allocator (mimalloc),
//! and the request's bytes per entry in each encoding.
//!
//! ```sh
//! cargo bench -p fleet-node --bench raft_encoding
//! # FLEET_BENCH_ENTRIES=1,8,64 (default)
//! ```

mod support;

use std::hint::black_box;
use std::time::Instant;

use fleet_node::raft::FleetRaft;
use fleet_node::state::{Actor, Command, Request};
use openraft::RaftTypeConfig;
use openraft::entry::RaftEntry;
use openraft::raft::AppendEntriesRequest;
use openraft::type_config::alias::{EntryOf, LogIdOf, VoteOf};
use openraft::vote::{RaftLeaderId, RaftLeaderIdExt, RaftVote};
use support::{bench_event, listed, node};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Append = AppendEntriesRequest<FleetRaft>;

/// How many entries are encoded in all per step and entry count.
const ENTRIES_PER_STEP: u64 = 200_000;

/// The leader of term 3, with an id as large as `node_id` gives.
const LEADER: u64 = 12_345_678_901_234;

fn log_id(index: u64) -> LogIdOf<FleetRaft> {
    LogIdOf::<FleetRaft>::new(
        <FleetRaft as RaftTypeConfig>::LeaderId::new_committed(3, LEADER),
        index,
    )
}

/// An append of `entries` events after index 1000, each with its own key.
fn append(entries: u64) -> Append {
    AppendEntriesRequest {
        vote: VoteOf::<FleetRaft>::from_leader_id(
            <FleetRaft as RaftTypeConfig>::LeaderId::new(3, LEADER),
            true,
        ),
        prev_log_id: Some(log_id(1000)),
        entries: (1..=entries)
            .map(|i| {
                EntryOf::<FleetRaft>::new_normal(
                    log_id(1000 + i),
                    Box::new(Command {
                        at_ms: 1_774_447_500_000 + i,
                        actor: Actor::Node(node("beast")),
                        request: Request::AppendEvent(bench_event(format!("bench-17-{i}"))),
                    }),
                )
            })
            .collect(),
        leader_commit: Some(log_id(999)),
    }
}

/// Runs `run` until `ENTRIES_PER_STEP` entries went through it (after a tenth as
/// many to warm up) and prints its time per entry as the row of `step`.
fn time(step: &str, entries: u64, mut run: impl FnMut()) {
    let rounds = ENTRIES_PER_STEP / entries;
    for _ in 0..rounds / 10 {
        run();
    }
    let start = Instant::now();
    for _ in 0..rounds {
        run();
    }
    let per_entry = start.elapsed().as_nanos() as f64 / (rounds * entries) as f64;
    println!("| {step} | {entries} | {per_entry:.0} |");
}

fn main() {
    let mut sizes = Vec::new();
    println!("| step | entries per append | ns per entry |");
    println!("|---|---|---|");
    for entries in listed("FLEET_BENCH_ENTRIES", "1,8,64") {
        let request = append(entries);
        let json = serde_json::to_vec(&request).unwrap();
        let positional = postcard::to_allocvec(&request).unwrap();
        let named = rmp_serde::to_vec_named(&request).unwrap();
        for decoded in [
            serde_json::from_slice::<Append>(&json).unwrap(),
            postcard::from_bytes::<Append>(&positional).unwrap(),
            rmp_serde::from_slice::<Append>(&named).unwrap(),
        ] {
            assert_eq!(serde_json::to_vec(&decoded).unwrap(), json, "round trip");
        }
        sizes.push((
            entries,
            [&json, &positional, &named].map(|b| b.len() as u64 / entries),
        ));

        time("JSON encode", entries, || {
            black_box(serde_json::to_vec(black_box(&request)).unwrap());
        });
        time("JSON decode", entries, || {
            black_box(serde_json::from_slice::<Append>(black_box(&json)).unwrap());
        });
        time("postcard encode", entries, || {
            black_box(postcard::to_allocvec(black_box(&request)).unwrap());
        });
        time("postcard decode", entries, || {
            black_box(postcard::from_bytes::<Append>(black_box(&positional)).unwrap());
        });
        time("MessagePack encode", entries, || {
            black_box(rmp_serde::to_vec_named(black_box(&request)).unwrap());
        });
        time("MessagePack decode", entries, || {
            black_box(rmp_serde::from_slice::<Append>(black_box(&named)).unwrap());
        });
    }
    println!("\n| entries per append | bytes per entry: JSON | postcard | MessagePack |");
    println!("|---|---|---|---|");
    for (entries, [json, positional, named]) in sizes {
        println!("| {entries} | {json} | {positional} | {named} |");
    }
}
