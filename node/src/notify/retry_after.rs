//! Reading a `Retry-After` header (RFC 9110 §10.2.3): a number of seconds, or an
//! HTTP date.
//!
//! A receiver's wish is honoured only up to [`RETRY_AFTER_MAX`], so a misconfigured
//! or hostile receiver cannot park a notification for days.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, NaiveDateTime};

/// The longest wait a `Retry-After` can ask for.
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(60 * 60);

/// How long `value` asks to wait, seen at `now`, capped at [`RETRY_AFTER_MAX`]. A
/// date in the past means no wait. `None` when the value is neither a whole number
/// of seconds nor an HTTP date, so the caller falls back to its own backoff.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds).min(RETRY_AFTER_MAX));
    }
    let at = http_date_unix_seconds(value)?;
    let at = UNIX_EPOCH.checked_add(Duration::from_secs(u64::try_from(at).ok()?))?;
    let wait = at.duration_since(now).unwrap_or(Duration::ZERO);
    Some(wait.min(RETRY_AFTER_MAX))
}

/// Seconds since the epoch of an HTTP date in any of the three forms RFC 9110 asks a
/// recipient to accept: IMF-fixdate, RFC 850 and asctime.
fn http_date_unix_seconds(value: &str) -> Option<i64> {
    if let Ok(date) = DateTime::parse_from_rfc2822(value) {
        return Some(date.timestamp());
    }
    ["%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(value, format).ok())
        .map(|date| date.and_utc().timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1994-11-06 08:49:37 UTC, the date of RFC 9110's examples.
    fn rfc_example_time() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(784_111_777)
    }

    #[test]
    fn seconds_are_read_and_capped_at_an_hour() {
        let now = rfc_example_time();
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("86400", now), Some(RETRY_AFTER_MAX));
    }

    #[test]
    fn the_three_date_forms_are_read_relative_to_now() {
        let now = rfc_example_time() - Duration::from_secs(30);
        for value in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(
                parse_retry_after(value, now),
                Some(Duration::from_secs(30)),
                "{value}"
            );
        }
    }

    #[test]
    fn a_past_date_means_now_and_a_far_date_is_capped() {
        let now = rfc_example_time();
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after("Mon, 07 Nov 1994 08:49:37 GMT", now),
            Some(RETRY_AFTER_MAX)
        );
    }

    #[test]
    fn anything_else_is_not_a_retry_after() {
        let now = rfc_example_time();
        for value in ["", "-1", "1.5", "soon", "Sun, 99 Nov 1994 08:49:37 GMT"] {
            assert_eq!(parse_retry_after(value, now), None, "{value:?}");
        }
    }
}
