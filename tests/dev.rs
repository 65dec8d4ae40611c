//! `fleetctl dev` as an operator runs it: one command brings up three `fleetd`
//! processes and bootstraps them; `DIR/fleetctl.toml` reaches the fleet; a node killed
//! through its pid file is started again by hand from `DIR/<node>/fleetd.toml` and
//! rejoins; Ctrl-C (SIGINT) stops the rest.

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fleet_tests::process_fleet::{binary, free_port_range, wait_for_status_of};

/// Waits until `check` accepts the fleet's status.
fn wait_for(
    dir: &Path,
    what: &str,
    check: impl Fn(&serde_json::Value) -> bool,
) -> Result<serde_json::Value> {
    wait_for_status_of(dir, what, Duration::from_secs(60), check)
}

fn member<'a>(status: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    status["members"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)
}

fn running(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| stat.contains(") Z "))
}

fn pid_of(dir: &Path, node: &str) -> Result<u32> {
    let path = dir.join(node).join("fleetd.pid");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text.trim().parse()?)
}

struct Reaped(Vec<Child>);

impl Drop for Reaped {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn dev_starts_a_fleet_whose_nodes_can_be_restarted_by_hand() -> Result<()> {
    let dir = tempfile::Builder::new().prefix("fleet-dev-").tempdir()?;
    let fleet_dir = dir.path().join("fleet");
    let base = free_port_range(6);
    let dev = Command::new(binary("fleetctl"))
        .args([
            "dev",
            "--dir",
            fleet_dir.to_str().unwrap(),
            "--base-port",
            &base.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(fs::File::create(dir.path().join("dev.out"))?)
        .stderr(fs::File::create(dir.path().join("dev.err"))?)
        .spawn()?;
    let mut children = Reaped(vec![dev]);

    let up = wait_for(&fleet_dir, "a leader and three healthy members", |s| {
        s["leader"].as_str().is_some_and(|l| !l.is_empty())
            && s["members"].as_array().is_some_and(|m| m.len() == 3)
            && ["beast", "5070", "mac"]
                .iter()
                .all(|n| member(s, n).is_some_and(|m| m["last_applied"].as_u64() > Some(0)))
    })
    .with_context(|| fs::read_to_string(dir.path().join("dev.err")).unwrap_or_default())?;
    for node in ["beast", "5070", "mac"] {
        assert!(
            fleet_dir.join(node).join("fleetd.log").is_file(),
            "{node} has no log"
        );
        assert!(
            running(pid_of(&fleet_dir, node)?),
            "{node}'s pid file names no running process"
        );
    }
    let leader = up["leader"].as_str().unwrap_or_default().to_string();
    let follower = ["beast", "5070", "mac"]
        .into_iter()
        .find(|n| *n != leader)
        .unwrap_or("mac");

    // Kill a follower through its pid file; the fleet keeps its quorum.
    let pid = pid_of(&fleet_dir, follower)?;
    Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()?;
    wait_for(&fleet_dir, "the killed node reported unreachable", |s| {
        member(s, follower).is_some_and(|m| m["reachable"] == false)
    })?;

    // Start it again by hand, as the docs say.
    let log = fs::OpenOptions::new()
        .append(true)
        .open(fleet_dir.join(follower).join("fleetd.log"))?;
    let restarted = Command::new(binary("fleetd"))
        .arg("--config")
        .arg(fleet_dir.join(follower).join("fleetd.toml"))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()?;
    children.0.push(restarted);
    // Back in the fleet: as a follower, or already leader again if it is the primary
    // and leadership was handed back to it.
    wait_for(&fleet_dir, "the restarted node back in the fleet", |s| {
        member(s, follower).is_some_and(|m| {
            m["reachable"] == true && (m["raft_state"] == "follower" || m["raft_state"] == "leader")
        })
    })?;
    assert_ne!(
        pid_of(&fleet_dir, follower)?,
        pid,
        "the restarted node did not write its pid file"
    );

    // Ctrl-C stops dev and the nodes it started.
    let dev_pid = children.0[0].id();
    Command::new("kill")
        .args(["-INT", &dev_pid.to_string()])
        .status()?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while children.0[0].try_wait()?.is_none() {
        if Instant::now() > deadline {
            bail!("fleetctl dev did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for node in ["beast", "5070", "mac"]
        .into_iter()
        .filter(|n| *n != follower)
    {
        let pid = pid_of(&fleet_dir, node)?;
        assert!(
            !running(pid),
            "{node} (pid {pid}) still runs after dev stopped"
        );
    }
    Ok(())
}
