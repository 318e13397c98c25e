//! A mixed team the way a person runs one: Claude Code teammates (the wire-level stand-in,
//! `swarm-fake-claude`) spawned with `swarm spawn --engine claude` into real tmux panes,
//! then messaged, given tasks, asked for permissions, shut down and killed, all through
//! swarm's own commands.

use std::time::Duration;

use serde_json::Value;

use crate::harness::{FAKE_CLAUDE, TestEnv, wait_until};

const WAIT: Duration = Duration::from_secs(30);

fn spawn(env: &TestEnv, name: &str, prompt: &str) {
    env.run(&[
        "--team",
        "t",
        "spawn",
        name,
        "--engine",
        "claude",
        "--claude-bin",
        FAKE_CLAUDE,
        "--prompt",
        prompt,
    ])
    .success();
}

fn lead_heard(env: &TestEnv, text: &str) -> bool {
    env.lead_inbox("t").iter().any(|e| e.text.contains(text))
}

fn task(env: &TestEnv, id: &str) -> Value {
    std::fs::read(env.root.join(format!("tasks/t/{id}.json")))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

fn member(env: &TestEnv, name: &str) -> Value {
    let out = env
        .run(&["--team", "t", "status", "--json"])
        .success()
        .stdout;
    let status: Value = serde_json::from_str(&out).unwrap();
    status["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn a_claude_code_teammate_is_messaged_works_asks_and_leaves_like_any_other() {
    let env = TestEnv::new();
    env.run(&["team", "create", "t"]).success();
    spawn(&env, "reviewer", "hello there");
    assert!(
        wait_until(WAIT, || lead_heard(&env, "ack: hello there")),
        "no reply"
    );
    let seen = member(&env, "reviewer");
    assert_eq!(seen["engine"], "claude", "{seen}");
    assert_eq!(seen["alive"], true, "{seen}");

    env.run(&["--team", "t", "task", "add", "Review the README"])
        .success();
    env.run(&["--team", "t", "send", "reviewer", "claim tasks"])
        .success();
    assert!(
        wait_until(WAIT, || {
            let t = task(&env, "1");
            t["status"] == "completed" && t["owner"] == "reviewer"
        }),
        "{}",
        task(&env, "1")
    );

    env.run(&["--team", "t", "send", "reviewer", "ask permission Bash"])
        .success();
    let mut id = String::new();
    assert!(
        wait_until(WAIT, || {
            let out = env
                .run(&["--team", "t", "approvals", "--pending", "--json"])
                .success()
                .stdout;
            let list: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
            match list.as_array().and_then(|l| l.first()) {
                Some(req) => {
                    id = req["requestId"].as_str().unwrap_or_default().to_owned();
                    !id.is_empty()
                }
                None => false,
            }
        }),
        "the permission request never showed in `swarm approvals`: {}; lead inbox {:?}",
        env.run(&["--team", "t", "approvals", "--json"]).stdout,
        env.lead_inbox("t")
            .iter()
            .map(|e| e.text.clone())
            .collect::<Vec<_>>()
    );
    env.run(&["--team", "t", "approve", &id]).success();
    assert!(
        wait_until(WAIT, || lead_heard(&env, "permission granted")),
        "not answered"
    );

    let out = env
        .run(&["--team", "t", "shutdown", "reviewer"])
        .success()
        .stdout;
    assert!(out.contains("agreed and exited"), "{out}");
    assert!(lead_heard(&env, "shutdown_approved"));
    assert_eq!(member(&env, "reviewer"), Value::Null, "still on the roster");
}

#[test]
fn a_killed_claude_code_teammate_is_noticed_and_its_task_returned() {
    let env = TestEnv::new();
    env.run(&["team", "create", "t"]).success();
    spawn(&env, "rev", "hello");
    assert!(wait_until(WAIT, || lead_heard(&env, "ack: hello")));
    env.run(&["--team", "t", "task", "add", "Long job"])
        .success();
    env.run(&["--team", "t", "task", "claim", "1", "--as", "rev"])
        .success();
    let pid = member(&env, "rev")["pid"].as_i64().expect("a pid") as i32;
    // No state file records its start: it must be the process in its pane right now.
    let in_pane = env
        .tmux_cmd()
        .args(["list-panes", "-a", "-F", "#{@swarm-agent} #{pane_pid}"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&in_pane.stdout)
            .lines()
            .any(|l| l == format!("rev {pid}")),
        "pid {pid} is not rev's pane's: {}",
        String::from_utf8_lossy(&in_pane.stdout)
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // The team's supervisor (`swarm lead`, in the team window spawn opened) notices.
    assert!(
        wait_until(WAIT, || task(&env, "1")["status"] == "pending"),
        "{}",
        task(&env, "1")
    );
    assert!(wait_until(WAIT, || lead_heard(&env, "rev was terminated")));
    let seen = member(&env, "rev");
    assert_eq!(seen["alive"], false, "{seen}");
}

#[test]
fn a_claude_code_teammate_stuck_at_a_dialog_is_reported() {
    let env = TestEnv::new();
    env.run(&["team", "create", "t"]).success();
    let spawned = crate::harness::run(
        env.swarm(&[
            "--team",
            "t",
            "spawn",
            "stuck",
            "--engine",
            "claude",
            "--claude-bin",
            FAKE_CLAUDE,
            "--prompt",
            "hello",
        ])
        // The stand-in shows the folder-trust dialog and waits, as the client does.
        .env("CLAUDE_CODE_FAKE_DIALOG", "trust"),
    );
    spawned.success();
    assert!(
        wait_until(WAIT, || member(&env, "stuck")["state"] == "blocked"),
        "{}",
        member(&env, "stuck")
    );
    let detail = member(&env, "stuck")["detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(detail.contains("folder trust"), "{detail}");
    assert!(wait_until(WAIT, || lead_heard(
        &env,
        "stuck has not started"
    )));
}
