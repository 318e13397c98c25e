//! What both HTTP clients share: the TLS crypto provider, the reqwest client, reading a
//! streamed body as SSE events under an idle timeout and a cancellation token, and turning
//! HTTP error responses into [`LlmError::Api`] with the API's own message and request id.
//!
//! Invariants:
//! - Every wait (connect, response headers, each body chunk, reading an error body) is
//!   bounded by the idle timeout and abandoned at once when the token is cancelled;
//!   dropping the reqwest future closes the connection.
//! - Any bytes, pings and comments included, reset the idle timer: the point is to notice a
//!   dead connection, not to judge the model's pace.
//! - The API key never appears in an error: reqwest errors mention the URL, and the key
//!   only ever travels in a header marked sensitive.

use std::future::Future;
use std::pin::Pin;
use std::sync::Once;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::retry::{self, Failure};
use crate::sse::{SseEvent, SseParser};
use crate::types::LlmError;

/// Installs rustls' ring crypto provider for the process. Idempotent; reqwest is built with
/// `rustls-no-provider` and panics on `Client::build` without one.
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // An error means another provider is already installed, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A reqwest client for one base URL. Loopback servers (the scripted model server) are
/// reached directly even when the environment names a proxy.
pub(crate) fn build_http(
    base_url: &str,
    connect_timeout: Duration,
) -> Result<reqwest::Client, LlmError> {
    install_crypto_provider();
    let mut builder = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .tcp_keepalive(Duration::from_secs(30))
        .pool_idle_timeout(Duration::from_secs(60));
    if is_loopback_url(base_url) {
        builder = builder.no_proxy();
    }
    builder.build().map_err(|e| {
        LlmError::Config(format!(
            "failed to build the HTTP client: {}",
            describe_reqwest(&e)
        ))
    })
}

pub(crate) fn is_loopback_url(url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A reqwest error with its causes, which its own Display leaves out.
pub(crate) fn describe_reqwest(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// Waits for `fut`, giving up after `idle` or when `cancel` fires.
pub(crate) async fn bounded<T>(
    fut: impl Future<Output = T>,
    idle: Duration,
    cancel: &CancellationToken,
) -> Result<T, Failure> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Failure::fatal(LlmError::Cancelled)),
        r = tokio::time::timeout(idle, fut) => r.map_err(|_| Failure::retryable(LlmError::IdleTimeout(idle))),
    }
}

/// Sends a prepared request and waits for the response headers.
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    idle: Duration,
    cancel: &CancellationToken,
) -> Result<reqwest::Response, Failure> {
    bounded(request.send(), idle, cancel)
        .await?
        .map_err(|e| Failure::retryable(LlmError::Connection(describe_reqwest(&e))))
}

/// The request id the API put in the response headers.
pub(crate) fn request_id(headers: &HeaderMap) -> Option<String> {
    ["request-id", "x-request-id"]
        .iter()
        .find_map(|h| headers.get(*h))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Turns a non-2xx response into a failure: the API's error type and message, its request
/// id, and whether and when the retry policy allows another attempt.
pub(crate) async fn error_response(
    response: reqwest::Response,
    idle: Duration,
    cancel: &CancellationToken,
) -> Failure {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = match bounded(response.bytes(), idle, cancel).await {
        Ok(Ok(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(Err(_)) | Err(_) => String::new(),
    };
    let json: Option<Value> = serde_json::from_str(&body).ok();
    let error = json.as_ref().and_then(|j| j.get("error"));
    let kind = error
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| default_kind(status).to_string());
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            let trimmed = body.trim();
            if trimmed.is_empty() {
                "(no error message)".to_string()
            } else {
                truncate(trimmed, 500)
            }
        });
    let request_id = request_id(&headers).or_else(|| {
        json.as_ref()
            .and_then(|j| j.get("request_id"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    Failure {
        retryable: retry::should_retry_status(status, header("x-should-retry"))
            && !error.is_some_and(retry::is_spend_limit),
        retry_after: retry::parse_retry_after(
            header("retry-after-ms"),
            header("retry-after"),
            std::time::SystemTime::now(),
        ),
        error: LlmError::Api {
            status,
            kind,
            message,
            request_id,
        },
    }
}

/// Says which variable holds the key the server refused (401), after the API's own
/// message: a person fixes a key in their environment, not in swarm.
pub(crate) fn advise_on_key(mut failure: Failure, key_var: &str, key_given: bool) -> Failure {
    if let LlmError::Api {
        status: 401,
        message,
        ..
    } = &mut failure.error
    {
        message.push_str(&if key_given {
            format!("; check the API key in {key_var}: the provider refused it")
        } else {
            format!("; the server wants an API key: set {key_var}")
        });
    }
    failure
}

/// The Anthropic error type conventionally paired with a status.
pub fn default_kind(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        408 => "timeout_error",
        409 => "conflict_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ if status >= 500 => "api_error",
        _ => "invalid_request_error",
    }
}

/// The status conventionally paired with an Anthropic error type, for `error` events that
/// arrive inside a 200 stream and so carry no status of their own. Unknown types count as
/// server errors: the server failed after it had accepted the request.
pub fn status_for_kind(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "timeout_error" => 408,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        _ => 500,
    }
}

pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let end = s.floor_char_boundary(max);
    format!("{}…", &s[..end])
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

/// A response body read as SSE events.
pub(crate) struct EventReader {
    body: ByteStream,
    parser: SseParser,
    queue: std::collections::VecDeque<SseEvent>,
    idle: Duration,
}

impl EventReader {
    pub(crate) fn new(response: reqwest::Response, idle: Duration) -> EventReader {
        EventReader {
            body: Box::pin(response.bytes_stream()),
            parser: SseParser::new(),
            queue: Default::default(),
            idle,
        }
    }

    /// The next event; `None` at the end of the body. A reset connection is retryable, as
    /// is silence longer than the idle timeout.
    pub(crate) async fn next(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<Option<SseEvent>, Failure> {
        loop {
            if let Some(e) = self.queue.pop_front() {
                return Ok(Some(e));
            }
            match bounded(self.body.next(), self.idle, cancel).await? {
                None => return Ok(None),
                Some(Err(e)) => {
                    return Err(Failure::retryable(LlmError::Connection(format!(
                        "the response stream broke off: {}",
                        describe_reqwest(&e)
                    ))));
                }
                Some(Ok(bytes)) => self.queue.extend(self.parser.feed(&bytes)),
            }
        }
    }
}

/// Whether the response is a whole JSON document rather than an event stream: servers that
/// ignore `stream: true` answer this way.
pub(crate) fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"))
}

/// Reads a whole JSON body under the idle timeout.
pub(crate) async fn json_body(
    response: reqwest::Response,
    idle: Duration,
    cancel: &CancellationToken,
) -> Result<Value, Failure> {
    let bytes = bounded(response.bytes(), idle, cancel)
        .await?
        .map_err(|e| Failure::retryable(LlmError::Connection(describe_reqwest(&e))))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Failure::fatal(LlmError::Stream(format!(
            "the response body is not valid JSON: {e}"
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_urls_are_recognised() {
        assert!(is_loopback_url("http://127.0.0.1:8080"));
        assert!(is_loopback_url("http://localhost:1/x"));
        assert!(is_loopback_url("http://[::1]:9"));
        assert!(!is_loopback_url("https://api.anthropic.com"));
        assert!(!is_loopback_url("not a url"));
    }

    #[test]
    fn kinds_and_statuses_pair_up() {
        for status in [400, 401, 403, 404, 408, 413, 429, 529] {
            assert_eq!(status_for_kind(default_kind(status)), status);
        }
        assert_eq!(default_kind(503), "api_error");
        assert_eq!(status_for_kind("something_new"), 500);
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h…");
        assert_eq!(truncate("abc", 5), "abc");
    }

    #[test]
    fn installing_the_provider_twice_is_fine() {
        install_crypto_provider();
        install_crypto_provider();
        reqwest::Client::builder().build().unwrap();
    }
}
