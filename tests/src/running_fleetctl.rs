//! `RunningFleetctl`: a `fleetctl` child process that a test waits for (a command that
//! follows or waits), killed if the test ends before it does.

use std::io::Read as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::ProcessFleet;
use crate::process_fleet::binary;

/// A running `fleetctl --config … ARGS`.
pub struct RunningFleetctl(Child);

/// How a `fleetctl` process ended.
#[derive(Debug)]
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// When the test saw it exit.
    pub exited: Instant,
}

impl RunningFleetctl {
    /// `fleetctl --config <fleet>/fleetctl.toml ARGS` with stdout and stderr piped.
    pub fn spawn(fleet: &ProcessFleet, args: &[&str]) -> Result<Self> {
        let child = Command::new(binary("fleetctl"))
            .arg("--config")
            .arg(fleet.dir().join("fleetctl.toml"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        Ok(Self(child))
    }

    /// Its stdout, to read what it prints as it goes; [`RunningFleetctl::finish`]
    /// then returns only what was left.
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.0.stdout.take()
    }

    /// Waits at most `bound` for it to exit, then returns what it printed.
    pub fn finish(&mut self, bound: Duration) -> Result<Finished> {
        let deadline = Instant::now() + bound;
        let status = loop {
            if let Some(status) = self.0.try_wait()? {
                break status;
            }
            if Instant::now() > deadline {
                bail!("fleetctl did not exit within {bound:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let exited = Instant::now();
        let mut stdout = String::new();
        if let Some(mut pipe) = self.0.stdout.take() {
            pipe.read_to_string(&mut stdout)?;
        }
        let mut stderr = String::new();
        if let Some(mut pipe) = self.0.stderr.take() {
            pipe.read_to_string(&mut stderr)?;
        }
        Ok(Finished {
            code: status.code(),
            stdout,
            stderr,
            exited,
        })
    }
}

impl Drop for RunningFleetctl {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
