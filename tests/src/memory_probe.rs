//! The host's memory as the benches see it: `MemoryProbe`, a thread that every so often
//! follows a [`PointerChain`], a chain of dependent loads through 24 MiB, one load per
//! cache line in an order no prefetcher can guess, and times it in its own thread's CPU
//! time, so that a wait for a core does not count. On a shared host other tenants' use
//! of the shared cache and of memory can slow each such load, and with it every process
//! here, with no CPU stolen: a row that ran slow with every core busy and none stolen
//! may have run on a host whose memory slowed meanwhile, and the probe, set beside the
//! row, says whether it did.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Result;

use crate::latency::percentile;
use crate::sampler::{Sampler, Timed, offset_ms};

/// The bytes a chain spans in the benches: more than a core's private caches hold, and
/// more than its share of a shared cache on the hosts measured.
pub const CHAIN_BYTES: usize = 24 << 20;
/// The dependent loads of one timed chase.
const LOADS_PER_CHASE: u32 = 5000;
/// Bytes per cache line: a chain visits the first slot of each.
const LINE_BYTES: usize = 64;
const SLOTS_PER_LINE: usize = LINE_BYTES / size_of::<usize>();

/// A buffer whose cache lines form one cycle in a random order: the first slot of each
/// line holds the index of the next line's first slot.
pub struct PointerChain {
    slots: Vec<usize>,
}

impl PointerChain {
    /// A chain through `bytes` of memory, in whole cache lines (at least two).
    pub fn new(bytes: usize) -> Self {
        let lines = (bytes / LINE_BYTES).max(2);
        // Sattolo's shuffle: a random permutation of the lines that is a single cycle
        // through all of them. A fixed seed makes every chain alike.
        let mut next: Vec<usize> = (0..lines).collect();
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        for line in (1..lines).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            next.swap(line, (state % line as u64) as usize);
        }
        let mut slots = vec![0; lines * SLOTS_PER_LINE];
        for (line, next) in next.into_iter().enumerate() {
            slots[line * SLOTS_PER_LINE] = next * SLOTS_PER_LINE;
        }
        Self { slots }
    }

    /// Follows `loads` links from slot `from`, each load waiting for the one before;
    /// returns the slot it stopped at.
    fn follow(&self, from: usize, loads: u32) -> usize {
        let mut at = from;
        for _ in 0..loads {
            at = self.slots[at];
        }
        std::hint::black_box(at)
    }
}

/// The CPU time the calling thread has run for (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu_time() -> Result<Duration> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes only into `now`, which outlives the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(Duration::new(now.tv_sec as u64, now.tv_nsec as u32))
}

/// The probe while it runs: each sample the CPU time one load of a chase took on
/// average.
pub struct MemoryProbe(Sampler<Duration>);

impl MemoryProbe {
    /// Starts timing a chase of 5,000 loads along `chain` every `interval`, each going
    /// on where the one before stopped. However soon it is finished, it times at least
    /// one.
    pub fn start(chain: Arc<PointerChain>, interval: Duration) -> Self {
        Self(Sampler::start(interval, move || {
            let mut at = 0;
            Ok(move |_| {
                let before = thread_cpu_time()?;
                at = chain.follow(at, LOADS_PER_CHASE);
                Ok(thread_cpu_time()?.saturating_sub(before) / LOADS_PER_CHASE)
            })
        }))
    }

    /// Stops timing and hands over what was timed.
    pub fn finish(self) -> Result<MemorySamples> {
        Ok(MemorySamples(self.0.finish("memory probe")?))
    }
}

/// What a [`MemoryProbe`] timed, each chase with when it started.
pub struct MemorySamples(Vec<Timed<Duration>>);

impl MemorySamples {
    /// The median time of one load, over the chases.
    pub fn median_load(&self) -> Duration {
        let loads: Vec<Duration> = self.0.iter().map(|(_, load)| *load).collect();
        percentile(&loads, 0.5)
    }

    /// The samples as CSV, `sent_ms,load_ns`, with `sent_ms` counted from `since` (a
    /// run's `started_at`) and each chase's CPU time per load.
    pub fn csv(&self, since: SystemTime) -> String {
        let mut csv = String::from("sent_ms,load_ns\n");
        for (at, load) in &self.0 {
            let offset = offset_ms(*at, since);
            csv.push_str(&format!("{offset:.3},{}\n", load.as_nanos()));
        }
        csv
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_is_one_cycle_through_every_line() {
        let chain = PointerChain::new(1000 * LINE_BYTES);
        let mut seen = vec![false; 1000];
        let mut at = 0;
        for step in 0..1000 {
            assert_eq!(at % SLOTS_PER_LINE, 0, "a link points inside a line");
            let line = at / SLOTS_PER_LINE;
            assert!(!seen[line], "line {line} was reached twice, at step {step}");
            seen[line] = true;
            at = chain.follow(at, 1);
        }
        assert_eq!(at, 0, "the chain does not close after visiting every line");
        let in_order = (0..1000)
            .filter(|line| chain.follow(line * SLOTS_PER_LINE, 1) == (line + 1) * SLOTS_PER_LINE)
            .count();
        assert!(
            in_order < 10,
            "{in_order} of 1000 lines lead to the next in memory"
        );
    }

    #[test]
    fn a_probe_times_chases_until_it_is_finished_and_lists_each_as_csv() {
        let since = SystemTime::now();
        let probe = MemoryProbe::start(
            Arc::new(PointerChain::new(1 << 20)),
            Duration::from_millis(5),
        );
        std::thread::sleep(Duration::from_millis(200));
        let samples = probe.finish().unwrap();

        assert!(
            samples.0.len() > 1,
            "a probe timed {} chases in 200 ms",
            samples.0.len()
        );
        let csv = samples.csv(since);
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some("sent_ms,load_ns"));
        let rows: Vec<Vec<f64>> = lines
            .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
            .collect();
        assert_eq!(rows.len(), samples.0.len());
        assert!(rows.iter().all(|r| r.len() == 2 && r[0] >= 0.0));
        assert!(rows.windows(2).all(|w| w[0][0] < w[1][0]));
        let median = samples.median_load().as_nanos() as f64;
        assert!(rows.iter().any(|r| r[1] <= median) && rows.iter().any(|r| r[1] >= median));
    }

    #[test]
    fn a_probe_finished_at_once_still_times_one_chase() {
        let chain = Arc::new(PointerChain::new(1 << 20));
        let samples = MemoryProbe::start(chain, Duration::from_millis(5))
            .finish()
            .unwrap();
        assert!(
            !samples.0.is_empty(),
            "a probe finished at once timed nothing"
        );
        assert!(samples.median_load() > Duration::ZERO);
    }
}
