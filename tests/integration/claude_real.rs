//! The real Claude Code client as a swarm teammate: `SWARM_TEST_CLAUDE_BIN` names it (npm
//! `@anthropic-ai/claude-code@2.1.328`, the version these tests pin; `.ci/run` installs it
//! and runs them). Offline: the client talks to the scripted model server on loopback, with
//! the `.claude.json` and `settings.json` entries that keep its first-run dialogs away
//! (docs/design/formats.md, README "Claude Code teammates"). Ignored by default, since a
//! developer's machine may have no client: `cargo test -- --include-ignored` (or nextest's
//! `--run-ignored all`) runs them, and then a missing client fails them.

use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::Script;

use crate::harness::{ScriptedModel, TestEnv, run, wait_until};

/// The teammate's side of the conversation. Claude Code also asks the model for a session
/// title, quoting the message, so rules also require the teammate's own system prompt.
const SCRIPT: &str = r#"{
  "rules": [
    {"name": "approve shutdown", "no_tool_result": true, "times": 1,
     "system_contains": "Agent Teammate Communication", "user_regex": "\"request_id\":\"(?P<rid>shutdown-[^\"]+)\"",
     "reply": {"text": "Approving.", "tool_calls": [{"name": "SendMessage", "input": {"to": "team-lead", "message": {"type": "shutdown_response", "request_id": "{{rid}}", "approve": true}}}]}},
    {"name": "say hello", "no_tool_result": true, "system_contains": "Agent Teammate Communication", "user_contains": "please say hello",
     "reply": {"text": "Saying hello.", "tool_calls": [{"name": "SendMessage", "input": {"to": "team-lead", "summary": "hello", "message": "hello from a real claude teammate"}}]}},
    {"name": "take the task", "no_tool_result": true, "times": 1, "system_contains": "Agent Teammate Communication", "user_contains": "please take task 1",
     "reply": {"text": "Taking it.", "tool_calls": [{"name": "TaskUpdate", "input": {"taskId": "1", "status": "in_progress", "owner": "reviewer"}}]}},
    {"name": "finish the task", "times": 1, "tool_result_contains": "Updated task #1 owner",
     "reply": {"text": "Finishing.", "tool_calls": [{"name": "TaskUpdate", "input": {"taskId": "1", "status": "completed"}}]}}
  ],
  "default": {"text": "Done."}
}"#;

const KEY: &str = "sk-ant-offline-00000000000000000000";
const WAIT: Duration = Duration::from_secs(90);

/// The client these tests run: `SWARM_TEST_CLAUDE_BIN`, which must be set.
fn claude_bin() -> String {
    std::env::var("SWARM_TEST_CLAUDE_BIN").expect(
        "set SWARM_TEST_CLAUDE_BIN to the Claude Code client (npm @anthropic-ai/claude-code@2.1.328; .ci/run shows how it installs it)",
    )
}

#[test]
#[ignore = "needs the real Claude Code client in SWARM_TEST_CLAUDE_BIN (.ci/run installs it and runs this)"]
fn a_real_claude_code_teammate_talks_takes_a_task_and_shuts_down() {
    let bin = claude_bin();
    let env = TestEnv::new();
    let model = ScriptedModel::start(Script::from_json(SCRIPT).unwrap());
    let cwd = std::fs::canonicalize(env.dir.path()).unwrap();
    let last20 = &KEY[KEY.len() - 20..];
    std::fs::write(
        env.root.join(".claude.json"),
        json!({
            "hasCompletedOnboarding": true,
            "customApiKeyResponses": {"approved": [last20], "rejected": []},
            "projects": {cwd.display().to_string(): {"hasTrustDialogAccepted": true}},
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        env.root.join("settings.json"),
        r#"{"skipDangerousModePermissionPrompt": true}"#,
    )
    .unwrap();
    env.run(&["team", "create", "t"]).success();
    let url = model.url();
    let spawned = run(env
        .swarm(&[
            "--team",
            "t",
            "spawn",
            "reviewer",
            "--engine",
            "claude",
            "--claude-bin",
            &bin,
            "--model",
            "claude-sonnet-4-5",
            "--base-url",
            &url,
            "--permission-mode",
            "bypassPermissions",
            "--prompt",
            "please say hello",
        ])
        .env("ANTHROPIC_API_KEY", KEY)
        .env("DISABLE_AUTOUPDATER", "1"));
    let spawned = spawned.success();
    assert!(
        spawned.stdout.contains("spawned reviewer"),
        "{}",
        spawned.stdout
    );

    let lead_heard = |text: &str| env.lead_inbox("t").iter().any(|e| e.text.contains(text));
    assert!(
        wait_until(WAIT, || lead_heard("hello from a real claude teammate")),
        "no hello from the client; lead inbox: {:?}; last user turns: {:#?}",
        env.lead_inbox("t"),
        model
            .requests()
            .iter()
            .map(|r| r.body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .cloned())
            .collect::<Vec<_>>()
    );

    env.run(&["--team", "t", "task", "add", "Review the README"])
        .success();
    env.run(&["--team", "t", "send", "reviewer", "please take task 1"])
        .success();
    let task = env.root.join("tasks/t/1.json");
    let done = wait_until(WAIT, || {
        std::fs::read(&task)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|t| t["status"] == "completed" && t["owner"] == "reviewer")
    });
    assert!(done, "task: {:?}", std::fs::read_to_string(&task));

    let shutdown = env.run(&["--team", "t", "shutdown", "reviewer"]).success();
    assert!(
        shutdown.stdout.contains("agreed and exited"),
        "{}",
        shutdown.stdout
    );
    assert!(lead_heard("shutdown_approved"));
    let roster = env
        .store_root()
        .open(&env.team_name("t"))
        .roster()
        .load()
        .unwrap();
    assert!(roster.member("reviewer").is_none());
}
