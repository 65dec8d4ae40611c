//! `Sampler`: a thread that takes one sample every so often while a run goes on and
//! hands them all over, each with the wall-clock time it was taken, once stopped; the
//! bench's probes of the disk and of memory are each one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use anyhow::{Result, anyhow};

/// A sample and when it was taken.
pub type Timed<S> = (SystemTime, S);

/// The sampling thread while it runs.
pub struct Sampler<S> {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<Vec<Timed<S>>>>,
}

impl<S: Send + 'static> Sampler<S> {
    /// Starts a thread that runs `prepare` (what sampling needs, made on the thread
    /// itself: a file, a buffer), then calls the sampler it returns with 0, 1, 2, …
    /// every `interval`. However soon it is finished, it takes at least one sample:
    /// preparing alone can take longer than a short run.
    pub fn start<P, T>(interval: Duration, prepare: P) -> Self
    where
        P: FnOnce() -> Result<T> + Send + 'static,
        T: FnMut(u64) -> Result<S>,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut take = prepare()?;
            let mut samples = Vec::new();
            for n in 0.. {
                // The first sample is taken whenever the sampler is stopped; no later
                // one is taken after it was.
                if n > 0 && stopped.load(Ordering::Relaxed) {
                    break;
                }
                samples.push((SystemTime::now(), take(n)?));
                std::thread::sleep(interval);
            }
            Ok(samples)
        });
        Self { stop, thread }
    }

    /// Stops sampling and hands over the samples, oldest first; `what` names the
    /// sampler in the error should its thread have panicked.
    pub fn finish(self, what: &str) -> Result<Vec<Timed<S>>> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| anyhow!("the {what} panicked"))?
    }
}

/// How many milliseconds after `since` (a run's start) `at` was; below zero for a
/// sample taken before the run started.
pub fn offset_ms(at: SystemTime, since: SystemTime) -> f64 {
    match at.duration_since(since) {
        Ok(after) => after.as_secs_f64() * 1000.0,
        Err(before) => -before.duration().as_secs_f64() * 1000.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampler_numbers_its_samples_and_stamps_each_in_order() {
        let sampler = Sampler::start(Duration::from_millis(5), || Ok(|n| Ok(n * 10)));
        std::thread::sleep(Duration::from_millis(100));
        let samples = sampler.finish("counter").unwrap();
        assert!(samples.len() > 1, "{} samples in 100 ms", samples.len());
        assert!(
            samples
                .iter()
                .enumerate()
                .all(|(i, (_, n))| *n == i as u64 * 10)
        );
        assert!(samples.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn a_failed_preparation_or_sample_is_the_samplers_error() {
        let unprepared = Sampler::<u64>::start(Duration::from_millis(5), || {
            Err::<fn(u64) -> Result<u64>, _>(anyhow!("no file"))
        });
        assert_eq!(
            unprepared.finish("probe").unwrap_err().to_string(),
            "no file"
        );
        let failing = Sampler::<u64>::start(Duration::from_millis(5), || {
            Ok(|_| Err(anyhow!("sync failed")))
        });
        assert_eq!(
            failing.finish("probe").unwrap_err().to_string(),
            "sync failed"
        );
    }

    #[test]
    fn offsets_count_from_the_start_either_way() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(10);
        assert_eq!(
            offset_ms(start + Duration::from_millis(1500), start),
            1500.0
        );
        assert_eq!(offset_ms(start - Duration::from_millis(250), start), -250.0);
    }
}
