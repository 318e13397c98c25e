//! swarm and a Claude Code teammate on the wire: `swarm-fake-claude` (which does to the files
//! what Claude Code 2.1.328 does) against swarm's CLI and store, plus Claude Code's key order
//! pinned byte for byte. No tmux, no model.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use swarm_store::mailbox::Envelope;
use swarm_store::protocol::{self, PermissionGrant, PermissionResponse, Protocol, ShutdownRequest};

use crate::harness::{FAKE_CLAUDE, Guarded, TestEnv, wait_until};

const WAIT: Duration = Duration::from_secs(30);

/// Starts the fake as teammate `name` of `team`, with the lead's argv and environment.
fn fake(env: &TestEnv, team: &str, name: &str) -> Guarded {
    let mut cmd = env.command(FAKE_CLAUDE);
    cmd.args([
        "--agent-id",
        &format!("{name}@{team}"),
        "--agent-name",
        name,
        "--team-name",
        team,
        "--agent-color",
        "blue",
        "--parent-session-id",
        "00000000-0000-0000-0000-000000000000",
        "--some-future-flag",
    ])
    .env("CLAUDECODE", "1")
    .env("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS", "1")
    .env("CLAUDE_CONFIG_DIR", &env.root)
    .stdin(Stdio::null())
    .stdout(Stdio::null());
    Guarded(Some(cmd.spawn().unwrap()))
}

fn roster_member(env: &TestEnv, team: &str, name: &str) -> Value {
    let roster: Value = serde_json::from_slice(
        &std::fs::read(env.root.join(format!("teams/{team}/config.json"))).unwrap(),
    )
    .unwrap();
    roster["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap()
        .clone()
}

fn lead_texts(env: &TestEnv, team: &str) -> Vec<String> {
    env.lead_inbox(team).into_iter().map(|e| e.text).collect()
}

fn idles(env: &TestEnv, team: &str) -> usize {
    env.lead_inbox(team)
        .iter()
        .filter(|e| matches!(e.protocol(), Some(Protocol::IdleNotification(_))))
        .count()
}

#[test]
fn the_fake_needs_the_teammate_environment() {
    let env = TestEnv::with_team("t", &["worker"]);
    let out = env
        .command(FAKE_CLAUDE)
        .args(["--agent-name", "worker", "--team-name", "t"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("CLAUDECODE=1"));
}

#[test]
fn message_round_trip_and_shutdown_handshake() {
    let env = TestEnv::with_team("t", &["worker"]);
    let mut worker = fake(&env, "t", "worker");
    env.run(&["--team", "t", "send", "worker", "hello there"])
        .success();
    assert!(wait_until(WAIT, || idles(&env, "t") == 1), "no idle");
    let texts = lead_texts(&env, "t");
    assert_eq!(texts[0], "ack: hello there");
    let shown = env.run(&["--team", "t", "inbox", "team-lead"]).success();
    assert!(
        shown.stdout.contains("ack: hello there"),
        "{}",
        shown.stdout
    );
    // Claude Code deletes what it took instead of marking it read.
    let inbox = std::fs::read_to_string(env.root.join("teams/t/inboxes/worker.json")).unwrap();
    assert_eq!(inbox, "[]");
    assert_eq!(roster_member(&env, "t", "worker")["isActive"], false);
    let record: Value = serde_json::from_slice(
        &std::fs::read(env.root.join("teams/t/fake-claude-worker.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["anthropicApiKey"], false);
    assert!(record["argv"].to_string().contains("worker@t"));

    let request_id = protocol::shutdown_request_id("worker");
    let request = Protocol::ShutdownRequest(ShutdownRequest {
        request_id: request_id.clone(),
        from: "team-lead".into(),
        reason: Some("done".into()),
        timestamp: swarm_util::clock::now_iso(),
    });
    let (root, team) = (env.teams(), env.team_name("t"));
    root.open(&team)
        .unwrap()
        .mail()
        .send("worker", Envelope::new("team-lead", request.to_text()))
        .unwrap();
    assert_eq!(worker.wait(WAIT).and_then(|s| s.code()), Some(0));
    let approved = lead_texts(&env, "t")
        .into_iter()
        .find(|t| t.contains("shutdown_approved"))
        .expect("shutdown_approved");
    let approved: Value = serde_json::from_str(&approved).unwrap();
    assert_eq!(approved["requestId"], request_id.as_str());
    assert_eq!(approved["from"], "worker");
    assert_eq!(approved["backendType"], "tmux");
    assert!(approved.get("paneId").is_some());
    assert!(matches!(
        env.lead_inbox("t").last().unwrap().protocol(),
        Some(Protocol::ShutdownApproved(_))
    ));
    // It exits mid-turn, leaving `isActive: true` behind.
    assert_eq!(roster_member(&env, "t", "worker")["isActive"], true);
}

#[test]
fn tasks_are_claimed_and_completed_in_claude_codes_key_order() {
    let env = TestEnv::with_team("t", &["worker"]);
    env.run(&["--team", "t", "task", "add", "Set up", "-d", "first"])
        .success();
    env.run(&["--team", "t", "task", "add", "Build", "--blocked-by", "1"])
        .success();
    let _worker = fake(&env, "t", "worker");
    env.run(&["--team", "t", "send", "worker", "claim tasks"])
        .success();
    // One idle for the message, one per task_assignment it sent itself.
    assert!(wait_until(WAIT, || idles(&env, "t") == 3), "idles");
    let list = env.run(&["--team", "t", "task", "list"]).success().stdout;
    assert_eq!(list.matches("worker").count(), 2, "{list}");
    let json: Value = serde_json::from_str(
        &env.run(&["--json", "--team", "t", "task", "list"])
            .success()
            .stdout,
    )
    .unwrap();
    for t in json.as_array().unwrap() {
        assert_eq!(t["status"], "completed");
    }
    let task = std::fs::read_to_string(env.root.join("tasks/t/1.json")).unwrap();
    assert_eq!(
        task,
        "{\n  \"id\": \"1\",\n  \"subject\": \"Set up\",\n  \"description\": \"first\",\n  \"owner\": \"worker\",\n  \"status\": \"completed\",\n  \"blocks\": [\n    \"2\"\n  ],\n  \"blockedBy\": []\n}"
    );
}

#[test]
fn a_permission_request_is_answered_from_the_lead() {
    let env = TestEnv::with_team("t", &["worker"]);
    let _worker = fake(&env, "t", "worker");
    env.run(&["--team", "t", "send", "worker", "ask permission Bash"])
        .success();
    let request = env
        .wait_for_lead_message("t", WAIT, |p| matches!(p, Protocol::PermissionRequest(_)))
        .expect("permission_request");
    let Protocol::PermissionRequest(request) = request else {
        unreachable!()
    };
    assert_eq!(request.tool_name, "Bash");
    assert!(request.request_id.starts_with("perm-"));
    let response = Protocol::PermissionResponse(PermissionResponse {
        request_id: request.request_id.clone(),
        subtype: "success".into(),
        response: Some(PermissionGrant::default()),
        error: None,
    });
    env.deliver("t", "team-lead", "worker", response.to_text());
    assert!(wait_until(WAIT, || lead_texts(&env, "t")
        .iter()
        .any(|t| t == "permission granted")));
}

#[test]
fn sigterm_exits_143_and_writes_nothing() {
    let env = TestEnv::with_team("t", &["worker"]);
    let mut worker = fake(&env, "t", "worker");
    let record = env.root.join("teams/t/fake-claude-worker.json");
    assert!(wait_until(WAIT, || record.exists()));
    let roster = std::fs::read(env.root.join("teams/t/config.json")).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(worker.child().id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(worker.wait(WAIT).and_then(|s| s.code()), Some(143));
    assert_eq!(
        std::fs::read(env.root.join("teams/t/config.json")).unwrap(),
        roster
    );
    assert!(env.lead_inbox("t").is_empty());
}

#[test]
fn a_dialog_blocked_fake_prints_it_and_never_registers() {
    let env = TestEnv::with_team("t", &["worker"]);
    let out = env.dir.path().join("pane.out");
    let mut cmd = env.command(FAKE_CLAUDE);
    cmd.args(["--agent-name", "worker", "--team-name", "t"])
        .env("CLAUDECODE", "1")
        .env("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS", "1")
        .env("CLAUDE_CONFIG_DIR", &env.root)
        .env("CLAUDE_CODE_FAKE_DIALOG", "trust")
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&out).unwrap());
    let mut worker = Guarded(Some(cmd.spawn().unwrap()));
    let shown = || std::fs::read_to_string(&out).unwrap();
    assert!(wait_until(WAIT, || shown().contains("Quick safety check")));
    env.run(&["--team", "t", "send", "worker", "hello"])
        .success();
    // A key after the message: the dialog shown again is the sign that the fake went
    // round once more since the message arrived.
    use std::io::Write;
    writeln!(worker.child().stdin.as_mut().unwrap(), "x").unwrap();
    assert!(
        wait_until(WAIT, || shown().contains("(still at the dialog)")),
        "{}",
        shown()
    );
    assert!(worker.is_running());
    let waiting: Vec<String> = env
        .teams()
        .open(&env.team_name("t"))
        .unwrap()
        .mail()
        .read_all(&swarm_util::names::AgentName::new("worker").unwrap())
        .unwrap()
        .into_iter()
        .map(|d| d.envelope.text)
        .collect();
    assert_eq!(waiting, ["hello"], "the message waits in its inbox");
    assert!(roster_member(&env, "t", "worker").get("isActive").is_none());
    assert!(env.lead_inbox("t").is_empty());
}

/// A roster member as Claude Code leaves it (`isActive` appended after `pid`) and a task it
/// wrote with a field swarm does not know keep their bytes through swarm's rewrites.
#[test]
fn rewrites_keep_the_key_order_they_found() {
    let env = TestEnv::with_team("t", &["worker"]);
    let path = env.root.join("teams/t/config.json");
    let mut roster: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let worker = roster["members"][1].as_object_mut().unwrap();
    worker.insert("pid".into(), 4242.into());
    worker.insert("isActive".into(), true.into());
    std::fs::write(&path, serde_json::to_vec_pretty(&roster).unwrap()).unwrap();
    let before = std::fs::read_to_string(&path).unwrap();
    env.run(&["--team", "t", "team", "add", "other"]).success();
    let after = std::fs::read_to_string(&path).unwrap();
    let worker_block = |s: &str| {
        let start = s.find("\"name\": \"worker\"").unwrap();
        s[start..start + s[start..].find('}').unwrap()].to_owned()
    };
    assert_eq!(worker_block(&after), worker_block(&before));
    assert!(worker_block(&after).ends_with("\"pid\": 4242,\n      \"isActive\": true\n    "));

    std::fs::create_dir_all(env.root.join("tasks/t")).unwrap();
    let claude = "{\n  \"id\": \"7\",\n  \"subject\": \"Review\",\n  \"description\": \"read it\",\n  \"activeForm\": \"Reviewing\",\n  \"status\": \"pending\",\n  \"blocks\": [],\n  \"blockedBy\": [],\n  \"futureField\": 1\n}";
    std::fs::write(env.root.join("tasks/t/7.json"), claude).unwrap();
    env.run(&["--team", "t", "task", "claim", "7", "--as", "worker"])
        .success();
    assert_eq!(
        std::fs::read_to_string(env.root.join("tasks/t/7.json")).unwrap(),
        "{\n  \"id\": \"7\",\n  \"subject\": \"Review\",\n  \"description\": \"read it\",\n  \"activeForm\": \"Reviewing\",\n  \"owner\": \"worker\",\n  \"status\": \"in_progress\",\n  \"blocks\": [],\n  \"blockedBy\": [],\n  \"futureField\": 1\n}"
    );
}

/// Claude Code never sends `completedTaskId`: the final words in its idle notification are
/// its only news, so they wake a lead agent (a swarm teammate's bare idle does not).
#[test]
fn a_claude_code_teammates_result_wakes_the_lead_agent() {
    let env = TestEnv::new();
    let model = crate::harness::ScriptedModel::lead_with_one_task("review");
    let _run = env.run_team("wait for carl", &model);
    let roster = env.root.join("teams/t/config.json");
    assert!(
        wait_until(WAIT, || !model.requests().is_empty()),
        "the lead never asked its model"
    );
    // carl joins as a Claude Code teammate (as `spawn --engine claude` records it).
    let root = env.teams();
    env.run(&["--team", "t", "team", "add", "carl"]).success();
    root.open(&env.team_name("t"))
        .unwrap()
        .roster()
        .update_member("carl", |m| {
            m.engine = Some("claude".into());
            m.backend_type = Some("tmux".into());
        })
        .unwrap();
    assert!(roster.is_file());
    let idle = serde_json::json!({
        "type": "idle_notification", "from": "carl", "timestamp": "2026-11-25T12:00:00.000Z",
        "idleReason": "available", "result": "the review is done: two typos"
    });
    env.deliver("t", "carl", "team-lead", idle.to_string());
    let heard = wait_until(WAIT, || {
        model
            .requests()
            .iter()
            .any(|r| r.body.to_string().contains("the review is done: two typos"))
    });
    assert!(heard, "the lead's model never heard carl's result");
}
