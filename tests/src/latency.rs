//! `LatencyRun`: `clients` concurrent clients, each sending its share of `writes`
//! one after another, and what came of it — latency percentiles, throughput, and the
//! CPU time the servers and the clients spent per write.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

/// The nearest-rank `quantile` of `samples` (0.5 for the median, 0.99 for p99);
/// zero for no samples.
pub fn percentile(samples: &[Duration], quantile: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let rank = ((sorted.len() as f64) * quantile).ceil() as usize;
    sorted
        .get(rank.saturating_sub(1).min(sorted.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default()
}

/// The result of one run.
#[derive(Debug, Clone)]
pub struct LatencyRun {
    pub clients: usize,
    pub writes: usize,
    pub elapsed: Duration,
    /// Every write's latency, sorted.
    pub latencies: Vec<Duration>,
    /// Every write in the order it was sent: when, from the run's start, and how long
    /// it took; for a look at when the slow writes came.
    pub timeline: Vec<(Duration, Duration)>,
    /// When the run started, by the wall clock (to set the timeline beside logs).
    pub started_at: SystemTime,
    /// CPU time (user and system) the server processes spent during the run.
    pub server_cpu: Duration,
    /// CPU time this process (the clients) spent during the run.
    pub client_cpu: Duration,
    /// CPU time the hypervisor took from this machine's CPUs during the run (all of
    /// them together): while it does, every process here runs slower.
    pub stolen: Duration,
    /// The slowest `fdatasync` a [`DiskProbe`](crate::disk_probe::DiskProbe) timed
    /// during the run, when one ran: a stall of the disk stalls every commit.
    pub slowest_disk_sync: Option<Duration>,
    /// The median time one load took in the chases a
    /// [`MemoryProbe`](crate::memory_probe::MemoryProbe) timed during the run, when one
    /// ran: how fast the host's memory answered meanwhile.
    pub memory_load: Option<Duration>,
    /// How many CPUs the machine has (those `/proc/stat` counts the stolen time of).
    pub cpus: usize,
}

impl LatencyRun {
    /// Runs `clients` tasks; task `c` calls `write(c, i)` for its writes in turn, each
    /// made by `make_writer(c)` first (a connection per client). `servers` are the
    /// process ids whose CPU time the run accounts for.
    pub async fn measure<W, Fut, M, MFut>(
        clients: usize,
        writes: usize,
        servers: &[u32],
        make_writer: M,
    ) -> Result<Self>
    where
        M: Fn(usize) -> MFut,
        MFut: Future<Output = Result<W>>,
        W: FnMut(usize) -> Fut + Send + 'static,
        Fut: Future<Output = Result<()>> + Send,
    {
        let per_client = writes.div_ceil(clients);
        let mut writers = Vec::with_capacity(clients);
        for client in 0..clients {
            writers.push(make_writer(client).await?);
        }
        let cpu_before = (cpu_time(servers)?, cpu_time(&[std::process::id()])?);
        let stolen_before = stolen_ticks()?;
        let (started, started_at) = (Instant::now(), SystemTime::now());
        let tasks: Vec<_> = writers
            .into_iter()
            .map(|mut write| {
                tokio::spawn(async move {
                    let mut writes = Vec::with_capacity(per_client);
                    for i in 0..per_client {
                        let sent = Instant::now();
                        write(i).await?;
                        writes.push((sent - started, sent.elapsed()));
                    }
                    Ok::<_, anyhow::Error>(writes)
                })
            })
            .collect();
        let mut timeline = Vec::with_capacity(per_client * clients);
        for task in tasks {
            timeline.extend(task.await??);
        }
        let elapsed = started.elapsed();
        let cpu_after = (cpu_time(servers)?, cpu_time(&[std::process::id()])?);
        let stolen = stolen_ticks()?.saturating_sub(stolen_before);
        timeline.sort();
        let mut latencies: Vec<Duration> = timeline.iter().map(|(_, took)| *took).collect();
        latencies.sort();
        Ok(Self {
            clients,
            writes: latencies.len(),
            elapsed,
            latencies,
            timeline,
            started_at,
            server_cpu: cpu_after.0.saturating_sub(cpu_before.0),
            client_cpu: cpu_after.1.saturating_sub(cpu_before.1),
            stolen: ticks(stolen),
            slowest_disk_sync: None,
            memory_load: None,
            cpus: cpu_count()?,
        })
    }

    /// The latency at `quantile` (0.5 for the median).
    pub fn percentile(&self, quantile: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((self.latencies.len() as f64 - 1.0) * quantile).round() as usize;
        self.latencies[rank.min(self.latencies.len() - 1)]
    }

    /// The timeline as CSV: one line per write, `sent_ms,latency_ms`, in the order sent,
    /// after a comment line with the run's start in Unix milliseconds.
    pub fn timeline_csv(&self) -> String {
        let start_ms = self
            .started_at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        let mut csv = format!("# started_unix_ms={start_ms}\nsent_ms,latency_ms\n");
        for (sent, took) in &self.timeline {
            let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
            csv.push_str(&format!("{:.3},{:.3}\n", ms(sent), ms(took)));
        }
        csv
    }

    /// Writes per second.
    pub fn throughput(&self) -> f64 {
        self.writes as f64 / self.elapsed.as_secs_f64()
    }

    /// Microseconds of server CPU time per write (all servers together).
    pub fn server_cpu_per_write_us(&self) -> f64 {
        self.per_write_us(self.server_cpu)
    }

    /// Microseconds of client CPU time per write.
    pub fn client_cpu_per_write_us(&self) -> f64 {
        self.per_write_us(self.client_cpu)
    }

    /// The share of the machine's CPU time the hypervisor took during the run, in
    /// percent (100 when it took every CPU for the whole run).
    pub fn stolen_percent(&self) -> f64 {
        let available = self.elapsed.as_secs_f64() * self.cpus as f64;
        100.0 * self.stolen.as_secs_f64() / available.max(f64::MIN_POSITIVE)
    }

    fn per_write_us(&self, cpu: Duration) -> f64 {
        cpu.as_secs_f64() * 1e6 / self.writes.max(1) as f64
    }
}

/// The CPU time the hypervisor has taken from this virtual machine's CPUs since boot,
/// in ticks of `TICKS_PER_SEC`: the `steal` column of `/proc/stat`.
pub fn stolen_ticks() -> Result<u64> {
    let stat = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    // `cpu user nice system idle iowait irq softirq steal ...`
    stat.lines()
        .next()
        .and_then(|cpu| cpu.split_whitespace().nth(8))
        .and_then(|steal| steal.parse().ok())
        .context("/proc/stat: no steal column")
}

/// How many CPUs `/proc/stat` lists (`cpu0`, `cpu1`, …).
pub fn cpu_count() -> Result<usize> {
    let stat = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    let cpus = stat
        .lines()
        .filter(|line| {
            line.strip_prefix("cpu")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count();
    Ok(cpus.max(1))
}

/// Linux counts CPU time in `/proc/<pid>/stat` and `/proc/stat` in ticks of 1/100 s
/// (`USER_HZ`, 100 on every architecture the kernel exports it as).
const TICKS_PER_SEC: u64 = 100;

/// The CPU time (user and system, all threads) the processes `pids` have spent.
pub fn cpu_time(pids: &[u32]) -> Result<Duration> {
    let mut total = 0;
    for pid in pids {
        let path = format!("/proc/{pid}/stat");
        let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        // The command name, in parentheses, may hold spaces; the fields after it are
        // numbered from 3 (`state`): `utime` is field 14, `stime` field 15.
        let after_name = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .with_context(|| format!("{path}: no `)` after the command name"))?;
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        for field in [11, 12] {
            let value: u64 = fields
                .get(field)
                .and_then(|v| v.parse().ok())
                .with_context(|| format!("{path}: field {} is not a tick count", field + 3))?;
            total += value;
        }
    }
    Ok(ticks(total))
}

/// `count` ticks of [`TICKS_PER_SEC`] as a duration.
fn ticks(count: u64) -> Duration {
    Duration::from_millis(count * 1000 / TICKS_PER_SEC)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(elapsed: Duration, stolen: Duration) -> LatencyRun {
        LatencyRun {
            clients: 1,
            writes: 0,
            elapsed,
            latencies: Vec::new(),
            timeline: vec![(Duration::ZERO, Duration::from_millis(2))],
            started_at: UNIX_EPOCH + Duration::from_millis(1500),
            server_cpu: Duration::ZERO,
            client_cpu: Duration::ZERO,
            stolen,
            slowest_disk_sync: None,
            memory_load: None,
            cpus: 2,
        }
    }

    #[test]
    fn stolen_time_is_a_share_of_every_cpu_over_the_run() {
        let run = run_of(Duration::from_secs(10), Duration::from_secs(2));
        assert!((run.stolen_percent() - 10.0).abs() < 1e-9);
    }

    #[test]
    fn the_timeline_starts_with_the_wall_clock_start() {
        let csv = run_of(Duration::from_secs(1), Duration::ZERO).timeline_csv();
        assert_eq!(
            csv,
            "# started_unix_ms=1500\nsent_ms,latency_ms\n0.000,2.000\n"
        );
    }

    #[test]
    fn the_host_reports_its_stolen_time_and_cpus() {
        let before = stolen_ticks().unwrap();
        assert!(stolen_ticks().unwrap() >= before);
        let online = std::thread::available_parallelism().unwrap().get();
        assert!(cpu_count().unwrap() >= online, "/proc/stat lists every CPU");
    }
}
