//! `SpinWindow`: a thread at idle priority that keeps one CPU busy for a short window
//! after each round of the log writer, so that the next step of a write (a peer's
//! answer, the disk's completion, the client's next request) wakes a thread on a CPU
//! that is awake, rather than one that halted meanwhile.
//!
//! A lone write passes through some seven threads of three processes. Where the CPUs
//! halt as soon as they are idle (measured on a virtual machine without a polling
//! idle driver; a desktop's deep sleep states should act alike), each hand-off to a
//! thread whose CPU halted waits for that CPU to wake, and the thread then runs from
//! cold caches. Go's runtime, and the kernel's `haltpoll` idle driver, spin a while
//! before they sleep for that reason; this does the same for the whole process,
//! without delaying any of its threads.
//!
//! Only a lone write starts a window: one entry, finding the log writer idle. A round
//! under load ends it ([`stand_down`]): appends that came while the writer synced (a
//! leader's log) or several entries at once (a follower's, whose leader batches under
//! load). Under load the CPUs are busy anyway and a spinning thread would only be
//! preempted (measured: with a window after every round, 64 clients lost a tenth of
//! their throughput; ending it on followers under load too took 15–27% off the
//! servers' CPU per write at 16 and 64 clients).
//!
//! Where the kernel's `haltpoll` idle driver runs (many KVM guests), an idle CPU polls
//! for a while before it halts: there the window only duplicates the driver, and
//! measured, it cost 16 and 64 clients 9–15% of their throughput against etcd's while
//! a lone write gained a few percent. (A likely cause, not measured apart: a wake-up
//! aimed at a polling CPU needs no interrupt, one aimed at a CPU that runs the
//! spinning thread does.) So an unset window follows the idle driver ([`window_for`]).
//!
//! The driver does not tell every host apart: an AMD EPYC guest had none, like the
//! Intel guests where the window helped, yet there it bought a lone write nothing (the
//! p50 alike, the p99 a quarter higher), and a spinning CPU took back only a third of
//! what a halted one costs a wake-up. On such a host `spin_window_us = 0` is better.
//!
//! The thread runs under `SCHED_IDLE`, so any other thread of any process that becomes
//! runnable on its CPU preempts it at once, and the scheduler places wake-ups on its
//! CPU as on an idle one: it only ever takes time nobody else wants. It spins while the
//! last [`touch`] is less than the window old and sleeps otherwise, so an idle node
//! costs nothing. Linux only; elsewhere [`start`] does nothing.
//!
//! *Invariant:* a [`touch`] while the thread sleeps wakes it: the thread checks the
//! touch count under the lock it sleeps on, and a touch that sees it asleep notifies
//! under that lock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// The process's spin window, once started.
static SPIN_WINDOW: OnceLock<SpinWindow> = OnceLock::new();

/// The window and the state the spinning thread shares with [`touch`].
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
    /// How many times the thread woke from sleep to spin.
    windows: AtomicU64,
    lock: Mutex<()>,
    wake: Condvar,
}

/// The window when the config sets none.
pub const DEFAULT_WINDOW: Duration = Duration::from_micros(1000);

/// Where the kernel names its idle driver (absent without `cpuidle`, as off Linux).
const IDLE_DRIVER_PATH: &str = "/sys/devices/system/cpu/cpuidle/current_driver";

/// The window for a node: the configured microseconds if set; otherwise none where the
/// idle driver is `haltpoll` (its CPUs poll before halting already), and
/// [`DEFAULT_WINDOW`] under any other driver or none.
pub fn window_for(configured_us: Option<u64>, idle_driver: Option<&str>) -> Duration {
    match configured_us {
        Some(us) => Duration::from_micros(us),
        None if idle_driver.map(str::trim) == Some("haltpoll") => Duration::ZERO,
        None => DEFAULT_WINDOW,
    }
}

/// The kernel's idle driver on this host (`haltpoll`, `intel_idle`, `acpi_idle`,
/// `none`, ...), if it says.
pub fn idle_driver() -> Option<String> {
    std::fs::read_to_string(IDLE_DRIVER_PATH)
        .ok()
        .map(|driver| driver.trim().to_owned())
}

/// Starts the process's spinning thread with `window` (nothing for a zero window, off
/// Linux, or when one was started already).
pub fn start(window: Duration) {
    if window.is_zero() || !cfg!(target_os = "linux") {
        return;
    }
    if SPIN_WINDOW.set(SpinWindow::new(window)).is_err() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("fleet-spin".into())
        .spawn(|| {
            if let Some(spin) = SPIN_WINDOW.get() {
                if let Err(error) = idle_priority() {
                    tracing::warn!(%error, "cannot lower the spinning thread to SCHED_IDLE; it stays off");
                    return;
                }
                spin.run();
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the spinning thread; it stays off");
    }
}

/// Marks activity: the spinning thread (if started) keeps its CPU busy for the window
/// from now. Costs two atomic operations while it spins, a wake-up when it slept.
pub fn touch() {
    if let Some(spin) = SPIN_WINDOW.get() {
        spin.touch();
    }
}

/// Ends the window now: under load the CPUs are busy, and a spinning thread would
/// only be preempted. Costs one atomic store.
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

    /// Whether the last touch is less than the window old.
    fn within_window(&self) -> bool {
        let last = self.last_touch.load(Ordering::Relaxed);
        last != 0 && self.nanos_since_epoch().saturating_sub(last) < self.window_nanos
    }

    /// Sleeps until touched, spins until the window since the last touch has passed;
    /// forever.
    fn run(&self) {
        loop {
            let seen = self.touches.load(Ordering::SeqCst);
            while self.within_window() {
                std::hint::spin_loop();
            }
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
        let spin = Arc::new(SpinWindow::new(window));
        let runner = spin.clone();
        std::thread::spawn(move || runner.run());
        spin
    }

    #[test]
    fn an_unset_window_follows_the_idle_driver_and_a_set_one_wins() {
        let millisecond = Duration::from_millis(1);
        assert_eq!(window_for(None, Some("haltpoll")), Duration::ZERO);
        assert_eq!(window_for(None, Some("haltpoll\n")), Duration::ZERO);
        assert_eq!(window_for(None, Some("none")), millisecond);
        assert_eq!(window_for(None, Some("intel_idle")), millisecond);
        assert_eq!(window_for(None, None), millisecond);
        assert_eq!(
            window_for(Some(250), Some("haltpoll")),
            Duration::from_micros(250)
        );
        assert_eq!(window_for(Some(0), Some("none")), Duration::ZERO);
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
