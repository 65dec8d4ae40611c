//! The `command` adapter: run the agent as a program, without a shell.
//!
//! The program gets the [`InputRequest`] as JSON on stdin and `FLEET_DELIBERATION`,
//! `FLEET_NODE`, `FLEET_PHASE` and `FLEET_WORKSPACE` in its environment, and prints
//! its [`AgentAnswer`] as JSON on stdout (whitespace around it is fine). A non-zero
//! exit is a failure reported with the last line of stderr. When the time runs out
//! the program is killed and reaped; programs it started itself are its own to
//! stop, which is why a wrapper script should `exec` the real agent.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::agent_config::AgentConfig;
use super::agent_error::{AgentError, excerpt};
use super::{AgentAnswer, InputRequest, millis};

/// The most stdout kept: an answer is a few kilobytes at most (see `state::limits`),
/// so more than this is not an answer.
const STDOUT_BYTES_MAX: usize = 64 * 1024;
/// How much of the end of stderr is kept to report a failure.
const STDERR_TAIL_BYTES: usize = 4 * 1024;
/// Characters of stdout or stderr quoted in an error.
const EXCERPT_CHARS: usize = 200;

/// Runs the configured program for `request`, waiting at most `wait`.
pub async fn ask(
    config: &AgentConfig,
    request: &InputRequest,
    wait: Duration,
) -> Result<AgentAnswer, AgentError> {
    let Some((program, args)) = config.command.as_deref().and_then(<[String]>::split_first) else {
        return Err(AgentError::failed(
            "adapter = \"command\" but agent.command is not set",
        ));
    };
    let request_json = serde_json::to_vec(request).map_err(|error| {
        AgentError::failed(format!("cannot encode the request as JSON: {error}"))
    })?;
    let mut child = Command::new(program)
        .args(args)
        .env("FLEET_DELIBERATION", &request.deliberation)
        .env("FLEET_NODE", request.node.as_str())
        .env("FLEET_PHASE", request.phase.name())
        .env("FLEET_WORKSPACE", &config.workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // If the caller drops this future (node shutting down), the agent goes too.
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| AgentError::failed(format!("cannot start `{program}`: {error}")))?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(AgentError::failed(format!(
            "`{program}` started without its stdin, stdout and stderr pipes"
        )));
    };
    let feed = async move {
        // A program may ignore stdin (it can use the FLEET_* variables), so a
        // broken pipe is not an error; its exit and stdout decide.
        let _ = stdin.write_all(&request_json).await;
        drop(stdin);
    };
    // Everything is read concurrently: a program that fills one pipe while we wait
    // on another would otherwise stall until the deadline.
    let run = async {
        let ((), status, stdout, stderr) = tokio::join!(
            feed,
            child.wait(),
            read_capped(stdout, STDOUT_BYTES_MAX),
            read_tail(stderr, STDERR_TAIL_BYTES),
        );
        (status, stdout, stderr)
    };
    let finished = tokio::time::timeout(wait, run).await;
    let Ok((status, (stdout, stdout_overflowed), stderr)) = finished else {
        // `kill` also reaps, so no zombie is left behind.
        let _ = child.kill().await;
        return Err(AgentError::Late {
            waited_ms: millis(wait),
        });
    };
    let status = status
        .map_err(|error| AgentError::failed(format!("cannot wait for `{program}`: {error}")))?;
    if !status.success() {
        let stderr = String::from_utf8_lossy(&stderr);
        let last_line = stderr
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .map(|line| excerpt(line, EXCERPT_CHARS))
            .unwrap_or_else(|| "(nothing on stderr)".into());
        return Err(AgentError::failed(format!(
            "`{program}` ended with {status}: {last_line}"
        )));
    }
    if stdout_overflowed {
        return Err(AgentError::malformed(format!(
            "`{program}` printed more than {STDOUT_BYTES_MAX} bytes on stdout; an answer is one small JSON object"
        )));
    }
    parse_answer(program, &String::from_utf8_lossy(&stdout))
}

fn parse_answer(program: &str, stdout: &str) -> Result<AgentAnswer, AgentError> {
    let text = stdout.trim();
    if text.is_empty() {
        return Err(AgentError::malformed(format!(
            "`{program}` printed nothing on stdout; it must print the answer JSON"
        )));
    }
    serde_json::from_str(text).map_err(|error| {
        AgentError::malformed(format!(
            "`{program}` printed something that is not the answer JSON ({error}): `{}`",
            excerpt(text, EXCERPT_CHARS)
        ))
    })
}

/// Reads `pipe` to its end, keeping the first `cap` bytes. It keeps draining past
/// `cap` so a chatty program still ends; the flag says whether anything was dropped.
async fn read_capped(mut pipe: impl AsyncRead + Unpin, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut overflowed = false;
    let mut chunk = [0u8; 8 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
                overflowed |= n > room;
            }
        }
    }
    (kept, overflowed)
}

/// Reads `pipe` to its end, keeping only the last `cap` bytes (where a program's
/// final error message is).
async fn read_tail(mut pipe: impl AsyncRead + Unpin, cap: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut chunk = [0u8; 8 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                kept.extend_from_slice(&chunk[..n]);
                if kept.len() > 2 * cap {
                    kept.drain(..kept.len() - cap);
                }
            }
        }
    }
    if kept.len() > cap {
        kept.drain(..kept.len() - cap);
    }
    kept
}
