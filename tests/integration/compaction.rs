//! Long conversations: a teammate's transcript on disk and what `restore` makes of it,
//! compaction at the context threshold, and a new task started from a digest. A real
//! `swarm teammate` process against the scripted model server.

use std::time::Duration;

use serde_json::{Value, json};
use swarm_agent::transcript;
use swarm_model_server::{Fault, RecordedRequest, Reply, Rule, Script};
use swarm_store::protocol::Protocol;
use swarm_util::names::AgentName;

use crate::harness::{Backend, ScriptedModel, TestEnv, on_every_backend};

const T: Duration = Duration::from_secs(30);
const MARKER: &str = "[swarm compaction]";

fn out(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn bobs(model: &ScriptedModel) -> Vec<RecordedRequest> {
    model
        .requests()
        .into_iter()
        .filter(|r| r.agent() == Some("bob"))
        .collect()
}

/// The request's messages, without the cache breakpoints the client marks on them.
fn messages(r: &RecordedRequest) -> Vec<Value> {
    let mut messages = r.body["messages"].clone();
    for m in messages.as_array_mut().into_iter().flatten() {
        for b in m["content"].as_array_mut().into_iter().flatten() {
            if let Some(b) = b.as_object_mut() {
                b.remove("cache_control");
            }
        }
    }
    messages.as_array().cloned().unwrap_or_default()
}

/// Every text of the request's messages (text blocks and tool results), joined.
fn all_text(r: &RecordedRequest) -> String {
    let mut out = String::new();
    for m in messages(r) {
        for b in m["content"].as_array().into_iter().flatten() {
            for key in ["text", "content"] {
                if let Some(t) = b[key].as_str() {
                    out.push_str(t);
                    out.push('\n');
                }
            }
        }
    }
    out
}

fn last_user_text(r: &RecordedRequest) -> String {
    let messages = messages(r);
    let last = messages.last().unwrap();
    last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn size(r: &RecordedRequest) -> usize {
    serde_json::to_vec(&r.body).unwrap().len()
}

fn wait_idle_after(env: &TestEnv, task: &str, output: &std::path::Path) {
    env.wait_for_lead_message("t", T, |p| {
        matches!(p, Protocol::IdleNotification(n) if n.completed_task_id.as_deref() == Some(task))
    })
    .unwrap_or_else(|| panic!("task #{task} not reported; bob said:\n{}", out(output)));
}

/// Bash that prints `n` x's: a big tool result.
fn print_xs(n: usize) -> Value {
    json!({"command": format!("head -c {n} /dev/zero | tr '\\0' x")})
}

fn a_teammate_records_its_transcript_and_restore_gives_back_its_last_request(backend: Backend) {
    let Some(env) = TestEnv::with_team_on(backend, "t", &["bob"]) else {
        return;
    };
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("start")
                    .agent("bob")
                    .user_contains("claimed task #1")
                    .no_tool_result(true)
                    .reply(Reply::tool("Bash", json!({"command": "echo first-step"}))),
            )
            .rule(
                Rule::new("second")
                    .agent("bob")
                    .tool_result_contains("first-step")
                    .reply(Reply::tool(
                        "TaskUpdate",
                        json!({"taskId": "1", "status": "completed"}),
                    )),
            )
            .rule(
                Rule::new("end")
                    .agent("bob")
                    .no_tool_result(false)
                    .reply(Reply::text("All done with #1.")),
            ),
    );
    env.run(&["task", "add", "say hello"]).success();
    let (_bob, output) = env.teammate(
        "t",
        "bob",
        &model.url(),
        &["--permission-mode", "bypassPermissions"],
    );
    wait_idle_after(&env, "1", &output);
    let path = env
        .store_root()
        .transcript_path(&env.team_name("t"), &AgentName::new("bob").unwrap());
    let restored = transcript::restore(&path)
        .unwrap()
        .unwrap_or_else(|| panic!("no transcript at {}", path.display()));
    let requests = bobs(&model);
    assert_eq!(requests.len(), 3, "bob's requests");
    assert_eq!(restored.model_calls, 3);
    // The conversation is the last request's messages and the answer to it.
    let last = requests.last().unwrap();
    let restored_json = serde_json::to_value(&restored.messages).unwrap();
    let restored_json = restored_json.as_array().unwrap();
    assert_eq!(restored_json.len(), messages(last).len() + 1);
    assert!(
        restored_json[..restored_json.len() - 1] == messages(last)[..],
        "restored messages differ from the last request's"
    );
    assert_eq!(
        restored.messages.last().unwrap().text(),
        "All done with #1."
    );
    // Every line is a record, and the file names them.
    let text = std::fs::read_to_string(&path).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| *k == "response").count(),
        3,
        "{kinds:?}"
    );
    assert!(kinds.iter().any(|k| k == "user"), "{kinds:?}");
    // status --json names the file.
    let status: Value = serde_json::from_str(
        &env.run(&["--team", "t", "status", "--json"])
            .success()
            .stdout,
    )
    .unwrap();
    let bob = status["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "bob")
        .unwrap();
    assert_eq!(bob["transcript"], json!(path.display().to_string()));
}

/// bob's script for one task printing 20 000 x's four times over, with `summary` answering
/// compaction's summary request.
fn print_job(summary: Rule) -> Script {
    Script::new()
        .rule(summary)
        .rule(
            Rule::new("start")
                .agent("bob")
                .user_contains("claimed task #1")
                .no_tool_result(true)
                .reply(Reply::tool("Bash", print_xs(20_000))),
        )
        .rule(
            Rule::new("more")
                .agent("bob")
                .tool_result_contains("xxxxxxxx")
                .times(3)
                .reply(Reply::tool("Bash", print_xs(20_000))),
        )
        .rule(
            Rule::new("finish")
                .agent("bob")
                .tool_result_contains("xxxxxxxx")
                .reply(Reply::tool(
                    "TaskUpdate",
                    json!({"taskId": "1", "status": "completed"}),
                )),
        )
        .rule(
            Rule::new("end")
                .agent("bob")
                .no_tool_result(false)
                .reply(Reply::text("Printed them all.")),
        )
}

/// Adds the task and runs bob on it with an 18 000-token window until he is idle after it:
/// 0.8 × 18 000 = 14 400 tokens lies between the base request with two 5 000-token tool
/// results (about 12 000) and with three (about 17 000).
fn run_print_job(
    env: &TestEnv,
    model: &ScriptedModel,
) -> (crate::harness::Guarded, std::path::PathBuf) {
    env.run(&["task", "add", "print x's", "--description", "TASK-TEXT-42"])
        .success();
    let (bob, output) = env.teammate(
        "t",
        "bob",
        &model.url(),
        &[
            "--permission-mode",
            "bypassPermissions",
            "--context-window",
            "18000",
        ],
    );
    wait_idle_after(env, "1", &output);
    (bob, output)
}

fn compaction_at_the_threshold_replaces_old_turns_with_the_summary_and_keeps_the_task(
    backend: Backend,
) {
    let Some(env) = TestEnv::with_team_on(backend, "t", &["bob"]) else {
        return;
    };
    let model = ScriptedModel::start(print_job(
        Rule::new("summary")
            .agent("bob")
            .user_contains(MARKER)
            .reply(Reply::text("SUMMARY-7: printed x's several times.")),
    ));
    let (_bob, output) = run_print_job(&env, &model);
    let requests = bobs(&model);
    let sizes: Vec<usize> = requests.iter().map(size).collect();
    let i = requests
        .iter()
        .position(|r| last_user_text(r).contains(MARKER))
        .unwrap_or_else(|| panic!("no summary request; sizes {sizes:?}\n{}", out(&output)));
    assert!(i >= 2, "compacted too early: sizes {sizes:?}");
    let (before, summary, after) = (&requests[i - 1], &requests[i], &requests[i + 1]);
    // The summary request reuses the prefix: same system prompt, same tools, same turns.
    assert_eq!(summary.body["system"], before.body["system"]);
    assert_eq!(summary.body["tools"], before.body["tools"]);
    let n = messages(before).len();
    assert!(
        messages(summary)[..n - 1] == messages(before)[..n - 1],
        "the summary request does not carry the conversation"
    );
    // The next request: the summary and the task text, the last call and its result, smaller.
    let first = &messages(after)[0];
    let first_text = first["content"].to_string();
    assert!(
        first_text.contains("SUMMARY-7"),
        "{}",
        &first_text[..first_text.len().min(2000)]
    );
    assert!(
        first_text.contains("TASK-TEXT-42"),
        "{}",
        &first_text[..first_text.len().min(2000)]
    );
    assert!(!all_text(after).contains(MARKER));
    assert_eq!(messages(after).len(), 3, "messages after compaction");
    assert!(
        size(after) < size(summary),
        "not smaller: sizes {sizes:?} (summary request at {i})"
    );
    assert_eq!(after.body["system"], before.body["system"]);
    assert_eq!(after.body["tools"], before.body["tools"]);
    assert!(out(&output).contains("compacted:"), "{}", out(&output));
    // The transcript recorded it, and restoring starts from the compacted conversation.
    let path = env
        .store_root()
        .transcript_path(&env.team_name("t"), &AgentName::new("bob").unwrap());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains("\"kind\":\"compaction\"") && l.contains("SUMMARY-7")),
        "no compaction record"
    );
    let restored = transcript::restore(&path).unwrap().unwrap();
    let restored_json = serde_json::to_value(&restored.messages).unwrap();
    let last = requests.last().unwrap();
    assert!(
        restored_json.as_array().unwrap()[..messages(last).len()] == messages(last)[..],
        "restore after compaction differs from the last request"
    );
}

fn when_the_summary_request_fails_the_oldest_turns_are_dropped_and_work_goes_on(backend: Backend) {
    let Some(env) = TestEnv::with_team_on(backend, "t", &["bob"]) else {
        return;
    };
    let model = ScriptedModel::start(print_job(
        Rule::new("summary fails")
            .agent("bob")
            .user_contains(MARKER)
            .fault(Fault::status(400)),
    ));
    let (_bob, _) = run_print_job(&env, &model);
    let requests = bobs(&model);
    let i = requests
        .iter()
        .position(|r| last_user_text(r).contains(MARKER))
        .expect("a summary request");
    let after = &requests[i + 1];
    let first = messages(after)[0]["content"].to_string();
    assert!(first.contains("were dropped"), "{first}");
    assert!(first.contains("TASK-TEXT-42"), "{first}");
    assert_eq!(messages(after)[1]["role"], "assistant");
    assert!(size(after) < size(&requests[i]));
    let store = env.store("t");
    let list = store.tasks();
    assert_eq!(
        list.get("1").unwrap().status,
        swarm_store::tasks::Status::Completed
    );
}

fn a_teammate_starts_its_next_task_from_a_digest_not_the_earlier_turns(backend: Backend) {
    let Some(env) = TestEnv::with_team_on(backend, "t", &["bob"]) else {
        return;
    };
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("work")
                    .agent("bob")
                    .user_regex(r"claimed task #(?P<id>\d+)")
                    .no_tool_result(true)
                    .reply(
                        Reply::tool("Bash", json!({"command": "echo TURN-OF-{{id}}"})).tool_call(
                            "TaskUpdate",
                            json!({"taskId": "{{id}}", "status": "completed"}),
                        ),
                    ),
            )
            .rule(
                Rule::new("report")
                    .agent("bob")
                    .user_regex(r"TURN-OF-(?P<id>\d+)")
                    .reply(Reply::text("REPORT-OF-{{id}}: echoed.")),
            ),
    );
    env.run(&["task", "add", "first job"]).success();
    env.run(&["task", "add", "second job", "--blocked-by", "1"])
        .success();
    let (_bob, output) = env.teammate(
        "t",
        "bob",
        &model.url(),
        &["--permission-mode", "bypassPermissions"],
    );
    wait_idle_after(&env, "2", &output);
    let requests = bobs(&model);
    let second = requests
        .iter()
        .find(|r| last_user_text(r).contains("claimed task #2"))
        .expect("a request for task 2");
    let text = all_text(second);
    assert_eq!(
        messages(second).len(),
        3,
        "the digest, its acknowledgement, the task"
    );
    assert!(
        text.contains("task #1") && text.contains("first job"),
        "{text}"
    );
    assert!(
        text.contains("REPORT-OF-1"),
        "the digest has task 1's report: {text}"
    );
    assert!(
        !text.contains("claimed task #1"),
        "task 1's turns came along: {text}"
    );
    assert!(
        !text.contains("TURN-OF-1"),
        "task 1's tool results came along: {text}"
    );
}

struct QuietHost {
    ctx: swarm_agent::tools::ToolContext,
}

impl swarm_agent::engine::Host for QuietHost {
    fn ctx(&self) -> &swarm_agent::tools::ToolContext {
        &self.ctx
    }
    async fn authorize(
        &mut self,
        _: swarm_config::tools::ToolName,
        _: &Value,
        _: &str,
        _: &str,
    ) -> swarm_agent::engine::Authorization {
        swarm_agent::engine::Authorization::Deny("test".into())
    }
    async fn exit_plan_mode(&mut self, _: &str) -> swarm_agent::tools::ToolOutcome {
        swarm_agent::tools::ToolOutcome::err("no plans here")
    }
    async fn interject(&mut self) -> Option<String> {
        None
    }
    fn committed(&mut self) {}
    fn event(&mut self, _: swarm_agent::engine::Event) {}
}

#[test]
fn a_restored_engine_answers_calls_whose_results_were_lost_and_its_transcript_stays_valid() {
    use swarm_agent::engine::Engine;
    use swarm_agent::transcript::{Transcript, response_record};
    use swarm_llm::ContentBlock;
    use swarm_util::meter::Usage;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcripts/solo.jsonl");
    // As a crash leaves it: a response asking for a tool, and no result recorded.
    let mut t = Transcript::open(&path).unwrap();
    t.record_turn(
        vec![ContentBlock::Text {
            text: "build it".into(),
        }],
        response_record(
            &[ContentBlock::ToolUse {
                id: "toolu_lost".into(),
                name: "Bash".into(),
                input: json!({"command": "make"}),
            }],
            Usage::default(),
            "scripted",
            0.0,
            vec![],
        ),
    )
    .unwrap();
    drop(t);
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("Resumed fine.")));
    let run = |prompt: &str| {
        let client: std::sync::Arc<dyn swarm_llm::LlmClient> = std::sync::Arc::from(
            swarm_llm::build_client(&swarm_llm::LlmConfig::scripted(&model.url()).unwrap())
                .unwrap(),
        );
        let mut engine = Engine::new(
            client,
            "scripted".into(),
            "You are a test.".into(),
            swarm_config::tools::ToolName::SOLO.to_vec(),
        );
        engine.restore(transcript::restore(&path).unwrap().unwrap());
        engine.transcript = Some(Transcript::open(&path).unwrap());
        let mut host = QuietHost {
            ctx: swarm_agent::tools::ToolContext::new(
                dir.path().to_path_buf(),
                AgentName::new("solo").unwrap(),
                swarm_config::permissions::PermissionMode::Default,
            ),
        };
        model
            .runtime
            .block_on(engine.run(&mut host, prompt.to_owned()))
            .unwrap();
    };
    run("you were resumed");
    let first = &model.requests()[0];
    let last = &messages(first)[2];
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_lost");
    assert_eq!(last["content"][1]["text"], "you were resumed");
    // The answer was recorded with the next response: a second resume sends the same turns.
    run("again");
    let second = &model.requests()[1];
    assert!(
        messages(second)[..3] == messages(first)[..],
        "the second resume lost or changed turns"
    );
    assert_eq!(messages(second).len(), 5);
}

on_every_backend!(
    a_teammate_records_its_transcript_and_restore_gives_back_its_last_request,
    compaction_at_the_threshold_replaces_old_turns_with_the_summary_and_keeps_the_task,
    when_the_summary_request_fails_the_oldest_turns_are_dropped_and_work_goes_on,
    a_teammate_starts_its_next_task_from_a_digest_not_the_earlier_turns,
);
