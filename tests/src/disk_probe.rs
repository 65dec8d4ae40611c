//! The disk's speed as the benches see it: [`fdatasync_latencies`], a burst of timed
//! syncs before and after the runs, and `DiskProbe`, a thread that times one
//! `fdatasync` of a small write every so often while a run goes on, and the host's
//! stolen CPU time with each: how the disk and the host fared over the run, to set
//! beside the run's own timeline. On a shared virtual machine the disk stalls now and
//! then (for over a second at times): every commit of every system on it waits
//! meanwhile.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;
use tempfile::TempDir;

use crate::latency::stolen_ticks;
use crate::sampler::{Sampler, Timed, offset_ms};

/// The 300-byte record each timed sync follows.
const RECORD: [u8; 300] = [b'x'; 300];

/// A file, already written and synced, in a temporary directory beside the fleets'.
struct SyncTarget {
    _dir: TempDir,
    file: File,
    bytes: u64,
}

impl SyncTarget {
    fn create(bytes: u64) -> Result<Self> {
        let dir = tempfile::Builder::new().prefix("fleet-disk-").tempdir()?;
        let file = File::create(dir.path().join("sync-probe"))?;
        file.write_all_at(&vec![0; bytes as usize], 0)?;
        file.sync_all()?;
        Ok(Self {
            _dir: dir,
            file,
            bytes,
        })
    }

    /// Writes the record over the file's `n`th slot (within its length, so that its
    /// size never changes) and times the `fdatasync` after it.
    fn timed_sync(&self, n: u64) -> Result<Duration> {
        let offset = (n * RECORD.len() as u64) % (self.bytes - RECORD.len() as u64);
        self.file.write_all_at(&RECORD, offset)?;
        let started = Instant::now();
        self.file.sync_data()?;
        Ok(started.elapsed())
    }
}

/// How long `fdatasync` takes after a 300-byte write into a file already that long,
/// `samples` times in a row: the disk's share of a write's latency, which on a shared
/// host changes within minutes and decides much of what an fsync-bound system
/// achieves.
pub fn fdatasync_latencies(samples: usize) -> Result<Vec<Duration>> {
    let target = SyncTarget::create(64 * 1024)?;
    (0..samples as u64).map(|n| target.timed_sync(n)).collect()
}

/// One timed `fdatasync`: how long it took, and the host's stolen CPU ticks so far.
type Sample = (Duration, u64);

/// The probe while it runs.
pub struct DiskProbe(Sampler<Sample>);

impl DiskProbe {
    /// Starts timing a 300-byte write's `fdatasync` every `interval`, in a temporary
    /// directory beside the fleets'. However soon it is finished, it times at least
    /// one: on a busy disk, creating its file alone can take longer than a short run.
    pub fn start(interval: Duration) -> Self {
        Self(Sampler::start(interval, || {
            let target = SyncTarget::create(4096)?;
            Ok(move |n| Ok((target.timed_sync(n)?, stolen_ticks()?)))
        }))
    }

    /// Stops timing and hands over what was timed.
    pub fn finish(self) -> Result<DiskSamples> {
        Ok(DiskSamples(self.0.finish("disk probe")?))
    }
}

/// What a [`DiskProbe`] timed, each `fdatasync` with when it started.
pub struct DiskSamples(Vec<Timed<Sample>>);

impl DiskSamples {
    /// The slowest `fdatasync`.
    pub fn slowest(&self) -> Duration {
        self.0
            .iter()
            .map(|(_, (took, _))| *took)
            .max()
            .unwrap_or_default()
    }

    /// The samples as CSV, `sent_ms,fdatasync_ms,stolen_ticks`, with `sent_ms` counted
    /// from `since` (a run's `started_at`) and the host's stolen CPU ticks so far.
    pub fn csv(&self, since: SystemTime) -> String {
        let mut csv = String::from("sent_ms,fdatasync_ms,stolen_ticks\n");
        for (at, (took, stolen)) in &self.0 {
            csv.push_str(&format!(
                "{:.3},{:.3},{stolen}\n",
                offset_ms(*at, since),
                took.as_secs_f64() * 1000.0
            ));
        }
        csv
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_times_syncs_until_it_is_finished_and_lists_each_as_csv() {
        let since = SystemTime::now();
        let probe = DiskProbe::start(Duration::from_millis(5));
        std::thread::sleep(Duration::from_millis(200));
        let samples = probe.finish().unwrap();

        assert!(!samples.0.is_empty(), "a finished probe timed no fdatasync");
        assert!(samples.slowest() > Duration::ZERO);
        let csv = samples.csv(since);
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some("sent_ms,fdatasync_ms,stolen_ticks"));
        let rows: Vec<Vec<f64>> = lines
            .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
            .collect();
        assert_eq!(rows.len(), samples.0.len());
        assert!(
            rows.iter()
                .all(|r| r.len() == 3 && r[0] >= 0.0 && r[1] > 0.0)
        );
        assert!(
            rows.windows(2)
                .all(|w| w[0][0] < w[1][0] && w[0][2] <= w[1][2])
        );
    }

    #[test]
    fn a_probe_finished_at_once_still_times_one_sync() {
        let samples = DiskProbe::start(Duration::from_millis(5)).finish().unwrap();
        assert!(
            !samples.0.is_empty(),
            "a probe finished at once timed nothing"
        );
        assert!(samples.slowest() > Duration::ZERO);
    }
}
