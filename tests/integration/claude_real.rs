//! The real Claude Code client as a swarm teammate, and as the lead of swarm teammates
//! (`CLAUDE_CODE_TEAMMATE_COMMAND`): `SWARM_TEST_CLAUDE_BIN` names it (npm
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

/// The lead's side, and swarm's teammate's: the lead answers "start the team" with an
/// Agent call that spawns `mate`; swarm's teammate says hello and finishes the task it
/// claims. The title requests get their own rule.
const LEAD_SCRIPT: &str = r#"{
  "rules": [
    {"name": "title", "system_contains": "You are naming a coding session", "reply": {"text": "A team"}},
    {"name": "spawn", "no_tool_result": true, "times": 1, "user_contains": "start the team",
     "reply": {"text": "Spawning.", "tool_calls": [{"name": "Agent", "input": {"name": "mate", "description": "a mate", "prompt": "please say hello", "subagent_type": "general-purpose"}}]}},
    {"name": "hello", "no_tool_result": true, "user_contains": "please say hello",
     "reply": {"text": "Saying hello.", "tool_calls": [{"name": "SendMessage", "input": {"to": "team-lead", "summary": "hello", "message": "hello from swarm mate"}}]}},
    {"name": "work", "no_tool_result": true, "user_regex": "claimed task #(?P<id>\\d+)",
     "reply": {"text": "Finishing.", "tool_calls": [{"name": "TaskUpdate", "input": {"taskId": "{{id}}", "status": "completed"}}]}}
  ],
  "default": {"text": "Done."}
}"#;

#[test]
#[ignore = "needs the real Claude Code client in SWARM_TEST_CLAUDE_BIN (.ci/run installs it and runs this)"]
fn a_real_claude_code_lead_spawns_swarm_as_its_teammate() {
    let bin = claude_bin();
    let env = TestEnv::new();
    let model = ScriptedModel::start(Script::from_json(LEAD_SCRIPT).unwrap());
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
    // The lead, in tmux as a person starts it: the key in the tmux server's environment
    // (the client passes its teammates the base URL and config dir, not the key), swarm as
    // the teammate command. SWARM_ROOT is left out: the teammate finds the team through
    // the CLAUDE_CONFIG_DIR the client passes on.
    let status = env
        .tmux_cmd()
        .env_remove("SWARM_ROOT")
        .env("ANTHROPIC_API_KEY", KEY)
        .args(["new-session", "-d", "-s", "lead", "-x", "220", "-y", "50"])
        .arg("-c")
        .arg(&cwd)
        .args(["--", "env", "IS_SANDBOX=1", "DISABLE_AUTOUPDATER=1"])
        .arg(format!("CLAUDE_CONFIG_DIR={}", env.root.display()))
        .arg(format!("ANTHROPIC_BASE_URL={}", model.url()))
        .arg("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1")
        .arg(format!(
            "CLAUDE_CODE_TEAMMATE_COMMAND={}",
            crate::harness::SWARM
        ))
        .args([
            &bin,
            "--dangerously-skip-permissions",
            "--teammate-mode",
            "tmux",
        ])
        .args(["--model", "claude-sonnet-4-5", "start the team"])
        .status()
        .unwrap();
    assert!(status.success());

    // The lead names the team after its session and puts mate on the roster.
    let mut team = None;
    let found = wait_until(WAIT, || {
        team = std::fs::read_dir(env.root.join("teams"))
            .ok()
            .and_then(|dirs| {
                dirs.flatten()
                    .map(|d| d.file_name().to_string_lossy().into_owned())
                    .find(|n| n.starts_with("session-"))
            });
        team.as_ref().is_some_and(|t| env.on_roster(t, "mate"))
    });
    let pane = || {
        let out = env
            .tmux_cmd()
            .args(["capture-pane", "-p", "-t", "lead"])
            .output();
        out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    assert!(found, "no team with mate; the lead's pane:\n{}", pane());
    let team = team.unwrap();
    let log = || {
        std::fs::read_to_string(env.root.join(format!("teams/{team}/logs/mate.log")))
            .unwrap_or_default()
    };

    // swarm's teammate got the lead's signed instructions and said hello; the lead's model
    // got the hello.
    let lead_heard = || {
        model.requests().iter().any(|r| {
            r.body["messages"]
                .to_string()
                .contains(r#"teammate_id=\"mate\""#)
        })
    };
    assert!(
        wait_until(WAIT, lead_heard),
        "the lead never heard mate; mate's log:\n{}\nthe lead's pane:\n{}",
        log(),
        pane()
    );
    let state = env
        .store(&team)
        .agents()
        .read_state(&swarm_store::names::AgentName::new("mate").unwrap())
        .expect("mate is swarm's teammate: it keeps a state file");
    assert_eq!(state.model.as_deref(), Some("claude-sonnet-4-5"));

    // A task in the lead's list: mate claims it and finishes it.
    std::fs::write(
        env.root.join(format!("tasks/{team}/1.json")),
        r#"{"id":"1","subject":"Write the report","description":"A short one.","status":"pending","blocks":[],"blockedBy":[]}"#,
    )
    .unwrap();
    let task = env.root.join(format!("tasks/{team}/1.json"));
    let done = wait_until(WAIT, || {
        std::fs::read(&task)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|t| t["status"] == "completed" && t["owner"] == "mate")
    });
    assert!(
        done,
        "task: {:?}; mate's log:\n{}",
        std::fs::read_to_string(&task),
        log()
    );
    // Everything in the lead's name carried the lead's valid signature.
    assert!(!log().contains("dropping a message"), "{}", log());
}
