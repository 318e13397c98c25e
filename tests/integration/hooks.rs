//! Hooks end to end: a real `swarm teammate` on the scripted model, with hook commands
//! from the project's `.claude/settings.json`, each event with exit 0, exit 2 and a
//! command that runs past its (1 s) timeout.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{Reply, Rule, Script};
use swarm_store::protocol::{Protocol, ShutdownRequest};
use swarm_store::tasks::Status;

use crate::harness::{ScriptedModel, TestEnv, wait_until};

const T: Duration = Duration::from_secs(20);

/// The teammate's working directory (the harness's `work/`), with these hooks configured.
fn with_hooks(env: &TestEnv, hooks: Value) -> PathBuf {
    let work = env.dir.path().join("work");
    std::fs::create_dir_all(work.join(".claude")).unwrap();
    std::fs::write(
        work.join(".claude/settings.json"),
        serde_json::to_string_pretty(&json!({ "hooks": hooks })).unwrap(),
    )
    .unwrap();
    work
}

fn command(cmd: &str) -> Value {
    json!({"type": "command", "command": cmd, "timeout": 1})
}

fn err(env: &TestEnv, name: &str) -> String {
    std::fs::read_to_string(env.dir.path().join(format!("{name}.err"))).unwrap_or_default()
}

fn payloads(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every text the model was sent by `agent` (messages and tool results), as JSON text.
fn sent(model: &ScriptedModel, agent: &str) -> String {
    model
        .requests()
        .iter()
        .filter(|r| r.agent() == Some(agent))
        .map(|r| r.body["messages"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn idle(env: &TestEnv) -> bool {
    env.wait_for_lead_message("t", T, |p| matches!(p, Protocol::IdleNotification(_)))
        .is_some()
}

#[test]
fn teammate_idle_exit_2_sends_it_back_to_work_and_failures_or_timeouts_do_not_block() {
    let env = TestEnv::with_team("t", &["bob"]);
    let work = with_hooks(
        &env,
        json!({"TeammateIdle": [{"hooks": [
            command("cat >> idle.log; echo >> idle.log; if [ ! -e once ]; then touch once; echo 'run the tests first' >&2; exit 2; fi"),
            command("echo oops >&2; exit 1"),
            command("sleep 30"),
        ]}]}),
    );
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("feedback")
                    .agent("bob")
                    .user_contains("TeammateIdle hook feedback")
                    .reply(Reply::text("I ran the tests.")),
            )
            .default_reply(Reply::text("ok")),
    );
    let (mut bob, _) = env.teammate("t", "bob", &model.url(), &[]);
    assert!(
        idle(&env),
        "no idle notification; bob said:\n{}",
        err(&env, "bob")
    );
    assert!(
        sent(&model, "bob").contains("TeammateIdle hook feedback:\\nrun the tests first"),
        "the feedback did not reach the model: {}",
        sent(&model, "bob")
    );
    // Twice: blocked once, then let through; each time the payload of Claude Code's shape.
    let seen = payloads(&work.join("idle.log"));
    assert_eq!(seen.len(), 2, "{seen:?}");
    for p in &seen {
        assert_eq!(p["hook_event_name"], "TeammateIdle");
        assert_eq!(p["teammate_name"], "bob");
        assert_eq!(p["team_name"], "t");
        assert_eq!(p["cwd"], work.canonicalize().unwrap().display().to_string());
        assert!(p["session_id"].as_str().is_some_and(|s| s.len() == 36));
    }
    let e = err(&env, "bob");
    assert!(
        e.contains("TeammateIdle hook `echo oops >&2; exit 1` exited with 1: oops"),
        "{e}"
    );
    assert!(
        e.contains("TeammateIdle hook `sleep 30` did not finish within 1 s and was killed"),
        "{e}"
    );
    assert!(bob.is_running());
}

#[test]
fn task_created_exit_2_deletes_the_task_and_the_tool_fails_with_the_feedback() {
    let env = TestEnv::with_team("t", &["bob"]);
    let work = with_hooks(
        &env,
        json!({"TaskCreated": [{"hooks": [command(
            "p=$(cat); echo \"$p\" >> created.log; case \"$p\" in *forbidden*) echo 'no forbidden tasks' >&2; exit 2;; *slow*) sleep 30;; esac"
        )]}]}),
    );
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("create")
                    .agent("bob")
                    .user_contains("make tasks")
                    .no_tool_result(true)
                    .reply(
                        Reply::tool(
                            "TaskCreate",
                            json!({"subject": "allowed", "description": "fine"}),
                        )
                        .tool_call(
                            "TaskCreate",
                            json!({"subject": "forbidden thing", "description": "no"}),
                        )
                        .tool_call(
                            "TaskCreate",
                            json!({"subject": "slow thing", "description": "slow"}),
                        ),
                    ),
            )
            .default_reply(Reply::text("ok")),
    );
    env.deliver("t", "team-lead", "bob", "make tasks".to_owned());
    let (_bob, _) = env.teammate("t", "bob", &model.url(), &[]);
    assert!(idle(&env), "bob said:\n{}", err(&env, "bob"));
    let store = env.teams().open(&env.team_name("t")).unwrap();
    let list = store.tasks();
    let subjects: Vec<String> = list
        .list()
        .unwrap()
        .into_iter()
        .map(|t| t.subject)
        .collect();
    assert!(subjects.contains(&"allowed".to_owned()), "{subjects:?}");
    assert!(
        subjects.contains(&"slow thing".to_owned()),
        "a timeout must not block: {subjects:?}"
    );
    assert!(
        !subjects.contains(&"forbidden thing".to_owned()),
        "{subjects:?}"
    );
    assert!(
        sent(&model, "bob").contains("TaskCreated hook feedback:\\nno forbidden tasks"),
        "{}",
        sent(&model, "bob")
    );
    let seen = payloads(&work.join("created.log"));
    assert_eq!(seen.len(), 3);
    let forbidden = seen
        .iter()
        .find(|p| p["task_subject"] == "forbidden thing")
        .unwrap();
    assert_eq!(forbidden["hook_event_name"], "TaskCreated");
    assert_eq!(forbidden["task_description"], "no");
    assert!(forbidden["task_id"].is_string());
    let e = err(&env, "bob");
    assert!(
        e.contains("did not finish within 1 s and was killed"),
        "{e}"
    );
}

#[test]
fn task_completed_exit_2_refuses_the_completion_with_the_feedback() {
    let env = TestEnv::with_team("t", &["bob"]);
    let work = with_hooks(
        &env,
        json!({"TaskCompleted": [{"hooks": [command(
            "p=$(cat); echo \"$p\" >> completed.log; case \"$p\" in *guarded*) echo 'attach the test log' >&2; exit 2;; *slow*) sleep 30;; esac"
        )]}]}),
    );
    for subject in ["guarded", "free", "slow"] {
        env.run(&["task", "add", subject]).success();
    }
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("complete")
                    .agent("bob")
                    .user_regex(r"claimed task #(?P<id>\d+)")
                    .no_tool_result(true)
                    .reply(Reply::tool(
                        "TaskUpdate",
                        json!({"taskId": "{{id}}", "status": "completed"}),
                    )),
            )
            .default_reply(Reply::text("ok")),
    );
    let (_bob, _) = env.teammate("t", "bob", &model.url(), &[]);
    let store = env.teams().open(&env.team_name("t")).unwrap();
    let list = store.tasks();
    let status = |id: &str| list.get(id).unwrap().status;
    assert!(
        wait_until(T, || status("2") == Status::Completed
            && status("3") == Status::Completed),
        "bob said:\n{}",
        err(&env, "bob")
    );
    assert_ne!(
        status("1"),
        Status::Completed,
        "the hook's refusal was ignored"
    );
    assert!(
        sent(&model, "bob").contains("TaskCompleted hook feedback:\\nattach the test log"),
        "{}",
        sent(&model, "bob")
    );
    let seen = payloads(&work.join("completed.log"));
    let guarded = seen
        .iter()
        .find(|p| p["task_subject"] == "guarded")
        .unwrap();
    assert_eq!(guarded["hook_event_name"], "TaskCompleted");
    assert_eq!(guarded["task_id"], "1");
    assert_eq!(guarded["teammate_name"], "bob");
    let e = err(&env, "bob");
    assert!(
        e.contains("did not finish within 1 s and was killed"),
        "{e}"
    );
}

#[test]
fn subagent_start_and_stop_run_matched_hooks_and_never_block() {
    let env = TestEnv::with_team("t", &["bob"]);
    let work = with_hooks(
        &env,
        json!({
            "SubagentStart": [
                {"matcher": "general-purpose", "hooks": [command("cat > start.json; exit 2"), command("sleep 30")]},
                {"matcher": "Explore", "hooks": [command("touch wrong-type")]},
            ],
            "SubagentStop": [{"hooks": [command("cat > stop.json"), command("sleep 30")]}],
        }),
    );
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("ok")));
    let (mut bob, _) = env.teammate(
        "t",
        "bob",
        &model.url(),
        &["--agent-type", "general-purpose"],
    );
    assert!(
        idle(&env),
        "an exit 2 from SubagentStart blocked bob:\n{}",
        err(&env, "bob")
    );
    let start: Value =
        serde_json::from_slice(&std::fs::read(work.join("start.json")).unwrap()).unwrap();
    assert_eq!(start["hook_event_name"], "SubagentStart");
    assert_eq!(start["agent_type"], "general-purpose");
    assert_eq!(start["agent_id"], "bob@t");
    assert!(
        !work.join("wrong-type").exists(),
        "a matcher for another type fired"
    );
    env.deliver(
        "t",
        "team-lead",
        "bob",
        Protocol::ShutdownRequest(ShutdownRequest {
            request_id: "shutdown-1@bob".into(),
            from: "team-lead".into(),
            reason: None,
            timestamp: swarm_util::clock::now_iso(),
        })
        .to_text(),
    );
    let status = bob.wait(T).expect("bob did not exit");
    assert!(status.success(), "{status:?}\n{}", err(&env, "bob"));
    let stop: Value =
        serde_json::from_slice(&std::fs::read(work.join("stop.json")).unwrap()).unwrap();
    assert_eq!(stop["hook_event_name"], "SubagentStop");
    assert_eq!(stop["stop_hook_active"], false);
    let e = err(&env, "bob");
    assert!(
        e.contains("SubagentStart hook `cat > start.json; exit 2` exited with 2"),
        "{e}"
    );
    assert!(
        e.contains("SubagentStart hook `sleep 30` did not finish within 1 s"),
        "{e}"
    );
    assert!(
        e.contains("SubagentStop hook `sleep 30` did not finish within 1 s"),
        "{e}"
    );
}

#[test]
fn a_teammate_killed_outright_still_gets_its_subagent_stop_hook() {
    let env = TestEnv::with_team("t", &["bob"]);
    let work = with_hooks(
        &env,
        json!({"SubagentStop": [{"hooks": [command("cat > stop.json")]}]}),
    );
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("ok")));
    let (mut bob, _) = env.teammate("t", "bob", &model.url(), &[]);
    assert!(wait_until(T, || idle(&env)), "{}", err(&env, "bob"));
    bob.child().kill().unwrap();
    bob.wait(T).expect("bob did not die");
    // Whoever notices the death first runs the hook the teammate never got to run.
    assert!(wait_until(T, || {
        env.run(&["--team", "t", "status"]).success();
        // Parsed, not only there: `cat >` creates the file before it writes it.
        std::fs::read(work.join("stop.json"))
            .is_ok_and(|b| serde_json::from_slice::<Value>(&b).is_ok())
    }));
    let stop: Value =
        serde_json::from_slice(&std::fs::read(work.join("stop.json")).unwrap()).unwrap();
    assert_eq!(stop["hook_event_name"], "SubagentStop");
    assert_eq!(stop["agent_id"], "bob@t");
    assert!(
        stop["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{stop}"
    );
    // Exactly once: later observers find it reported.
    std::fs::remove_file(work.join("stop.json")).unwrap();
    env.run(&["--team", "t", "status"]).success();
    assert!(!work.join("stop.json").exists());
}

#[test]
fn hooks_come_from_the_project_its_local_settings_and_the_user() {
    let env = TestEnv::with_team("t", &["bob"]);
    let ran = env.dir.path().join("ran.txt");
    let hook = |who: &str| {
        json!({"hooks": {"SubagentStart": [{"hooks": [
            command(&format!("echo {who} >> '{}'", ran.display()))
        ]}]}})
        .to_string()
    };
    let work = with_hooks(&env, json!({}));
    std::fs::write(work.join(".claude/settings.json"), hook("project")).unwrap();
    std::fs::write(work.join(".claude/settings.local.json"), hook("local")).unwrap();
    std::fs::create_dir_all(env.home.join(".claude")).unwrap();
    std::fs::write(env.home.join(".claude/settings.json"), hook("user")).unwrap();
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("ok")));
    let (_bob, _) = env.teammate("t", "bob", &model.url(), &[]);
    assert!(wait_until(T, || idle(&env)), "{}", err(&env, "bob"));
    let mut who: Vec<String> = std::fs::read_to_string(&ran)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    who.sort();
    assert_eq!(who, ["local", "project", "user"], "{}", err(&env, "bob"));
}

#[test]
fn task_hooks_also_judge_tasks_made_and_completed_by_hand() {
    let env = TestEnv::with_team("t", &["bob"]);
    // `swarm` runs in the test's dir: that is the project.
    let dir = env.dir.path();
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    let refuse = |word: &str, why: &str| {
        command(&format!(
            "if grep -q {word}; then echo '{why}' >&2; exit 2; fi"
        ))
    };
    std::fs::write(
        dir.join(".claude/settings.json"),
        json!({"hooks": {
            "TaskCreated": [{"hooks": [
                refuse("forbidden", "no forbidden tasks"),
                command("if grep -q grumpy; then exit 1; fi"),
            ]}],
            "TaskCompleted": [{"hooks": [refuse("unfinished", "not done yet")]}],
        }})
        .to_string(),
    )
    .unwrap();
    // What the person sees on stderr for each, in one transcript.
    let mut said = String::new();
    let mut task = |args: &[&str], code: i32| {
        let out = env.run(&[&["--team", "t", "task"][..], args].concat());
        assert_eq!(out.status.code(), Some(code), "{args:?}: {out:?}");
        said += &format!(
            "$ swarm --team t task {} => {code}\n{}",
            args.join(" "),
            out.stderr
        );
        out
    };
    task(&["add", "a forbidden task"], 4);
    assert_eq!(
        env.run(&["--team", "t", "--json", "task", "list"])
            .success()
            .stdout
            .trim(),
        "[]"
    );
    // A failing hook that does not block is reported once, and the task stays.
    let grumpy = task(&["add", "a grumpy task"], 0);
    assert_eq!(
        grumpy.stderr.matches("exited with 1").count(),
        1,
        "{}",
        grumpy.stderr
    );
    task(&["delete", "2"], 0);
    task(&["add", "an unfinished task"], 0);
    task(&["add", "a fine task"], 0);
    task(&["done", "3"], 4);
    task(&["done", "4"], 0);
    let tasks: Value = serde_json::from_str(
        &env.run(&["--team", "t", "--json", "task", "list"])
            .success()
            .stdout,
    )
    .unwrap();
    // The refusals carry the hook's own words; #3 stays pending, #4 is completed.
    insta::assert_snapshot!("task_hooks_by_hand", said);
    insta::assert_json_snapshot!("task_list_after_hooks", tasks);
}
