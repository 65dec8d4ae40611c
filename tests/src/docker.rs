//! The `docker` command line, as the container tests use it: one call, its output or
//! an error that quotes what Docker said, and whether Docker can run here at all.

use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// Set to `1` where Docker must run (CI on a machine with Docker): the container tests
/// then fail instead of being skipped when it does not.
pub const REQUIRE_DOCKER_VAR: &str = "FLEET_REQUIRE_DOCKER";

/// Runs `docker ARGS` and returns its standard output, trimmed.
pub fn docker(args: &[&str]) -> Result<String> {
    let output = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running docker {}", args.join(" ")))?;
    if !output.status.success() {
        bail!(
            "docker {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Whether a Docker engine answers. Where none does, `Ok(false)`, unless
/// [`REQUIRE_DOCKER_VAR`] is `1`: then an error that says why.
pub fn docker_usable() -> Result<bool> {
    let answer = docker(&["info", "--format", "{{.ServerVersion}}"]);
    let required = std::env::var(REQUIRE_DOCKER_VAR).is_ok_and(|v| v == "1");
    match answer {
        Ok(_) => Ok(true),
        Err(error) if required => Err(error.context(format!(
            "{REQUIRE_DOCKER_VAR}=1 but no Docker engine answers"
        ))),
        Err(error) => {
            eprintln!(
                "skipped: this test needs a Docker engine ({error:#}); \
                 set {REQUIRE_DOCKER_VAR}=1 to make that a failure"
            );
            Ok(false)
        }
    }
}
