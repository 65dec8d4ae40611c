//! `LatencyRun`: `clients` concurrent clients, each sending its share of `writes`
//! one after another, and what came of it — latency percentiles, throughput, and the
//! CPU time the servers and the clients spent per write.

use std::future::Future;
use std::time::{Duration, Instant};

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
    /// CPU time (user and system) the server processes spent during the run.
    pub server_cpu: Duration,
    /// CPU time this process (the clients) spent during the run.
    pub client_cpu: Duration,
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
        let started = Instant::now();
        let tasks: Vec<_> = writers
            .into_iter()
            .map(|mut write| {
                tokio::spawn(async move {
                    let mut latencies = Vec::with_capacity(per_client);
                    for i in 0..per_client {
                        let sent = Instant::now();
                        write(i).await?;
                        latencies.push(sent.elapsed());
                    }
                    Ok::<_, anyhow::Error>(latencies)
                })
            })
            .collect();
        let mut latencies = Vec::with_capacity(per_client * clients);
        for task in tasks {
            latencies.extend(task.await??);
        }
        let elapsed = started.elapsed();
        let cpu_after = (cpu_time(servers)?, cpu_time(&[std::process::id()])?);
        latencies.sort();
        Ok(Self {
            clients,
            writes: latencies.len(),
            elapsed,
            latencies,
            server_cpu: cpu_after.0.saturating_sub(cpu_before.0),
            client_cpu: cpu_after.1.saturating_sub(cpu_before.1),
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

    fn per_write_us(&self, cpu: Duration) -> f64 {
        cpu.as_secs_f64() * 1e6 / self.writes.max(1) as f64
    }
}

/// How long `fdatasync` takes after a 300-byte write into a file already that long,
/// `samples` times, in a temporary directory beside the fleets': the disk's share of a
/// write's latency, which on a shared host changes within minutes and decides much of
/// what an fsync-bound system achieves.
pub fn fdatasync_latencies(samples: usize) -> Result<Vec<Duration>> {
    use std::os::unix::fs::FileExt;
    const RECORD: [u8; 300] = [b'x'; 300];
    const FILE_BYTES: u64 = 64 * 1024;
    let dir = tempfile::Builder::new().prefix("fleet-disk-").tempdir()?;
    let file = std::fs::File::create(dir.path().join("sync-probe"))?;
    file.write_all_at(&[0; FILE_BYTES as usize], 0)?;
    file.sync_all()?;
    let mut latencies = Vec::with_capacity(samples);
    for i in 0..samples as u64 {
        file.write_all_at(&RECORD, (i * RECORD.len() as u64) % (FILE_BYTES - 300))?;
        let started = Instant::now();
        file.sync_data()?;
        latencies.push(started.elapsed());
    }
    Ok(latencies)
}

/// Linux counts a process's CPU time in `/proc/<pid>/stat` in ticks of 1/100 s
/// (`USER_HZ`, 100 on every architecture the kernel exports it as).
const TICKS_PER_SEC: u64 = 100;

/// The CPU time (user and system, all threads) the processes `pids` have spent.
pub fn cpu_time(pids: &[u32]) -> Result<Duration> {
    let mut ticks = 0;
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
            ticks += value;
        }
    }
    Ok(Duration::from_millis(ticks * 1000 / TICKS_PER_SEC))
}
