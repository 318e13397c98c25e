//! Claude Code teammates as swarm sees them: a stand-in process in a tmux pane on the
//! team's server and a roster entry written as Claude Code writes it (`tmuxPaneId`,
//! `backendType: "tmux"`, `isActive`, `engine: "claude"`, no state file of swarm's).
//! Status, death detection, the shutdown ladder and approvals must treat it like any
//! teammate.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use swarm_store::protocol::{Protocol, ShutdownApproved};
use swarm_store::roster::Member;
use swarm_store::tasks::Status;
use swarm_util::names::AgentName;

use crate::harness::{Guarded, TestEnv, run_timeout, wait_until};

const T: Duration = Duration::from_secs(30);

fn tmux(env: &TestEnv, args: &[&str]) -> String {
    let out = env
        .tmux_cmd()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "tmux {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Starts `command` in a pane of its own session, as Claude Code's lead starts a
/// teammate; a second session keeps the server up when that pane closes. Returns the
/// pane id and its process id.
fn pane(env: &TestEnv, session: &str, command: &str) -> (String, i32) {
    if env
        .tmux_cmd()
        .args(["has-session", "-t", "=keep"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| !s.success())
    {
        tmux(env, &["new-session", "-d", "-s", "keep", "sleep 600"]);
    }
    let out = tmux(
        env,
        &[
            "new-session",
            "-d",
            "-s",
            session,
            "-P",
            "-F",
            "#{pane_id} #{pane_pid}",
            command,
        ],
    );
    let (id, pid) = out.split_once(' ').unwrap();
    (id.to_owned(), pid.parse().unwrap())
}

/// A member as Claude Code's lead and the teammate write it.
fn add_member(env: &TestEnv, name: &str, pane: &str, active: bool) {
    env.teams()
        .open(&env.team_name("t"))
        .unwrap()
        .roster()
        .update(|c| {
            c.members.push(Member {
                agent_id: format!("{name}@t"),
                name: name.to_owned(),
                agent_type: Some("general-purpose".into()),
                model: Some("claude-sonnet-4-5".into()),
                color: Some("blue".into()),
                joined_at: 1,
                tmux_pane_id: pane.to_owned(),
                cwd: "/".into(),
                backend_type: Some("tmux".into()),
                is_active: Some(active),
                engine: Some("claude".into()),
                ..Member::default()
            });
            Ok(())
        })
        .unwrap();
}

fn set_active(env: &TestEnv, name: &str, active: bool) {
    env.teams()
        .open(&env.team_name("t"))
        .unwrap()
        .roster()
        .update_member(name, |m| m.is_active = Some(active))
        .unwrap();
}

fn member(env: &TestEnv, name: &str) -> Value {
    let out = env.run(&["--team", "t", "--json", "status"]).success();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    v["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} is not in {v}"))
}

fn kill9(pid: i32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn terminated_notes(env: &TestEnv, name: &str) -> usize {
    env.lead_inbox("t")
        .iter()
        .filter(|e| match e.protocol() {
            Some(Protocol::TeammateTerminated(t)) => t.agent.as_deref() == Some(name),
            _ => false,
        })
        .count()
}

/// Waits until the running lead has finished a whole reconcile tick after this call. The
/// sign: each tick records the permission requests in the lead's inbox from living
/// members (`supervisor::record_requests`, which reads the inbox as the tick begins), so a
/// request from `from` (alive) is recorded by the first tick that starts after it arrives,
/// and a second one, sent once the first is recorded, only by a later tick.
fn wait_for_a_whole_tick(env: &TestEnv, from: &str) {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    for _ in 0..2 {
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let request_id = format!("perm-1764072000000-tick{n:03}");
        let request = json!({
            "type": "permission_request",
            "request_id": request_id,
            "agent_id": from,
            "tool_name": "Bash",
            "tool_use_id": format!("toolu_tick{n}"),
            "description": "a sign of the next tick",
            "input": {"command": "true"},
            "permission_suggestions": [],
        });
        env.deliver("t", from, "team-lead", request.to_string());
        assert!(
            wait_until(T, || env
                .teams()
                .open(&env.team_name("t"))
                .unwrap()
                .approvals()
                .get(&request_id)
                .is_ok()),
            "the lead never recorded {request_id}"
        );
    }
}

#[test]
fn status_shows_a_claude_code_member_by_its_pane_process() {
    let env = TestEnv::with_team("t", &[]);
    let (id, pid) = pane(&env, "cc", "sleep 600");
    add_member(&env, "cc", &id, true);
    let m = member(&env, "cc");
    assert_eq!(m["alive"], true, "{m}");
    assert_eq!(m["state"], "working", "{m}");
    assert_eq!(m["pid"], pid, "{m}");
    assert_eq!(m["engine"], "claude", "{m}");
    set_active(&env, "cc", false);
    assert_eq!(member(&env, "cc")["state"], "idle");
    let table = env.run(&["--team", "t", "status"]).success().stdout;
    assert!(
        table
            .lines()
            .any(|l| l.contains("cc") && l.contains("claude")),
        "{table}"
    );
    let frame = env
        .run(&["watch", "t", "--once", "--width", "120", "--height", "30"])
        .success()
        .stdout;
    assert!(frame.contains("ENGINE"), "{frame}");
    assert!(
        frame
            .lines()
            .any(|l| l.contains("cc") && l.contains("claude")),
        "{frame}"
    );
    // Killed mid-turn: Claude Code leaves `isActive: true` behind.
    set_active(&env, "cc", true);
    kill9(pid);
    assert!(wait_until(T, || member(&env, "cc")["state"] == "dead"));
    let m = member(&env, "cc");
    assert_eq!(m["alive"], false, "{m}");
}

#[test]
fn the_lead_returns_a_killed_claude_code_members_tasks_and_says_so_once() {
    let env = TestEnv::with_team("t", &[]);
    let (id, pid) = pane(&env, "cc", "sleep 600");
    add_member(&env, "cc", &id, true);
    env.run(&["--team", "t", "task", "add", "job"]).success();
    env.run(&["--team", "t", "task", "claim", "1", "--as", "cc"])
        .success();
    let mut lead = env.swarm(&["--team", "t", "lead"]);
    lead.stdout(Stdio::null()).stderr(Stdio::null());
    let _lead = Guarded(Some(lead.spawn().unwrap()));
    // Alive and working: the lead leaves it alone, a whole tick long.
    wait_for_a_whole_tick(&env, "cc");
    assert!(env.store("t").tasks().get("1").unwrap().owned_by("cc"));
    kill9(pid);
    let store = env.store("t");
    let list = store.tasks();
    assert!(
        wait_until(T, || list.get("1").unwrap().status == Status::Pending),
        "the lead left task 1 with {:?}",
        list.get("1").unwrap().owner
    );
    assert!(wait_until(T, || terminated_notes(&env, "cc") == 1));
    // Once, however many ticks and readers look again: a living member gives the sign.
    let (other, _) = pane(&env, "other", "sleep 600");
    add_member(&env, "other", &other, false);
    wait_for_a_whole_tick(&env, "other");
    env.run(&["--team", "t", "status"]).success();
    assert_eq!(terminated_notes(&env, "cc"), 1);
    let cc = env
        .teams()
        .open(&env.team_name("t"))
        .unwrap()
        .roster()
        .load()
        .unwrap();
    assert_eq!(cc.member("cc").unwrap().is_active, Some(false));
}

fn shutdown_in_background(env: &TestEnv, timeout: &str) -> (Guarded, std::path::PathBuf) {
    let mut shutdown = env.swarm(&["--team", "t", "shutdown", "cc", "--timeout", timeout]);
    let out_path = env.dir.path().join("shutdown.out");
    shutdown
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(env.dir.path().join("shutdown.err")).unwrap());
    (Guarded(Some(shutdown.spawn().unwrap())), out_path)
}

fn shutdown_request(env: &TestEnv) -> Option<String> {
    let mut request = None;
    wait_until(T, || {
        request = env
            .teams()
            .open(&env.team_name("t"))
            .unwrap()
            .mail()
            .read_all(&AgentName::new("cc").unwrap())
            .unwrap()
            .into_iter()
            .find_map(|d| match d.envelope.protocol() {
                Some(Protocol::ShutdownRequest(r)) => Some(r.request_id),
                _ => None,
            });
        request.is_some()
    });
    request
}

#[test]
fn a_claude_code_member_that_approves_is_removed_only_once_its_process_exits() {
    let env = TestEnv::with_team("t", &[]);
    let (id, pid) = pane(&env, "cc", "sleep 600");
    add_member(&env, "cc", &id, false);
    env.run(&["--team", "t", "task", "add", "job"]).success();
    env.run(&["--team", "t", "task", "claim", "1", "--as", "cc"])
        .success();
    let (mut shutdown, out_path) = shutdown_in_background(&env, "60s");
    let request = shutdown_request(&env).expect("no shutdown_request reached cc");
    let approved = Protocol::ShutdownApproved(ShutdownApproved {
        request_id: request,
        from: "cc".into(),
        timestamp: "2026-01-01T00:00:00.000Z".into(),
        pane_id: Some(id.clone()),
        backend_type: Some("tmux".into()),
    });
    env.deliver("t", "cc", "team-lead", approved.to_text());
    // Its word is not enough while its process runs: the ladder has read it, and waits on.
    let said = || std::fs::read_to_string(&out_path).unwrap();
    assert!(
        wait_until(T, || said()
            .contains("agreed; waiting for its process to exit")),
        "{}",
        said()
    );
    assert!(shutdown.is_running(), "shutdown ended while cc still ran");
    assert!(env.on_roster("t", "cc"));
    // Then it exits, as Claude Code does after approving.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    );
    let status = shutdown.wait(T).expect("shutdown did not finish");
    let out = std::fs::read_to_string(&out_path).unwrap();
    assert!(status.success(), "{out}");
    assert!(out.contains("agreed and exited"), "{out}");
    assert!(out.contains("removed from the roster"), "{out}");
    assert!(!env.on_roster("t", "cc"));
    assert_eq!(
        env.store("t").tasks().get("1").unwrap().status,
        Status::Pending
    );
}

#[test]
fn a_claude_code_member_that_never_answers_is_stopped_by_the_ladder() {
    let env = TestEnv::with_team("t", &[]);
    let (id, pid) = pane(&env, "cc", "sleep 600");
    // Kept after its process ends, as a person's tmux configuration may say.
    tmux(
        &env,
        &["set-option", "-p", "-t", &id, "remain-on-exit", "on"],
    );
    add_member(&env, "cc", &id, true);
    let out = run_timeout(
        &mut env.swarm(&["--team", "t", "shutdown", "cc", "--timeout", "1s"]),
        Duration::from_secs(60),
    )
    .success();
    assert!(out.stdout.contains("SIGTERM"), "{}", out.stdout);
    let panes = tmux(&env, &["list-panes", "-a", "-F", "#{pane_id}"]);
    assert!(
        !panes.lines().any(|p| p == id),
        "{id} is still open: {panes}"
    );
    assert!(
        out.stdout.contains("removed from the roster"),
        "{}",
        out.stdout
    );
    assert!(!alive(pid), "cc's process still runs");
    assert!(!env.on_roster("t", "cc"));
}

#[test]
fn a_claude_code_member_whose_pane_is_gone_is_removed_with_its_tasks_returned() {
    let env = TestEnv::with_team("t", &[]);
    let (id, pid) = pane(&env, "cc", "sleep 600");
    add_member(&env, "cc", &id, true);
    env.run(&["--team", "t", "task", "add", "job"]).success();
    env.run(&["--team", "t", "task", "claim", "1", "--as", "cc"])
        .success();
    kill9(pid);
    assert!(wait_until(T, || !alive(pid)));
    let out = run_timeout(
        &mut env.swarm(&["--team", "t", "shutdown", "cc", "--timeout", "1s"]),
        Duration::from_secs(60),
    )
    .success();
    assert!(
        out.stdout.contains("removed from the roster"),
        "{}",
        out.stdout
    );
    assert!(!env.on_roster("t", "cc"));
    assert_eq!(
        env.store("t").tasks().get("1").unwrap().status,
        Status::Pending
    );
}

#[test]
fn a_claude_code_permission_request_is_answered_by_swarm_approve() {
    permission_round_trip(true);
}

#[test]
fn a_claude_code_permission_request_shows_without_a_running_lead() {
    permission_round_trip(false);
}

fn permission_round_trip(with_lead: bool) {
    let env = TestEnv::with_team("t", &[]);
    let (id, _pid) = pane(&env, "cc", "sleep 600");
    add_member(&env, "cc", &id, true);
    let _lead = with_lead.then(|| {
        let mut lead = env.swarm(&["--team", "t", "lead"]);
        lead.stdout(Stdio::null()).stderr(Stdio::null());
        Guarded(Some(lead.spawn().unwrap()))
    });
    let request_id = "perm-1764072000000-abc1234";
    let input = json!({"command": "ls -la", "description": "List files"});
    let request = json!({
        "type": "permission_request",
        "request_id": request_id,
        "agent_id": "cc",
        "tool_name": "Bash",
        "tool_use_id": "toolu_01",
        "description": "List files",
        "input": input,
        "permission_suggestions": [
            {"type": "addDirectories", "directories": ["/"], "destination": "session"}
        ],
    });
    env.deliver("t", "cc", "team-lead", request.to_string());
    let pending = || {
        let out = env.run(&["--team", "t", "--json", "approvals"]).success();
        serde_json::from_str::<Value>(&out.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["requestId"] == request_id && a["state"] == "pending")
    };
    if !with_lead {
        // `swarm watch` records it as well, for its `a`/`r` keys.
        let frame = env
            .run(&["watch", "t", "--once", "--width", "120", "--height", "40"])
            .success()
            .stdout;
        assert!(frame.contains("Approvals · 1 pending"), "{frame}");
    }
    assert!(wait_until(T, pending), "the request never showed");
    env.run(&["--team", "t", "approve", request_id]).success();
    let inbox = env
        .teams()
        .open(&env.team_name("t"))
        .unwrap()
        .mail()
        .read_all(&AgentName::new("cc").unwrap())
        .unwrap();
    let answer: Value = inbox
        .iter()
        .filter_map(|d| serde_json::from_str::<Value>(&d.envelope.text).ok())
        .find(|v| v["type"] == "permission_response")
        .expect("no permission_response reached cc");
    assert_eq!(answer["request_id"], request_id, "{answer}");
    assert_eq!(answer["subtype"], "success", "{answer}");
    assert_eq!(answer["response"]["updated_input"], input, "{answer}");
    assert_eq!(
        answer["response"]["permission_updates"],
        json!([]),
        "{answer}"
    );
}

#[test]
fn a_claude_code_member_stuck_at_a_first_run_dialog_is_reported_once() {
    let env = TestEnv::with_team("t", &[]);
    // What the client shows for a folder it was not told to trust, then waits.
    let (id, _pid) = pane(
        &env,
        "cc",
        "printf 'Quick safety check: Is this a project you created or one you trust?\\n'; sleep 600",
    );
    add_member(&env, "cc", &id, false);
    // It never began a turn: Claude Code has written no `isActive` yet.
    env.teams()
        .open(&env.team_name("t"))
        .unwrap()
        .roster()
        .update_member("cc", |m| m.is_active = None)
        .unwrap();
    assert!(wait_until(T, || member(&env, "cc")["state"] == "blocked"));
    let m = member(&env, "cc");
    let detail = m["detail"].as_str().unwrap();
    assert!(detail.contains("folder trust"), "{detail}");
    assert!(detail.contains("hasTrustDialogAccepted"), "{detail}");
    let told = || {
        env.lead_inbox("t")
            .iter()
            .filter(|e| e.text.contains("cc has not started") && e.text.contains("folder trust"))
            .count()
    };
    env.run(&["--team", "t", "status"]).success();
    assert_eq!(told(), 1);
}
