//! Commits ride on the next append: the stream of `AppendEntries` requests that a
//! replication session sends to one follower, with requests that carry nothing but a
//! newer commit index held back a moment.
//!
//! When a write commits, openraft at once makes an entry-less request to each
//! follower to tell it the new commit index. When writes follow one another, the
//! next write's entries come a fraction of a millisecond later and carry the same
//! index (a request always carries the leader's newest), so that extra round trip
//! costs each follower a message to decode, a turn of its Raft core and an answer,
//! and the leader two sends and two answers, for nothing the next request would not
//! bring anyway. The Raft paper does without it: followers learn the commit index
//! from later `AppendEntries`, heartbeats included.
//!
//! So, while writes follow one another closely — the last two requests with entries
//! were made at most [`COMMIT_WAIT`] apart — an entry-less request waits up to
//! [`COMMIT_WAIT`] for the request after it. If one comes, the held request is
//! dropped and the new one (whose entries start where the held one pointed, with a
//! commit index at least as new) goes instead; if none comes, the held one goes as it
//! was. A write that comes alone (after a pause longer than the wait) has its commit
//! sent at once, as before: a waiter on a follower sees it as soon as ever. Only the
//! last of a close run of writes reaches the followers' state machines up to
//! [`COMMIT_WAIT`] later.
//!
//! Nothing is answered on the follower's behalf: every answer openraft sees is a
//! follower's own. The dropped request's place in openraft's in-flight queue is
//! cleared by the answer to the request that replaced it (an answer acknowledges
//! everything up to the index it names), and the lease that answer renews dates from
//! when the replacing request was made, later than the dropped one. A stream that
//! ends (a heartbeat is a stream of one request) sends what it holds at once, so
//! heartbeats and the reads that wait on them are never held.

use std::time::Duration;

use futures::{Stream, StreamExt};
use openraft::raft::AppendEntriesRequest;
use tokio::time::{Instant, timeout_at};

use super::type_config::FleetRaft;

/// The longest an entry-less request waits for the next request to carry its commit,
/// and the longest gap between writes for which it waits at all.
pub const COMMIT_WAIT: Duration = Duration::from_millis(2);

type Request = AppendEntriesRequest<FleetRaft>;

/// The input and what is known of its pace between two requests given out.
struct Piggyback<S> {
    /// `None` once the input ended (an ended stream must not be polled again).
    input: Option<S>,
    /// When the last request with entries was taken, and the gap before it.
    last_entries_at: Option<Instant>,
    entries_gap: Option<Duration>,
}

impl<S: Stream<Item = Request> + Unpin> Piggyback<S> {
    /// The next request to send, `None` at the input's end.
    async fn next_to_send(&mut self) -> Option<Request> {
        let mut request = self.take().await?;
        let writes_close = self.entries_gap.is_some_and(|gap| gap <= COMMIT_WAIT);
        if !request.entries.is_empty() || !writes_close {
            return Some(request);
        }
        let deadline = Instant::now() + COMMIT_WAIT;
        loop {
            match timeout_at(deadline, self.take()).await {
                // A newer commit with no entries either: it replaces the held one and
                // waits out what is left of the same wait.
                Ok(Some(next)) if next.entries.is_empty() => request = next,
                Ok(Some(next)) => return Some(next),
                Ok(None) | Err(_) => return Some(request),
            }
        }
    }

    /// The input's next request, noting the pace of those with entries.
    async fn take(&mut self) -> Option<Request> {
        let input = self.input.as_mut()?;
        let Some(request) = input.next().await else {
            self.input = None;
            return None;
        };
        if !request.entries.is_empty() {
            let now = Instant::now();
            self.entries_gap = self
                .last_entries_at
                .map(|before| now.saturating_duration_since(before));
            self.last_entries_at = Some(now);
        }
        Some(request)
    }
}

/// `input` with each entry-less request that comes amid close writes held up to
/// [`COMMIT_WAIT`], and dropped for the next request when one comes in that time.
pub fn piggyback_commits<S>(input: S) -> impl Stream<Item = Request> + Send + Unpin
where
    S: Stream<Item = Request> + Send + Unpin + 'static,
{
    let state = Piggyback {
        input: Some(input),
        last_entries_at: None,
        entries_gap: None,
    };
    // Fused: polled again after its end, it ends again.
    Box::pin(
        futures::stream::unfold(state, |mut state| async move {
            let request = state.next_to_send().await?;
            Some((request, state))
        })
        .fuse(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Actor, Command, Request as FleetRequest};
    use futures::channel::mpsc;
    use openraft::RaftTypeConfig;
    use openraft::entry::RaftEntry;
    use openraft::type_config::alias::{LogIdOf, VoteOf};
    use openraft::vote::RaftLeaderIdExt;

    fn log_id(index: u64) -> LogIdOf<FleetRaft> {
        let leader = <FleetRaft as RaftTypeConfig>::LeaderId::new_committed(1, 1);
        LogIdOf::<FleetRaft>::new(leader, index)
    }

    /// A request after `prev` with entries up to `last` (none when equal), carrying
    /// commit index `commit`.
    fn request(prev: u64, last: u64, commit: u64) -> Request {
        let entries = (prev + 1..=last)
            .map(|index| {
                let command = Command {
                    at_ms: index,
                    actor: Actor::Operator,
                    request: FleetRequest::Probe,
                };
                RaftEntry::new_normal(log_id(index), Box::new(command))
            })
            .collect();
        AppendEntriesRequest {
            vote: VoteOf::<FleetRaft>::new(1, 1),
            prev_log_id: Some(log_id(prev)),
            entries,
            leader_commit: Some(log_id(commit)),
        }
    }

    /// (prev, last, commit) of a request, to compare what went out.
    fn shape(request: &Request) -> (u64, u64, u64) {
        let prev = request.prev_log_id.as_ref().map_or(0, |id| id.index);
        let last = request
            .entries
            .last()
            .map_or(prev, |entry| entry.log_id().index);
        let commit = request.leader_commit.as_ref().map_or(0, |id| id.index);
        (prev, last, commit)
    }

    /// An input to feed and the piggybacked stream of it.
    fn piggybacked() -> (
        mpsc::UnboundedSender<Request>,
        impl Stream<Item = Request> + Unpin,
    ) {
        let (sender, receiver) = mpsc::unbounded();
        (sender, piggyback_commits(receiver))
    }

    /// Two writes in a row, taken from `output` at once: the pace of close writes.
    async fn close_writes(
        sender: &mpsc::UnboundedSender<Request>,
        output: &mut (impl Stream<Item = Request> + Unpin),
    ) {
        sender.unbounded_send(request(0, 1, 0)).unwrap();
        sender.unbounded_send(request(1, 2, 1)).unwrap();
        assert_eq!(shape(&output.next().await.unwrap()), (0, 1, 0));
        assert_eq!(shape(&output.next().await.unwrap()), (1, 2, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn amid_close_writes_a_commit_rides_on_the_next_request() {
        let (sender, mut output) = piggybacked();
        close_writes(&sender, &mut output).await;
        // The commit of 2 alone, then the next write's entry well within the wait.
        sender.unbounded_send(request(2, 2, 2)).unwrap();
        let next = tokio::spawn(async move {
            // Tokio's timers tick in whole milliseconds.
            tokio::time::sleep(COMMIT_WAIT / 2).await;
            sender.unbounded_send(request(2, 3, 2)).unwrap();
        });
        let started = Instant::now();
        assert_eq!(shape(&output.next().await.unwrap()), (2, 3, 2));
        assert_eq!(started.elapsed(), COMMIT_WAIT / 2);
        next.await.unwrap();
        assert!(output.next().await.is_none(), "the input ended");
    }

    #[tokio::test(start_paused = true)]
    async fn amid_close_writes_a_commit_goes_alone_once_the_wait_is_over() {
        let (sender, mut output) = piggybacked();
        close_writes(&sender, &mut output).await;
        sender.unbounded_send(request(2, 2, 2)).unwrap();
        let started = Instant::now();
        assert_eq!(shape(&output.next().await.unwrap()), (2, 2, 2));
        assert_eq!(started.elapsed(), COMMIT_WAIT);
        // The input is still open: what comes later goes out as it comes.
        sender.unbounded_send(request(2, 3, 2)).unwrap();
        assert_eq!(shape(&output.next().await.unwrap()), (2, 3, 2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_newer_commit_replaces_the_held_one_within_the_same_wait() {
        let (sender, mut output) = piggybacked();
        close_writes(&sender, &mut output).await;
        sender.unbounded_send(request(2, 2, 1)).unwrap();
        sender.unbounded_send(request(2, 2, 2)).unwrap();
        let started = Instant::now();
        assert_eq!(shape(&output.next().await.unwrap()), (2, 2, 2));
        assert_eq!(started.elapsed(), COMMIT_WAIT);
    }

    #[tokio::test(start_paused = true)]
    async fn the_commit_of_a_write_that_comes_alone_goes_at_once() {
        let (sender, mut output) = piggybacked();
        // The first write: no pace known yet.
        sender.unbounded_send(request(0, 1, 0)).unwrap();
        sender.unbounded_send(request(1, 1, 1)).unwrap();
        let started = Instant::now();
        assert_eq!(shape(&output.next().await.unwrap()), (0, 1, 0));
        assert_eq!(shape(&output.next().await.unwrap()), (1, 1, 1));
        assert_eq!(started.elapsed(), Duration::ZERO);
        // The next one after a pause longer than the wait.
        tokio::time::sleep(COMMIT_WAIT * 5).await;
        sender.unbounded_send(request(1, 2, 1)).unwrap();
        sender.unbounded_send(request(2, 2, 2)).unwrap();
        let started = Instant::now();
        assert_eq!(shape(&output.next().await.unwrap()), (1, 2, 1));
        assert_eq!(shape(&output.next().await.unwrap()), (2, 2, 2));
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_of_one_request_is_sent_at_once() {
        // A heartbeat: openraft sends each as a stream of one.
        let input = futures::stream::once(async { request(4, 4, 4) });
        let mut output = piggyback_commits(Box::pin(input));
        let started = Instant::now();
        assert_eq!(shape(&output.next().await.unwrap()), (4, 4, 4));
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert!(output.next().await.is_none());
        assert!(output.next().await.is_none(), "polled again after its end");
    }

    #[tokio::test(start_paused = true)]
    async fn amid_close_writes_a_held_commit_goes_at_once_when_the_input_ends() {
        let (sender, mut output) = piggybacked();
        close_writes(&sender, &mut output).await;
        sender.unbounded_send(request(2, 2, 2)).unwrap();
        drop(sender);
        let started = Instant::now();
        assert_eq!(shape(&output.next().await.unwrap()), (2, 2, 2));
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert!(output.next().await.is_none());
    }
}
