//! The OpenAI-compatible chat completions client (`POST {base}/v1/chat/completions`,
//! streamed), for OpenAI itself and the local servers that copy its API.
//!
//! It converts the Anthropic-shaped conversation both ways:
//! - out: the system prompt becomes a `system` message; an assistant turn becomes one
//!   message with `content` and `tool_calls` (arguments as a JSON string); each
//!   `tool_result` becomes a `role: tool` message, placed before any text of its user turn,
//!   with `is_error` results prefixed `Error: ` since the API has no such flag. Thinking and
//!   unknown blocks are not sent: these servers have nowhere to put them.
//! - in: `delta.content` becomes one text block; `delta.tool_calls` fragments are assembled
//!   per `index` (indexes may interleave; `id` and `name` come first, `arguments`
//!   accumulate) into `tool_use` blocks after the text.
//!
//! Parsing is lenient because local servers vary: a missing call id is generated
//! (`call_<random>`), a missing index continues the previous call, arguments sent as an
//! object are accepted, `finish_reason: "stop"` with tool calls means tool use, and a body
//! that ends after a finish reason but without `[DONE]` is accepted. Arguments that are not
//! valid JSON become `{"_invalid_arguments": "<raw string>"}`, so the agent loop can answer
//! with a tool error instead of failing the turn; sending that turn back restores the raw
//! string. Generating is strict: every call has an id, a type and string arguments.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::{ApiKey, LlmConfig};
use crate::http::{self, EventReader};
use crate::retry::{self, Attempt, Failure, Policy};
use crate::types::{
    ContentBlock, INVALID_ARGUMENTS_KEY, LlmClient, LlmError, LlmFuture, Request, Response, Role,
    StopReason, StreamEvent, parse_tool_input,
};
use swarm_util::meter::Usage;
use swarm_util::vars;

pub struct OpenAiClient {
    http: reqwest::Client,
    model: String,
    base_url: String,
    api_key: Option<ApiKey>,
    idle: Duration,
    policy: Policy,
}

impl OpenAiClient {
    pub fn new(config: &LlmConfig) -> Result<OpenAiClient, LlmError> {
        Ok(OpenAiClient {
            http: http::build_http(&config.base_url, config.connect_timeout)?,
            model: config.model.clone(),
            base_url: config.base_url.clone(),
            api_key: config.api_key.clone(),
            idle: config.idle_timeout,
            policy: config.retry_policy(),
        })
    }
}

impl Attempt for OpenAiClient {
    fn body(&self, request: &Request, model: &str) -> Value {
        request_body(request, model)
    }

    async fn attempt<'a>(
        &'a self,
        _request: &'a Request,
        body: &'a [u8],
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
        cancel: &'a CancellationToken,
    ) -> Result<Response, Failure> {
        let mut rb = self
            .http
            .post(format!("{}/v1/chat/completions", self.base_url))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body.to_vec());
        if let Some(key) = &self.api_key {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                    Failure::fatal(LlmError::Config(
                        "the API key contains characters a header cannot carry".into(),
                    ))
                })?;
            value.set_sensitive(true);
            rb = rb.header(AUTHORIZATION, value);
        }
        let response = http::send(rb, self.idle, cancel).await?;
        if !response.status().is_success() {
            let failure = http::error_response(response, self.idle, cancel).await;
            return Err(http::advise_on_key(
                failure,
                vars::OPENAI_API_KEY,
                self.api_key.is_some(),
            ));
        }
        let request_id = http::request_id(response.headers());
        if http::is_json(&response) {
            let json = http::json_body(response, self.idle, cancel).await?;
            return Ok(Response {
                request_id,
                ..parse_completion(&json)?
            });
        }
        let mut reader = EventReader::new(response, self.idle);
        let mut acc = Accumulator::default();
        while let Some(event) = reader.next(cancel).await? {
            if event.data.trim() == "[DONE]" {
                return Ok(Response {
                    request_id,
                    ..acc.finish()
                });
            }
            acc.handle(&event.data, on_event)?;
        }
        if acc.finish_reason.is_some() {
            return Ok(Response {
                request_id,
                ..acc.finish()
            });
        }
        Err(Failure::retryable(LlmError::Stream(
            "the stream ended before a finish reason or [DONE]".into(),
        )))
    }
}

impl LlmClient for OpenAiClient {
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
        format!("openai {} at {}", self.model, self.base_url)
    }
}

/// The arguments string for a tool call: the raw text back if it never parsed.
fn arguments_string(input: &Value) -> String {
    if let Some(obj) = input.as_object()
        && obj.len() == 1
        && let Some(Value::String(raw)) = obj.get(INVALID_ARGUMENTS_KEY)
    {
        return raw.clone();
    }
    input.to_string()
}

/// The JSON body of a streamed chat completions request.
pub fn request_body(request: &Request, model: &str) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for m in &request.messages {
        let text: Vec<&str> = m
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        match m.role {
            Role::User => {
                for b in &m.content {
                    if let ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                    } = b
                    {
                        let content = if *is_error {
                            format!("Error: {content}")
                        } else {
                            content.clone()
                        };
                        messages.push(
                            json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}),
                        );
                    }
                }
                if !text.is_empty() {
                    messages.push(json!({"role": "user", "content": text.join("\n")}));
                }
            }
            Role::Assistant => {
                let calls: Vec<Value> = m
                    .tool_uses()
                    .map(|(id, name, input)| {
                        json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments_string(input)}})
                    })
                    .collect();
                let mut msg = Map::new();
                msg.insert("role".into(), json!("assistant"));
                msg.insert(
                    "content".into(),
                    if text.is_empty() {
                        Value::Null
                    } else {
                        json!(text.join("\n"))
                    },
                );
                if !calls.is_empty() {
                    msg.insert("tool_calls".into(), Value::Array(calls));
                }
                messages.push(Value::Object(msg));
            }
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("max_tokens".into(), json!(request.max_tokens));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    Value::Object(body)
}

fn stop_reason(finish: Option<&str>, has_tools: bool) -> StopReason {
    match finish {
        Some("length") => StopReason::MaxTokens,
        Some("content_filter") => StopReason::Refusal,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("stop") | None if has_tools => StopReason::ToolUse,
        Some("stop") | None => StopReason::EndTurn,
        Some(other) => StopReason::Other(other.to_string()),
    }
}

fn usage_of(u: &Value) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let prompt = n(u.get("prompt_tokens"));
    let cached = n(u.pointer("/prompt_tokens_details/cached_tokens"));
    // Anthropic counts cache reads apart from input; do the same so costs add up alike.
    Usage {
        input_tokens: prompt.saturating_sub(cached),
        output_tokens: n(u.get("completion_tokens")),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: cached,
    }
}

fn generated_call_id() -> String {
    let mut id = String::from("call_");
    id.extend((0..24).map(|_| fastrand::alphanumeric()));
    id
}

fn api_error_in_body(error: &Value) -> Failure {
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("api_error")
        .to_string();
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or_else(|| http::status_for_kind(&kind));
    Failure {
        retryable: crate::retry::should_retry_status(status, None)
            && !crate::retry::is_spend_limit(error),
        retry_after: None,
        error: LlmError::Api {
            status,
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message")
                .to_string(),
            kind,
            request_id: None,
        },
    }
}

/// A whole (non-streamed) chat completion.
fn parse_completion(json: &Value) -> Result<Response, Failure> {
    if let Some(error) = json.get("error") {
        return Err(api_error_in_body(error));
    }
    let choice = json.pointer("/choices/0").unwrap_or(&Value::Null);
    let message = choice.get("message").unwrap_or(&Value::Null);
    let mut acc = Accumulator {
        model: json
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        ..Accumulator::default()
    };
    if let Some(text) = message.get("content").and_then(Value::as_str) {
        acc.text.push_str(text);
    }
    for (i, call) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        acc.tool_fragment(call, i as u64);
    }
    acc.finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(u) = json.get("usage") {
        acc.usage = usage_of(u);
    }
    Ok(acc.finish())
}

#[derive(Default)]
struct Call {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Default)]
struct Accumulator {
    text: String,
    calls: BTreeMap<u64, Call>,
    last_index: Option<u64>,
    finish_reason: Option<String>,
    usage: Usage,
    model: String,
}

impl Accumulator {
    fn handle(
        &mut self,
        data: &str,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), Failure> {
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            Failure::fatal(LlmError::Stream(format!(
                "a chunk has invalid JSON data: {e}"
            )))
        })?;
        if let Some(error) = chunk.get("error") {
            return Err(api_error_in_body(error));
        }
        if let Some(model) = chunk.get("model").and_then(Value::as_str) {
            self.model = model.to_string();
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = usage_of(u);
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(());
        };
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.text.push_str(text);
            on_event(StreamEvent::TextDelta(text.to_string()));
        }
        for key in ["reasoning_content", "reasoning"] {
            if let Some(t) = delta.get(key).and_then(Value::as_str)
                && !t.is_empty()
            {
                on_event(StreamEvent::ThinkingDelta(t.to_string()));
            }
        }
        for frag in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let fallback = self.fallback_index(frag);
            let (started, args) = self.tool_fragment(frag, fallback);
            if let Some((id, name)) = started {
                on_event(StreamEvent::ToolUseStart { id, name });
            }
            if !args.is_empty() {
                on_event(StreamEvent::ToolInputDelta(args));
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
        }
        Ok(())
    }

    /// The index for a fragment without one: the call with its id, a new call if it has an
    /// id, or else the previous call.
    fn fallback_index(&self, frag: &Value) -> u64 {
        match frag.get("id").and_then(Value::as_str) {
            Some(id) => self
                .calls
                .iter()
                .find(|(_, c)| c.id == id)
                .map(|(i, _)| *i)
                .unwrap_or_else(|| self.calls.keys().next_back().map_or(0, |i| i + 1)),
            None => self.last_index.unwrap_or(0),
        }
    }

    /// Merges one `tool_calls` fragment; returns (id, name) when it started a call, and the
    /// argument text it added.
    fn tool_fragment(&mut self, frag: &Value, fallback: u64) -> (Option<(String, String)>, String) {
        let index = frag
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(fallback);
        self.last_index = Some(index);
        let is_new = !self.calls.contains_key(&index);
        let call = self.calls.entry(index).or_default();
        if let Some(id) = frag.get("id").and_then(Value::as_str)
            && !id.is_empty()
        {
            call.id = id.to_string();
        }
        let function = frag.get("function").unwrap_or(&Value::Null);
        if let Some(name) = function.get("name").and_then(Value::as_str) {
            call.name.push_str(name);
        }
        let args = match function.get("arguments") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        call.arguments.push_str(&args);
        let started = is_new.then(|| (call.id.clone(), call.name.clone()));
        (started, args)
    }

    fn finish(&mut self) -> Response {
        let has_tools = !self.calls.is_empty();
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(ContentBlock::Text {
                text: std::mem::take(&mut self.text),
            });
        }
        for (_, call) in std::mem::take(&mut self.calls) {
            content.push(ContentBlock::ToolUse {
                id: if call.id.is_empty() {
                    generated_call_id()
                } else {
                    call.id
                },
                name: call.name,
                input: parse_tool_input(&call.arguments),
            });
        }
        Response {
            stop_reason: stop_reason(self.finish_reason.as_deref(), has_tools),
            content,
            usage: self.usage,
            model: std::mem::take(&mut self.model),
            request_id: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Message, ToolSpec};

    #[test]
    fn the_conversation_converts_to_chat_messages() {
        let request = Request {
            model: "m".into(),
            system: "sys".into(),
            messages: vec![
                Message::user_text("hi"),
                Message {
                    role: Role::Assistant,
                    content: vec![
                        ContentBlock::Thinking {
                            thinking: "t".into(),
                            signature: "s".into(),
                        },
                        ContentBlock::Text { text: "ok".into() },
                        ContentBlock::ToolUse {
                            id: "call_1".into(),
                            name: "Read".into(),
                            input: json!({"p": 1}),
                        },
                        ContentBlock::ToolUse {
                            id: "call_2".into(),
                            name: "Bad".into(),
                            input: json!({"_invalid_arguments": "{oops"}),
                        },
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![
                        ContentBlock::ToolResult {
                            tool_use_id: "call_1".into(),
                            content: "data".into(),
                            is_error: false,
                        },
                        ContentBlock::ToolResult {
                            tool_use_id: "call_2".into(),
                            content: "invalid JSON".into(),
                            is_error: true,
                        },
                        ContentBlock::Text {
                            text: "go on".into(),
                        },
                    ],
                },
            ],
            tools: vec![ToolSpec {
                name: "Read".into(),
                description: "reads".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: 50,
            thinking: None,
            agent: None,
        };
        let body = request_body(&request, "m");
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "ok", "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": "{\"p\":1}"}},
                        {"id": "call_2", "type": "function", "function": {"name": "Bad", "arguments": "{oops"}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "data"},
                    {"role": "tool", "tool_call_id": "call_2", "content": "Error: invalid JSON"},
                    {"role": "user", "content": "go on"}
                ],
                "max_tokens": 50,
                "stream": true,
                "stream_options": {"include_usage": true},
                "tools": [{"type": "function", "function": {"name": "Read", "description": "reads", "parameters": {"type": "object"}}}]
            })
        );
    }

    fn run(chunks: &[Value]) -> Response {
        let mut acc = Accumulator::default();
        let mut on_event = |_e: StreamEvent| {};
        for c in chunks {
            acc.handle(&c.to_string(), &mut on_event).unwrap();
        }
        acc.finish()
    }

    #[test]
    fn lenient_parsing_of_odd_servers() {
        let r = run(&[
            json!({"choices": [{"delta": {"role": "assistant", "content": null}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"function": {"name": "A", "arguments": {"x": 1}}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"id": "c2", "function": {"name": "B", "arguments": "{\"y\""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": ":2}"}}]}, "finish_reason": "stop"}]}),
        ]);
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        match &r.content[..] {
            [
                ContentBlock::ToolUse {
                    id: id0,
                    name: n0,
                    input: i0,
                },
                ContentBlock::ToolUse {
                    id: id1,
                    name: n1,
                    input: i1,
                },
            ] => {
                assert!(id0.starts_with("call_") && id0.len() > 10, "{id0}");
                assert_eq!((n0.as_str(), i0), ("A", &json!({"x": 1})));
                assert_eq!(
                    (id1.as_str(), n1.as_str(), i1),
                    ("c2", "B", &json!({"y": 2}))
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn finish_reasons_map_to_stop_reasons() {
        assert_eq!(stop_reason(Some("stop"), false), StopReason::EndTurn);
        assert_eq!(stop_reason(Some("length"), true), StopReason::MaxTokens);
        assert_eq!(stop_reason(Some("tool_calls"), true), StopReason::ToolUse);
        assert_eq!(
            stop_reason(Some("content_filter"), false),
            StopReason::Refusal
        );
        assert_eq!(
            stop_reason(Some("eos"), false),
            StopReason::Other("eos".into())
        );
    }

    #[test]
    fn a_non_streamed_completion_parses() {
        let r = parse_completion(&json!({
            "model": "local",
            "choices": [{"message": {"role": "assistant", "content": "hi", "tool_calls": [
                {"id": "call_9", "type": "function", "function": {"name": "T", "arguments": "not json"}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 4}}
        }))
        .unwrap();
        assert_eq!(
            r.content,
            vec![
                ContentBlock::Text { text: "hi".into() },
                ContentBlock::ToolUse {
                    id: "call_9".into(),
                    name: "T".into(),
                    input: json!({"_invalid_arguments": "not json"})
                }
            ]
        );
        assert_eq!(r.usage.input_tokens, 6);
        assert_eq!(r.usage.cache_read_input_tokens, 4);
        assert_eq!(r.model, "local");
    }
}
