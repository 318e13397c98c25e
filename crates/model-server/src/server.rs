//! The scripted model server over HTTP: `POST /v1/messages` (the Anthropic Messages API)
//! and `POST /v1/chat/completions` (OpenAI-compatible), streamed or not as each request
//! asks, answered from a [`Script`] and recorded for assertions.
//!
//! Invariants:
//! - It listens on loopback addresses only; anything else is refused before binding.
//! - Every request is recorded, in arrival order, before it is answered: including bodies
//!   that are not JSON and requests no rule matched; in memory until
//!   [`ModelServer::forget_requests`], and in the log files asked for.
//! - Every response carries a `request-id` header (`req_scripted_<n>`), like the real API.
//! - Streams are written frame by frame from a task, so delays, stalls and drops happen on
//!   the real socket; [`ModelServer::shutdown`] (or dropping the server) ends every stream
//!   and hung connection at once.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::matcher::{Matcher, Outcome, RequestView};
use crate::render::{self, Resolved};
use crate::script::{FaultKind, Raw, RawEnd, Script};
use swarm_llm::http::{default_kind, status_for_kind};
use swarm_util::error::{Error, Result};

/// The Messages API's request size limit; larger bodies get 413 like the real edge gives.
const MAX_BODY: usize = 32 * 1024 * 1024;

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub path: String,
    /// Header names in lowercase, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The JSON body (`Value::Null` when it was not JSON; see `outcome`).
    pub body: Value,
    pub outcome: Outcome,
    pub received_at: Instant,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `x-swarm-agent` header.
    pub fn agent(&self) -> Option<&str> {
        self.header("x-swarm-agent")
    }
}

struct ServerState {
    matcher: Mutex<Matcher>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Whether `requests` keeps each request (see [`ModelServer::forget_requests`]).
    keep_requests: AtomicBool,
    counter: AtomicU64,
    cancel: CancellationToken,
    /// One JSON line per request (time, agent, latest user text), for benchmarks.
    log: Mutex<Option<std::fs::File>>,
    /// One JSON line per request with its whole body, for measuring what agents send.
    body_log: Mutex<Option<std::fs::File>>,
}

/// A running model server. Dropping it stops it.
pub struct ModelServer {
    addr: SocketAddr,
    state: Arc<ServerState>,
    cancel: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

fn open_log(path: &std::path::Path) -> Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io("open", path, e))
}

impl ModelServer {
    /// Appends one JSON line per request to `path` from now on: `receivedMs`, `agent`,
    /// `rule` (what answered: a rule's name or position, `(default)`, `(unmatched)`),
    /// `bytes` (the request body's size) and `userText` (the latest user turn's text).
    pub fn log_requests(&self, path: &std::path::Path) -> Result<()> {
        *self.state.log.lock().unwrap() = Some(open_log(path)?);
        Ok(())
    }

    /// Appends one JSON line per request to `path` from now on: `receivedMs`, `agent` (the
    /// `x-swarm-agent` header), `path` and `body` (the request body as received; `null`
    /// when it was not JSON). Written before the request is answered, so the file is
    /// complete once the client has its answer.
    pub fn log_request_bodies(&self, path: &std::path::Path) -> Result<()> {
        *self.state.body_log.lock().unwrap() = Some(open_log(path)?);
        Ok(())
    }

    /// Binds `addr` (loopback only; port 0 picks a free port) and serves `script` on the
    /// current tokio runtime. Returns once the socket is listening.
    pub async fn start(script: Script, addr: SocketAddr) -> Result<ModelServer> {
        if !addr.ip().is_loopback() {
            return Err(Error::usage(format!(
                "the model server listens on loopback addresses only, not {addr}: use 127.0.0.1:PORT"
            )));
        }
        ModelServer::serve(script, addr).await
    }

    /// [`ModelServer::start`] on the lead's side of a simulated host's link (an address of
    /// 10.0.0.0/8 that only the test's network namespaces reach), for the tests of
    /// teammates on other hosts; never reachable from a real network.
    pub async fn start_on_link(script: Script, addr: SocketAddr) -> Result<ModelServer> {
        let private = matches!(addr.ip(), std::net::IpAddr::V4(ip) if ip.octets()[0] == 10);
        if !private {
            return Err(Error::usage(format!(
                "a simulated host's link is in 10.0.0.0/8, not {addr}"
            )));
        }
        ModelServer::serve(script, addr).await
    }

    async fn serve(script: Script, addr: SocketAddr) -> Result<ModelServer> {
        let matcher =
            Matcher::new(script).map_err(|e| Error::usage(format!("invalid script: {e}")))?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::io("listen on", addr.to_string(), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("read the address of", "the listening socket", e))?;
        let cancel = CancellationToken::new();
        let state = Arc::new(ServerState {
            matcher: Mutex::new(matcher),
            requests: Mutex::new(Vec::new()),
            keep_requests: AtomicBool::new(true),
            counter: AtomicU64::new(0),
            cancel: cancel.clone(),
            log: Mutex::new(None),
            body_log: Mutex::new(None),
        });
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/chat/completions", post(chat_completions))
            .fallback(not_found)
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(state.clone());
        let shutdown = cancel.clone();
        // Replies are streamed as many small writes; with Nagle's algorithm on, each one
        // after the first waits for the client's (delayed, ~40 ms) ACK of the previous one.
        let listener = listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!("failed to set TCP_NODELAY on a connection: {e}");
            }
        });
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown.cancelled_owned())
                .await;
            if let Err(e) = served {
                tracing::warn!("the model server stopped: {e}");
            }
        });
        Ok(ModelServer {
            addr,
            state,
            cancel,
            task: Some(task),
        })
    }

    /// `start` on 127.0.0.1 with a free port.
    pub async fn start_local(script: Script) -> Result<ModelServer> {
        ModelServer::start(script, SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, the base URL for clients.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops keeping requests in memory (and drops those kept): a server that runs for
    /// hours, whose caller reads its log files instead of [`ModelServer::requests`] (`swarm
    /// model-server`), would otherwise grow by every body it is sent.
    pub fn forget_requests(&self) {
        self.state.keep_requests.store(false, Ordering::Relaxed);
        self.state.requests.lock().unwrap().clear();
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.requests.lock().unwrap().clone()
    }

    /// The requests that no rule matched and no default answered.
    pub fn unmatched(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.outcome == Outcome::Unmatched)
            .collect()
    }

    /// Stops accepting, ends every open stream, and waits (briefly) for the server task.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            let abort = task.abort_handle();
            if tokio::time::timeout(Duration::from_secs(2), task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Api {
    Anthropic,
    OpenAi,
}

async fn messages(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(state, Api::Anthropic, headers, body).await
}

async fn chat_completions(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(state, Api::OpenAi, headers, body).await
}

async fn not_found(uri: axum::http::Uri) -> Response {
    error_response(
        404,
        &format!(
            "the model server serves POST /v1/messages and POST /v1/chat/completions, not {uri}"
        ),
        "req_scripted_none",
        &[],
        None,
    )
}

fn error_body(status: u16, message: &str, request_id: &str) -> Value {
    json!({"type": "error", "error": {"type": default_kind(status), "message": message},
           "request_id": request_id})
}

fn error_response(
    status: u16,
    message: &str,
    request_id: &str,
    extra: &[(&str, &str)],
    body: Option<Value>,
) -> Response {
    let body = body.unwrap_or_else(|| error_body(status, message, request_id));
    let mut response = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        axum::Json(body),
    )
        .into_response();
    let h = response.headers_mut();
    h.insert("request-id", header_value(request_id));
    for (name, value) in extra {
        if let Ok(name) = HeaderName::from_bytes(name.as_bytes()) {
            h.insert(name, header_value(value));
        }
    }
    response
}

fn header_value(v: &str) -> HeaderValue {
    HeaderValue::from_str(v).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
}

/// Who asked and where, kept for the request's record.
struct Received {
    path: &'static str,
    agent: Option<String>,
    headers: Vec<(String, String)>,
}

impl Received {
    fn new(api: Api, headers: &HeaderMap) -> Received {
        Received {
            path: match api {
                Api::Anthropic => "/v1/messages",
                Api::OpenAi => "/v1/chat/completions",
            },
            agent: headers
                .get("x-swarm-agent")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            headers: headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
        }
    }

    /// Writes the body to the body log, if there is one, and keeps the request for the
    /// test, if it asked to.
    fn record(&self, state: &ServerState, body: Value, outcome: Outcome) {
        if let Some(log) = state.body_log.lock().unwrap().as_mut() {
            use std::io::Write as _;
            let line = json!({
                "receivedMs": swarm_util::clock::now_ms(),
                "agent": self.agent,
                "path": self.path,
                "body": body,
            });
            if let Err(e) = writeln!(log, "{line}") {
                tracing::warn!("failed to log a request body: {e}");
            }
        }
        if !state.keep_requests.load(Ordering::Relaxed) {
            return;
        }
        state.requests.lock().unwrap().push(RecordedRequest {
            path: self.path.to_string(),
            headers: self.headers.clone(),
            body,
            outcome,
            received_at: Instant::now(),
        });
    }
}

/// One line of the request log, if there is one: who asked, which rule answered.
fn log_request(state: &ServerState, view: &RequestView, outcome: &Outcome, bytes: usize) {
    if let Some(log) = state.log.lock().unwrap().as_mut() {
        use std::io::Write as _;
        let line = serde_json::json!({
            "receivedMs": swarm_util::clock::now_ms(),
            "agent": view.agent,
            "rule": outcome.label(),
            "bytes": bytes,
            "userText": view.user_text,
        });
        let _ = writeln!(log, "{line}");
    }
}

async fn handle(state: Arc<ServerState>, api: Api, headers: HeaderMap, body: Bytes) -> Response {
    let n = state.counter.fetch_add(1, Ordering::Relaxed) + 1;
    let request_id = format!("req_scripted_{n:06}");
    let received = Received::new(api, &headers);
    let agent = received.agent.as_deref();
    let json: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            let message = format!("the request body is not valid JSON: {e}");
            received.record(&state, Value::Null, Outcome::Invalid(message.clone()));
            return error_response(400, &message, &request_id, &[], None);
        }
    };
    let view = match api {
        Api::Anthropic => RequestView::anthropic(&json, agent),
        Api::OpenAi => RequestView::openai(&json, agent),
    };
    let selection = state.matcher.lock().unwrap().select(&view);
    received.record(&state, json.clone(), selection.outcome.clone());
    log_request(&state, &view, &selection.outcome, body.len());
    let Some(reply) = selection.reply else {
        let message = format!(
            "the model server's script has no rule for this request and no default reply \
             (agent {:?}, latest user text {:?})",
            view.agent.as_deref().unwrap_or("(none)"),
            swarm_llm::http::truncate(&view.user_text, 200),
        );
        tracing::warn!("{message}");
        return error_response(
            500,
            &message,
            &request_id,
            &[("x-should-retry", "false")],
            None,
        );
    };
    tracing::info!(agent = ?view.agent, outcome = ?selection.outcome, "model server answering");
    if !selection.delay.is_zero() && !pause(selection.delay, &state.cancel).await {
        return error_response(
            503,
            "the model server is shutting down",
            &request_id,
            &[],
            None,
        );
    }
    if let Some(FaultKind::Http {
        status,
        retry_after,
        headers,
        body,
    }) = &selection.fault
    {
        let mut extra: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if let Some(ra) = retry_after {
            extra.push(("retry-after", ra));
        }
        let message = format!("scripted {} {}", status, default_kind(*status));
        return error_response(*status, &message, &request_id, &extra, body.clone());
    }
    if let Some(raw) = &reply.raw {
        return raw_response(raw, &request_id, &state.cancel);
    }
    let model = json
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted");
    let prefix = if api == Api::Anthropic {
        "toolu_"
    } else {
        "call_"
    };
    let resolved = Resolved::new(&reply, model, body.len(), prefix);
    let streaming = json.get("stream").and_then(Value::as_bool).unwrap_or(false);
    if !streaming {
        return whole_response(api, &resolved, selection.fault, &request_id, &state.cancel).await;
    }
    let frames = match api {
        Api::Anthropic => render::anthropic_frames(&resolved),
        Api::OpenAi => render::openai_frames(
            &resolved,
            json.pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        ),
    };
    let steps = plan(api, frames, selection.fault);
    stream_response(200, "text/event-stream", &request_id, steps, &state.cancel)
}

/// A non-streamed answer; stream faults degrade to their nearest whole-response form.
async fn whole_response(
    api: Api,
    r: &Resolved,
    fault: Option<FaultKind>,
    request_id: &str,
    cancel: &CancellationToken,
) -> Response {
    match fault {
        Some(FaultKind::ErrorEvent {
            error_type,
            message,
            ..
        }) => {
            let status = status_for_kind(&error_type);
            let body = json!({"type": "error", "error": {"type": error_type, "message": message},
                              "request_id": request_id});
            return error_response(status, &message, request_id, &[], Some(body));
        }
        Some(FaultKind::Drop { .. }) => {
            return stream_response(
                200,
                "application/json",
                request_id,
                vec![Step::Abort],
                cancel,
            );
        }
        Some(FaultKind::Stall { stall, .. }) if !pause(stall, cancel).await => {
            return error_response(
                503,
                "the model server is shutting down",
                request_id,
                &[],
                None,
            );
        }
        _ => {}
    }
    let body = match api {
        Api::Anthropic => render::anthropic_message(r),
        Api::OpenAi => render::openai_completion(r),
    };
    let mut response = axum::Json(body).into_response();
    response
        .headers_mut()
        .insert("request-id", header_value(request_id));
    response
}

/// Sleeps unless the server shuts down first; false if it did.
async fn pause(d: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => true,
        _ = cancel.cancelled() => false,
    }
}

enum Step {
    Send(Bytes),
    Sleep(Duration),
    Pings {
        every: Duration,
        total: Duration,
        frame: Bytes,
    },
    /// Reset the connection.
    Abort,
    /// Send nothing more until the client leaves or the server stops.
    Hang,
}

/// The frames with the fault worked in. A fault set past the end fires before the last
/// frame, so it always fires.
fn plan(api: Api, frames: Vec<String>, fault: Option<FaultKind>) -> Vec<Step> {
    let at = |after: usize| after.min(frames.len().saturating_sub(1));
    let send = |fs: &[String]| {
        fs.iter()
            .map(|f| Step::Send(Bytes::from(f.clone())))
            .collect::<Vec<_>>()
    };
    let mut steps = Vec::new();
    match fault {
        None | Some(FaultKind::Http { .. }) => steps = send(&frames),
        Some(FaultKind::ErrorEvent {
            after_frames,
            error_type,
            message,
        }) => {
            steps.extend(send(&frames[..at(after_frames)]));
            let frame = match api {
                Api::Anthropic => render::error_frame(&error_type, &message),
                Api::OpenAi => {
                    render::data_frame(&json!({"error": {"type": error_type, "message": message}}))
                }
            };
            steps.push(Step::Send(Bytes::from(frame)));
        }
        Some(FaultKind::Stall {
            after_frames,
            stall,
        }) => {
            let n = at(after_frames);
            steps.extend(send(&frames[..n]));
            steps.push(Step::Sleep(stall));
            steps.extend(send(&frames[n..]));
        }
        Some(FaultKind::Drop { after_frames }) => {
            steps.extend(send(&frames[..at(after_frames)]));
            steps.push(Step::Abort);
        }
        Some(FaultKind::Pings { every, total }) => {
            let n = at(1);
            steps.extend(send(&frames[..n]));
            let frame = match api {
                Api::Anthropic => render::ping_frame(),
                Api::OpenAi => ": ping\n\n".to_string(),
            };
            steps.push(Step::Pings {
                every,
                total,
                frame: Bytes::from(frame),
            });
            steps.extend(send(&frames[n..]));
        }
    }
    steps
}

fn raw_response(raw: &Raw, request_id: &str, cancel: &CancellationToken) -> Response {
    let delay = Duration::from_millis(raw.chunk_delay_ms.unwrap_or(0));
    let mut steps = Vec::new();
    for (i, chunk) in raw.chunks().into_iter().enumerate() {
        if i > 0 && !delay.is_zero() {
            steps.push(Step::Sleep(delay));
        }
        steps.push(Step::Send(Bytes::from(chunk)));
    }
    match raw.end.unwrap_or_default() {
        RawEnd::Close => {}
        RawEnd::Hang => steps.push(Step::Hang),
        RawEnd::Reset => steps.push(Step::Abort),
    }
    stream_response(
        raw.status.unwrap_or(200),
        raw.content_type.as_deref().unwrap_or("text/event-stream"),
        request_id,
        steps,
        cancel,
    )
}

/// A response whose body a task writes step by step.
fn stream_response(
    status: u16,
    content_type: &str,
    request_id: &str,
    steps: Vec<Step>,
    cancel: &CancellationToken,
) -> Response {
    let (tx, mut rx) = mpsc::channel::<std::io::Result<Bytes>>(1);
    let cancel = cancel.clone();
    tokio::spawn(async move {
        let reset = || {
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "scripted connection reset",
            ))
        };
        // Waits `d`; false when the client left or the server is stopping.
        let wait = |d: Duration| {
            let (tx, cancel) = (tx.clone(), cancel.clone());
            async move {
                tokio::select! {
                    _ = tokio::time::sleep(d) => true,
                    _ = tx.closed() => false,
                    _ = cancel.cancelled() => false,
                }
            }
        };
        let send = |b: Bytes| {
            let (tx, cancel) = (tx.clone(), cancel.clone());
            async move {
                tokio::select! {
                    r = tx.send(Ok(b)) => r.is_ok(),
                    _ = cancel.cancelled() => false,
                }
            }
        };
        for step in steps {
            let go = match step {
                Step::Send(b) => send(b).await,
                Step::Sleep(d) => wait(d).await,
                Step::Pings {
                    every,
                    total,
                    frame,
                } => {
                    let end = tokio::time::Instant::now() + total;
                    let mut go = true;
                    while go {
                        let left = end.saturating_duration_since(tokio::time::Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        go = wait(every.min(left)).await && send(frame.clone()).await;
                    }
                    go
                }
                Step::Abort => {
                    let _ = tx.send(reset()).await;
                    false
                }
                Step::Hang => {
                    wait(Duration::from_secs(24 * 3600)).await;
                    false
                }
            };
            if !go {
                if cancel.is_cancelled() {
                    let _ = tx.try_send(reset());
                }
                return;
            }
        }
    });
    let body = Body::from_stream(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)));
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let h = response.headers_mut();
    h.insert("content-type", header_value(content_type));
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    h.insert("request-id", header_value(request_id));
    response
}
