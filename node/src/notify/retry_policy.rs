//! `RetryPolicy`: how long to wait before the next attempt at a sink, and when to
//! give up. Pure: the caller counts attempts and keeps the clock.

use std::time::Duration;

use super::retry_after::RETRY_AFTER_MAX;

/// Exponential backoff per sink: `first_delay`, doubled after each failed attempt,
/// never above `max_delay`; a receiver's `Retry-After` wins when it asks for longer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The wait after the first failed attempt.
    pub first_delay: Duration,
    /// The longest computed wait (a `Retry-After` may ask for more, up to an hour).
    pub max_delay: Duration,
    /// Attempts per notification and sink before giving up.
    pub max_attempts: u32,
}

impl Default for RetryPolicy {
    /// 500 ms, doubling to at most 60 s, 10 attempts: a sink that is down for a
    /// restart is reached, one that is gone is given up on after about five minutes.
    fn default() -> Self {
        Self {
            first_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
            max_attempts: 10,
        }
    }
}

impl RetryPolicy {
    /// The wait before the next attempt, after `attempts_so_far` attempts failed and
    /// the last one asked for `retry_after`; `None` means give up. With no attempt
    /// made yet there is nothing to wait for.
    pub fn delay_after(
        &self,
        attempts_so_far: u32,
        retry_after: Option<Duration>,
    ) -> Option<Duration> {
        if attempts_so_far >= self.max_attempts {
            return None;
        }
        let Some(doublings) = attempts_so_far.checked_sub(1) else {
            return Some(Duration::ZERO);
        };
        // Saturating: after 32 doublings the factor stays at u32::MAX, far above any
        // useful `max_delay`, instead of overflowing.
        let factor = 2u32.saturating_pow(doublings);
        let computed = self.first_delay.saturating_mul(factor).min(self.max_delay);
        let asked = retry_after.unwrap_or(Duration::ZERO).min(RETRY_AFTER_MAX);
        Some(computed.max(asked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    #[test]
    fn the_default_is_documented() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.first_delay, ms(500));
        assert_eq!(policy.max_delay, Duration::from_secs(60));
        assert_eq!(policy.max_attempts, 10);
    }

    #[test]
    fn delays_double_from_the_first_and_stop_at_the_maximum() {
        let policy = RetryPolicy::default();
        let delays: Vec<_> = (1..10)
            .map(|n| policy.delay_after(n, None).unwrap())
            .collect();
        assert_eq!(
            delays,
            [
                500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000
            ]
            .map(ms)
        );
    }

    #[test]
    fn no_attempt_yet_means_no_wait() {
        assert_eq!(RetryPolicy::default().delay_after(0, None), Some(ms(0)));
    }

    #[test]
    fn it_gives_up_after_max_attempts() {
        let policy = RetryPolicy {
            max_attempts: 3,
            ..RetryPolicy::default()
        };
        assert!(policy.delay_after(2, None).is_some());
        assert_eq!(policy.delay_after(3, None), None);
        assert_eq!(policy.delay_after(4, Some(ms(1))), None);
        assert_eq!(policy.delay_after(u32::MAX, None), None);
    }

    #[test]
    fn a_longer_retry_after_wins_up_to_an_hour_and_a_shorter_one_does_not() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay_after(1, Some(ms(100))), Some(ms(500)));
        assert_eq!(
            policy.delay_after(1, Some(Duration::from_secs(120))),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            policy.delay_after(1, Some(Duration::from_secs(86_400))),
            Some(RETRY_AFTER_MAX)
        );
    }

    #[test]
    fn many_attempts_do_not_overflow() {
        let policy = RetryPolicy {
            first_delay: Duration::from_secs(u64::MAX / 2),
            max_delay: Duration::MAX,
            max_attempts: u32::MAX,
        };
        assert_eq!(policy.delay_after(40, None), Some(Duration::MAX));
    }
}
