//! The retry policy of the official Anthropic SDKs, as pure functions plus one small
//! driver that sleeps between attempts.
//!
//! - Retried: connection failures (including a stream that breaks off or goes silent),
//!   408, 409, 429 and every status ≥ 500 (529 included), and `error` events inside a 200
//!   stream whose type maps to one of those. An `x-should-retry: true|false` header decides
//!   before the status does; so a 429 with `x-should-retry: false` is final. A spend limit
//!   (`error.details.error_code: "enforced_spend_limit_reached"` in the body) is final
//!   whatever the status and headers say: no wait lifts it.
//! - Never retried by default: 400, 401, 403, 404, 413, cancellation, malformed streams.
//! - Delay: `retry-after-ms`, else `retry-after` (seconds, or an HTTP date), when the value
//!   is in (0, 60] s; otherwise 0.5 s × 2^n capped at 8 s, times (1 − 0.25·rand), where n
//!   counts the retries already made.
//! - Default 2 retries, so at most 3 attempts. Each retry is announced through
//!   [`StreamEvent::Retry`] before the sleep; deltas reported before it belong to the
//!   discarded attempt.

use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use crate::llm::types::{LlmError, StreamEvent};

pub const DEFAULT_MAX_RETRIES: u32 = 2;
const INITIAL_DELAY: Duration = Duration::from_millis(500);
const MAX_DELAY: Duration = Duration::from_secs(8);
/// Server-requested delays above this are ignored in favour of our own backoff.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// A failed attempt: the error, whether the policy allows another attempt, and the delay
/// the server asked for.
#[derive(Debug)]
pub(crate) struct Failure {
    pub error: LlmError,
    pub retryable: bool,
    pub retry_after: Option<Duration>,
}

impl Failure {
    pub fn retryable(error: LlmError) -> Failure {
        Failure {
            error,
            retryable: true,
            retry_after: None,
        }
    }

    pub fn fatal(error: LlmError) -> Failure {
        Failure {
            error,
            retryable: false,
            retry_after: None,
        }
    }
}

/// Whether a response with this status may be retried; `x-should-retry` wins.
pub fn should_retry_status(status: u16, x_should_retry: Option<&str>) -> bool {
    match x_should_retry.map(str::trim) {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// Whether an API error object (the body's `error`) is a spend limit.
pub fn is_spend_limit(error: &serde_json::Value) -> bool {
    error
        .pointer("/details/error_code")
        .and_then(serde_json::Value::as_str)
        == Some("enforced_spend_limit_reached")
}

/// The server-requested delay, when it is a usable one: `retry-after-ms` (milliseconds),
/// else `retry-after` (seconds, possibly fractional, or an HTTP date measured from `now`),
/// kept only when 0 < delay ≤ 60 s.
pub fn parse_retry_after(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
    now: SystemTime,
) -> Option<Duration> {
    let secs = retry_after_ms
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|ms| ms / 1000.0)
        .or_else(|| {
            let v = retry_after?.trim();
            v.parse::<f64>().ok().or_else(|| {
                let at = jiff::fmt::rfc2822::DateTimeParser::new()
                    .parse_timestamp(v)
                    .ok()?;
                let now = jiff::Timestamp::try_from(now).ok()?;
                Some(at.duration_since(now).as_secs_f64())
            })
        })?;
    let max = MAX_RETRY_AFTER.as_secs_f64();
    (secs.is_finite() && secs > 0.0 && secs <= max).then(|| Duration::from_secs_f64(secs))
}

/// How long to wait before the next attempt. `retries_taken` counts retries already made
/// (0 before the first retry); `rand` is uniform in [0, 1).
pub fn retry_delay(retries_taken: u32, retry_after: Option<Duration>, rand: f64) -> Duration {
    if let Some(d) = retry_after {
        return d;
    }
    let backoff = (INITIAL_DELAY.as_secs_f64() * 2f64.powi(retries_taken.min(32) as i32))
        .min(MAX_DELAY.as_secs_f64());
    let jitter = 1.0 - 0.25 * rand.clamp(0.0, 1.0);
    Duration::from_secs_f64(backoff * jitter)
}

/// Counts retries for one `complete` call and sleeps between attempts.
pub(crate) struct Retrier {
    max_retries: u32,
    taken: u32,
}

impl Retrier {
    pub fn new(max_retries: u32) -> Retrier {
        Retrier {
            max_retries,
            taken: 0,
        }
    }

    /// After a failed attempt: reports and sleeps when another attempt is allowed,
    /// otherwise returns the error to surface.
    pub async fn after_failure(
        &mut self,
        failure: Failure,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<(), LlmError> {
        if cancel.is_cancelled() {
            // Whatever failed, it failed because the caller gave up.
            return Err(LlmError::Cancelled);
        }
        if !failure.retryable || self.taken >= self.max_retries {
            return Err(failure.error);
        }
        let delay = retry_delay(self.taken, failure.retry_after, fastrand::f64());
        self.taken += 1;
        tracing::info!(attempt = self.taken, ?delay, error = %failure.error, "retrying the model request");
        on_event(StreamEvent::Retry {
            attempt: self.taken,
            delay,
            reason: failure.error.to_string(),
        });
        tokio::select! {
            _ = cancel.cancelled() => Err(LlmError::Cancelled),
            _ = tokio::time::sleep(delay) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(d: Duration) -> f64 {
        d.as_secs_f64()
    }

    #[test]
    fn statuses_follow_the_sdk_and_the_header_wins() {
        for s in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(should_retry_status(s, None), "{s}");
        }
        for s in [400, 401, 402, 403, 404, 413, 422] {
            assert!(!should_retry_status(s, None), "{s}");
        }
        assert!(!should_retry_status(429, Some("false")));
        assert!(!should_retry_status(529, Some("false")));
        assert!(should_retry_status(400, Some("true")));
        assert!(should_retry_status(429, Some("maybe")));
    }

    #[test]
    fn a_spend_limit_is_recognised_by_its_error_code() {
        use serde_json::json;
        assert!(is_spend_limit(
            &json!({"type": "rate_limit_error", "message": "m",
            "details": {"error_code": "enforced_spend_limit_reached"}})
        ));
        assert!(!is_spend_limit(
            &json!({"type": "rate_limit_error", "message": "m"})
        ));
        assert!(!is_spend_limit(
            &json!({"details": {"error_code": "something_else"}})
        ));
        assert!(!is_spend_limit(&serde_json::Value::Null));
    }

    #[test]
    fn backoff_doubles_from_half_a_second_to_eight_with_quarter_jitter() {
        let expect = [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0];
        for (n, want) in expect.iter().enumerate() {
            let n = n as u32;
            assert_eq!(secs(retry_delay(n, None, 0.0)), *want, "n={n} no jitter");
            let most = secs(retry_delay(n, None, 0.999_999));
            assert!(
                most > want * 0.75 && most <= *want,
                "n={n} full jitter {most}"
            );
        }
        assert_eq!(secs(retry_delay(1_000_000, None, 0.0)), 8.0);
        assert_eq!(secs(retry_delay(0, None, 0.5)), 0.5 * 0.875);
    }

    #[test]
    fn a_server_delay_replaces_the_backoff() {
        let d = Duration::from_millis(1200);
        assert_eq!(retry_delay(3, Some(d), 0.9), d);
    }

    #[test]
    fn retry_after_forms_and_bounds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let p = |ms: Option<&str>, s: Option<&str>| parse_retry_after(ms, s, now);
        assert_eq!(
            p(Some("1500"), Some("9")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(p(None, Some("1")), Some(Duration::from_secs(1)));
        assert_eq!(p(None, Some("2.5")), Some(Duration::from_millis(2500)));
        assert_eq!(p(None, Some("60")), Some(Duration::from_secs(60)));
        assert_eq!(p(None, Some("61")), None);
        assert_eq!(p(None, Some("0")), None);
        assert_eq!(p(None, Some("-3")), None);
        assert_eq!(p(Some("0"), None), None);
        assert_eq!(p(Some("junk"), Some("2")), Some(Duration::from_secs(2)));
        assert_eq!(p(None, Some("soon")), None);
        assert_eq!(p(None, None), None);
        // 1_700_000_000 is Tue, 14 Nov 2023 22:13:20 GMT.
        assert_eq!(
            p(None, Some("Tue, 14 Nov 2023 22:13:50 GMT")),
            Some(Duration::from_secs(30))
        );
        assert_eq!(p(None, Some("Tue, 14 Nov 2023 22:13:10 GMT")), None);
        assert_eq!(p(None, Some("Tue, 14 Nov 2023 22:20:00 GMT")), None);
    }

    #[tokio::test]
    async fn the_retrier_reports_each_retry_and_stops_after_the_limit() {
        let cancel = CancellationToken::new();
        let mut events = Vec::new();
        let mut on_event = |e: StreamEvent| events.push(e);
        let mut r = Retrier::new(2);
        let fail = || Failure {
            retry_after: Some(Duration::from_millis(1)),
            ..Failure::retryable(LlmError::Connection("refused".into()))
        };
        assert!(
            r.after_failure(fail(), &mut on_event, &cancel)
                .await
                .is_ok()
        );
        assert!(
            r.after_failure(fail(), &mut on_event, &cancel)
                .await
                .is_ok()
        );
        assert_eq!(
            r.after_failure(fail(), &mut on_event, &cancel).await,
            Err(LlmError::Connection("refused".into()))
        );
        let fatal = Failure::fatal(LlmError::Stream("bad".into()));
        assert!(
            Retrier::new(5)
                .after_failure(fatal, &mut on_event, &cancel)
                .await
                .is_err()
        );
        assert_eq!(events.len(), 2);
        assert!(
            matches!(&events[1], StreamEvent::Retry { attempt: 2, reason, .. } if reason.contains("refused"))
        );
    }
}
