//! The agent loop against the scripted model server over real HTTP: the tool round trip
//! and what the next request carries (E2-E4, E19 of docs/design/llm-api.md §4.4).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use swarm_agent::engine::{Authorization, Engine, Event, Finish, Host};
use swarm_agent::tools::{ToolContext, ToolOutcome};
use swarm_config::permissions::PermissionMode;
use swarm_config::tools::ToolName;
use swarm_llm::{self as llm, LlmConfig};
use swarm_model_server::{Raw, Reply, Rule, Script};
use swarm_util::names::AgentName;

use crate::harness::ScriptedModel;

struct TestHost {
    ctx: ToolContext,
    events: Vec<Event>,
}

impl Host for TestHost {
    fn ctx(&self) -> &ToolContext {
        &self.ctx
    }
    async fn authorize(&mut self, _: ToolName, _: &Value, _: &str, _: &str) -> Authorization {
        Authorization::Deny("test".into())
    }
    async fn exit_plan_mode(&mut self, _: &str) -> ToolOutcome {
        ToolOutcome::err("no plans here")
    }
    async fn interject(&mut self) -> Option<String> {
        None
    }
    fn committed(&mut self) {}
    fn event(&mut self, event: Event) {
        self.events.push(event);
    }
}

fn run(model: &ScriptedModel, cwd: PathBuf, prompt: &str) -> (Finish, TestHost) {
    let client: Arc<dyn llm::LlmClient> =
        Arc::from(llm::build_client(&LlmConfig::scripted(&model.url()).unwrap()).unwrap());
    let ctx = ToolContext::new(
        cwd,
        AgentName::new("solo").unwrap(),
        PermissionMode::BypassPermissions,
    );
    let mut host = TestHost {
        ctx,
        events: Vec::new(),
    };
    let mut engine = Engine::new(
        client,
        "scripted".into(),
        "You are a test.".into(),
        ToolName::SOLO.to_vec(),
    );
    engine.max_turns = 10;
    let finish = model
        .runtime
        .block_on(engine.run(&mut host, prompt.to_owned()))
        .unwrap();
    (finish, host)
}

fn messages(model: &ScriptedModel, request: usize) -> Vec<Value> {
    model.requests()[request].body["messages"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn e2_tool_round_trip_sends_the_assistant_turn_verbatim_and_results_first() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("call").no_tool_result(true).reply(
                    Reply::text("Counting.")
                        .thinking("let me count", "c2lnbmF0dXJl")
                        .tool_call("Bash", json!({"command": "echo once >> count.txt"})),
                ),
            )
            .rule(
                Rule::new("done")
                    .no_tool_result(false)
                    .reply(Reply::text("Counted.")),
            ),
    );
    let (finish, _) = run(&model, dir.path().to_path_buf(), "count");
    assert_eq!(finish, Finish::EndTurn("Counted.".into()));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("count.txt")).unwrap(),
        "once\n",
        "tool ran exactly once"
    );
    let second = messages(&model, 1);
    assert_eq!(second.len(), 3);
    let assistant = &second[1];
    assert_eq!(assistant["role"], "assistant");
    let blocks = assistant["content"].as_array().unwrap();
    assert_eq!(
        blocks[0],
        json!({"type": "thinking", "thinking": "let me count", "signature": "c2lnbmF0dXJl"})
    );
    let tool_use = blocks.iter().find(|b| b["type"] == "tool_use").unwrap();
    assert_eq!(
        tool_use["input"],
        json!({"command": "echo once >> count.txt"})
    );
    let user = second[2]["content"].as_array().unwrap();
    assert_eq!(user[0]["type"], "tool_result");
    assert_eq!(user[0]["tool_use_id"], tool_use["id"]);
    // Tools are declared whenever tool blocks are in the conversation.
    assert!(
        model.requests()[1].body["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
}

#[test]
fn e3_parallel_tools_both_run_and_results_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("two").no_tool_result(true).reply(
                    Reply::tool("Write", json!({"file_path": "a.txt", "content": "a"}))
                        .tool_call("Bash", json!({"command": "sleep 0.3; echo b > b.txt"})),
                ),
            )
            .rule(
                Rule::new("done")
                    .no_tool_result(false)
                    .reply(Reply::text("ok")),
            ),
    );
    run(&model, dir.path().to_path_buf(), "two files");
    assert!(dir.path().join("a.txt").exists() && dir.path().join("b.txt").exists());
    let second = messages(&model, 1);
    let calls: Vec<&Value> = second[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .collect();
    let results = second[2]["content"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["tool_use_id"], calls[0]["id"]);
    assert_eq!(results[1]["tool_use_id"], calls[1]["id"]);
}

#[test]
fn e3b_calls_that_change_things_run_one_after_another_in_the_models_order() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("write then use").no_tool_result(true).reply(
                    // A slow write before a command that needs it: run together, the
                    // command would find nothing.
                    Reply::tool("Bash", json!({"command": "sleep 0.5; echo a > a.txt"}))
                        .tool_call("Bash", json!({"command": "cat a.txt > b.txt"})),
                ),
            )
            .rule(
                Rule::new("done")
                    .no_tool_result(false)
                    .reply(Reply::text("ok")),
            ),
    );
    run(&model, dir.path().to_path_buf(), "write then copy");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).unwrap_or_default(),
        "a\n",
        "the second command ran before the first had finished"
    );
}

#[test]
fn e4_a_failing_tool_is_reported_as_an_error_result_and_the_loop_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("read")
                    .no_tool_result(true)
                    .reply(Reply::tool("Read", json!({"file_path": "missing.txt"}))),
            )
            .rule(
                Rule::new("unknown")
                    .tool_result_contains("failed to read")
                    .reply(Reply::tool("NoSuchTool", json!({}))),
            )
            .rule(
                Rule::new("done")
                    .tool_result_contains("no such tool")
                    .reply(Reply::text("recovered")),
            ),
    );
    let (finish, _) = run(&model, dir.path().to_path_buf(), "read it");
    assert_eq!(finish, Finish::EndTurn("recovered".into()));
    let second = messages(&model, 1);
    assert_eq!(second[2]["content"][0]["is_error"], true);
    let third = messages(&model, 2);
    assert_eq!(third[4]["content"][0]["is_error"], true);
}

#[test]
fn e19_huge_tool_output_is_truncated_with_a_marker() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::start(
        Script::new()
            .rule(Rule::new("big").no_tool_result(true).reply(Reply::tool(
                "Bash",
                json!({"command": "head -c 5000000 /dev/zero | tr '\\0' y"}),
            )))
            .rule(
                Rule::new("done")
                    .no_tool_result(false)
                    .reply(Reply::text("ok")),
            ),
    );
    run(&model, dir.path().to_path_buf(), "big");
    let request = &model.requests()[1];
    let content = request.body["messages"][2]["content"][0]["content"]
        .as_str()
        .unwrap();
    assert!(content.len() < 31_000, "{} bytes were sent", content.len());
    assert!(
        content.contains("[output truncated: 4970000 more bytes not shown]"),
        "{}",
        &content[29_990..]
    );
    assert!(serde_json::to_vec(&request.body).unwrap().len() < 32 * 1024 * 1024);
}

#[test]
fn tool_calls_cut_off_by_max_tokens_are_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::start(
        Script::new()
            .rule(Rule::new("cut").no_tool_result(true).reply(
                Reply::tool("Bash", json!({"command": "touch ran.txt"})).stop_reason("max_tokens"),
            ))
            .rule(
                Rule::new("after")
                    .tool_result_contains("cut off")
                    .reply(Reply::text("ok")),
            ),
    );
    let (finish, _) = run(&model, dir.path().to_path_buf(), "go");
    assert_eq!(finish, Finish::EndTurn("ok".into()));
    assert!(!dir.path().join("ran.txt").exists());
}

#[test]
fn invalid_tool_json_from_the_model_is_an_error_result_and_the_loop_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let frame = |data: Value| {
        format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap()
        )
    };
    let body: String = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": "m", "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 12, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block":
            {"type": "tool_use", "id": "toolu_bad", "name": "Bash", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta":
            {"type": "input_json_delta", "partial_json": "{\"command\": \"touch ran.txt\", oops"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
            "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ]
    .into_iter()
    .map(frame)
    .collect();
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("broken")
                    .no_tool_result(true)
                    .reply(Reply::raw(Raw::new(body))),
            )
            .rule(
                Rule::new("recover")
                    .tool_result_contains("not valid JSON")
                    .reply(Reply::text("recovered")),
            ),
    );
    let (finish, _) = run(&model, dir.path().to_path_buf(), "go");
    assert_eq!(finish, Finish::EndTurn("recovered".into()));
    assert!(!dir.path().join("ran.txt").exists(), "ran a broken call");
    assert_eq!(model.requests().len(), 2);
    let second = messages(&model, 1);
    let result = &second[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_bad");
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains("oops")),
        "{result}"
    );
}
