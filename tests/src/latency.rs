//! `LatencyRun`: `clients` concurrent clients, each sending its share of `writes`
//! one after another, and what came of it — latency percentiles and throughput.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::Result;

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
}

impl LatencyRun {
    /// Runs `clients` tasks; task `c` calls `write(c, i)` for its writes in turn, each
    /// made by `make_writer(c)` first (a connection per client).
    pub async fn measure<W, Fut, M, MFut>(
        clients: usize,
        writes: usize,
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
        latencies.sort();
        Ok(Self {
            clients,
            writes: latencies.len(),
            elapsed,
            latencies,
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
}
