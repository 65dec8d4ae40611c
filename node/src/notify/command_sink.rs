//! `CommandSink`: delivering a notification by running a local program.
//!
//! The program is started directly, without a shell, so nothing in a notification's
//! text is ever interpreted as shell syntax. It gets the generic JSON
//! ([`NotificationPayload`]) on stdin and the title and idempotency key in the
//! environment (`FLEET_NOTIFICATION_TITLE`, `FLEET_IDEMPOTENCY_KEY`) for scripts that
//! do not parse JSON. Exit status 0 means delivered; anything else is worth another
//! attempt later, with the last line of stderr kept as the reason.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::attempt::Attempt;
use super::payload::NotificationPayload;
use crate::state::outbox::Notification;

/// The environment variable holding the notification's title.
pub const ENV_TITLE: &str = "FLEET_NOTIFICATION_TITLE";
/// The environment variable holding the notification's idempotency key.
pub const ENV_IDEMPOTENCY_KEY: &str = "FLEET_IDEMPOTENCY_KEY";
/// How much of the end of stderr is kept to find its last line.
const STDERR_TAIL_BYTES: usize = 4 * 1024;
/// The longest stderr line quoted in an error; the error is replicated, so a
/// program that prints a megabyte on one line must not bloat the fleet state.
const STDERR_LINE_BYTES_MAX: usize = 500;
/// How long to wait for stderr to close after the program exited. A background
/// child of the program may hold it open; its output is not worth stalling for.
const STDERR_GRACE: Duration = Duration::from_millis(500);

/// A command sink, ready to run for one notification.
#[derive(Clone, Copy, Debug)]
pub struct CommandSink<'a> {
    /// The sink's name, for error messages.
    pub name: &'a str,
    /// The program to start.
    pub program: &'a Path,
    /// Its arguments.
    pub args: &'a [String],
    /// How long the program may run before it is killed.
    pub timeout: Duration,
}

impl CommandSink<'_> {
    /// Runs the program once for `notification`: exit 0 is [`Attempt::Delivered`];
    /// a failure to start, another exit status, or running past the timeout (the
    /// program is then killed) is [`Attempt::Retry`].
    pub async fn deliver(&self, notification: &Notification) -> Attempt {
        let name = self.name;
        let mut command = Command::new(self.program);
        command
            .args(self.args)
            .env(ENV_TITLE, &notification.title)
            .env(ENV_IDEMPOTENCY_KEY, &notification.idempotency_key)
            .stdin(Stdio::piped())
            // Nothing reads the program's output; only stderr explains a failure.
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // If this future is dropped (the node shuts down), the program goes too.
            .kill_on_drop(true);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => {
                return retry(format!(
                    "sink {name}: cannot start {}: {error}",
                    self.program.display()
                ));
            }
        };
        let stdin = child.stdin.take();
        let mut stderr_tail = tokio::spawn(read_tail(child.stderr.take()));
        let input = NotificationPayload::of(notification).to_json();
        let feed = async move {
            if let Some(mut stdin) = stdin {
                // A program that exits without reading its input breaks the pipe;
                // that is its choice, and its exit status still decides.
                let _ = stdin.write_all(&input).await;
                // Dropping stdin here closes it, so the program sees the end of input.
            }
        };
        let outcome =
            tokio::time::timeout(self.timeout, async { tokio::join!(feed, child.wait()).1 }).await;
        let status = match outcome {
            Err(_elapsed) => {
                stderr_tail.abort();
                // Kills and reaps it, so no zombie is left behind.
                let _ = child.kill().await;
                return retry(format!(
                    "sink {name}: command did not exit within {} ms (timeout_ms); it was killed",
                    self.timeout.as_millis()
                ));
            }
            Ok(Err(error)) => {
                stderr_tail.abort();
                return retry(format!("sink {name}: cannot wait for the command: {error}"));
            }
            Ok(Ok(status)) => status,
        };
        if status.success() {
            stderr_tail.abort();
            return Attempt::Delivered;
        }
        let tail = match tokio::time::timeout(STDERR_GRACE, &mut stderr_tail).await {
            Ok(Ok(tail)) => tail,
            _ => {
                stderr_tail.abort();
                Vec::new()
            }
        };
        let reason = match last_line(&tail) {
            Some(line) => format!(": {line}"),
            None => String::new(),
        };
        retry(format!("sink {name}: command failed ({status}){reason}"))
    }
}

fn retry(error: String) -> Attempt {
    Attempt::Retry {
        error,
        retry_after: None,
    }
}

/// Reads `stream` to its end, keeping only the last [`STDERR_TAIL_BYTES`]. Reading
/// everything matters: a program blocked on a full stderr pipe would never exit.
async fn read_tail(stream: Option<impl AsyncRead + Unpin>) -> Vec<u8> {
    let Some(mut stream) = stream else {
        return Vec::new();
    };
    let mut tail = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(read) = stream.read(&mut chunk).await {
        if read == 0 {
            break;
        }
        tail.extend_from_slice(&chunk[..read]);
        if tail.len() > 2 * STDERR_TAIL_BYTES {
            tail.drain(..tail.len() - STDERR_TAIL_BYTES);
        }
    }
    tail
}

/// The last non-blank line of `output`, trimmed; a line longer than
/// [`STDERR_LINE_BYTES_MAX`] is quoted up to that length and says how much is left out.
fn last_line(output: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(output);
    let line = text.lines().map(str::trim).rfind(|line| !line.is_empty())?;
    if line.len() <= STDERR_LINE_BYTES_MAX {
        return Some(line.to_owned());
    }
    let mut end = STDERR_LINE_BYTES_MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!(
        "{} […{} more bytes]",
        &line[..end],
        line.len() - end
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_skips_blank_lines_and_trims() {
        assert_eq!(
            last_line(b"first\n  second problem  \n\n").as_deref(),
            Some("second problem")
        );
        assert_eq!(last_line(b"\n \n"), None);
        assert_eq!(last_line(b""), None);
    }

    #[test]
    fn a_long_last_line_says_what_it_leaves_out() {
        let long = "x".repeat(STDERR_LINE_BYTES_MAX + 20);
        let line = last_line(long.as_bytes()).unwrap();
        assert!(line.ends_with(" […20 more bytes]"), "{line}");
        assert!(line.starts_with(&"x".repeat(STDERR_LINE_BYTES_MAX)));
    }
}
