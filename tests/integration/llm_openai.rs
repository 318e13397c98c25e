//! The OpenAI-compatible client against the scripted model server over real HTTP on
//! 127.0.0.1: the client scenario E20 of docs/design/llm-api.md §4.4 (a hand-written stream,
//! and a round trip through the server's own rendering), and a local server without a key.
//! Helpers are in `llm.rs`.

use serde_json::{Value, json};
use swarm_llm::{
    ContentBlock, LlmClient, LlmConfig, LlmFlags, Message, Provider, Role, StopReason, build_client,
};
use swarm_model_server::{ModelServer, Raw, Reply, Rule, Script};

use crate::llm::{complete, reply_with_a_tool, request, serve, text_of, tool_uses};

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
