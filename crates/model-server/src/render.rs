//! Turning a scripted reply into what a real API would send: the Messages API's SSE event
//! sequence or JSON message, and the chat completions chunk stream or JSON completion.
//!
//! Invariants:
//! - The event order is the real one: `message_start`, a `ping`, then per block
//!   `content_block_start` / deltas / `content_block_stop` (thinking, then text, then tool
//!   calls), `message_delta`, `message_stop`.
//! - Text and thinking are split into several deltas, and tool input into several
//!   `input_json_delta` fragments of which the first is `""`, so clients exercise their
//!   reassembly paths. Splits fall on character boundaries, as the real API's do.
//! - Usage is an estimate: input tokens are request bytes / 4, output tokens reply bytes / 4,
//!   unless the reply fixes them (`usage`).

use serde_json::{Value, json};

use crate::script::Reply;

/// A reply with its tool ids assigned, ready to render in either shape.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub text: Option<String>,
    pub thinking: Option<(String, String)>,
    /// (id, name, input)
    pub tools: Vec<(String, String, Value)>,
    pub stop_reason: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub model: String,
}

fn random_id(prefix: &str) -> String {
    let mut id = String::from(prefix);
    id.extend((0..24).map(|_| fastrand::alphanumeric()));
    id
}

impl Resolved {
    /// `id_prefix` is `toolu_` for the Messages API and `call_` for chat completions.
    pub fn new(reply: &Reply, model: &str, request_bytes: usize, id_prefix: &str) -> Resolved {
        let tools: Vec<(String, String, Value)> = reply
            .tool_calls
            .iter()
            .map(|c| {
                (
                    c.id.clone().unwrap_or_else(|| random_id(id_prefix)),
                    c.name.clone(),
                    c.input.clone(),
                )
            })
            .collect();
        let out_bytes = reply.text.as_ref().map_or(0, String::len)
            + reply.thinking.as_ref().map_or(0, |t| t.thinking.len())
            + tools
                .iter()
                .map(|(_, n, i)| n.len() + i.to_string().len())
                .sum::<usize>();
        Resolved {
            text: reply.text.clone().filter(|t| !t.is_empty()),
            thinking: reply
                .thinking
                .as_ref()
                .map(|t| (t.thinking.clone(), t.signature.clone())),
            stop_reason: reply.stop_reason.clone().unwrap_or_else(|| {
                if tools.is_empty() {
                    "end_turn"
                } else {
                    "tool_use"
                }
                .to_string()
            }),
            tools,
            input_tokens: reply
                .usage
                .map_or((request_bytes / 4).max(1) as u64, |u| u.input_tokens),
            output_tokens: reply
                .usage
                .map_or((out_bytes / 4).max(1) as u64, |u| u.output_tokens),
            model: model.to_string(),
        }
    }
}

/// Splits `s` into about three pieces (at most 32 characters each) on char boundaries.
pub fn pieces(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let size = chars.len().div_ceil(3).clamp(1, 32);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

pub fn sse_frame(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

pub fn ping_frame() -> String {
    sse_frame("ping", &json!({"type": "ping"}))
}

pub fn error_frame(error_type: &str, message: &str) -> String {
    sse_frame(
        "error",
        &json!({"type": "error", "error": {"type": error_type, "message": message}}),
    )
}

/// The Messages API event stream for a reply, one frame per event.
pub fn anthropic_frames(r: &Resolved) -> Vec<String> {
    let mut frames = vec![
        sse_frame(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": random_id("msg_"), "type": "message", "role": "assistant",
                "model": r.model, "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": r.input_tokens, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "output_tokens": 1}
            }}),
        ),
        ping_frame(),
    ];
    let mut index = 0;
    let mut block = |frames: &mut Vec<String>, start: Value, deltas: Vec<Value>| {
        frames.push(sse_frame(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for d in deltas {
            frames.push(sse_frame(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": d}),
            ));
        }
        frames.push(sse_frame(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    };
    if let Some((thinking, signature)) = &r.thinking {
        let mut deltas: Vec<Value> = pieces(thinking)
            .into_iter()
            .map(|p| json!({"type": "thinking_delta", "thinking": p}))
            .collect();
        deltas.push(json!({"type": "signature_delta", "signature": signature}));
        block(
            &mut frames,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            deltas,
        );
    }
    if let Some(text) = &r.text {
        let deltas = pieces(text)
            .into_iter()
            .map(|p| json!({"type": "text_delta", "text": p}))
            .collect();
        block(&mut frames, json!({"type": "text", "text": ""}), deltas);
    }
    for (id, name, input) in &r.tools {
        let json_text = input.to_string();
        let deltas = std::iter::once(String::new())
            .chain(pieces(&json_text))
            .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
            .collect();
        block(
            &mut frames,
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
            deltas,
        );
    }
    frames.push(sse_frame(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": r.stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": r.output_tokens}}),
    ));
    frames.push(sse_frame("message_stop", &json!({"type": "message_stop"})));
    frames
}

/// The Messages API's whole-message response for a reply.
pub fn anthropic_message(r: &Resolved) -> Value {
    let mut content = Vec::new();
    if let Some((thinking, signature)) = &r.thinking {
        content.push(json!({"type": "thinking", "thinking": thinking, "signature": signature}));
    }
    if let Some(text) = &r.text {
        content.push(json!({"type": "text", "text": text}));
    }
    for (id, name, input) in &r.tools {
        content.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
    }
    json!({
        "id": random_id("msg_"), "type": "message", "role": "assistant", "model": r.model,
        "content": content, "stop_reason": r.stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": r.input_tokens, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "output_tokens": r.output_tokens}
    })
}

fn finish_reason(stop_reason: &str) -> &str {
    match stop_reason {
        "end_turn" | "stop_sequence" => "stop",
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        "refusal" => "content_filter",
        other => other,
    }
}

fn openai_usage(r: &Resolved) -> Value {
    json!({"prompt_tokens": r.input_tokens, "completion_tokens": r.output_tokens,
           "total_tokens": r.input_tokens + r.output_tokens})
}

pub fn data_frame(data: &Value) -> String {
    format!("data: {data}\n\n")
}

/// The chat completions chunk stream for a reply, ending with `[DONE]`.
pub fn openai_frames(r: &Resolved, include_usage: bool) -> Vec<String> {
    let id = random_id("chatcmpl-");
    let created = jiff::Timestamp::now().as_second();
    let chunk = |delta: Value, finish: Value| {
        data_frame(
            &json!({"id": id, "object": "chat.completion.chunk", "created": created,
            "model": r.model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut frames = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    if let Some(text) = &r.text {
        for p in pieces(text) {
            frames.push(chunk(json!({"content": p}), Value::Null));
        }
    }
    for (i, (call_id, name, input)) in r.tools.iter().enumerate() {
        frames.push(chunk(
            json!({"tool_calls": [{"index": i, "id": call_id, "type": "function",
                                   "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        for p in pieces(&input.to_string()) {
            frames.push(chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]}),
                Value::Null,
            ));
        }
    }
    frames.push(chunk(json!({}), json!(finish_reason(&r.stop_reason))));
    if include_usage {
        frames.push(data_frame(
            &json!({"id": id, "object": "chat.completion.chunk",
            "created": created, "model": r.model, "choices": [], "usage": openai_usage(r)}),
        ));
    }
    frames.push("data: [DONE]\n\n".to_string());
    frames
}

/// The whole chat completion for a reply.
pub fn openai_completion(r: &Resolved) -> Value {
    let calls: Vec<Value> = r
        .tools
        .iter()
        .map(|(id, name, input)| {
            json!({"id": id, "type": "function",
                   "function": {"name": name, "arguments": input.to_string()}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": r.text});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": random_id("chatcmpl-"), "object": "chat.completion",
        "created": jiff::Timestamp::now().as_second(), "model": r.model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": finish_reason(&r.stop_reason)}],
        "usage": openai_usage(r)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use swarm_llm::sse::SseParser;

    #[test]
    fn pieces_split_on_char_boundaries() {
        assert_eq!(pieces("héllo wörld"), vec!["héll", "o wö", "rld"]);
        assert_eq!(pieces(""), Vec::<String>::new());
        assert_eq!(pieces("a"), vec!["a"]);
        let long = "x".repeat(100);
        assert!(pieces(&long).iter().all(|p| p.len() == 32 || p.len() == 4));
    }

    #[test]
    fn the_anthropic_stream_has_the_real_event_order() {
        let reply = Reply::text("Hello there, world")
            .thinking("mulling", "sig==")
            .tool_call("Read", json!({"path": "a.txt"}));
        let r = Resolved::new(&reply, "m", 400, "toolu_");
        assert_eq!(r.input_tokens, 100);
        assert_eq!(r.stop_reason, "tool_use");
        let mut parser = SseParser::new();
        let names: Vec<String> = anthropic_frames(&r)
            .iter()
            .flat_map(|f| parser.feed(f.as_bytes()))
            .map(|e| e.event)
            .collect();
        let mut expect = vec!["message_start", "ping"];
        expect.extend(
            ["content_block_start"]
                .iter()
                .chain(&["content_block_delta"; 3])
                .chain(&["content_block_delta", "content_block_stop"]),
        );
        expect.extend(
            ["content_block_start"]
                .iter()
                .chain(&["content_block_delta"; 3])
                .chain(&["content_block_stop"]),
        );
        expect.extend(
            ["content_block_start"]
                .iter()
                .chain(&["content_block_delta"; 4])
                .chain(&["content_block_stop"]),
        );
        expect.extend(["message_delta", "message_stop"]);
        assert_eq!(names, expect);
        assert!(r.tools[0].0.starts_with("toolu_"));
        let msg = anthropic_message(&r);
        assert_eq!(msg["content"][2]["input"], json!({"path": "a.txt"}));
        assert_eq!(msg["content"][0]["signature"], json!("sig=="));
    }

    #[test]
    fn the_openai_stream_ends_with_usage_and_done() {
        let r = Resolved::new(&Reply::tool("T", json!({"a": 1})), "m", 8, "call_");
        let frames = openai_frames(&r, true);
        assert_eq!(frames.last().unwrap(), "data: [DONE]\n\n");
        assert!(frames[frames.len() - 2].contains("\"choices\":[]"));
        assert!(frames[frames.len() - 3].contains("\"finish_reason\":\"tool_calls\""));
        assert_eq!(
            openai_completion(&r)["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            json!("{\"a\":1}")
        );
    }
}
