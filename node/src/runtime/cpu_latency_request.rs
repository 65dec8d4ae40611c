//! `CpuLatencyRequest`: this process's request to the kernel's CPU latency QoS
//! (`/dev/cpu_dma_latency`), which tells `cpuidle` how long a wake-up may take.
//!
//! Held at 0 µs, every idle CPU polls in the kernel's idle loop instead of halting,
//! and a thread woken on it runs at once: the waker only sets a flag that the polling
//! CPU sees, with no interrupt between CPUs (and, in a virtual machine, no exit to
//! the hypervisor). That is the fastest wake-up there is, faster than one aimed at a
//! CPU that a thread at idle priority keeps busy, which must be interrupted to run
//! the woken thread. Measured with an `eventfd` ping-pong between two pinned threads
//! on a KVM guest whose CPUs halt at once: 57 µs a round trip, 27 µs with a spinning
//! thread at idle priority on each CPU, 8.5 µs with this request held at 0
//! (`docs/benchmarks-log.md`).
//!
//! Released, the request asks for nothing (the kernel's default, 2,000 s), and the
//! CPUs sleep as deeply as they would without it. Closing the file removes the
//! request, so a process that dies leaves no trace. Writing needs root (the device is
//! `0600`), and the request only acts where a `cpuidle` driver chooses the idle state
//! (not where `current_driver` is `none`): elsewhere [`CpuLatencyRequest::open`]
//! fails or the caller does not ask.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// The kernel's interface to the CPU latency QoS.
pub const DEVICE_PATH: &str = "/dev/cpu_dma_latency";

/// The latency the kernel assumes without any request, in µs
/// (`PM_QOS_CPU_LATENCY_DEFAULT_VALUE`): asking for it asks for nothing.
const NO_LIMIT_US: i32 = 2_000_000_000;

/// An open request; dropping it removes the request.
#[derive(Debug)]
pub struct CpuLatencyRequest {
    file: File,
    held: bool,
}

impl CpuLatencyRequest {
    /// Opens a request at `path` ([`DEVICE_PATH`] outside tests), released.
    pub fn open(path: &Path) -> std::io::Result<CpuLatencyRequest> {
        let mut request = CpuLatencyRequest {
            file: OpenOptions::new().write(true).open(path)?,
            held: true,
        };
        request.release()?;
        Ok(request)
    }

    /// Asks for wake-ups without delay: idle CPUs poll until [`release`](Self::release).
    pub fn hold(&mut self) -> std::io::Result<()> {
        if !self.held {
            self.ask(0)?;
            self.held = true;
        }
        Ok(())
    }

    /// Asks for nothing: idle CPUs sleep as they would without the request.
    pub fn release(&mut self) -> std::io::Result<()> {
        if self.held {
            self.ask(NO_LIMIT_US)?;
            self.held = false;
        }
        Ok(())
    }

    /// The device takes the latency as one native-endian `i32` per write.
    fn ask(&mut self, latency_us: i32) -> std::io::Result<()> {
        self.file.write_all(&latency_us.to_ne_bytes())
    }
}

/// The requests written to a stand-in file for the device, in order.
#[cfg(test)]
pub(crate) fn requests_written(path: &Path) -> Vec<i32> {
    std::fs::read(path)
        .expect("read what was written")
        .chunks_exact(4)
        .map(|bytes| i32::from_ne_bytes(bytes.try_into().expect("four bytes")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_opens_released_and_writes_only_when_it_changes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cpu_dma_latency");
        std::fs::write(&path, b"").expect("create the stand-in");
        let mut request = CpuLatencyRequest::open(&path).expect("open");
        request.hold().expect("hold");
        request.hold().expect("hold again");
        request.release().expect("release");
        request.release().expect("release again");
        request.hold().expect("hold");
        assert_eq!(
            requests_written(&path),
            [NO_LIMIT_US, 0, NO_LIMIT_US, 0],
            "each change written once, in order"
        );
    }

    #[test]
    fn a_missing_device_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("temp dir");
        let error = CpuLatencyRequest::open(&dir.path().join("absent")).expect_err("absent");
        assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    }

    /// Where the real device can be opened (root, Linux), the kernel reports the
    /// request while it is held. Elsewhere the test says so and checks nothing more.
    #[test]
    fn the_kernel_reports_a_held_request() {
        let Ok(mut request) = CpuLatencyRequest::open(Path::new(DEVICE_PATH)) else {
            eprintln!("{DEVICE_PATH} cannot be opened for writing here: not checked");
            return;
        };
        let current = || {
            let bytes = std::fs::read(DEVICE_PATH).expect("read the current target");
            i32::from_ne_bytes(bytes[..4].try_into().expect("four bytes"))
        };
        request.hold().expect("hold");
        assert_eq!(current(), 0, "the kernel's target while held");
    }
}
