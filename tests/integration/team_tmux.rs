//! Teams in tmux: supervision, status, the shutdown ladder, teardown. Real tmux on a private
//! socket, real teammate processes, the scripted model over HTTP. Spawning and what
//! teammates inherit are in `team_spawn.rs`, which shares the helpers here.

use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{Fault, Reply, Rule, Script};
use swarm_store::protocol::Protocol;
use swarm_store::tasks::Status;

use crate::harness::{Run, ScriptedModel, TestEnv, run, wait_until};

pub(crate) const T: Duration = Duration::from_secs(30);

pub(crate) fn idle_model() -> ScriptedModel {
    ScriptedModel::start(Script::new().default_reply(Reply::text("ok")))
}

pub(crate) fn spawn(env: &TestEnv, model: &ScriptedModel, name: &str, extra: &[&str]) -> Run {
    let mut cmd = env.swarm(&["--team", "t", "spawn", name]);
    cmd.args(extra)
        .env("SWARM_PROVIDER", "scripted")
        .env("SWARM_BASE_URL", model.url())
        .env("ANTHROPIC_API_KEY", "sk-test-secret-value");
    run(&mut cmd)
}

pub(crate) fn status(env: &TestEnv) -> Value {
    serde_json::from_str(
        &env.run(&["--team", "t", "--json", "status"])
            .success()
            .stdout,
    )
    .unwrap()
}

pub(crate) fn member<'a>(s: &'a Value, name: &str) -> Option<&'a Value> {
    s["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
}

pub(crate) fn panes(env: &TestEnv) -> Vec<(String, String, i32)> {
    let out = env
        .tmux_cmd()
        .args([
            "list-panes",
            "-a",
            "-F",
            "#{pane_id} #{@swarm-agent} #{pane_pid}",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut p = l.split(' ');
            Some((
                p.next()?.to_owned(),
                p.next()?.to_owned(),
                p.next()?.parse().ok()?,
            ))
        })
        .collect()
}

pub(crate) fn cmdline(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

#[test]
fn a_killed_teammate_is_marked_dead_its_task_released_and_the_lead_told() {
    let env = TestEnv::with_team("t", &[]);
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("slow work")
                    .user_contains("claimed task")
                    .no_tool_result(true)
                    .reply(Reply::tool("Bash", json!({"command": "sleep 600"}))),
            )
            .default_reply(Reply::text("ok")),
    );
    env.run(&["--team", "t", "task", "add", "long job"])
        .success();
    env.run(&["--team", "t", "task", "add", "another long job"])
        .success();
    spawn(
        &env,
        &model,
        "bob",
        &["--permission-mode", "bypassPermissions"],
    )
    .success();
    spawn(
        &env,
        &model,
        "carol",
        &["--permission-mode", "bypassPermissions"],
    )
    .success();
    let store = env.teams().open(&env.team_name("t")).unwrap();
    let list = store.tasks();
    assert!(wait_until(T, || list.get("1").unwrap().owner.is_some()
        && list.get("2").unwrap().owner.is_some()));
    let owner = |id: &str| list.get(id).unwrap().owner.unwrap();
    let (victim, other) = (owner("1"), owner("2"));
    // kill -9: nothing of the teammate's own shutdown code runs.
    env.signal_agent("t", &victim, nix::sys::signal::Signal::SIGKILL);
    let told = env.wait_for_lead_message("t", T, |p| matches!(p, Protocol::TeammateTerminated(t) if t.agent.as_deref() == Some(victim.as_str())));
    let Some(Protocol::TeammateTerminated(note)) = told else {
        panic!("the lead was not told")
    };
    assert_eq!(note.released_task_ids, vec!["1".to_owned()]);
    assert!(
        note.message.contains("killed by signal 9"),
        "{}",
        note.message
    );
    let t1 = list.get("1").unwrap();
    assert!(
        t1.owner.is_none() || t1.owned_by(&other),
        "task 1 still belongs to the dead {victim}"
    );
    let s = status(&env);
    assert_eq!(member(&s, &victim).unwrap()["state"], "dead");
    // Closing the other's pane by hand: the same.
    let (pane, _, _) = panes(&env).into_iter().find(|p| p.1 == other).unwrap();
    env.tmux_cmd()
        .args(["kill-pane", "-t", &pane])
        .status()
        .unwrap();
    let told = env.wait_for_lead_message("t", T, |p| matches!(p, Protocol::TeammateTerminated(t) if t.agent.as_deref() == Some(other.as_str())));
    assert!(told.is_some(), "closing a pane went unnoticed");
    assert!(wait_until(T, || {
        let t = list.get("2").unwrap();
        t.status == Status::Pending && t.owner.is_none() || list.get("1").unwrap().owner.is_none()
    }));
    // Exactly once each, however many times anyone looks.
    env.run(&["--team", "t", "status"]).success();
    let notes = env
        .lead_inbox("t")
        .iter()
        .filter(|e| matches!(e.protocol(), Some(Protocol::TeammateTerminated(_))))
        .count();
    assert_eq!(notes, 2);
}

#[test]
fn killing_the_tmux_server_marks_everyone_dead() {
    let env = TestEnv::with_team("t", &[]);
    let model = idle_model();
    spawn(&env, &model, "bob", &[]).success();
    spawn(&env, &model, "carol", &[]).success();
    assert!(wait_until(T, || status(&env)["members"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["alive"] == true)));
    let pids: Vec<i64> = status(&env)["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["pid"].as_i64().unwrap())
        .collect();
    env.tmux_cmd().args(["kill-server"]).status().unwrap();
    assert!(wait_until(T, || status(&env)["members"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["alive"] == false)));
    // Gone, not only unreachable: each has recorded how it ended.
    assert!(wait_until(T, || pids
        .iter()
        .all(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())));
    let s = status(&env);
    assert_eq!(s["tmuxReachable"], false);
    for name in ["bob", "carol"] {
        assert_eq!(member(&s, name).unwrap()["state"], "dead", "{s}");
    }
    let text = env.run(&["--team", "t", "status"]).success().stdout;
    assert!(text.contains("tmux: no server"), "{text}");
    // The table a person reads: no server, both teammates dead, the lead never started.
    let mut settings = env.snapshot_settings();
    // With the padding after each, whose width follows the number's.
    for pid in pids {
        settings.add_filter(&format!(r"\b{pid} +"), "[pid]  ");
    }
    settings.add_filter(r"%\d+ +", "%[pane]  ");
    // The pid column is as wide as the longest pid.
    settings.add_filter(r"PID +", "PID    ");
    settings.bind(|| insta::assert_snapshot!("status_tmux_server_killed", text));
}

#[test]
fn the_ladder_stops_a_teammate_that_will_not_stop_and_leaves_nothing() {
    let env = TestEnv::with_team("t", &[]);
    // bob is stuck in a command that ignores SIGTERM; it cannot answer in time.
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("stuck")
                    .user_contains("get stuck")
                    .no_tool_result(true)
                    .reply(Reply::tool(
                        "Bash",
                        json!({"command": "trap '' TERM; sleep 600 & wait; sleep 600"}),
                    )),
            )
            .default_reply(Reply::text("ok")),
    );
    spawn(
        &env,
        &model,
        "bob",
        &[
            "--prompt",
            "get stuck",
            "--permission-mode",
            "bypassPermissions",
        ],
    )
    .success();
    assert!(wait_until(T, || member(&status(&env), "bob")
        .is_some_and(|m| m["state"] == "working")));
    let pid = member(&status(&env), "bob").unwrap()["pid"]
        .as_i64()
        .unwrap() as i32;
    // "working" comes before the command starts; the trap is set once `sleep` runs.
    assert!(
        wait_until(T, || swarm_util::process::session_members(pid)
            .into_iter()
            .any(|p| cmdline(p).first().is_some_and(|c| c.ends_with("sleep")))),
        "bob's command should be running: {:?}",
        swarm_util::process::session_members(pid)
    );
    let ladder = env
        .swarm(&["--team", "t", "shutdown", "bob", "--timeout", "3s"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // While bob ignores the request, he shows as being shut down, and how far it got.
    assert!(
        wait_until(T, || member(&status(&env), "bob").is_some_and(
            |m| m["state"] == "shutting-down"
                && m["detail"]
                    .as_str()
                    .is_some_and(|d| d.starts_with("asked to shut down"))
        )),
        "{}",
        status(&env)
    );
    let out = ladder.wait_with_output().unwrap();
    assert!(out.status.success());
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(out.contains("SIGTERM"), "{out}");
    assert!(
        swarm_util::process::session_members(pid).is_empty(),
        "left behind: {:?}",
        swarm_util::process::session_members(pid)
    );
    assert!(
        !panes(&env).iter().any(|p| p.1 == "bob"),
        "bob's pane survived"
    );
    assert!(
        member(&status(&env), "bob").is_none(),
        "bob is still on the roster"
    );
}

#[test]
fn team_delete_refuses_live_teammates_and_force_spares_the_users_own_pane() {
    let env = TestEnv::with_team("t", &[]);
    let model = idle_model();
    spawn(&env, &model, "bob", &[]).success();
    assert!(wait_until(T, || member(&status(&env), "bob")
        .is_some_and(|m| m["alive"] == true)));
    // The user splits a pane of their own into the team's window.
    let lead_pane = panes(&env)
        .into_iter()
        .find(|p| p.1 == "team-lead")
        .unwrap()
        .0;
    let mine = String::from_utf8_lossy(
        &env.tmux_cmd()
            .args([
                "split-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-t",
                &lead_pane,
                "sleep",
                "600",
            ])
            .output()
            .unwrap()
            .stdout,
    )
    .trim()
    .to_owned();
    let out = env.run(&["team", "delete", "t"]).failure(4);
    assert!(out.stderr.contains("bob"), "{}", out.stderr);
    assert!(env.root.join("teams/t/config.json").exists());
    env.run(&["team", "delete", "t", "--force"]).success();
    assert!(!env.root.join("teams/t").exists() && !env.root.join("tasks/t").exists());
    let left = panes(&env);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].0, mine, "the user's pane was touched");
}

#[test]
fn status_json_shape() {
    let env = TestEnv::with_team("t", &[]);
    let model = idle_model();
    env.run(&["--team", "t", "task", "add", "first"]).success();
    env.run(&["--team", "t", "task", "add", "second", "--blocked-by", "1"])
        .success();
    env.run(&["--team", "t", "task", "claim", "1", "--as", "team-lead"])
        .success();
    spawn(&env, &model, "bob", &["--model", "m-1"]).success();
    spawn(&env, &model, "carol", &[]).success();
    assert!(wait_until(T, || {
        let s = status(&env);
        ["bob", "carol"]
            .iter()
            .all(|n| member(&s, n).is_some_and(|m| m["state"] == "idle"))
    }));
    let s = status(&env);
    let root = env.root.display().to_string();
    insta::assert_json_snapshot!("status_json", s, {
        ".members[].pid" => "[pid]",
        ".members[].pane" => "[pane]",
        ".members[].lastActivityMs" => "[time]",
        ".members[].usage" => "[usage]",
        ".members[].modelCalls" => "[calls]",
        ".members[].agentId" => insta::dynamic_redaction(|v, _| {
            assert!(v.as_str().unwrap().ends_with("@t"));
            "[name]@t"
        }),
        ".members[].transcript" => insta::dynamic_redaction(move |v, _| {
            v.as_str().unwrap().replace(&root, "[root]")
        }),
    });
}

#[test]
fn status_shows_a_teammates_tokens_while_it_is_still_working() {
    let env = TestEnv::with_team("t", &[]);
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("first step")
                    .agent("bob")
                    .user_contains("two steps")
                    .no_tool_result(true)
                    .reply(Reply::tool("Glob", json!({"pattern": "*"}))),
            )
            .rule(
                Rule::new("second step stalls")
                    .agent("bob")
                    .no_tool_result(false)
                    .reply(Reply::text("still thinking"))
                    .fault(Fault::stall(2, 120_000)),
            ),
    );
    spawn(&env, &model, "bob", &["--prompt", "do this in two steps"]).success();
    // The first response is in, the second hangs: the work has not ended.
    assert!(
        wait_until(T, || model.requests().len() >= 2),
        "bob never made his second request"
    );
    let mut seen = Value::Null;
    assert!(
        wait_until(T, || {
            seen = status(&env);
            member(&seen, "bob").is_some_and(|m| {
                m["state"] == "working"
                    && m["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0
                    && m["modelCalls"].as_u64().unwrap_or(0) >= 1
            })
        }),
        "no tokens while working: {seen}"
    );
}

/// Spawns bob and carol (and so the lead) and waits until all three run; their status.
fn lead_bob_and_carol(env: &TestEnv, model: &ScriptedModel) -> Value {
    spawn(env, model, "bob", &[]).success();
    spawn(env, model, "carol", &[]).success();
    assert!(wait_until(T, || {
        let s = status(env);
        ["team-lead", "bob", "carol"]
            .iter()
            .all(|n| member(&s, n).is_some_and(|m| m["alive"] == true))
    }));
    status(env)
}

#[test]
fn a_lead_that_is_stopped_takes_its_team_down_with_it() {
    let env = TestEnv::with_team("t", &[]);
    let model = idle_model();
    let s = lead_bob_and_carol(&env, &model);
    let mates: Vec<i32> = ["bob", "carol"]
        .iter()
        .map(|n| member(&s, n).unwrap()["pid"].as_i64().unwrap() as i32)
        .collect();
    let lead = env.signal_agent("t", "team-lead", nix::sys::signal::Signal::SIGTERM);
    assert!(
        wait_until(T, || !swarm_util::process::is_alive(lead)
            && mates.iter().all(|p| !swarm_util::process::is_alive(*p))),
        "still running after the lead stopped: {}",
        status(&env)
    );
    // The teammates' panes are gone (the lead's own stays, dead, showing why it ended).
    let left: Vec<String> = panes(&env).into_iter().map(|p| p.1).collect();
    assert_eq!(left, ["team-lead"], "{left:?}");
    let s = status(&env);
    assert!(
        member(&s, "bob").is_none() && member(&s, "carol").is_none(),
        "{s}"
    );
}

#[test]
fn a_spawn_into_a_team_whose_lead_stopped_starts_the_lead_again() {
    let env = TestEnv::with_team("t", &[]);
    let model = idle_model();
    spawn(&env, &model, "bob", &[]).success();
    let lead_pid = || {
        member(&status(&env), "team-lead")
            .filter(|m| m["alive"] == true)
            .and_then(|m| m["pid"].as_i64())
    };
    assert!(wait_until(T, || lead_pid().is_some()));
    let first = env.signal_agent("t", "team-lead", nix::sys::signal::Signal::SIGTERM);
    assert!(wait_until(T, || !swarm_util::process::is_alive(first)));
    // Its pane stays (remain-on-exit), so the window is still found.
    assert!(panes(&env).iter().any(|p| p.1 == "team-lead"));
    spawn(&env, &model, "carol", &[]).success();
    assert!(
        wait_until(T, || lead_pid().is_some_and(|p| p as i32 != first)),
        "no lead supervises carol: {}",
        status(&env)
    );
    let lead_panes = panes(&env).iter().filter(|p| p.1 == "team-lead").count();
    assert_eq!(lead_panes, 1, "{:?}", panes(&env));
    env.run(&["team", "delete", "t", "--force"]).success();
}

#[test]
fn closing_the_leads_pane_takes_its_team_down_with_it() {
    let env = TestEnv::with_team("t", &[]);
    let model = idle_model();
    let s = lead_bob_and_carol(&env, &model);
    let pids: Vec<i32> = ["team-lead", "bob", "carol"]
        .iter()
        .map(|n| member(&s, n).unwrap()["pid"].as_i64().unwrap() as i32)
        .collect();
    let lead_pane = panes(&env)
        .into_iter()
        .find(|p| p.1 == "team-lead")
        .expect("the lead's pane")
        .0;
    // What a person does with the mouse or `prefix x`: the lead's terminal goes away
    // under it (SIGHUP, and every later write to it fails).
    let killed = env
        .tmux_cmd()
        .args(["kill-pane", "-t", &lead_pane])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(
        wait_until(T, || pids
            .iter()
            .all(|p| !swarm_util::process::is_alive(*p))),
        "still running after the lead's pane was closed: {}",
        status(&env)
    );
    assert!(
        wait_until(T, || panes(&env).is_empty()),
        "{:?}",
        panes(&env)
    );
}

#[test]
fn shutting_down_right_after_spawning_leaves_nothing() {
    let env = TestEnv::with_team("t", &[]);
    let model = idle_model();
    spawn(&env, &model, "bob", &[]).success();
    // At once, before bob has registered: the ladder must still leave nothing.
    env.run(&["--team", "t", "shutdown", "bob", "--timeout", "2s"])
        .success();
    assert!(
        !panes(&env).iter().any(|p| p.1 == "bob"),
        "bob's pane survived"
    );
    let s = status(&env);
    assert!(member(&s, "bob").is_none(), "{s}");
    let leftover = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            cmdline(*pid).iter().any(|a| a == "--agent-name=bob")
                && cmdline(*pid)
                    .iter()
                    .any(|a| a.contains(&env.root.display().to_string()))
        })
        .count();
    assert_eq!(leftover, 0, "bob is still running");
}

#[test]
fn a_team_that_never_used_tmux_is_deleted_where_tmux_is_not_installed() {
    let env = TestEnv::with_team("t", &["bob"]);
    let no_tmux = env.dir.path().join("empty-bin");
    std::fs::create_dir_all(&no_tmux).unwrap();
    let mut cmd = env.swarm(&["team", "delete", "t"]);
    cmd.env("PATH", &no_tmux);
    crate::harness::run(&mut cmd).success();
    assert!(!env.root.join("teams/t").exists());
}
