//! The Anthropic Messages API client (`POST {base}/v1/messages`, streamed), also used for
//! the scripted model server, which speaks the same protocol.
//!
//! Invariants:
//! - The stream is the only truth: a response exists only once `message_stop` arrived. An
//!   `error` event (even after HTTP 200), a broken connection, silence beyond the idle
//!   timeout or an end of body before `message_stop` discards everything received in that
//!   attempt; the retry policy then decides (see [`crate::retry`]).
//! - Content comes back exactly as sent: text, thinking and signatures are concatenated
//!   deltas, byte for byte; `redacted_thinking` and unknown block types are kept verbatim
//!   as the API sent them. Unknown events and delta types are ignored.
//! - Tool input is assembled from `input_json_delta` fragments and parsed only at the end
//!   of its block: empty input is `{}`, and input that is not valid JSON (as when
//!   `max_tokens` cuts a tool call short) becomes `{"_invalid_arguments": "<raw text>"}`,
//!   which the agent loop must not execute as a normal call.
//! - Prompt caching: `cache_control: {type: "ephemeral"}` goes on the last tool, on the
//!   system prompt (sent as one text block) and on the last block of the latest user
//!   message; three markers, within the API's limit of four.
//! - The key travels only in `x-api-key`, marked sensitive. `x-swarm-agent` is sent only to
//!   the scripted provider.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::{ApiKey, LlmConfig, Provider};
use crate::http::{self, EventReader};
use crate::retry::{self, Attempt, Failure, Policy};
use crate::types::{
    ContentBlock, LlmClient, LlmError, LlmFuture, Request, Response, Role, StopReason, StreamEvent,
    parse_tool_input,
};
use swarm_util::meter::Usage;
use swarm_util::vars;

pub struct AnthropicClient {
    http: reqwest::Client,
    provider: Provider,
    model: String,
    base_url: String,
    api_key: Option<ApiKey>,
    version: String,
    idle: Duration,
    policy: Policy,
}

impl AnthropicClient {
    pub fn new(config: &LlmConfig) -> Result<AnthropicClient, LlmError> {
        Ok(AnthropicClient {
            http: http::build_http(&config.base_url, config.connect_timeout)?,
            provider: config.provider,
            model: config.model.clone(),
            base_url: config.base_url.clone(),
            api_key: config.api_key.clone(),
            version: config.anthropic_version.clone(),
            idle: config.idle_timeout,
            policy: config.retry_policy(),
        })
    }

    fn prepare(&self, request: &Request, body: &[u8]) -> Result<reqwest::RequestBuilder, LlmError> {
        let mut rb = self
            .http
            .post(format!("{}/v1/messages", self.base_url))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .header(
                "anthropic-version",
                HeaderValue::from_str(&self.version).map_err(|_| {
                    LlmError::Config(format!("invalid anthropic-version {:?}", self.version))
                })?,
            )
            .body(body.to_vec());
        if let Some(key) = &self.api_key {
            let mut value = HeaderValue::from_str(key.expose()).map_err(|_| {
                LlmError::Config("the API key contains characters a header cannot carry".into())
            })?;
            value.set_sensitive(true);
            rb = rb.header("x-api-key", value);
        }
        if self.provider == Provider::Scripted
            && let Some(agent) = request.agent.as_deref()
            && let Ok(value) = HeaderValue::from_str(agent)
        {
            rb = rb.header("x-swarm-agent", value);
        }
        Ok(rb)
    }
}

impl Attempt for AnthropicClient {
    fn body(&self, request: &Request, model: &str) -> Value {
        request_body(request, model)
    }

    async fn attempt<'a>(
        &'a self,
        request: &'a Request,
        body: &'a [u8],
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
        cancel: &'a CancellationToken,
    ) -> Result<Response, Failure> {
        let rb = self.prepare(request, body).map_err(Failure::fatal)?;
        let response = http::send(rb, self.idle, cancel).await?;
        if !response.status().is_success() {
            let failure = http::error_response(response, self.idle, cancel).await;
            return Err(match self.provider {
                Provider::Anthropic => {
                    http::advise_on_key(failure, vars::ANTHROPIC_API_KEY, self.api_key.is_some())
                }
                _ => failure,
            });
        }
        let request_id = http::request_id(response.headers());
        if http::is_json(&response) {
            let json = http::json_body(response, self.idle, cancel).await?;
            return parse_message(json, request_id).map_err(Failure::fatal);
        }
        let mut reader = EventReader::new(response, self.idle);
        let mut acc = Accumulator::default();
        while let Some(event) = reader.next(cancel).await? {
            if let Some(response) = acc.handle(&event.event, &event.data, on_event)? {
                return Ok(Response {
                    request_id,
                    ..response
                });
            }
        }
        Err(Failure::retryable(LlmError::Stream(
            "the stream ended before message_stop".into(),
        )))
    }
}

impl LlmClient for AnthropicClient {
    fn complete<'a>(
        &'a self,
        request: &'a Request,
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
        cancel: &'a CancellationToken,
    ) -> LlmFuture<'a> {
        Box::pin(retry::call(
            self,
            &self.policy,
            &self.model,
            request,
            on_event,
            cancel,
        ))
    }

    fn describe(&self) -> String {
        // The scripted provider's model is called "scripted" too: said once.
        if self.model == self.provider.to_string() {
            return format!("{} at {}", self.provider, self.base_url);
        }
        format!("{} {} at {}", self.provider, self.model, self.base_url)
    }
}

/// The JSON body of a streamed Messages API request, with the cache breakpoints.
pub fn request_body(request: &Request, model: &str) -> Value {
    let ephemeral = json!({"type": "ephemeral"});
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("max_tokens".into(), json!(request.max_tokens));
    body.insert("stream".into(), json!(true));
    if !request.system.is_empty() {
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": request.system, "cache_control": ephemeral}]),
        );
    }
    let latest_user = request.messages.iter().rposition(|m| m.role == Role::User);
    let messages: Vec<Value> = request
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut content: Vec<Value> = m
                .content
                .iter()
                .map(|b| serde_json::to_value(b).unwrap_or(Value::Null))
                .collect();
            if Some(i) == latest_user
                && let Some(Value::Object(last)) = content.last_mut()
            {
                last.insert("cache_control".into(), ephemeral.clone());
            }
            json!({"role": m.role, "content": content})
        })
        .collect();
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
            .collect();
        if let Some(Value::Object(last)) = tools.last_mut() {
            last.insert("cache_control".into(), ephemeral.clone());
        }
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(thinking) = &request.thinking {
        body.insert("thinking".into(), thinking.clone());
    }
    Value::Object(body)
}

/// A whole (non-streamed) Messages API response.
fn parse_message(json: Value, request_id: Option<String>) -> Result<Response, LlmError> {
    let content: Vec<ContentBlock> =
        serde_json::from_value(json.get("content").cloned().unwrap_or_else(|| json!([])))
            .map_err(|e| LlmError::Stream(format!("the response content is malformed: {e}")))?;
    let usage = json
        .get("usage")
        .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok())
        .unwrap_or_default();
    let stop_reason = stop_reason_or_default(json.get("stop_reason"), &content);
    Ok(Response {
        model: json
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        content,
        stop_reason,
        usage,
        request_id,
    })
}

/// The stop reason given, or the one implied by the content when a server left it out.
fn stop_reason_or_default(value: Option<&Value>, content: &[ContentBlock]) -> StopReason {
    match value.and_then(|v| serde_json::from_value::<StopReason>(v.clone()).ok()) {
        Some(r) => r,
        None if content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse { .. })) =>
        {
            StopReason::ToolUse
        }
        None => StopReason::EndTurn,
    }
}

enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
        /// The input in `content_block_start`, used when no fragments follow.
        start_input: Value,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    /// `redacted_thinking` and unknown types, kept verbatim; `json` collects any
    /// `input_json_delta` fragments (server tools) for the `input` field.
    Verbatim {
        value: Value,
        json: String,
    },
}

impl Block {
    fn finish(self) -> ContentBlock {
        match self {
            Block::Text(text) => ContentBlock::Text { text },
            Block::ToolUse {
                id,
                name,
                json,
                start_input,
            } => {
                let input =
                    if json.is_empty() && start_input.as_object().is_some_and(|o| !o.is_empty()) {
                        start_input
                    } else {
                        parse_tool_input(&json)
                    };
                ContentBlock::ToolUse { id, name, input }
            }
            Block::Thinking {
                thinking,
                signature,
            } => ContentBlock::Thinking {
                thinking,
                signature,
            },
            Block::Verbatim { mut value, json } => {
                if !json.is_empty()
                    && let Some(obj) = value.as_object_mut()
                {
                    obj.insert("input".into(), parse_tool_input(&json));
                }
                match serde_json::from_value::<ContentBlock>(value.clone()) {
                    Ok(b @ ContentBlock::RedactedThinking { .. }) => b,
                    _ => ContentBlock::Other(value),
                }
            }
        }
    }
}

/// Builds a [`Response`] from stream events.
#[derive(Default)]
struct Accumulator {
    blocks: BTreeMap<u64, Block>,
    usage: Usage,
    stop_reason: Option<Value>,
    model: String,
}

fn malformed(what: impl std::fmt::Display) -> Failure {
    Failure::fatal(LlmError::Stream(what.to_string()))
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Overwrites the usage counters present in `v`; `message_delta` counts are cumulative.
fn merge_usage(usage: &mut Usage, v: Option<&Value>) {
    let Some(v) = v else { return };
    let set = |field: &mut u64, key: &str| {
        if let Some(n) = v.get(key).and_then(Value::as_u64) {
            *field = n;
        }
    };
    set(&mut usage.input_tokens, "input_tokens");
    set(&mut usage.output_tokens, "output_tokens");
    set(
        &mut usage.cache_creation_input_tokens,
        "cache_creation_input_tokens",
    );
    set(
        &mut usage.cache_read_input_tokens,
        "cache_read_input_tokens",
    );
}

impl Accumulator {
    /// Handles one event; returns the response at `message_stop`.
    fn handle(
        &mut self,
        event: &str,
        data: &str,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Option<Response>, Failure> {
        if event == "ping" {
            return Ok(None);
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| malformed(format_args!("event {event:?} has invalid JSON data: {e}")))?;
        // The `type` inside the data is authoritative; the event name only repeats it.
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(event);
        match kind {
            "message_start" => {
                let message = v.get("message").unwrap_or(&Value::Null);
                self.model = str_field(message, "model");
                merge_usage(&mut self.usage, message.get("usage"));
            }
            "content_block_start" => self.block_start(&v, on_event)?,
            "content_block_delta" => self.block_delta(&v, on_event)?,
            "content_block_stop" => {
                on_event(StreamEvent::BlockStop);
            }
            "message_delta" => {
                if let Some(r) = v.get("delta").and_then(|d| d.get("stop_reason"))
                    && !r.is_null()
                {
                    self.stop_reason = Some(r.clone());
                }
                merge_usage(&mut self.usage, v.get("usage"));
            }
            "message_stop" => {
                let content: Vec<ContentBlock> = std::mem::take(&mut self.blocks)
                    .into_values()
                    .map(Block::finish)
                    .collect();
                return Ok(Some(Response {
                    stop_reason: stop_reason_or_default(self.stop_reason.as_ref(), &content),
                    content,
                    usage: self.usage,
                    model: std::mem::take(&mut self.model),
                    request_id: None,
                }));
            }
            "error" => return Err(error_event(&v)),
            // New event types are allowed by the API's versioning policy.
            _ => {}
        }
        Ok(None)
    }

    /// `content_block_start`: a block begins at its index.
    fn block_start(
        &mut self,
        v: &Value,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), Failure> {
        let index = index_of(v)?;
        let block = v
            .get("content_block")
            .ok_or_else(|| malformed("content_block_start without a content_block"))?;
        let state = match block.get("type").and_then(Value::as_str) {
            Some("text") => Block::Text(str_field(block, "text")),
            Some("tool_use") => {
                let (id, name) = (str_field(block, "id"), str_field(block, "name"));
                on_event(StreamEvent::ToolUseStart {
                    id: id.clone(),
                    name: name.clone(),
                });
                Block::ToolUse {
                    id,
                    name,
                    json: String::new(),
                    start_input: block.get("input").cloned().unwrap_or(Value::Null),
                }
            }
            Some("thinking") => Block::Thinking {
                thinking: str_field(block, "thinking"),
                signature: str_field(block, "signature"),
            },
            _ => Block::Verbatim {
                value: block.clone(),
                json: String::new(),
            },
        };
        self.blocks.insert(index, state);
        Ok(())
    }

    /// `content_block_delta`: more of a block that started.
    fn block_delta(
        &mut self,
        v: &Value,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), Failure> {
        let index = index_of(v)?;
        let delta = v.get("delta").unwrap_or(&Value::Null);
        let dtype = delta.get("type").and_then(Value::as_str).unwrap_or("");
        let Some(block) = self.blocks.get_mut(&index) else {
            return Err(malformed(format_args!(
                "content_block_delta for block {index}, which never started"
            )));
        };
        match (block, dtype) {
            (Block::Text(text), "text_delta") => {
                let t = str_field(delta, "text");
                text.push_str(&t);
                on_event(StreamEvent::TextDelta(t));
            }
            (Block::ToolUse { json, .. } | Block::Verbatim { json, .. }, "input_json_delta") => {
                let part = str_field(delta, "partial_json");
                json.push_str(&part);
                on_event(StreamEvent::ToolInputDelta(part));
            }
            (Block::Thinking { thinking, .. }, "thinking_delta") => {
                let t = str_field(delta, "thinking");
                thinking.push_str(&t);
                on_event(StreamEvent::ThinkingDelta(t));
            }
            (Block::Thinking { signature, .. }, "signature_delta") => {
                signature.push_str(&str_field(delta, "signature"));
            }
            // citations_delta and whatever the API adds later.
            _ => {}
        }
        Ok(())
    }
}

/// An `error` event inside the stream, as the failure of its attempt: retryable as the
/// status its type maps to would be, unless it is a spend limit.
fn error_event(v: &Value) -> Failure {
    let error = v.get("error").unwrap_or(&Value::Null);
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("api_error")
        .to_string();
    let status = http::status_for_kind(&kind);
    Failure {
        retryable: crate::retry::should_retry_status(status, None)
            && !crate::retry::is_spend_limit(error),
        retry_after: None,
        error: LlmError::Api {
            status,
            message: format!(
                "{} (error event in the stream)",
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message")
            ),
            kind,
            request_id: v
                .get("request_id")
                .and_then(Value::as_str)
                .map(str::to_string),
        },
    }
}

fn index_of(v: &Value) -> Result<u64, Failure> {
    v.get("index")
        .and_then(Value::as_u64)
        .ok_or_else(|| malformed("a content block event without an index"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Message, ToolSpec};

    fn feed(events: &[(&str, Value)]) -> (Result<Option<Response>, Failure>, Vec<StreamEvent>) {
        let mut acc = Accumulator::default();
        let mut seen = Vec::new();
        let mut on_event = |e: StreamEvent| seen.push(e);
        let mut last = Ok(None);
        for (name, data) in events {
            last = acc.handle(name, &data.to_string(), &mut on_event);
            if !matches!(last, Ok(None)) {
                break;
            }
        }
        (last, seen)
    }

    #[test]
    fn a_full_stream_becomes_a_response() {
        let (r, seen) = feed(&[
            (
                "message_start",
                json!({"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 10, "cache_read_input_tokens": 4, "output_tokens": 1}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "c2ln"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "opaque"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 1}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "Hi "}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 2, "delta": {"type": "citations_delta", "citation": {}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "there"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 2}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"a"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "\"}"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 3}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 4, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "List", "input": {}}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 4}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 5, "content_block": {"type": "x_new", "payload": 1}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 5, "delta": {"type": "x_delta"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 5}),
            ),
            ("x_future_event", json!({"type": "x_future_event"})),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {}, "usage": {"output_tokens": 9}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ]);
        let r = r.unwrap().unwrap();
        assert_eq!(
            r.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "hm".into(),
                    signature: "c2ln".into()
                },
                ContentBlock::RedactedThinking {
                    data: "opaque".into()
                },
                ContentBlock::Text {
                    text: "Hi there".into()
                },
                ContentBlock::ToolUse {
                    id: "toolu_1".into(),
                    name: "Read".into(),
                    input: json!({"path": "a"})
                },
                ContentBlock::ToolUse {
                    id: "toolu_2".into(),
                    name: "List".into(),
                    input: json!({})
                },
                ContentBlock::Other(json!({"type": "x_new", "payload": 1})),
            ]
        );
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 9,
                cache_creation_input_tokens: 0,
                cache_read_input_tokens: 4
            }
        );
        assert_eq!(r.model, "m");
        assert_eq!(
            seen.iter()
                .filter(|e| matches!(e, StreamEvent::BlockStop))
                .count(),
            6
        );
        assert!(seen.contains(&StreamEvent::ToolUseStart {
            id: "toolu_1".into(),
            name: "Read".into()
        }));
    }

    #[test]
    fn an_error_event_fails_the_attempt_by_its_type() {
        let (r, _) = feed(&[(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        )]);
        let f = r.unwrap_err();
        assert!(f.retryable);
        assert!(
            matches!(f.error, LlmError::Api { status: 529, ref kind, .. } if kind == "overloaded_error")
        );
        let (r, _) = feed(&[(
            "error",
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "no"}}),
        )]);
        assert!(!r.unwrap_err().retryable);
        let (r, _) = feed(&[(
            "error",
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "limit",
                "details": {"error_code": "enforced_spend_limit_reached"}}}),
        )]);
        assert!(!r.unwrap_err().retryable, "a spend limit is final");
    }

    #[test]
    fn the_body_carries_three_cache_breakpoints_in_the_right_places() {
        let tool = |n: &str| ToolSpec {
            name: n.into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}),
        };
        let request = Request {
            model: "m".into(),
            system: "be brief".into(),
            messages: vec![
                Message::user_text("one"),
                Message {
                    role: Role::Assistant,
                    content: vec![ContentBlock::Text { text: "two".into() }],
                },
                Message {
                    role: Role::User,
                    content: vec![
                        ContentBlock::ToolResult {
                            tool_use_id: "toolu_1".into(),
                            content: "r".into(),
                            is_error: false,
                        },
                        ContentBlock::Text {
                            text: "three".into(),
                        },
                    ],
                },
            ],
            tools: vec![tool("a"), tool("b")],
            max_tokens: 100,
            thinking: Some(json!({"type": "enabled", "budget_tokens": 1024})),
            agent: Some("bob".into()),
        };
        let body = request_body(&request, "m");
        let eph = json!({"type": "ephemeral"});
        assert_eq!(body["stream"], json!(true));
        assert_eq!(body["system"][0]["cache_control"], eph);
        assert_eq!(body["tools"][1]["cache_control"], eph);
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["messages"][2]["content"][1]["cache_control"], eph);
        assert!(
            body["messages"][0]["content"][0]
                .get("cache_control")
                .is_none()
        );
        assert_eq!(body["thinking"]["budget_tokens"], json!(1024));
        assert_eq!(body.to_string().matches("cache_control").count(), 3);
    }
}
