//! `SpinWindow`: keeps the CPUs awake for a short window after each round of the log
//! writer, so that the next step of a write (a peer's answer, the disk's completion,
//! the client's next request) wakes a thread on a CPU that is awake, rather than one
//! that halted meanwhile.
//!
//! A lone write passes from thread to thread some five times, between the client, the
//! leader and a follower. Where the CPUs halt as soon as they are idle (measured on
//! virtual machines whose idle CPUs do not poll; a desktop's deep sleep states should
//! act alike), each hand-off to a thread whose CPU halted waits for that CPU to wake,
//! and the thread then runs from cold caches. Go's runtime, and the kernel's
//! `haltpoll` idle driver, spin a while before they sleep for that reason; this does
//! the same for the whole process, without delaying any of its threads.
//!
//! One thread holds the window, in one of two ways (`Keeper`):
//! - where a `cpuidle` driver runs and the process may write `/dev/cpu_dma_latency`,
//!   it holds a [`CpuLatencyRequest`] of 0 µs for the window: the idle CPUs poll in
//!   the kernel's idle loop, and a wake-up aimed at one needs no interrupt at all;
//! - elsewhere it spins under `SCHED_IDLE`, so any other thread of any process that
//!   becomes runnable on its CPU preempts it at once, and the scheduler places
//!   wake-ups on its CPU as on an idle one. That wake-up still interrupts the CPU: on
//!   one host an `eventfd` round trip took 57 µs between halting CPUs, 27 µs with a
//!   spinning thread on each, 8.5 µs with the request held (`docs/benchmarks-log.md`).
//!
//! Only a lone write starts a window: one entry, finding the log writer idle. A round
//! under load ends it ([`stand_down`]): appends that came while the writer synced (a
//! leader's log) or several entries at once (a follower's, whose leader batches under
//! load). Under load the CPUs are busy anyway and a spinning thread would only be
//! preempted (measured: with a window after every round, 64 clients lost a tenth of
//! their throughput; ending it on followers under load too took 15–27% off the
//! servers' CPU per write at 16 and 64 clients).
//!
//! Where the kernel's `haltpoll` idle driver polls before halting (many KVM guests),
//! the window only duplicates the driver, and measured with a spinning thread, it
//! cost 16 and 64 clients 9–15% of their throughput against etcd's while a lone write
//! gained a few percent. Where no idle driver runs, the window can only spin; on AMD
//! guests of that kind (two hosts, each weighed with the window on and off) it bought
//! a lone write nothing, cost it the spinning thread's CPU (the servers' CPU per write
//! up by 70% or more) and raised its p99 by a quarter or more, while on Intel
//! guests of that kind it took 5–14% off a lone write on two hosts of three. So an
//! unset window follows the host ([`window_for`]): none where `haltpoll` polls, or
//! where no driver runs on an AMD CPU; a window where `haltpoll` is told not to poll
//! (`haltpoll.guest_halt_poll_ns=0`), another driver runs, or none runs on another CPU.
//!
//! The window is measured from the last [`touch`]; the thread sleeps once it has
//! passed, so an idle node costs nothing. Linux only; elsewhere [`start`] does
//! nothing.
//!
//! *Invariant:* a [`touch`] while the thread sleeps wakes it: the thread checks the
//! touch count under the lock it sleeps on, and a touch that sees it asleep notifies
//! under that lock.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::runtime::cpu_latency_request::{self, CpuLatencyRequest};

/// The process's spin window, once started.
static SPIN_WINDOW: OnceLock<SpinWindow> = OnceLock::new();

/// The window and the state its thread shares with [`touch`].
struct SpinWindow {
    /// How long a window lasts after a touch, in nanoseconds.
    window_nanos: u64,
    /// When the process started counting, for `last_touch`.
    epoch: Instant,
    /// Nanoseconds after `epoch` of the latest touch; 0 when there is no window.
    last_touch: AtomicU64,
    /// How many touches there were; the thread sleeps only while this does not change.
    touches: AtomicU64,
    /// Whether the thread is asleep (or about to be), so a touch must notify it.
    asleep: AtomicBool,
    /// How many times the thread woke from sleep to hold a window.
    windows: AtomicU64,
    lock: Mutex<()>,
    wake: Condvar,
}

/// How the window's thread keeps the CPUs awake.
#[derive(Debug)]
enum Keeper {
    /// Holds a CPU latency request of 0 µs, sleeping meanwhile: idle CPUs poll.
    LatencyRequest(CpuLatencyRequest),
    /// Spins under `SCHED_IDLE`: one CPU stays busy with what nothing else wants.
    Spin,
}

/// The window when the config sets none.
pub const DEFAULT_WINDOW: Duration = Duration::from_micros(1000);

/// Where the kernel names its idle driver (absent without `cpuidle`, as off Linux).
const IDLE_DRIVER_PATH: &str = "/sys/devices/system/cpu/cpuidle/current_driver";

/// How long the `haltpoll` driver lets an idle CPU poll at most before it halts, in ns
/// (absent without the driver).
const HALT_POLL_PATH: &str = "/sys/module/haltpoll/parameters/guest_halt_poll_ns";

/// Where the kernel names the CPU's maker (`vendor_id`, on x86).
const CPU_INFO_PATH: &str = "/proc/cpuinfo";

/// The `vendor_id` of AMD's CPUs.
const AMD: &str = "AuthenticAMD";

/// The window for a node: the configured microseconds if set; otherwise none where
/// idle CPUs poll before halting (the `haltpoll` driver, unless its
/// `guest_halt_poll_ns` is 0) or where no driver runs on an AMD CPU (`cpu_vendor`),
/// and [`DEFAULT_WINDOW`] where they halt at once (that driver told not to poll, any
/// other driver, or none on another CPU).
pub fn window_for(
    configured_us: Option<u64>,
    idle_driver: Option<&str>,
    halt_poll_ns: Option<u64>,
    cpu_vendor: Option<&str>,
) -> Duration {
    let polls_before_halting = idle_driver == Some("haltpoll") && halt_poll_ns != Some(0);
    let could_only_spin_on_amd = no_idle_driver(idle_driver) && cpu_vendor == Some(AMD);
    match configured_us {
        Some(us) => Duration::from_micros(us),
        None if polls_before_halting || could_only_spin_on_amd => Duration::ZERO,
        None => DEFAULT_WINDOW,
    }
}

/// Whether no `cpuidle` driver runs (the kernel says `none`, or has no `cpuidle`), so
/// the window could only spin.
fn no_idle_driver(idle_driver: Option<&str>) -> bool {
    matches!(idle_driver, None | Some("none"))
}

/// The kernel's idle driver on this host (`haltpoll`, `intel_idle`, `acpi_idle`,
/// `none`, ...), if it says.
pub fn idle_driver() -> Option<String> {
    std::fs::read_to_string(IDLE_DRIVER_PATH)
        .ok()
        .map(|driver| driver.trim().to_owned())
}

/// How long the `haltpoll` driver polls at most (`guest_halt_poll_ns`), if it runs.
pub fn halt_poll_ns() -> Option<u64> {
    std::fs::read_to_string(HALT_POLL_PATH)
        .ok()
        .and_then(|nanos| nanos.trim().parse().ok())
}

/// The CPU's maker as the kernel names it (`GenuineIntel`, `AuthenticAMD`, ...), if it
/// says (x86 only).
pub fn cpu_vendor() -> Option<String> {
    let cpu_info = std::fs::read_to_string(CPU_INFO_PATH).ok()?;
    vendor_in(&cpu_info).map(str::to_owned)
}

/// The first `vendor_id` in the text of `/proc/cpuinfo`.
fn vendor_in(cpu_info: &str) -> Option<&str> {
    cpu_info.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "vendor_id").then(|| value.trim())
    })
}

/// Starts the process's window thread with `window` (nothing for a zero window, off
/// Linux, or when one was started already), and says how it keeps the CPUs awake: a
/// CPU latency request where a `cpuidle` driver runs (`idle_driver`, not `none`) and
/// the process may make one, a spinning thread otherwise.
pub fn start(window: Duration, idle_driver: Option<&str>) -> Option<&'static str> {
    if window.is_zero() || !cfg!(target_os = "linux") {
        return None;
    }
    if SPIN_WINDOW.set(SpinWindow::new(window)).is_err() {
        return None;
    }
    let keeper = Keeper::for_host(idle_driver);
    let name = keeper.name();
    let spawned = std::thread::Builder::new()
        .name("fleet-spin".into())
        .spawn(move || {
            if let Some(spin) = SPIN_WINDOW.get() {
                if let Err(error) = idle_priority() {
                    tracing::warn!(%error, "cannot lower the window's thread to SCHED_IDLE; the window stays off");
                    return;
                }
                spin.run(keeper);
            }
        });
    match spawned {
        Ok(_) => Some(name),
        Err(error) => {
            tracing::warn!(%error, "cannot start the window's thread; the window stays off");
            None
        }
    }
}

/// Marks activity: the spinning thread (if started) keeps its CPU busy for the window
/// from now. Costs two atomic operations while it spins, a wake-up when it slept.
pub fn touch() {
    if let Some(spin) = SPIN_WINDOW.get() {
        spin.touch();
    }
}

/// Ends the window: under load the CPUs are busy, and a spinning thread would only be
/// preempted. A spinning thread stops at once; a held request is released when the
/// thread's sleep ends, within the window. Costs one atomic store.
pub fn stand_down() {
    if let Some(spin) = SPIN_WINDOW.get() {
        spin.stand_down();
    }
}

impl SpinWindow {
    fn new(window: Duration) -> SpinWindow {
        SpinWindow {
            window_nanos: u64::try_from(window.as_nanos()).unwrap_or(u64::MAX),
            epoch: Instant::now(),
            last_touch: AtomicU64::new(0),
            touches: AtomicU64::new(0),
            asleep: AtomicBool::new(false),
            windows: AtomicU64::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    fn touch(&self) {
        self.last_touch
            .store(self.nanos_since_epoch(), Ordering::Relaxed);
        self.touches.fetch_add(1, Ordering::SeqCst);
        if self.asleep.load(Ordering::SeqCst) {
            let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.wake.notify_one();
        }
    }

    fn stand_down(&self) {
        self.last_touch.store(0, Ordering::Relaxed);
    }

    /// Nanoseconds since `epoch`, at least 1 (0 in `last_touch` means no window).
    fn nanos_since_epoch(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// What is left of the window since the last touch, if anything.
    fn remaining(&self) -> Option<Duration> {
        let last = self.last_touch.load(Ordering::Relaxed);
        let age = self.nanos_since_epoch().saturating_sub(last);
        (last != 0 && age < self.window_nanos)
            .then(|| Duration::from_nanos(self.window_nanos - age))
    }

    /// Sleeps until touched, keeps the CPUs awake until the window since the last
    /// touch has passed; forever.
    fn run(&self, mut keeper: Keeper) {
        loop {
            let seen = self.touches.load(Ordering::SeqCst);
            keeper.keep_awake(self);
            self.asleep.store(true, Ordering::SeqCst);
            let mut guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            while self.touches.load(Ordering::SeqCst) == seen {
                guard = self
                    .wake
                    .wait(guard)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            self.asleep.store(false, Ordering::SeqCst);
            self.windows.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Keeper {
    /// A CPU latency request where a `cpuidle` driver runs and the device opens; a
    /// spinning thread otherwise.
    fn for_host(idle_driver: Option<&str>) -> Keeper {
        if no_idle_driver(idle_driver) {
            return Keeper::Spin;
        }
        match CpuLatencyRequest::open(Path::new(cpu_latency_request::DEVICE_PATH)) {
            Ok(request) => Keeper::LatencyRequest(request),
            Err(error) => {
                tracing::info!(%error, path = cpu_latency_request::DEVICE_PATH, "no CPU latency request; the window spins instead");
                Keeper::Spin
            }
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Keeper::LatencyRequest(_) => "cpu latency request",
            Keeper::Spin => "spinning thread",
        }
    }

    /// Keeps the CPUs awake while `window` lasts. A request the kernel refuses turns
    /// this keeper into a spinning one, for good.
    fn keep_awake(&mut self, window: &SpinWindow) {
        if window.remaining().is_none() {
            return;
        }
        if let Keeper::LatencyRequest(request) = self {
            let held_through = request.hold().and_then(|()| {
                while let Some(rest) = window.remaining() {
                    std::thread::sleep(rest);
                }
                request.release()
            });
            match held_through {
                Ok(()) => return,
                Err(error) => {
                    tracing::warn!(%error, "the CPU latency request failed; the window spins instead");
                    *self = Keeper::Spin;
                }
            }
        }
        while window.remaining().is_some() {
            std::hint::spin_loop();
        }
    }
}

/// Puts the calling thread under `SCHED_IDLE` (allowed without privilege: it only
/// lowers the thread's claim on the CPU).
#[cfg(target_os = "linux")]
fn idle_priority() -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `sched_setscheduler` reads `param` only during the call, and pid 0 names
    // the calling thread.
    let result = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn idle_priority() -> std::io::Result<()> {
    Err(std::io::Error::other("SCHED_IDLE is Linux's"))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// A generous bound for what takes microseconds: long enough for a loaded host.
    const SOON: Duration = Duration::from_secs(5);

    fn wait_until(what: &str, condition: impl Fn() -> bool) {
        let deadline = Instant::now() + SOON;
        while !condition() {
            assert!(Instant::now() < deadline, "not within {SOON:?}: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn started(window: Duration) -> Arc<SpinWindow> {
        started_with(window, Keeper::Spin)
    }

    fn started_with(window: Duration, keeper: Keeper) -> Arc<SpinWindow> {
        let spin = Arc::new(SpinWindow::new(window));
        let runner = spin.clone();
        std::thread::spawn(move || runner.run(keeper));
        spin
    }

    #[test]
    fn an_unset_window_follows_whether_idle_cpus_poll_and_a_set_one_wins() {
        let millisecond = Duration::from_millis(1);
        let intel = Some("GenuineIntel");
        assert_eq!(
            window_for(None, Some("haltpoll"), Some(200_000), intel),
            Duration::ZERO
        );
        assert_eq!(
            window_for(None, Some("haltpoll"), None, intel),
            Duration::ZERO
        );
        assert_eq!(
            window_for(None, Some("haltpoll"), Some(0), intel),
            millisecond,
            "haltpoll told not to poll halts at once"
        );
        assert_eq!(window_for(None, Some("none"), None, intel), millisecond);
        assert_eq!(
            window_for(None, Some("intel_idle"), None, intel),
            millisecond
        );
        assert_eq!(window_for(None, None, None, intel), millisecond);
        assert_eq!(window_for(None, Some("none"), None, None), millisecond);
        assert_eq!(
            window_for(Some(250), Some("haltpoll"), Some(200_000), intel),
            Duration::from_micros(250)
        );
        assert_eq!(
            window_for(Some(0), Some("none"), None, intel),
            Duration::ZERO
        );
    }

    #[test]
    fn an_amd_cpu_without_an_idle_driver_gets_no_window_unless_configured() {
        let amd = Some(AMD);
        assert_eq!(window_for(None, Some("none"), None, amd), Duration::ZERO);
        assert_eq!(window_for(None, None, None, amd), Duration::ZERO);
        assert_eq!(
            window_for(None, Some("haltpoll"), Some(0), amd),
            Duration::from_millis(1),
            "with a driver the window holds a CPU latency request"
        );
        assert_eq!(
            window_for(Some(500), Some("none"), None, amd),
            Duration::from_micros(500)
        );
    }

    #[test]
    fn the_vendor_is_read_from_the_first_processor() {
        let cpu_info = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n\n\
                        processor\t: 1\nvendor_id\t: AuthenticAMD\n";
        assert_eq!(vendor_in(cpu_info), Some(AMD));
        assert_eq!(vendor_in("processor\t: 0\nmodel name\t: ARMv8\n"), None);
    }

    #[test]
    fn no_cpuidle_driver_means_a_spinning_thread() {
        assert!(matches!(Keeper::for_host(None), Keeper::Spin));
        assert!(matches!(Keeper::for_host(Some("none")), Keeper::Spin));
    }

    #[test]
    fn a_window_holds_the_latency_request_and_releases_it_once_passed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cpu_dma_latency");
        std::fs::write(&path, b"").expect("create the stand-in");
        let request = CpuLatencyRequest::open(&path).expect("open");
        let requests = || cpu_latency_request::requests_written(&path);
        // A window that passed before the woken thread ran rightly holds nothing, so the
        // window is long enough for the thread to be scheduled on a loaded host.
        let spin = started_with(Duration::from_millis(500), Keeper::LatencyRequest(request));
        wait_until("asleep before any touch", || {
            spin.asleep.load(Ordering::SeqCst)
        });
        assert_eq!(requests().len(), 1, "opened released, nothing held yet");
        for round in 1..=2 {
            spin.touch();
            wait_until("held at 0 µs while the window lasts", || {
                let written = requests();
                written.len() == 2 * round && written.last() == Some(&0)
            });
            wait_until("asleep again once the window passed", || {
                spin.windows.load(Ordering::SeqCst) == round as u64
                    && spin.asleep.load(Ordering::SeqCst)
            });
            let written = requests();
            assert_eq!(written.len(), 1 + 2 * round, "{written:?}");
            assert_ne!(written[written.len() - 1], 0, "then released: {written:?}");
        }
    }

    #[test]
    fn a_touch_wakes_the_sleeping_thread_and_it_sleeps_again_after_the_window() {
        let spin = started(Duration::from_millis(2));
        wait_until("asleep before any touch", || {
            spin.asleep.load(Ordering::SeqCst)
        });
        for _ in 0..50 {
            let before = spin.windows.load(Ordering::SeqCst);
            spin.touch();
            wait_until("woken by the touch", || {
                spin.windows.load(Ordering::SeqCst) > before
            });
            wait_until("asleep again once the window passed", || {
                spin.asleep.load(Ordering::SeqCst)
            });
        }
    }

    #[test]
    fn standing_down_ends_a_long_window_at_once() {
        let spin = started(Duration::from_secs(3600));
        wait_until("asleep before any touch", || {
            spin.asleep.load(Ordering::SeqCst)
        });
        spin.touch();
        wait_until("woken by the touch", || {
            spin.windows.load(Ordering::SeqCst) == 1
        });
        assert!(
            !spin.asleep.load(Ordering::SeqCst),
            "spinning in its window"
        );
        spin.stand_down();
        wait_until("asleep after standing down", || {
            spin.asleep.load(Ordering::SeqCst)
        });
    }
}
