//! `swarm watch`: one frame of a real team on disk (`--once`), the key handler resolving
//! approvals through the real files, and the live dashboard in a real terminal (tmux)
//! redrawing when a message arrives.

use std::time::Duration;

use swarm_store::approvals::{self, Approval};
use swarm_store::protocol::{IdleNotification, PermissionRequest, Protocol, permission_request_id};
use swarm_util::clock;
use swarm_util::names::AgentName;

use crate::harness::{TestEnv, wait_until};

const HOUR_MS: i64 = 3_600_000;

fn permission(env: &TestEnv, agent: &str, id: &str, created_ms: i64) -> Approval {
    let req = PermissionRequest {
        request_id: id.into(),
        agent_id: agent.into(),
        tool_name: "Bash".into(),
        tool_use_id: "toolu_1".into(),
        description: "Bash: cargo test".into(),
        input: serde_json::json!({"command": "cargo test"}),
        permission_suggestions: vec![],
    };
    let mut a = approvals::from_permission(&req);
    a.created_ms = created_ms;
    env.teams()
        .open(&env.team_name("alpha"))
        .unwrap()
        .approvals()
        .record(&a)
        .unwrap()
}

#[test]
fn once_prints_one_frame_of_a_real_team() {
    let env = TestEnv::with_team("alpha", &["alice", "bob"]);
    let team = ["--team", "alpha"];
    let run = |args: &[&str]| {
        let all: Vec<&str> = team.iter().chain(args).copied().collect();
        env.run(&all).success();
    };
    run(&["task", "add", "Sketch the AST"]);
    run(&["task", "add", "Write the lexer", "--blocked-by", "1"]);
    run(&[
        "task",
        "add",
        "Parse",
        "--blocked-by",
        "1",
        "--blocked-by",
        "2",
    ]);
    run(&["task", "claim", "1", "--as", "alice"]);
    run(&["send", "alice", "Start on #1 please.\nDetails follow."]);
    run(&["send", "team-lead", "On it.", "--from", "alice"]);
    for _ in 0..3 {
        let idle = Protocol::IdleNotification(IdleNotification {
            from: "bob".into(),
            timestamp: clock::now_iso(),
            idle_reason: Some("available".into()),
            summary: None,
            completed_task_id: None,
            completed_status: None,
            failure_reason: None,
            result: None,
        });
        env.deliver("alpha", "bob", "team-lead", idle.to_text());
    }
    permission(
        &env,
        "bob",
        "perm-1770873735000-abc1234",
        clock::now_ms() - 2 * HOUR_MS - 60_000,
    );
    // Acknowledged mail shows too, from the delivered log.
    let root = env.teams();
    let alpha = env.team_name("alpha");
    let alice = AgentName::new("alice").unwrap();
    let keys: Vec<String> = root
        .open(&alpha)
        .unwrap()
        .mail()
        .read_all(&alice)
        .unwrap()
        .into_iter()
        .map(|d| d.key)
        .collect();
    root.open(&alpha)
        .unwrap()
        .mail()
        .ack(&alice, &keys)
        .unwrap();

    let out = env
        .run(&[
            "watch", "alpha", "--once", "--width", "100", "--height", "30",
        ])
        .success();
    let clock_time = regex::Regex::new(r"\b\d\d:\d\d:\d\d\b").unwrap();
    let frame = clock_time.replace_all(&out.stdout, "HH:MM:SS");
    insta::assert_snapshot!("watch_once_100x30", frame);

    // The default size, and a narrow one.
    let out = env.run(&["watch", "--once"]).success();
    assert_eq!(out.stdout.lines().count(), 40);
    assert!(out.stdout.lines().all(|l| l.chars().count() <= 120));
    let out = env
        .run(&["watch", "--once", "--width", "60", "--height", "20"])
        .success();
    assert_eq!(out.stdout.lines().count(), 20);
    for title in ["Members", "Approvals", "Tasks", "Messages"] {
        assert!(out.stdout.contains(title), "{}", out.stdout);
    }
}

#[test]
fn without_a_terminal_it_says_so_and_exits_2() {
    let env = TestEnv::with_team("alpha", &["alice"]);
    let out = env.run(&["watch"]).failure(2);
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("needs a terminal"), "{}", out.stderr);
    // Size flags belong to --once.
    env.run(&["watch", "--width", "80"]).failure(2);
    env.run(&["watch", "nosuch", "--once"]).failure(3);
}

/// The real thing: `swarm watch` in a tmux pane redraws when mail arrives, and `q` quits
/// with the terminal restored.
#[test]
fn live_dashboard_redraws_on_change_and_quits_on_q() {
    let env = TestEnv::with_team("alpha", &["alice"]);
    let tmux = |args: &[&str]| {
        // The server inherits the test's environment: root and socket, nothing of the user's.
        env.tmux_cmd().args(args).output().unwrap()
    };
    let screen = || {
        String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "watch"]).stdout).into_owned()
    };
    let command = format!(
        "{} watch alpha; echo \"watch exited $?\"; sleep 30",
        crate::harness::SWARM
    );
    let started = tmux(&[
        "new-session",
        "-d",
        "-s",
        "watch",
        "-x",
        "100",
        "-y",
        "30",
        "sh",
        "-c",
        &command,
    ]);
    assert!(started.status.success(), "{started:?}");
    let t = Duration::from_secs(20);
    assert!(
        wait_until(t, || screen().contains("Members (2)")),
        "{}",
        screen()
    );

    env.run(&["--team", "alpha", "send", "alice", "hello from the test"])
        .success();
    assert!(
        wait_until(t, || screen().contains("hello from the test")),
        "the new message never showed:\n{}",
        screen()
    );
    permission(&env, "alice", &permission_request_id(), clock::now_ms());
    assert!(
        wait_until(t, || screen().contains("Approvals · 1 pending")),
        "{}",
        screen()
    );

    tmux(&["send-keys", "-t", "watch", "q"]);
    assert!(
        wait_until(t, || screen().contains("watch exited 0")),
        "{}",
        screen()
    );
    // Back on the normal screen: the dashboard is gone.
    assert!(!screen().contains("Members (2)"), "{}", screen());
}

/// Enter on a member switches the watching client to that member's pane, when the
/// dashboard runs inside tmux on the team's server. A client needs a terminal: `script`
/// gives it one.
#[test]
fn enter_on_a_member_switches_the_client_to_its_pane() {
    if !crate::harness::require(
        "`script` (util-linux; Debian's bsdutils)",
        crate::harness::have_program("script"),
    ) {
        return;
    }
    let env = TestEnv::with_team("alpha", &["alice"]);
    let tmux = |args: &[&str]| {
        let out = env.tmux_cmd().args(args).output().unwrap();
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    tmux(&[
        "new-session",
        "-d",
        "-s",
        "work",
        "-x",
        "100",
        "-y",
        "30",
        "sleep 300",
    ]);
    let pane = tmux(&[
        "new-window",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        "work",
        "sleep 300",
    ]);
    env.teams()
        .open(&env.team_name("alpha"))
        .unwrap()
        .roster()
        .update(|c| {
            c.member_mut("alice").unwrap().tmux_pane_id = pane.clone();
            Ok(())
        })
        .unwrap();
    let command = format!("{} watch alpha; sleep 30", crate::harness::SWARM);
    tmux(&[
        "new-session",
        "-d",
        "-s",
        "dash",
        "-x",
        "100",
        "-y",
        "30",
        "sh",
        "-c",
        &command,
    ]);
    let attach = format!("tmux -L {} -f /dev/null attach -t dash", env.tmux_socket);
    let _client = crate::harness::Guarded(Some(
        env.command("script")
            .args(["-qfc", &attach, "/dev/null"])
            // A terminal of its own, outside any tmux.
            .env("TERM", "xterm-256color")
            .env_remove("TMUX")
            // An open pipe, not /dev/null: at end of input `script` may end the session.
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    ));
    let t = Duration::from_secs(20);
    let clients = || tmux(&["list-clients", "-F", "#{session_name} #{pane_id}"]);
    assert!(
        wait_until(t, || clients().starts_with("dash ")),
        "{}",
        clients()
    );
    assert!(
        wait_until(t, || tmux(&["capture-pane", "-p", "-t", "dash"])
            .contains("Members (2)")),
        "{}",
        tmux(&["capture-pane", "-p", "-t", "dash"])
    );
    tmux(&["send-keys", "-t", "dash", "Down", "Enter"]);
    assert!(
        wait_until(t, || clients() == format!("work {pane}")),
        "the client stayed at {}:\n{}",
        clients(),
        tmux(&["capture-pane", "-p", "-t", "dash"])
    );
    assert!(
        tmux(&["capture-pane", "-p", "-t", "dash"])
            .contains(&format!("showing alice (pane {pane})"))
    );
}
