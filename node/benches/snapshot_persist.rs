//! What one snapshot costs the node that builds it, storing included, as the event log
//! grows: a real store on disk (`open_store` in a temporary directory), `events`
//! events applied through the state machine, then `build_snapshot` (copy, encode,
//! store durably) timed alone after a pause. Besides its wall time, each build is
//! charged the CPU time of the whole process and the bytes it had written to disk
//! (`/proc/self/io`), both counted until a settling pause after it, so that work the
//! store leaves to background threads (RocksDB's flushes and compactions) is charged
//! to the build that caused it.
//!
//! ```sh
//! cargo bench -p fleet-node --bench snapshot_persist
//! # FLEET_BENCH_EVENTS=10000,100000,300000 (default), FLEET_BENCH_BUILDS=5 (default)
//! ```

mod support;

use std::time::{Duration, Instant};

use fleet_node::raft::FleetRaft;
use fleet_node::state::{Actor, Command, FleetSettings, Request};
use fleet_node::store::{StateMachineStore, open_store};
use openraft::entry::RaftEntry;
use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine};
use openraft::type_config::alias::{EntryOf, LogIdOf};
use openraft::vote::RaftLeaderIdExt;
use support::{bench_event, listed, node};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The pause before each build, so that it does not overlap with the last one's
/// background work.
const PAUSE: Duration = Duration::from_secs(1);

/// How long after a build its background work is still charged to it.
const SETTLE: Duration = Duration::from_secs(2);

/// The most entries applied in one call, as openraft hands them over in batches.
const APPLY_BATCH: u64 = 1_000;

type Entry = EntryOf<FleetRaft>;

fn entry(index: u64, request: Request) -> Entry {
    let leader = <FleetRaft as openraft::RaftTypeConfig>::LeaderId::new_committed(1, 1);
    let command = Command {
        at_ms: 1_774_447_500_000 + index,
        actor: if index == 1 {
            Actor::Operator
        } else {
            Actor::Node(node("beast"))
        },
        request,
    };
    Entry::new_normal(LogIdOf::<FleetRaft>::new(leader, index), Box::new(command))
}

/// Applies the bootstrap and `events` appended events (indexes from 1).
async fn fill(machine: &mut StateMachineStore, events: u64) {
    let bootstrap = entry(1, Request::Bootstrap(FleetSettings::default_for("bench")));
    apply(machine, vec![bootstrap]).await;
    let mut index = 2;
    while index < events + 2 {
        let last = (index + APPLY_BATCH).min(events + 2);
        let batch = (index..last)
            .map(|i| {
                let event = bench_event(format!("bench-{i}"));
                entry(i, Request::AppendEvent(event))
            })
            .collect();
        apply(machine, batch).await;
        index = last;
    }
}

async fn apply(machine: &mut StateMachineStore, entries: Vec<Entry>) {
    let stream = futures::stream::iter(entries.into_iter().map(|entry| Ok((entry, None))));
    machine.apply(stream).await.expect("apply");
}

/// CPU time of this process (all threads), from `/proc/self/stat`.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat[stat.rfind(')').expect("a command name") + 2..]
        .split(' ')
        .collect();
    // utime and stime, fields 14 and 15 of the whole line: 11 and 12 after the name.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// Bytes this process had written to disk, from `/proc/self/io`.
fn bytes_written() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("/proc/self/io");
    io.lines()
        .find_map(|line| line.strip_prefix("write_bytes: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("write_bytes in /proc/self/io")
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() {
    let builds = listed("FLEET_BENCH_BUILDS", "5")[0].max(1);
    println!("| events | snapshot MiB | wall ms | CPU ms | MiB written |");
    println!("|---|---|---|---|---|");
    for events in listed("FLEET_BENCH_EVENTS", "10000,100000,300000") {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (effects, _receiver) = tokio::sync::mpsc::unbounded_channel();
        let (_log, mut machine, _handle) = open_store(dir.path(), 1, effects).expect("open");
        fill(&mut machine, events).await;
        let (mut walls, mut cpus, mut written, mut size) = (vec![], vec![], vec![], 0);
        for _ in 0..builds {
            tokio::time::sleep(PAUSE).await;
            let (cpu, bytes) = (process_cpu(), bytes_written());
            let started = Instant::now();
            let snapshot = machine.build_snapshot().await.expect("build");
            walls.push(started.elapsed().as_secs_f64() * 1e3);
            size = snapshot.snapshot.len();
            drop(snapshot);
            tokio::time::sleep(SETTLE).await;
            cpus.push((process_cpu() - cpu).as_secs_f64() * 1e3);
            written.push((bytes_written() - bytes) as f64 / (1024.0 * 1024.0));
        }
        println!(
            "| {events} | {:.1} | {:.1} | {:.0} | {:.1} |",
            size as f64 / (1024.0 * 1024.0),
            median(walls),
            median(cpus),
            median(written),
        );
    }
}
