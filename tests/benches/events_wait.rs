//! `events wait` latency on a three-node loopback fleet: from an append made through
//! one node to the wake-up of a waiter parked on another (SPEC S2).
//!
//! The waiter asks Mac for events of the bench stream after its cursor and is held by
//! the node until one is applied there (a server push: the node wakes on each applied
//! command, no polling). The append goes through Beast, the leader, and then through
//! 5070, a follower that forwards it to Beast; the leader commits it and Mac applies
//! it. Each sample is the time from sending the append to the waiter's answer, so it
//! includes the commit, the replication to Mac and (through 5070) the forward. The
//! append's own round trip is measured beside it. The seed's event log polls every
//! 0.25–1 s.
//!
//! Run: `cargo bench --workspace --bench events_wait` after `cargo build --workspace
//! --release --bins` (optimised), or with `--profile dev` after `cargo build
//! --workspace --all-targets` (the debug build). `FLEET_BENCH_EVENTS` sets how many per
//! series (default 200), after 20 uncounted warm-up rounds. Prints a Markdown table
//! for `docs/benchmarks.md`.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::event_log::{EventFilter, EventStatus, NewEvent};
use fleet_node::state::{Request, Response};
use fleet_tests::ProcessFleet;
use fleet_tests::latency::percentile;

const NODES: [&str; 3] = ["beast", "5070", "mac"];
const STREAM: &str = "bench/events-wait";
/// Rounds run before measuring, not counted.
const WARM_UP: usize = 20;

/// `count` rounds of: a waiter parked on `waiter_node` for the next event of the bench
/// stream, then an append through `appender_node`. Returns the times from sending
/// each append to its waiter's answer, and to the append's acknowledgement.
async fn measure(
    fleet: &ProcessFleet,
    appender_node: &str,
    waiter_node: &str,
    count: usize,
) -> Result<(Vec<Duration>, Vec<Duration>)> {
    let mut appender = fleet.client(appender_node).await?;
    let filter = EventFilter {
        stream: Some(STREAM.into()),
        ..EventFilter::default()
    };
    let since_all = Query::Events {
        filter: filter.clone(),
        since: 0,
        limit: 1,
    };
    let mut cursor = match fleet
        .client(waiter_node)
        .await?
        .read(&since_all, true, 0)
        .await?
    {
        QueryAnswer::Events { last_id, .. } => last_id,
        other => bail!("unexpected answer {other:?}"),
    };
    let mut wake_ups = Vec::with_capacity(count);
    let mut appends = Vec::with_capacity(count);
    for round in 0..count {
        let query = Query::Events {
            filter: filter.clone(),
            since: cursor,
            limit: 10,
        };
        let mut parked = fleet.client(waiter_node).await?;
        let wait = tokio::spawn(async move {
            let answer = parked.read_until_ready(&query, 5_000).await;
            (answer, Instant::now())
        });
        // Let the waiter reach its node and park before the append goes out.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let append = Request::AppendEvent(NewEvent {
            event_type: "bench.tick".into(),
            stream: STREAM.into(),
            room: "bench".into(),
            to: "*".into(),
            correlation_id: None,
            status: EventStatus::Open,
            body: format!("tick {round}"),
            request_id: None,
        });
        let sent = Instant::now();
        let event_id = match appender.write(&append, true).await?.0? {
            Response::Event { event, .. } => event.id,
            other => bail!("unexpected answer {other:?}"),
        };
        appends.push(sent.elapsed());
        let (answer, woke) = wait.await?;
        match answer? {
            QueryAnswer::Events { events, .. } if events.iter().any(|e| e.id == event_id) => {}
            other => bail!("round {round}: the waiter woke without event {event_id}: {other:?}"),
        }
        wake_ups.push(woke.duration_since(sent));
        cursor = event_id;
    }
    Ok((wake_ups, appends))
}

fn main() -> Result<()> {
    let count: usize = std::env::var("FLEET_BENCH_EVENTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut fleet = ProcessFleet::init(&NODES)?;
        fleet.start_all()?;
        fleet.bootstrap("beast")?;
        fleet.wait_for_status("beast leads", Duration::from_secs(30), |status| {
            status["leader"] == "beast" && status["primary"] == "beast"
        })?;
        println!("| append through | waiter on | samples | append → waiter woken p50 ms | p99 ms | append acknowledged p50 ms | p99 ms |");
        println!("|---|---|---|---|---|---|---|");
        // Warm up connections and the fleet's first moments (health reports, the
        // hand-over settling); not counted.
        measure(&fleet, "5070", "mac", WARM_UP).await?;
        for (appender, waiter) in [("beast", "mac"), ("5070", "mac")] {
            let (wake_ups, appends) = measure(&fleet, appender, waiter, count).await?;
            let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
            println!(
                "| {appender}{} | {waiter} | {} | {} | {} | {} | {} |",
                if appender == "beast" { " (leader)" } else { " (follower, forwards)" },
                wake_ups.len(),
                ms(percentile(&wake_ups, 0.5)),
                ms(percentile(&wake_ups, 0.99)),
                ms(percentile(&appends, 0.5)),
                ms(percentile(&appends, 0.99)),
            );
        }
        Ok(())
    })
}
