//! The model clients against the scripted model server over real HTTP on 127.0.0.1: the
//! Anthropic stream scenarios E1, E5–E8, E18 and E21 of docs/design/llm-api.md §4.4, and the
//! helpers that `llm_retry.rs` (E9–E17), `llm_openai.rs` (E20) and `model_server.rs` share.
//!
//! Timing assertions are the scenarios' own numbers; every call also runs under a generous
//! overall timeout so that a hang fails the test instead of stalling the run.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use swarm_llm::{
    ContentBlock, LlmClient, LlmConfig, LlmError, LlmFlags, Message, Provider, Request, Response,
    Role, StopReason, StreamEvent, ToolSpec, build_client,
};
use swarm_model_server::{Fault, ModelServer, Raw, Reply, Rule, Script};
use tokio_util::sync::CancellationToken;

/// Far above any scenario's own numbers; only a hang reaches it.
pub(crate) const HANG: Duration = Duration::from_secs(30);

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

pub(crate) fn request(user: &str) -> Request {
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

pub(crate) fn scripted(
    server: &ModelServer,
    tweak: impl FnOnce(&mut LlmConfig),
) -> Box<dyn LlmClient> {
    let mut config = LlmConfig::scripted(&server.url()).unwrap();
    config.idle_timeout = Duration::from_secs(10);
    tweak(&mut config);
    build_client(&config).unwrap()
}

pub(crate) struct Done {
    pub(crate) result: Result<Response, LlmError>,
    /// Every event with the moment it was reported.
    pub(crate) events: Vec<(Instant, StreamEvent)>,
}

impl Done {
    pub(crate) fn ok(&self) -> &Response {
        match &self.result {
            Ok(r) => r,
            Err(e) => panic!("expected a response, got: {e}"),
        }
    }

    pub(crate) fn err(&self) -> &LlmError {
        match &self.result {
            Ok(r) => panic!("expected an error, got: {r:?}"),
            Err(e) => e,
        }
    }

    pub(crate) fn retries(&self) -> Vec<(u32, Duration, String)> {
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

pub(crate) async fn complete_with(
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

pub(crate) async fn complete(client: &dyn LlmClient, request: &Request) -> Done {
    complete_with(client, request, &CancellationToken::new()).await
}

pub(crate) fn text_of(r: &Response) -> String {
    Message {
        role: Role::Assistant,
        content: r.content.clone(),
    }
    .text()
}

pub(crate) fn tool_uses(r: &Response) -> Vec<(String, String, Value)> {
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
pub(crate) fn frame(data: Value, eol: &str) -> String {
    let name = data["type"].as_str().unwrap().to_string();
    format!("event: {name}{eol}data: {data}{eol}{eol}")
}

pub(crate) fn message_start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "model": "m", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 1}}})
}

pub(crate) fn block_start(index: usize, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

pub(crate) fn delta(index: usize, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

pub(crate) fn block_stop(index: usize) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

pub(crate) fn message_delta(stop_reason: &str, output_tokens: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
           "usage": {"output_tokens": output_tokens}})
}

fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

pub(crate) fn sse(events: &[Value]) -> String {
    events.iter().map(|e| frame(e.clone(), "\n")).collect()
}

pub(crate) async fn serve(script: Script) -> ModelServer {
    ModelServer::start_local(script).await.unwrap()
}

pub(crate) fn reply_with_a_tool() -> Reply {
    Reply::text("I will read the file now, then report back.")
        .tool_call("Read", json!({"path": "src/lib.rs", "limit": 200}))
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
    swarm_llm::install_crypto_provider();
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
    swarm_llm::install_crypto_provider();
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
