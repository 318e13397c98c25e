//! The model clients against the scripted model server over real HTTP on 127.0.0.1: the
//! client scenarios E1, E5–E18, E20 and E21 of docs/design/llm-api.md §4.4, and the
//! `swarm model-server` command end to end.
//!
//! Timing assertions are the scenarios' own numbers; every call also runs under a generous
//! overall timeout so that a hang fails the test instead of stalling the run.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use swarm::llm::model_server::{Fault, ModelServer, Outcome, Raw, Reply, Rule, Script};
use swarm::llm::{
    ContentBlock, LlmClient, LlmConfig, LlmError, LlmFlags, Message, Provider, Request, Response,
    Role, StopReason, StreamEvent, ToolSpec, build_client,
};
use tokio_util::sync::CancellationToken;

use crate::harness::{ScriptedModel, TestEnv, run, wait_timeout};

/// Far above any scenario's own numbers; only a hang reaches it.
const HANG: Duration = Duration::from_secs(30);

fn tools() -> Vec<ToolSpec> {
    ["Read", "Write"]
        .iter()
        .map(|n| ToolSpec {
            name: n.to_string(),
            description: format!("{n} a file"),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        })
        .collect()
}

fn request(user: &str) -> Request {
    Request {
        model: String::new(),
        system: "You are bob, a careful engineer.".into(),
        messages: vec![Message::user_text(user)],
        tools: tools(),
        max_tokens: 1024,
        thinking: None,
        agent: Some("bob".into()),
    }
}

fn scripted(server: &ModelServer, tweak: impl FnOnce(&mut LlmConfig)) -> Box<dyn LlmClient> {
    let mut config = LlmConfig::scripted(&server.url()).unwrap();
    config.idle_timeout = Duration::from_secs(10);
    tweak(&mut config);
    build_client(&config).unwrap()
}

struct Done {
    result: Result<Response, LlmError>,
    /// Every event with the moment it was reported.
    events: Vec<(Instant, StreamEvent)>,
}

impl Done {
    fn ok(&self) -> &Response {
        match &self.result {
            Ok(r) => r,
            Err(e) => panic!("expected a response, got: {e}"),
        }
    }

    fn err(&self) -> &LlmError {
        match &self.result {
            Ok(r) => panic!("expected an error, got: {r:?}"),
            Err(e) => e,
        }
    }

    fn retries(&self) -> Vec<(u32, Duration, String)> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                StreamEvent::Retry {
                    attempt,
                    delay,
                    reason,
                } => Some((*attempt, *delay, reason.clone())),
                _ => None,
            })
            .collect()
    }
}

async fn complete_with(
    client: &dyn LlmClient,
    request: &Request,
    cancel: &CancellationToken,
) -> Done {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let mut on_event = move |e: StreamEvent| sink.lock().unwrap().push((Instant::now(), e));
    let result = tokio::time::timeout(HANG, client.complete(request, &mut on_event, cancel))
        .await
        .expect("the client hung");
    let events = std::mem::take(&mut *events.lock().unwrap());
    Done { result, events }
}

async fn complete(client: &dyn LlmClient, request: &Request) -> Done {
    complete_with(client, request, &CancellationToken::new()).await
}

fn text_of(r: &Response) -> String {
    Message {
        role: Role::Assistant,
        content: r.content.clone(),
    }
    .text()
}

fn tool_uses(r: &Response) -> Vec<(String, String, Value)> {
    r.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, input } => {
                Some((id.clone(), name.clone(), input.clone()))
            }
            _ => None,
        })
        .collect()
}

/// One SSE event in the Messages API shape, with the given line ending.
fn frame(data: Value, eol: &str) -> String {
    let name = data["type"].as_str().unwrap().to_string();
    format!("event: {name}{eol}data: {data}{eol}{eol}")
}

fn message_start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "model": "m", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 1}}})
}

fn block_start(index: usize, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

fn delta(index: usize, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn block_stop(index: usize) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_delta(stop_reason: &str, output_tokens: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
           "usage": {"output_tokens": output_tokens}})
}

fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

fn sse(events: &[Value]) -> String {
    events.iter().map(|e| frame(e.clone(), "\n")).collect()
}

async fn serve(script: Script) -> ModelServer {
    ModelServer::start_local(script).await.unwrap()
}

fn gaps(server: &ModelServer) -> Vec<f64> {
    let reqs = server.requests();
    reqs.windows(2)
        .map(|w| (w[1].received_at - w[0].received_at).as_secs_f64())
        .collect()
}

#[tokio::test]
async fn e1_plain_reply_streamed_with_usage() {
    let server = serve(Script::new().default_reply(Reply::text("Hello from the script."))).await;
    let client = scripted(&server, |_| {});
    let out = complete(client.as_ref(), &request("hi")).await;
    let r = out.ok();
    assert_eq!(
        r.content,
        vec![ContentBlock::Text {
            text: "Hello from the script.".into()
        }]
    );
    assert_eq!(r.stop_reason, StopReason::EndTurn);
    assert!(
        r.usage.input_tokens > 10 && r.usage.output_tokens > 0,
        "{:?}",
        r.usage
    );
    assert_eq!(r.model, "scripted");
    assert_eq!(r.request_id.as_deref(), Some("req_scripted_000001"));
    let deltas = out
        .events
        .iter()
        .filter(|(_, e)| matches!(e, StreamEvent::TextDelta(_)))
        .count();
    assert!(deltas >= 3, "the text came in {deltas} deltas");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].agent(), Some("bob"));
    assert_eq!(reqs[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(reqs[0].header("x-api-key"), None);
    assert_eq!(reqs[0].body["stream"], json!(true));
}

#[tokio::test]
async fn e1_plain_reply_as_one_json_document() {
    let message = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "Whole."}], "stop_reason": "end_turn",
        "stop_sequence": null, "usage": {"input_tokens": 7, "output_tokens": 2}});
    let server = serve(Script::new().default_reply(Reply::raw(
        Raw::new(message.to_string()).content_type("application/json"),
    )))
    .await;
    let out = complete(scripted(&server, |_| {}).as_ref(), &request("hi")).await;
    let r = out.ok();
    assert_eq!(text_of(r), "Whole.");
    assert_eq!(r.usage.input_tokens, 7);
    assert_eq!(r.usage.output_tokens, 2);

    // And the server's own non-streaming mode, as a plain HTTP client sees it.
    let server = serve(Script::new().default_reply(Reply::text("plain"))).await;
    swarm::llm::install_crypto_provider();
    let body: Value = reqwest::Client::new()
        .post(format!("{}/v1/messages", server.url()))
        .json(
            &json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["content"], json!([{"type": "text", "text": "plain"}]));
    assert_eq!(body["stop_reason"], json!("end_turn"));
}

#[tokio::test]
async fn e5_hostile_chunking_crlf_pings_and_an_unknown_event() {
    let mut body = frame(message_start(), "\r\n");
    body += &frame(block_start(0, json!({"type": "text", "text": ""})), "\r\n");
    let mut expected = String::new();
    for i in 0..50 {
        let piece = format!("δ{i} café 日本 😀 ");
        expected += &piece;
        body += &frame(
            delta(0, json!({"type": "text_delta", "text": piece})),
            "\r\n",
        );
        if i % 3 == 2 {
            body += &frame(json!({"type": "ping"}), "\r\n");
        }
        if i == 20 {
            body += &frame(
                json!({"type": "x_future_event", "detail": "ignored"}),
                "\r\n",
            );
            body += ": a comment line\r\n";
        }
    }
    body += &frame(block_stop(0), "\r\n");
    body += &frame(message_delta("end_turn", 50), "\r\n");
    body += &frame(message_stop(), "\r\n");
    let raw = Raw::new(body).chunk_bytes(1, 7).seed(5);
    // Writes of 1–7 bytes, some ending inside a code point; each is its own HTTP/1.1 chunk,
    // which the client's decoder hands on separately.
    let chunks = raw.chunks();
    assert!(chunks.iter().all(|c| (1..=7).contains(&c.len())));
    assert!(chunks.iter().any(|c| std::str::from_utf8(c).is_err()));
    let mut boundaries = chunks.iter().scan(0, |at, c| {
        *at += c.len();
        Some(*at)
    });
    let body = raw.body.as_bytes();
    assert!(
        boundaries.any(|b| (1..5).any(|k| b >= k && body[b - k..].starts_with(b"data:"))),
        "no split inside a 'data:' field name"
    );
    let server = serve(Script::new().default_reply(Reply::raw(raw))).await;
    let out = complete(scripted(&server, |_| {}).as_ref(), &request("hi")).await;
    let r = out.ok();
    assert_eq!(text_of(r), expected);

    // The pieces do reach an HTTP client one by one.
    use futures_util::StreamExt;
    swarm::llm::install_crypto_provider();
    let mut body = reqwest::Client::new()
        .post(format!("{}/v1/messages", server.url()))
        .json(&json!({"stream": true, "messages": []}))
        .send()
        .await
        .unwrap()
        .bytes_stream();
    let mut sizes = Vec::new();
    while let Some(piece) = body.next().await {
        sizes.push(piece.unwrap().len());
    }
    // Never merged (a chunk may arrive split across two socket reads, never joined).
    assert!(
        sizes.len() >= chunks.len(),
        "{} pieces for {} chunks",
        sizes.len(),
        chunks.len()
    );
    assert!(sizes.iter().all(|n| (1..=7).contains(n)), "{sizes:?}");
    assert_eq!(
        sizes.iter().sum::<usize>(),
        chunks.iter().map(Vec::len).sum::<usize>()
    );
    assert_eq!(r.stop_reason, StopReason::EndTurn);
    assert_eq!(r.usage.output_tokens, 50);
    assert!(out.retries().is_empty());
}

#[tokio::test]
async fn e6_tool_input_in_one_byte_fragments_and_a_tool_without_input() {
    let input = r#"{"path": "src/main.rs", "note": "naïve"}"#;
    let mut events = vec![
        message_start(),
        block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}),
        ),
        delta(0, json!({"type": "input_json_delta", "partial_json": ""})),
    ];
    for c in input.chars() {
        events.push(delta(
            0,
            json!({"type": "input_json_delta", "partial_json": c.to_string()}),
        ));
    }
    events.extend([
        block_stop(0),
        block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_2", "name": "Write", "input": {}}),
        ),
        block_stop(1),
        message_delta("tool_use", 9),
        message_stop(),
    ]);
    let server = serve(Script::new().default_reply(Reply::raw(Raw::new(sse(&events))))).await;
    let r = complete(scripted(&server, |_| {}).as_ref(), &request("read it"))
        .await
        .result
        .unwrap();
    assert_eq!(
        tool_uses(&r),
        vec![
            (
                "toolu_1".into(),
                "Read".into(),
                json!({"path": "src/main.rs", "note": "naïve"})
            ),
            ("toolu_2".into(), "Write".into(), json!({})),
        ]
    );
    assert_eq!(r.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn e7_thinking_goes_back_byte_identical() {
    let thinking = "Let me think… the file is ünïcödé; \"quotes\" and \\ backslashes.";
    let signature = "EqQBCkgIARABGAIiQL+sig/with+base64==";
    let server = serve(
        Script::new()
            .rule(
                Rule::new("after the tool")
                    .tool_result_contains("fn main")
                    .reply(Reply::text("Done.")),
            )
            .default_reply(
                Reply::tool("Read", json!({"path": "src/main.rs"})).thinking(thinking, signature),
            ),
    )
    .await;
    let client = scripted(&server, |_| {});
    let mut req = request("read main");
    let first = complete(client.as_ref(), &req).await.result.unwrap();
    assert_eq!(
        first.content[0],
        ContentBlock::Thinking {
            thinking: thinking.into(),
            signature: signature.into()
        }
    );
    let (id, _, _) = tool_uses(&first).remove(0);
    assert!(id.starts_with("toolu_"), "{id}");
    req.messages.push(Message {
        role: Role::Assistant,
        content: first.content.clone(),
    });
    req.messages.push(Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_use_id: id.clone(),
            content: "fn main() {}".into(),
            is_error: false,
        }],
    });
    let second = complete(client.as_ref(), &req).await.result.unwrap();
    assert_eq!(text_of(&second), "Done.");
    let sent = &server.requests()[1].body["messages"][1]["content"];
    assert_eq!(
        sent[0],
        json!({"type": "thinking", "thinking": thinking, "signature": signature})
    );
    assert_eq!(sent[1]["type"], json!("tool_use"));
    assert_eq!(sent[1]["id"], json!(id));
    assert_eq!(
        server.requests()[1].body["messages"][2]["content"][0]["tool_use_id"],
        json!(id)
    );
}

#[tokio::test]
async fn e8_max_tokens_inside_an_unfinished_tool_call() {
    let events = [
        message_start(),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(
            0,
            json!({"type": "text_delta", "text": "Writing the file."}),
        ),
        block_stop(0),
        block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_9", "name": "Write", "input": {}}),
        ),
        delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
        delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "{\"path\": \"src/ma"}),
        ),
        message_delta("max_tokens", 1024),
        message_stop(),
    ];
    let server = serve(Script::new().default_reply(Reply::raw(Raw::new(sse(&events))))).await;
    let r = complete(scripted(&server, |_| {}).as_ref(), &request("write"))
        .await
        .result
        .unwrap();
    assert_eq!(r.stop_reason, StopReason::MaxTokens);
    // The cut-off call is kept (so the turn can be sent back) but marked as not parseable;
    // the stop reason tells the loop not to run it.
    assert_eq!(
        tool_uses(&r),
        vec![(
            "toolu_9".into(),
            "Write".into(),
            json!({"_invalid_arguments": "{\"path\": \"src/ma"})
        )]
    );
}

#[tokio::test]
async fn e9_429_with_retry_after_waits_a_second() {
    let server = serve(
        Script::new()
            .rule(
                Rule::new("rate limited")
                    .times(1)
                    .fault(Fault::status(429).retry_after("1")),
            )
            .default_reply(Reply::text("ok")),
    )
    .await;
    let out = complete(scripted(&server, |_| {}).as_ref(), &request("hi")).await;
    assert_eq!(text_of(out.ok()), "ok");
    assert_eq!(server.requests().len(), 2);
    let gap = gaps(&server)[0];
    assert!(gap >= 1.0, "second request {gap} s after the first");
    let retries = out.retries();
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].0, 1);
    assert_eq!(retries[0].1, Duration::from_secs(1));
    assert!(retries[0].2.contains("429"), "{}", retries[0].2);
}

#[tokio::test]
async fn e10_529_twice_backs_off_half_a_second_then_one() {
    let server = serve(
        Script::new()
            .rule(Rule::new("overloaded").times(2).fault(Fault::status(529)))
            .default_reply(Reply::text("finally")),
    )
    .await;
    let out = complete(
        scripted(&server, |c| c.max_retries = 2).as_ref(),
        &request("hi"),
    )
    .await;
    assert_eq!(text_of(out.ok()), "finally");
    assert_eq!(server.requests().len(), 3);
    // The chosen delays are exactly within the policy's bounds...
    let delays: Vec<f64> = out.retries().iter().map(|r| r.1.as_secs_f64()).collect();
    assert!((0.375..=0.5).contains(&delays[0]), "{delays:?}");
    assert!((0.75..=1.0).contains(&delays[1]), "{delays:?}");
    // ...and the server saw them, plus request latency (generous for a loaded machine).
    let g = gaps(&server);
    assert!(g[0] >= 0.375 && g[0] <= 0.5 + 0.25, "{g:?}");
    assert!(g[1] >= 0.75 && g[1] <= 1.0 + 0.25, "{g:?}");
}

#[tokio::test]
async fn e11_retries_exhausted_keeps_the_message_and_request_id() {
    let server = serve(Script::new().rule(Rule::new("always overloaded").fault(
        Fault::status(529).body(json!({"type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "ignored"})),
    )))
    .await;
    let out = complete(scripted(&server, |_| {}).as_ref(), &request("hi")).await;
    assert_eq!(server.requests().len(), 3);
    assert_eq!(out.retries().len(), 2);
    let err = out.err();
    assert_eq!(
        err,
        &LlmError::Api {
            status: 529,
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
            request_id: Some("req_scripted_000003".into()),
        }
    );
    assert_eq!(
        err.to_string(),
        "model API error 529 overloaded_error: Overloaded (request-id req_scripted_000003)"
    );
    let e: swarm::util::error::Error = err.clone().into();
    assert_eq!(e.exit_code(), swarm::util::error::exit::MODEL);
}

#[tokio::test]
async fn e12_client_errors_and_a_final_429_are_not_retried() {
    let cases: Vec<(&str, Fault, u16, &str)> = vec![
        ("s400", Fault::status(400), 400, "invalid_request_error"),
        ("s401", Fault::status(401), 401, "authentication_error"),
        ("s403", Fault::status(403), 403, "permission_error"),
        ("s404", Fault::status(404), 404, "not_found_error"),
        ("s413", Fault::status(413), 413, "request_too_large"),
        (
            "quota",
            Fault::status(429)
                .retry_after("1")
                .header("x-should-retry", "false"),
            429,
            "rate_limit_error",
        ),
        (
            // A spend limit: no header says so, only the body.
            "spend",
            Fault::status(429)
                .retry_after("1")
                .body(json!({"type": "error",
                "error": {"type": "rate_limit_error",
                          "message": "You have reached your specified workspace API usage limits.",
                          "details": {"error_code": "enforced_spend_limit_reached"}}})),
            429,
            "rate_limit_error",
        ),
    ];
    let mut script = Script::new();
    for (agent, fault, _, _) in &cases {
        script = script.rule(Rule::new(*agent).agent(*agent).fault(fault.clone()));
    }
    let server = serve(script).await;
    let client = scripted(&server, |_| {});
    for (agent, _, status, kind) in &cases {
        let mut req = request("hi");
        req.agent = Some(agent.to_string());
        let out = complete(client.as_ref(), &req).await;
        match out.err() {
            LlmError::Api {
                status: s,
                kind: k,
                request_id,
                ..
            } => {
                assert_eq!((s, k.as_str()), (status, *kind), "{agent}");
                assert!(request_id.is_some());
            }
            other => panic!("{agent}: {other:?}"),
        }
        assert!(out.retries().is_empty(), "{agent}");
        let n = server
            .requests()
            .iter()
            .filter(|r| r.agent() == Some(agent))
            .count();
        assert_eq!(n, 1, "{agent} was requested {n} times");
    }
}

fn reply_with_a_tool() -> Reply {
    Reply::text("I will read the file now, then report back.")
        .tool_call("Read", json!({"path": "src/lib.rs", "limit": 200}))
}

#[tokio::test]
async fn e13_error_event_after_200_discards_the_partial_message_and_retries() {
    let server = serve(
        Script::new()
            .rule(
                Rule::new("overloaded mid-stream")
                    .times(1)
                    .fault(Fault::error_event(5, "overloaded_error")),
            )
            .default_reply(reply_with_a_tool()),
    )
    .await;
    let out = complete(scripted(&server, |_| {}).as_ref(), &request("go")).await;
    let r = out.ok();
    assert_eq!(server.requests().len(), 2);
    let retries = out.retries();
    assert_eq!(retries.len(), 1);
    assert!(
        retries[0].2.contains("overloaded_error"),
        "{}",
        retries[0].2
    );
    // Partial deltas were shown before the retry, but the response holds only the
    // complete second attempt.
    let retry_at = out
        .events
        .iter()
        .position(|(_, e)| matches!(e, StreamEvent::Retry { .. }))
        .unwrap();
    assert!(
        out.events[..retry_at]
            .iter()
            .any(|(_, e)| matches!(e, StreamEvent::TextDelta(_)))
    );
    assert_eq!(text_of(r), "I will read the file now, then report back.");
    assert_eq!(tool_uses(r).len(), 1);
}

#[tokio::test]
async fn e14_connection_reset_mid_stream_is_retried_without_duplicates() {
    let server = serve(
        Script::new()
            .rule(Rule::new("reset").times(1).fault(Fault::drop_after(10)))
            .default_reply(reply_with_a_tool()),
    )
    .await;
    let out = complete(scripted(&server, |_| {}).as_ref(), &request("go")).await;
    let r = out.ok();
    assert_eq!(server.requests().len(), 2);
    let retries = out.retries();
    assert_eq!(retries.len(), 1);
    assert!(retries[0].2.contains("broke off"), "{}", retries[0].2);
    // The first attempt got as far as starting the tool call.
    let starts = out
        .events
        .iter()
        .filter(|(_, e)| matches!(e, StreamEvent::ToolUseStart { .. }))
        .count();
    assert_eq!(starts, 2);
    assert_eq!(
        tool_uses(r)
            .into_iter()
            .map(|(_, n, i)| (n, i))
            .collect::<Vec<_>>(),
        vec![(
            "Read".to_string(),
            json!({"path": "src/lib.rs", "limit": 200})
        )]
    );
}

#[tokio::test]
async fn e15_a_stall_is_cut_at_the_idle_timeout() {
    let server = serve(
        Script::new()
            .rule(Rule::new("stall").fault(Fault::stall(4, 60_000)))
            .default_reply(reply_with_a_tool()),
    )
    .await;
    let idle = Duration::from_millis(300);
    let client = scripted(&server, |c| {
        c.idle_timeout = idle;
        c.max_retries = 0;
    });
    let out = complete(client.as_ref(), &request("go")).await;
    let done = Instant::now();
    assert_eq!(out.err(), &LlmError::IdleTimeout(idle));
    // Frame 4 is the first text delta: the last thing that arrived before the silence.
    let (last, _) = out.events.last().expect("a delta arrived before the stall");
    let silent = done - *last;
    assert!(
        silent >= idle && silent <= idle + Duration::from_millis(200),
        "aborted {silent:?} after the last data"
    );
}

#[tokio::test]
async fn e15_pings_keep_a_slow_stream_alive() {
    let server = serve(
        Script::new()
            .rule(Rule::new("slow start").fault(Fault::pings(100, 2000)))
            .default_reply(Reply::text("worth the wait")),
    )
    .await;
    let client = scripted(&server, |c| {
        c.idle_timeout = Duration::from_millis(300);
        c.max_retries = 0;
    });
    let start = Instant::now();
    let out = complete(client.as_ref(), &request("go")).await;
    assert_eq!(text_of(out.ok()), "worth the wait");
    assert!(start.elapsed() >= Duration::from_secs(2));
}

#[tokio::test]
async fn e16_invalid_json_in_data_is_an_error_and_not_retried() {
    let body = frame(message_start(), "\n") + "event: content_block_start\ndata: {not json\n\n";
    let server = serve(Script::new().default_reply(Reply::raw(Raw::new(body)))).await;
    let out = complete(scripted(&server, |_| {}).as_ref(), &request("go")).await;
    match out.err() {
        LlmError::Stream(m) => assert!(m.contains("invalid JSON"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn e16_eof_without_message_stop_is_incomplete() {
    let events = [
        message_start(),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "and then"})),
        block_stop(0),
        message_delta("end_turn", 3),
    ];
    // The last event also lacks its blank line, so it is never dispatched.
    let body = sse(&events) + "event: message_stop\ndata: {\"type\": \"message_stop\"}\n";
    let server = serve(Script::new().default_reply(Reply::raw(Raw::new(body)))).await;
    let out = complete(
        scripted(&server, |c| c.max_retries = 1).as_ref(),
        &request("go"),
    )
    .await;
    assert_eq!(
        out.err(),
        &LlmError::Stream("the stream ended before message_stop".into())
    );
    // A truncated stream is a transfer failure, so it was retried once.
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn e17_cancellation_aborts_a_long_stream_promptly() {
    let server = serve(
        Script::new()
            .rule(Rule::new("sixty seconds").fault(Fault::stall(3, 60_000)))
            .default_reply(Reply::text("never")),
    )
    .await;
    let client = scripted(&server, |_| {});
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let start = Instant::now();
    let out = complete_with(client.as_ref(), &request("go"), &cancel).await;
    assert_eq!(out.err(), &LlmError::Cancelled);
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn e18_request_shape_cache_markers_and_the_key_only_in_its_header() {
    let server = serve(Script::new().default_reply(Reply::text("ok"))).await;
    let key = "sk-ant-test-VERY-SECRET-0123456789";
    let config = LlmConfig::resolve(
        &LlmFlags {
            provider: Some(Provider::Anthropic),
            base_url: Some(server.url()),
            model: Some("claude-sonnet-4-5".into()),
            ..LlmFlags::default()
        },
        |name| (name == "ANTHROPIC_API_KEY").then(|| key.to_string()),
    )
    .unwrap();
    assert!(!format!("{config:?}").contains(key));
    let client = build_client(&config).unwrap();
    assert!(!client.describe().contains(key));
    assert!(!format!("{client:?}").contains(key));
    let mut req = request("list the files");
    req.messages.extend([
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "toolu_1".into(),
                name: "Read".into(),
                input: json!({"path": "."}),
            }],
        },
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "toolu_1".into(),
                    content: "a.txt b.txt".into(),
                    is_error: false,
                },
                ContentBlock::Text {
                    text: "now summarise".into(),
                },
            ],
        },
    ]);
    complete(client.as_ref(), &req).await.result.unwrap();
    let sent = &server.requests()[0];
    assert_eq!(sent.header("x-api-key"), Some(key));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.agent(),
        None,
        "x-swarm-agent goes to the scripted provider only"
    );
    let body = sent.body.to_string();
    assert!(!body.contains(key));
    assert!(body.len() < 32 * 1024 * 1024);
    let eph = json!({"type": "ephemeral"});
    let b = &sent.body;
    assert_eq!(b["model"], json!("claude-sonnet-4-5"));
    assert_eq!(b["max_tokens"], json!(1024));
    assert_eq!(
        b["system"],
        json!([{"type": "text", "text": "You are bob, a careful engineer.", "cache_control": eph}])
    );
    assert_eq!(b["tools"][1]["cache_control"], eph);
    assert_eq!(b["tools"][0].get("cache_control"), None);
    assert_eq!(b["messages"][2]["content"][1]["cache_control"], eph);
    assert_eq!(
        b["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt b.txt"})
    );
    assert_eq!(b["messages"][0]["content"][0].get("cache_control"), None);
    let markers = body.matches("cache_control").count();
    assert!(markers <= 4, "{markers} cache_control markers");
    assert_eq!(markers, 3);

    // Nor does the key show in an error.
    let denied = serve(Script::new().rule(Rule::new("denied").fault(Fault::status(401)))).await;
    let mut config = config.clone();
    config.base_url = denied.url();
    let out = complete(build_client(&config).unwrap().as_ref(), &req).await;
    assert!(!out.err().to_string().contains(key));
    assert!(!format!("{:?}", out.err()).contains(key));
}

fn openai_client(server: &ModelServer) -> Box<dyn LlmClient> {
    let config = LlmConfig::resolve(
        &LlmFlags {
            provider: Some(Provider::OpenAi),
            base_url: Some(format!("{}/v1", server.url())),
            model: Some("local-model".into()),
            ..LlmFlags::default()
        },
        |name| (name == "OPENAI_API_KEY").then(|| "sk-local".to_string()),
    )
    .unwrap();
    build_client(&config).unwrap()
}

#[tokio::test]
async fn e20_openai_interleaved_tool_calls_usage_and_done() {
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "object": "chat.completion.chunk", "model": "local-model",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let call = |index: usize, id: &str, name: &str| {
        json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                               "function": {"name": name, "arguments": ""}}]})
    };
    let args = |index: usize, part: &str| json!({"tool_calls": [{"index": index, "function": {"arguments": part}}]});
    let good = r#"{"path": "src/main.rs"}"#;
    let bad = r#"{"path": "x", oops"#;
    let mut body = chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    body += &chunk(call(0, "call_a", "Read"), Value::Null);
    body += &chunk(call(1, "call_b", "Write"), Value::Null);
    let (ga, ba) = (good.as_bytes(), bad.as_bytes());
    for i in 0..ga.len().max(ba.len()).div_ceil(3) {
        for (index, s) in [(1, ba), (0, ga)] {
            if let Some(part) = s.get(i * 3..((i + 1) * 3).min(s.len())) {
                body += &chunk(args(index, std::str::from_utf8(part).unwrap()), Value::Null);
            }
        }
    }
    body += &chunk(json!({}), json!("tool_calls"));
    body += &format!(
        "data: {}\n\n",
        json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}})
    );
    body += "data: [DONE]\n\n";
    let server = serve(Script::new().default_reply(Reply::raw(Raw::new(body)))).await;
    let client = openai_client(&server);
    let out = complete(client.as_ref(), &request("edit")).await;
    let r = out.ok();
    assert_eq!(
        tool_uses(r),
        vec![
            (
                "call_a".into(),
                "Read".into(),
                json!({"path": "src/main.rs"})
            ),
            (
                "call_b".into(),
                "Write".into(),
                json!({"_invalid_arguments": bad})
            ),
        ]
    );
    assert_eq!(r.stop_reason, StopReason::ToolUse);
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (40, 12));
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-local"));
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        sent.body["messages"][0],
        json!({"role": "system", "content": "You are bob, a careful engineer."})
    );
}

#[tokio::test]
async fn openai_without_a_key_sends_no_authorization_header() {
    let server = serve(Script::new().default_reply(Reply::text("hello from a local model"))).await;
    // A local server (llama.cpp, Ollama, vLLM) usually needs no key, so none is set.
    let config = LlmConfig::resolve(
        &LlmFlags {
            provider: Some(Provider::OpenAi),
            base_url: Some(format!("{}/v1", server.url())),
            model: Some("local-model".into()),
            ..LlmFlags::default()
        },
        |_| None,
    )
    .unwrap();
    let client = build_client(&config).unwrap();
    let out = complete(client.as_ref(), &request("hi")).await;
    assert_eq!(text_of(out.ok()), "hello from a local model");
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), None);
}

#[tokio::test]
async fn e20_openai_round_trip_through_the_rendered_stream() {
    let server = serve(
        Script::new()
            .rule(
                Rule::new("after the tool")
                    .no_tool_result(false)
                    .tool_result_contains("Error:")
                    .reply(Reply::text("I see the arguments were wrong.")),
            )
            .default_reply(reply_with_a_tool()),
    )
    .await;
    let client = openai_client(&server);
    let mut req = request("go");
    let first = complete(client.as_ref(), &req).await.result.unwrap();
    assert_eq!(
        text_of(&first),
        "I will read the file now, then report back."
    );
    let (id, name, input) = tool_uses(&first).remove(0);
    assert!(id.starts_with("call_"), "{id}");
    assert_eq!(
        (name.as_str(), &input),
        ("Read", &json!({"path": "src/lib.rs", "limit": 200}))
    );
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    assert!(first.usage.input_tokens > 0);
    req.messages.push(Message {
        role: Role::Assistant,
        content: first.content.clone(),
    });
    req.messages.push(Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_use_id: id.clone(),
            content: "bad path".into(),
            is_error: true,
        }],
    });
    let second = complete(client.as_ref(), &req).await.result.unwrap();
    assert_eq!(text_of(&second), "I see the arguments were wrong.");
    let msgs = &server.requests()[1].body["messages"];
    assert_eq!(msgs[2]["tool_calls"][0]["id"], json!(id));
    assert_eq!(
        msgs[3],
        json!({"role": "tool", "tool_call_id": id, "content": "Error: bad path"})
    );
}

#[tokio::test]
async fn e21_unknown_stop_reason_and_block_type() {
    let events = [
        message_start(),
        block_start(0, json!({"type": "x_new", "payload": {"k": [1, 2]}})),
        delta(0, json!({"type": "x_new_delta", "bits": "?"})),
        block_stop(0),
        block_start(1, json!({"type": "text", "text": ""})),
        delta(1, json!({"type": "text_delta", "text": "still fine"})),
        block_stop(1),
        message_delta("future_value", 4),
        message_stop(),
    ];
    let server = serve(Script::new().default_reply(Reply::raw(Raw::new(sse(&events))))).await;
    let r = complete(scripted(&server, |_| {}).as_ref(), &request("go"))
        .await
        .result
        .unwrap();
    assert_eq!(
        r.content,
        vec![
            ContentBlock::Other(json!({"type": "x_new", "payload": {"k": [1, 2]}})),
            ContentBlock::Text {
                text: "still fine".into()
            },
        ]
    );
    assert_eq!(r.stop_reason, StopReason::Other("future_value".into()));
}

#[tokio::test]
async fn script_rules_captures_and_unmatched_requests_over_http() {
    let server = serve(
        Script::new()
            .rule(
                Rule::new("lead approves plans")
                    .agent("team-lead")
                    .user_regex(r#"requestId":"(?P<rid>[^"]+)""#)
                    .times(1)
                    .reply(Reply::text("Approving {{rid}}.").tool_call(
                        "SendMessage",
                        json!({"to": "bob", "message": {"type": "plan_approval_response",
                               "request_id": "{{rid}}", "approve": true}}),
                    )),
            )
            .rule(
                Rule::new("bob waits")
                    .agent("bob")
                    .delay_ms(50)
                    .reply(Reply::text("waiting, says {{agent}}")),
            ),
    )
    .await;
    let client = scripted(&server, |_| {});
    let mut lead = request(r#"plan ready: {"requestId":"plan-42"}"#);
    lead.agent = Some("team-lead".into());
    let r = complete(client.as_ref(), &lead).await.result.unwrap();
    assert_eq!(text_of(&r), "Approving plan-42.");
    assert_eq!(
        tool_uses(&r)[0].2["message"]["request_id"],
        json!("plan-42")
    );
    let r = complete(client.as_ref(), &request("anything"))
        .await
        .result
        .unwrap();
    assert_eq!(text_of(&r), "waiting, says bob");

    // The lead's rule is used up and nothing else matches the lead: a clear, final error.
    let out = complete(client.as_ref(), &lead).await;
    match out.err() {
        LlmError::Api {
            status: 500,
            message,
            ..
        } => assert!(
            message.contains("no rule") && message.contains("team-lead"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(out.retries().is_empty());
    let outcomes: Vec<Outcome> = server.requests().into_iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        vec![
            Outcome::Rule("lead approves plans".into()),
            Outcome::Rule("bob waits".into()),
            Outcome::Unmatched
        ]
    );
    assert_eq!(server.unmatched().len(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn the_server_refuses_non_loopback_addresses() {
    let err = ModelServer::start(Script::new(), "0.0.0.0:0".parse().unwrap())
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("loopback"), "{err}");
    assert_eq!(err.exit_code(), swarm::util::error::exit::USAGE);
}

#[test]
fn model_server_command_end_to_end() {
    let env = TestEnv::new();
    let script_path = env.dir.path().join("script.json");
    std::fs::write(
        &script_path,
        "// the demo's lead\n".to_string()
            + &Script::new()
                .rule(
                    Rule::new("lead")
                        .agent("team-lead")
                        .reply(Reply::text("hello lead")),
                )
                .default_reply(Reply::text("hello {{agent}}"))
                .to_json(),
    )
    .unwrap();
    let mut child = env
        .swarm(&["model-server", "--script", script_path.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Read the first line on a thread so that a server that never prints fails the test.
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let url = rx.recv_timeout(HANG).expect("no URL on stdout");
    let url = url.trim().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let texts = runtime.block_on(async {
        let client = build_client(&LlmConfig::scripted(&url).unwrap()).unwrap();
        let mut lead = request("hi");
        lead.agent = Some("team-lead".into());
        let a = complete(client.as_ref(), &lead).await.result.unwrap();
        let b = complete(client.as_ref(), &request("hi"))
            .await
            .result
            .unwrap();
        (text_of(&a), text_of(&b))
    });
    assert_eq!(texts, ("hello lead".into(), "hello bob".into()));

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = wait_timeout(&mut child, HANG).expect("the server did not stop on SIGTERM");
    assert!(status.success(), "{status:?}");
}

#[test]
fn model_server_command_refuses_bad_input() {
    let env = TestEnv::new();
    let script = env.dir.path().join("script.json");
    std::fs::write(&script, r#"{"rules": [{"name": "r", "user_regex": "("}]}"#).unwrap();
    let out =
        run(&mut env.swarm(&["model-server", "--script", script.to_str().unwrap()])).failure(2);
    assert!(
        out.stderr.contains("invalid script") && out.stderr.contains("rule r: user_regex"),
        "{}",
        out.stderr
    );
    std::fs::write(&script, "{}").unwrap();
    let out = run(&mut env.swarm(&[
        "model-server",
        "--script",
        script.to_str().unwrap(),
        "--listen",
        "0.0.0.0:0",
    ]))
    .failure(2);
    assert!(out.stderr.contains("loopback"), "{}", out.stderr);
    assert!(out.stdout.is_empty());
    let out = run(&mut env.swarm(&[
        "model-server",
        "--script",
        script.to_str().unwrap(),
        "--listen",
        "localhost",
    ]))
    .failure(2);
    assert!(out.stderr.contains("invalid --listen"), "{}", out.stderr);
    run(&mut env.swarm(&["model-server", "--script", "/nonexistent/s.json"])).failure(1);
}

#[test]
fn agent_command_uses_a_local_openai_compatible_server_without_a_key() {
    let env = TestEnv::new();
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("local hello")));
    let base_url = format!("{}/v1", model.url());
    let out = env
        .run(&[
            "agent",
            "-p",
            "hi",
            "--provider",
            "openai",
            "--base-url",
            &base_url,
        ])
        .success();
    assert!(out.stdout.contains("local hello"), "{}", out.stdout);
    let sent = model.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v1/chat/completions");
    assert_eq!(sent[0].header("authorization"), None);
}

#[test]
fn agent_command_sends_the_chosen_anthropic_version() {
    let env = TestEnv::new();
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("ok")));
    let url = model.url();
    let agent = [
        "agent",
        "-p",
        "hi",
        "--provider",
        "scripted",
        "--base-url",
        &url,
    ];
    env.run(&agent).success();
    let mut with_flag = agent.to_vec();
    with_flag.extend(["--anthropic-version", "2099-01-01"]);
    env.run(&with_flag).success();
    run(env.swarm(&agent).env("ANTHROPIC_VERSION", "2098-12-31")).success();
    // A flag beats the environment.
    run(env.swarm(&with_flag).env("ANTHROPIC_VERSION", "2098-12-31")).success();
    let versions: Vec<String> = model
        .requests()
        .iter()
        .map(|r| r.header("anthropic-version").unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        versions,
        ["2023-06-01", "2099-01-01", "2098-12-31", "2099-01-01"]
    );
}
