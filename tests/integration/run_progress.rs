//! The newcomer's path through `swarm run`: an unattached run says what its team is doing
//! as it goes (stderr lines, or `--events` JSON lines) and ends with its report (`--json`
//! for scripts); a teammate that cannot reach its model is refused before its pane is made,
//! and one that dies at start leaves its reason where people look; a model error says what
//! to do about it, and a run's exit code is the README's.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use swarm_model_server::{Fault, Reply, Rule, Script};

use crate::harness::{Guarded, ScriptedModel, TestEnv, run, run_timeout, wait_until};

/// `swarm run <goal>` of team `t` on `model`, unattached, with `extra` flags; returns the
/// exit code, stdout and stderr.
fn run_team(
    env: &TestEnv,
    model_args: &[&str],
    extra: &[&str],
    timeout: Duration,
) -> (i32, String, String) {
    let (out, err) = (
        env.dir.path().join("run.out"),
        env.dir.path().join("run.err"),
    );
    let mut cmd = env.swarm(&["run", swarm_demo::job::GOAL, "--team", "t", "--no-attach"]);
    cmd.args(model_args)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    let status = Guarded(Some(cmd.spawn().unwrap()))
        .wait(timeout)
        .unwrap_or_else(|| {
            panic!(
                "the run did not end; stderr so far:\n{}",
                std::fs::read_to_string(&err).unwrap_or_default()
            )
        });
    (
        status.code().unwrap_or(-1),
        std::fs::read_to_string(out).unwrap(),
        std::fs::read_to_string(err).unwrap(),
    )
}

fn scripted(model: &ScriptedModel) -> Vec<String> {
    vec![
        "--provider".into(),
        "scripted".into(),
        "--base-url".into(),
        model.url(),
    ]
}

#[test]
fn an_unattached_run_tells_its_progress_on_stderr_and_streams_events_on_stdout() {
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    swarm_demo::job::make_job(&job, swarm_demo::job::Job::Toolkit).unwrap();
    let model =
        ScriptedModel::start(Script::from_json(swarm_demo::job::Job::Toolkit.script()).unwrap());
    let (out, err) = (
        env.dir.path().join("run.out"),
        env.dir.path().join("run.err"),
    );
    // A person approves plans: bob's waits for the test, so its telling is sure to be seen.
    let mut cmd = env.swarm(&["run", swarm_demo::job::GOAL, "--team", "t", "--events"]);
    cmd.args(scripted(&model))
        .args(["--approver", "human", "--permission-mode", "acceptEdits"])
        .args(["--cwd", &job.display().to_string()])
        .args(swarm_demo::job::ALLOW.iter().flat_map(|r| ["--allow", r]))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = Guarded(Some(cmd.spawn().unwrap()));
    let mut request = None;
    let told = wait_until(Duration::from_secs(120), || {
        request = std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["type"] == "approvals" && e["waiting"] == 1)
            .map(|e| e["requests"][0]["requestId"].as_str().unwrap().to_owned());
        request.is_some()
    });
    assert!(
        told,
        "no approval was told:\n{}",
        std::fs::read_to_string(&err).unwrap()
    );
    let request = request.unwrap();
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert!(
        stderr.contains(&format!("approvals waiting: bob's plan {request}")),
        "{stderr}"
    );
    env.run(&["--team", "t", "approve", &request]).success();
    let status = child
        .wait(Duration::from_secs(180))
        .expect("the run did not end");
    let (out, err) = (
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&err).unwrap(),
    );
    assert_eq!(status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");

    // stderr: one plain line per change, from the team's start to its end.
    assert!(
        !err.contains('\u{1b}'),
        "colour codes off a terminal:\n{err}"
    );
    for expected in [
        "team t started",
        "teammate bob spawned",
        "phase: working",
        "approvals: none waiting",
        "tasks: 4/4 done",
        "teammate bob stopped: shutdown approved",
    ] {
        assert!(err.contains(expected), "stderr lacks {expected:?}:\n{err}");
    }
    // A change is told once, not at every look.
    assert_eq!(
        err.lines()
            .filter(|l| l.ends_with("tasks: 4/4 done"))
            .count(),
        1,
        "{err}"
    );

    // stdout: JSON lines only, each with a type and a timestamp, ending with the report.
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for e in &events {
        assert!(e["type"].is_string(), "{e}");
        let time = e["time"].as_str().unwrap_or_else(|| panic!("no time: {e}"));
        assert!(time.ends_with('Z') && time.contains('T'), "{e}");
    }
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"team_started"), "{types:?}");
    assert!(types.contains(&"teammate_spawned"), "{types:?}");
    assert!(types.contains(&"teammate_stopped"), "{types:?}");
    assert!(types.contains(&"phase"), "{types:?}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tasks" && e["done"] == 4 && e["total"] == 4),
        "{out}"
    );
    let end = events.last().unwrap();
    assert_eq!(end["type"], "run_ended", "{out}");
    assert_eq!(end["code"], 0, "{end}");
    assert!(
        end["report"]
            .as_str()
            .unwrap()
            .contains("Result: done: every task is completed"),
        "{end}"
    );
}

/// A lead that answers the goal itself, at once.
fn answering_model() -> ScriptedModel {
    ScriptedModel::start(Script::new().default_reply(Reply::text("DONE: the readme says hello.")))
}

#[test]
fn json_prints_the_report_as_one_object_on_stdout() {
    let env = TestEnv::new();
    let model = answering_model();
    let model_args = scripted(&model);
    let model_args: Vec<&str> = model_args.iter().map(String::as_str).collect();
    let (code, out, err) = run_team(&env, &model_args, &["--json"], Duration::from_secs(60));
    assert_eq!(code, 0, "{out}\n{err}");
    let report: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{out}"));
    assert_eq!(report["team"], "t", "{report}");
    assert_eq!(report["code"], 0, "{report}");
    assert_eq!(report["result"], "done: the readme says hello.", "{report}");
    assert!(
        report["report"]
            .as_str()
            .unwrap()
            .starts_with("# swarm report: team t"),
        "{report}"
    );
    assert!(err.contains("team t started"), "{err}");
    // It is shown in `run --help`.
    let help = env.run(&["run", "--help"]).success().stdout;
    assert!(
        help.contains("--json") && help.contains("--events"),
        "{help}"
    );
}

#[test]
fn spawn_refuses_a_teammate_that_could_not_reach_its_model() {
    let env = TestEnv::with_team("t", &[]);
    let mut cmd = env.swarm(&["--team", "t", "spawn", "bob"]);
    cmd.env("SWARM_PROVIDER", "anthropic");
    let out = run(&mut cmd).failure(2);
    assert!(
        out.stderr.contains("ANTHROPIC_API_KEY is not set"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("spawned"), "{}", out.stdout);
    // Nothing was made: no member, no pane, no window.
    assert!(!env.on_roster("t", "bob"));
    assert!(
        env.tmux()
            .list_panes()
            .map(|p| p.is_empty())
            .unwrap_or(true)
    );
}

#[test]
fn a_teammate_that_dies_at_start_leaves_its_reason_in_its_log_state_and_status() {
    let env = TestEnv::with_team("t", &["bob"]);
    let work = env.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut cmd = env.swarm(&[
        "teammate",
        "--agent-id",
        "bob@t",
        "--agent-name",
        "bob",
        "--team-name",
        "t",
        "--provider",
        "anthropic",
        "--cwd",
        &work.display().to_string(),
    ]);
    run(&mut cmd).failure(2);
    let log = std::fs::read_to_string(env.root.join("teams/t/logs/bob.log")).unwrap_or_default();
    assert!(log.contains("ANTHROPIC_API_KEY is not set"), "log: {log}");
    let state: Value = serde_json::from_slice(
        &std::fs::read(env.root.join("teams/t/state/bob.json")).expect("bob has no state file"),
    )
    .unwrap();
    assert_eq!(state["activity"], "exited", "{state}");
    assert_eq!(state["exit"]["code"], 2, "{state}");
    let status = env
        .run(&["--team", "t", "--json", "status"])
        .success()
        .stdout;
    let status: Value = serde_json::from_str(&status).unwrap();
    let bob = &status["members"][1];
    assert_eq!(bob["name"], "bob");
    assert_eq!(bob["state"], "dead", "{bob}");
    assert!(
        bob["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("ANTHROPIC_API_KEY is not set")),
        "{bob}"
    );
    let text = env.run(&["--team", "t", "status"]).success().stdout;
    assert!(text.contains("ANTHROPIC_API_KEY is not set"), "{text}");
}

/// A model server that answers every request with `status`.
fn refusing(status: u16) -> ScriptedModel {
    ScriptedModel::start(Script::new().rule(Rule::new("refuse").fault(Fault::status(status))))
}

#[test]
fn a_refused_key_names_the_variable_to_check_and_the_run_exits_7() {
    let env = TestEnv::new();
    let model = refusing(401);
    let url = model.url();
    let mut cmd = env.swarm(&[
        "run",
        "say hello",
        "--team",
        "t",
        "--no-attach",
        "--provider",
        "anthropic",
        "--base-url",
        &url,
    ]);
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-bogus");
    let out = run(&mut cmd).failure(7);
    assert!(
        out.stderr
            .contains("check the API key in ANTHROPIC_API_KEY"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("sk-ant-bogus"), "{}", out.stderr);
    let mut cmd = env.swarm(&[
        "agent",
        "-p",
        "hi",
        "--provider",
        "openai",
        "--base-url",
        &url,
    ]);
    cmd.env("OPENAI_API_KEY", "sk-bogus");
    let out = run(&mut cmd).failure(7);
    assert!(
        out.stderr.contains("check the API key in OPENAI_API_KEY"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_final_rate_limit_points_at_rate_limit_wait() {
    let env = TestEnv::new();
    let model = ScriptedModel::start(
        Script::new().rule(Rule::new("limited").fault(Fault::status(429).retry_after("2"))),
    );
    let url = model.url();
    let out = run_timeout(
        &mut env.swarm(&[
            "agent",
            "-p",
            "hi",
            "--provider",
            "scripted",
            "--base-url",
            &url,
            "--rate-limit-wait",
            "1",
        ]),
        Duration::from_secs(60),
    )
    .failure(7);
    assert!(out.stderr.contains("--rate-limit-wait"), "{}", out.stderr);
}

#[test]
fn an_interrupted_run_exits_130() {
    let env = TestEnv::new();
    // The lead's first request is answered late: Ctrl-C comes while it waits.
    let model = ScriptedModel::start(
        Script::new()
            .rule(Rule::new("slow").delay_ms(60_000))
            .default_reply(Reply::text("ok")),
    );
    let (out, err) = (
        env.dir.path().join("run.out"),
        env.dir.path().join("run.err"),
    );
    let mut cmd = env.swarm(&["run", "say hello", "--team", "t", "--no-attach"]);
    cmd.args(scripted(&model))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = Guarded(Some(cmd.spawn().unwrap()));
    assert!(
        wait_until(Duration::from_secs(30), || !model.requests().is_empty()),
        "the lead never asked its model"
    );
    let pid = nix::unistd::Pid::from_raw(child.child().id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child
        .wait(Duration::from_secs(60))
        .expect("the run did not stop");
    let err = std::fs::read_to_string(err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
}

#[test]
fn a_lead_that_dies_fails_the_run_with_exit_7() {
    let env = TestEnv::new();
    // The lead waits on its first answer while it is killed.
    let model = ScriptedModel::start(
        Script::new()
            .rule(Rule::new("slow").delay_ms(60_000))
            .default_reply(Reply::text("ok")),
    );
    let err = env.dir.path().join("run.err");
    let mut cmd = env.swarm(&["run", "say hello", "--team", "t", "--no-attach"]);
    cmd.args(scripted(&model))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = Guarded(Some(cmd.spawn().unwrap()));
    assert!(
        wait_until(Duration::from_secs(30), || !model.requests().is_empty()),
        "the lead never asked its model"
    );
    env.signal_agent("t", "team-lead", nix::sys::signal::Signal::SIGKILL);
    let status = child
        .wait(Duration::from_secs(60))
        .expect("the run did not notice its lead died");
    let err = std::fs::read_to_string(err).unwrap();
    assert_eq!(status.code(), Some(7), "{err}");
    assert!(err.contains("stopped without finishing"), "{err}");
}
