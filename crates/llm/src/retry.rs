//! The retry policy: the official Anthropic SDKs' for transient failures, and a longer,
//! team-wide one for rate limits; pure functions plus one small driver that waits between
//! attempts.
//!
//! - Rate limits and overload (429, 529, an `overloaded_error` or `rate_limit_error`
//!   event) close the provider's gate ([`crate::rate_gate`]) until the server's
//!   `retry-after` (however long), else until a backoff of 1 s × 2^n capped at 60 s, times
//!   (1 − 0.25·rand); every agent sharing the gate then waits for the same moment. They are
//!   retried until this call's total wait would pass its bound (`rate_limit_wait`, 15
//!   minutes by default); then the error is final.
//! - Other transient failures: connection failures (including a stream that breaks off or
//!   goes silent), 408, 409 and every other status ≥ 500, and `error` events inside a 200
//!   stream whose type maps to one of those. `max_retries` of them (default 2), after
//!   `retry-after` when it is in (0, 60] s, else 0.5 s × 2^n capped at 8 s, jittered alike.
//! - Final at once: a spend limit (`error.details.error_code:
//!   "enforced_spend_limit_reached"`, or OpenAI's `insufficient_quota`) whatever the status
//!   says, since no wait lifts it; 400, 401, 403, 404, 413; cancellation; malformed
//!   streams; and anything the server marks `x-should-retry: false`. The header decides
//!   before the status does.
//! - Before every attempt the client waits while the gate is closed (cancellable), and
//!   announces the wait as [`StreamEvent::RateLimited`]; each retry is announced through
//!   [`StreamEvent::Retry`] first. Deltas reported before a retry belong to the discarded
//!   attempt.
//! - Every provider's client goes through `call`: the client makes one attempt
//!   (`Attempt`), the loop around it is the same for all.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime};

use tokio_util::sync::CancellationToken;

use crate::rate_gate::Gate;
use crate::types::{LlmError, Request, Response, StreamEvent};
use swarm_util::clock;

pub const DEFAULT_MAX_RETRIES: u32 = 2;
/// How long one model call may wait for rate limits in all before its error is final.
pub const DEFAULT_RATE_LIMIT_WAIT: Duration = Duration::from_secs(15 * 60);
const INITIAL_DELAY: Duration = Duration::from_millis(500);
const MAX_DELAY: Duration = Duration::from_secs(8);
const RATE_LIMIT_INITIAL_DELAY: Duration = Duration::from_secs(1);
const RATE_LIMIT_MAX_DELAY: Duration = Duration::from_secs(60);
/// Server-requested delays above this are ignored in favour of our own backoff, except
/// for rate limits.
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
    let text = |p: &str| error.pointer(p).and_then(serde_json::Value::as_str);
    text("/details/error_code") == Some("enforced_spend_limit_reached")
        || text("/code") == Some("insufficient_quota")
        || text("/type") == Some("insufficient_quota")
}

/// Whether an error is the provider asking everyone to slow down: a rate limit or
/// overload, which the team waits out together.
pub fn is_rate_limit(error: &LlmError) -> bool {
    match error {
        LlmError::Api { status, kind, .. } => {
            matches!(status, 429 | 529) || kind == "rate_limit_error" || kind == "overloaded_error"
        }
        _ => false,
    }
}

/// The server-requested delay, when it is a usable one: `retry-after-ms` (milliseconds),
/// else `retry-after` (seconds, possibly fractional, or an HTTP date measured from `now`),
/// kept only when positive. How long is too long is the policy's to say.
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
    // A day bounds what Duration and the clock can add without overflow.
    (secs.is_finite() && secs > 0.0 && secs <= 86_400.0).then(|| Duration::from_secs_f64(secs))
}

/// How long to wait before retrying a transient failure. `retries_taken` counts retries
/// already made (0 before the first retry); `rand` is uniform in [0, 1). A server delay
/// over a minute is ignored.
pub fn retry_delay(retries_taken: u32, retry_after: Option<Duration>, rand: f64) -> Duration {
    match retry_after {
        Some(d) if d <= MAX_RETRY_AFTER => d,
        _ => backoff(INITIAL_DELAY, MAX_DELAY, retries_taken, rand),
    }
}

/// How long a rate limit closes the gate: the server's delay whatever it is, else a
/// backoff from 1 s to 60 s. `limits_taken` counts the rate limits this call already met.
pub fn rate_limit_delay(limits_taken: u32, retry_after: Option<Duration>, rand: f64) -> Duration {
    retry_after.unwrap_or_else(|| {
        backoff(
            RATE_LIMIT_INITIAL_DELAY,
            RATE_LIMIT_MAX_DELAY,
            limits_taken,
            rand,
        )
    })
}

fn backoff(initial: Duration, max: Duration, n: u32, rand: f64) -> Duration {
    let backoff = (initial.as_secs_f64() * 2f64.powi(n.min(32) as i32)).min(max.as_secs_f64());
    let jitter = 1.0 - 0.25 * rand.clamp(0.0, 1.0);
    Duration::from_secs_f64(backoff * jitter)
}

/// One attempt at a request, as a provider's client makes it; the attempts around it are
/// [`call`]'s, the same for every provider.
pub(crate) trait Attempt: Sync {
    /// The request's JSON body, asking for `model`.
    fn body(&self, request: &Request, model: &str) -> serde_json::Value;

    /// Sends `body` once and reads the whole response; a failure says whether the policy
    /// may try again.
    fn attempt<'a>(
        &'a self,
        request: &'a Request,
        body: &'a [u8],
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
        cancel: &'a CancellationToken,
    ) -> impl Future<Output = Result<Response, Failure>> + Send + 'a;
}

/// How a client retries: its limits and its provider's gate.
#[derive(Debug)]
pub(crate) struct Policy {
    /// Transient retries after the first attempt.
    pub max_retries: u32,
    /// The most one call waits for rate limits in all.
    pub rate_limit_wait: Duration,
    pub gate: Gate,
}

/// One model call: the request encoded once (asking for `default_model` unless it names
/// one), then attempts until one succeeds or the policy makes a failure final.
pub(crate) async fn call(
    client: &impl Attempt,
    policy: &Policy,
    default_model: &str,
    request: &Request,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
    cancel: &CancellationToken,
) -> Result<Response, LlmError> {
    let model = if request.model.is_empty() {
        default_model
    } else {
        &request.model
    };
    let body = serde_json::to_vec(&client.body(request, model))
        .map_err(|e| LlmError::Stream(format!("failed to encode the request: {e}")))?;
    let mut retrier = Retrier::new(
        policy.max_retries,
        policy.rate_limit_wait,
        &policy.gate,
        request.agent.as_deref(),
    );
    loop {
        retrier.before_attempt(on_event, cancel).await?;
        match client.attempt(request, &body, on_event, cancel).await {
            Ok(response) => return Ok(response),
            Err(failure) => retrier.after_failure(failure, on_event, cancel).await?,
        }
    }
}

/// Counts retries for one `complete` call and waits between attempts.
pub(crate) struct Retrier<'g> {
    max_retries: u32,
    /// Transient retries made.
    taken: u32,
    /// Rate limits met.
    limited: u32,
    /// Retries of either kind, for the announcements.
    retries: u32,
    gate: &'g Gate,
    /// The most this call waits for rate limits in all.
    bound: Duration,
    waited: Duration,
    /// Who is waiting, for the gate's record.
    by: String,
    /// The last moment announced, so a wait is announced once.
    announced: Option<i64>,
}

impl<'g> Retrier<'g> {
    pub fn new(max_retries: u32, bound: Duration, gate: &'g Gate, by: Option<&str>) -> Retrier<'g> {
        Retrier {
            max_retries,
            taken: 0,
            limited: 0,
            retries: 0,
            gate,
            bound,
            waited: Duration::ZERO,
            by: by.unwrap_or("swarm").to_owned(),
            announced: None,
        }
    }

    /// Before every attempt: waits while the gate is closed, within what is left of the
    /// bound. With the bound spent the attempt goes ahead; a further limit is then final.
    pub async fn before_attempt(
        &mut self,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<(), LlmError> {
        loop {
            if cancel.is_cancelled() {
                return Err(LlmError::Cancelled);
            }
            let Some(closed) = self.gate.read() else {
                return Ok(());
            };
            let ahead = closed.until_ms - clock::now_ms();
            let left = self.bound.saturating_sub(self.waited);
            if ahead <= 0 || left.is_zero() {
                return Ok(());
            }
            if self.announced != Some(closed.until_ms) {
                self.announced = Some(closed.until_ms);
                tracing::info!(until_ms = closed.until_ms, by = %closed.by, "waiting for the rate limit");
                on_event(StreamEvent::RateLimited {
                    until_ms: closed.until_ms,
                    reason: closed.reason.clone(),
                });
            }
            let wait = Duration::from_millis(ahead as u64).min(left);
            let start = Instant::now();
            tokio::select! {
                _ = cancel.cancelled() => return Err(LlmError::Cancelled),
                _ = tokio::time::sleep(wait) => {}
            }
            self.waited += start.elapsed();
        }
    }

    /// After a failed attempt: closes the gate for a rate limit, or sleeps for another
    /// transient failure, when another attempt is allowed; otherwise returns the error to
    /// surface.
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
        if !failure.retryable {
            return Err(failure.error);
        }
        if is_rate_limit(&failure.error) {
            return self.rate_limited(failure, on_event).await;
        }
        if self.taken >= self.max_retries {
            return Err(failure.error);
        }
        let delay = retry_delay(self.taken, failure.retry_after, fastrand::f64());
        self.taken += 1;
        self.announce(delay, &failure.error, on_event);
        tokio::select! {
            _ = cancel.cancelled() => Err(LlmError::Cancelled),
            _ = tokio::time::sleep(delay) => Ok(()),
        }
    }

    /// Closes the gate for everyone on this provider; the wait itself is
    /// [`Retrier::before_attempt`]'s. Final when the wait would pass the bound.
    async fn rate_limited(
        &mut self,
        failure: Failure,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), LlmError> {
        let delay = rate_limit_delay(self.limited, failure.retry_after, fastrand::f64());
        let now = clock::now_ms();
        let own = now.saturating_add(delay.as_millis() as i64);
        let (gate, reason, by) = (
            self.gate.clone(),
            failure.error.to_string(),
            self.by.clone(),
        );
        let closed = tokio::task::spawn_blocking(move || gate.close(own, &reason, &by))
            .await
            .map_err(|e| LlmError::Stream(format!("the rate-limit gate failed: {e}")))?;
        // Someone else's later moment is the one everybody waits for.
        let wait = if closed.until_ms > own {
            Duration::from_millis((closed.until_ms - now) as u64)
        } else {
            delay
        };
        if self.waited + wait > self.bound {
            tracing::warn!(waited = ?self.waited, ?wait, bound = ?self.bound, "the rate limit outlasts the wait allowed; giving up");
            return Err(outlasted(failure.error, self.bound));
        }
        self.limited += 1;
        self.announce(wait, &failure.error, on_event);
        Ok(())
    }

    fn announce(
        &mut self,
        delay: Duration,
        error: &LlmError,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) {
        self.retries += 1;
        tracing::info!(attempt = self.retries, ?delay, error = %error, "retrying the model request");
        on_event(StreamEvent::Retry {
            attempt: self.retries,
            delay,
            reason: error.to_string(),
        });
    }
}

/// A rate limit that outlasts the wait allowed, saying how to allow a longer one.
fn outlasted(error: LlmError, bound: Duration) -> LlmError {
    match error {
        LlmError::Api {
            status,
            kind,
            mut message,
            request_id,
        } => {
            message.push_str(&format!(
                "; the rate limit outlasts the {} s --rate-limit-wait allows: raise it (or SWARM_RATE_LIMIT_WAIT) to wait longer",
                bound.as_secs_f64()
            ));
            LlmError::Api {
                status,
                kind,
                message,
                request_id,
            }
        }
        other => other,
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
        // Over a minute only a rate limit honours it.
        let long = Duration::from_secs(300);
        assert_eq!(secs(retry_delay(0, Some(long), 0.0)), 0.5);
        assert_eq!(rate_limit_delay(0, Some(long), 0.9), long);
    }

    #[test]
    fn rate_limit_backoff_doubles_from_one_second_to_sixty() {
        let expect = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0];
        for (n, want) in expect.iter().enumerate() {
            assert_eq!(secs(rate_limit_delay(n as u32, None, 0.0)), *want, "n={n}");
            let most = secs(rate_limit_delay(n as u32, None, 0.999_999));
            assert!(most > want * 0.75 && most <= *want, "n={n} {most}");
        }
    }

    #[test]
    fn which_errors_wait_for_the_rate_limit() {
        let api = |status: u16, kind: &str| LlmError::Api {
            status,
            kind: kind.into(),
            message: "m".into(),
            request_id: None,
        };
        assert!(is_rate_limit(&api(429, "rate_limit_error")));
        assert!(is_rate_limit(&api(529, "overloaded_error")));
        // An error event in a 200 stream carries the status of its type.
        assert!(is_rate_limit(&api(500, "overloaded_error")));
        for (s, k) in [
            (500, "api_error"),
            (401, "authentication_error"),
            (400, "x"),
        ] {
            assert!(!is_rate_limit(&api(s, k)), "{s}");
        }
        assert!(!is_rate_limit(&LlmError::Connection("refused".into())));
        assert!(is_spend_limit(
            &serde_json::json!({"type": "insufficient_quota", "code": "insufficient_quota"})
        ));
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
        assert_eq!(p(None, Some("61")), Some(Duration::from_secs(61)));
        assert_eq!(p(None, Some("900")), Some(Duration::from_secs(900)));
        assert_eq!(p(None, Some("1e30")), None);
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
        assert_eq!(
            p(None, Some("Tue, 14 Nov 2023 22:20:00 GMT")),
            Some(Duration::from_secs(400))
        );
    }

    fn solo_gate() -> Gate {
        // A key of its own: the process's gates are shared by every test in it.
        Gate::new(format!("test {}", uuid::Uuid::new_v4()), None)
    }

    fn limited(retry_after_ms: Option<u64>) -> Failure {
        Failure {
            retry_after: retry_after_ms.map(Duration::from_millis),
            ..Failure::retryable(LlmError::Api {
                status: 429,
                kind: "rate_limit_error".into(),
                message: "slow down".into(),
                request_id: None,
            })
        }
    }

    #[tokio::test]
    async fn the_retrier_reports_each_retry_and_stops_after_the_limit() {
        let cancel = CancellationToken::new();
        let mut events = Vec::new();
        let mut on_event = |e: StreamEvent| events.push(e);
        let gate = solo_gate();
        let mut r = Retrier::new(2, DEFAULT_RATE_LIMIT_WAIT, &gate, None);
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
            Retrier::new(5, DEFAULT_RATE_LIMIT_WAIT, &gate, None)
                .after_failure(fatal, &mut on_event, &cancel)
                .await
                .is_err()
        );
        assert_eq!(events.len(), 2);
        assert!(
            matches!(&events[1], StreamEvent::Retry { attempt: 2, reason, .. } if reason.contains("refused"))
        );
    }

    #[tokio::test]
    async fn rate_limits_outlast_the_retry_count_until_the_total_wait_is_spent() {
        let cancel = CancellationToken::new();
        let mut events = Vec::new();
        let mut on_event = |e: StreamEvent| events.push(e);
        let gate = solo_gate();
        // No transient retries at all, yet rate limits of 100 ms are waited out until the
        // bound of 1 s is spent: about nine of them (the waits are measured, so a loaded
        // machine's late wake-ups spend the bound sooner; at least three always fit).
        let mut r = Retrier::new(0, Duration::from_millis(1000), &gate, Some("alice"));
        let mut waited_out = 0;
        let last = loop {
            assert!(
                waited_out <= 10,
                "more 100 ms waits than a 1 s bound allows"
            );
            if let Err(e) = r
                .after_failure(limited(Some(100)), &mut on_event, &cancel)
                .await
            {
                break e;
            }
            let closed = gate.read().expect("the gate is closed");
            assert_eq!(closed.by, "alice");
            r.before_attempt(&mut on_event, &cancel).await.unwrap();
            assert!(
                closed.until_ms <= clock::now_ms(),
                "went before the gate opened"
            );
            waited_out += 1;
        };
        // The one that would pass the bound is final, with the server's error.
        assert!(
            matches!(last, LlmError::Api { status: 429, .. }),
            "{last:?}"
        );
        assert!(waited_out >= 3, "only {waited_out} limits were waited out");
        let waits = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::RateLimited { .. }))
            .count();
        assert_eq!(waits, waited_out);
        // A server delay longer than the whole bound is final at once.
        let gate = solo_gate();
        let mut r = Retrier::new(2, Duration::from_secs(1), &gate, None);
        assert!(
            r.after_failure(limited(Some(5_000)), &mut |_| {}, &cancel)
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn spend_limits_and_auth_errors_are_final_at_once() {
        let cancel = CancellationToken::new();
        let mut on_event = |_: StreamEvent| {};
        let gate = solo_gate();
        for status in [401, 403] {
            let f = Failure {
                retryable: should_retry_status(status, None),
                ..Failure::fatal(LlmError::Api {
                    status,
                    kind: "authentication_error".into(),
                    message: "no".into(),
                    request_id: None,
                })
            };
            let mut r = Retrier::new(2, DEFAULT_RATE_LIMIT_WAIT, &gate, None);
            assert!(r.after_failure(f, &mut on_event, &cancel).await.is_err());
        }
        let spend = serde_json::json!({"type": "rate_limit_error",
            "details": {"error_code": "enforced_spend_limit_reached"}});
        let f = Failure {
            retryable: should_retry_status(429, None) && !is_spend_limit(&spend),
            ..limited(Some(10))
        };
        let mut r = Retrier::new(2, DEFAULT_RATE_LIMIT_WAIT, &gate, None);
        assert!(r.after_failure(f, &mut on_event, &cancel).await.is_err());
        assert_eq!(gate.read(), None, "a final error closes nothing");
    }

    #[tokio::test]
    async fn a_wait_at_the_gate_is_cancellable() {
        let gate = solo_gate();
        gate.close(clock::now_ms() + 60_000, "429", "bob");
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            trigger.cancel();
        });
        let mut r = Retrier::new(2, DEFAULT_RATE_LIMIT_WAIT, &gate, None);
        let mut seen = Vec::new();
        let mut on_event = |e: StreamEvent| seen.push(e);
        assert_eq!(
            r.before_attempt(&mut on_event, &cancel).await,
            Err(LlmError::Cancelled)
        );
        assert!(matches!(&seen[..], [StreamEvent::RateLimited { reason, .. }] if reason == "429"));
    }
}
