//! The command line as a newcomer meets it: completions and the manual, help that says
//! what every argument is for, usage lines that show only what is required, one name for
//! "acting as", and plain answers to plain mistakes.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{Reply, Rule, Script};
use swarm_store::protocol::Protocol;
use swarm_util::names::AgentName;

use crate::harness::{COMMAND_TIMEOUT, Run, ScriptedModel, TestEnv, run, wait_timeout, wait_until};

const WAIT: Duration = Duration::from_secs(30);

/// A refusal: the given exit code and one line on stderr.
#[track_caller]
fn refused(out: Run, code: i32) -> String {
    let out = out.failure(code);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    out.stderr
}

#[test]
fn completions_for_each_shell_and_a_manual_page() {
    let env = TestEnv::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = env.run(&["completions", shell]).success();
        assert!(out.stdout.contains("swarm"), "{shell}: {}", out.stdout);
        assert!(out.stdout.contains("model-server"), "{shell}");
    }
    let _ = env.run(&["completions", "tcsh"]).failure(2);
    let man = env.run(&["man"]).success().stdout;
    assert!(man.contains(".TH swarm 1"), "{man}");
    assert!(man.contains("completions"), "{man}");
}

#[test]
fn help_says_what_each_argument_is_and_what_a_script_looks_like() {
    let env = TestEnv::new();
    let help = |args: &[&str]| env.run(args).success().stdout;
    let approve = help(&["approve", "--help"]);
    assert!(
        approve.contains("<REQUEST_ID>  The request's id"),
        "{approve}"
    );
    let inbox = help(&["inbox", "--help"]);
    assert!(inbox.contains("<AGENT>  Whose inbox"), "{inbox}");
    let spawn = help(&["spawn", "--help"]);
    assert!(
        spawn.contains("--max-turns <N>") && spawn.contains("Stop after this many model turns"),
        "{spawn}"
    );
    let server = help(&["model-server", "--help"]);
    for needle in [
        "Script format",
        "\"rules\"",
        "user_regex",
        "tool_calls",
        "fault",
    ] {
        assert!(server.contains(needle), "{needle}: {server}");
    }
    assert!(!server.contains("script.rs"), "{server}");
}

/// Flags the environment fills (the harness sets SWARM_TMUX_SOCKET, this test
/// SWARM_PROVIDER and SWARM_TEAM) are not shown as required in a usage line.
#[test]
fn usage_lines_show_only_what_is_required() {
    let env = TestEnv::new();
    let out = run(env
        .swarm(&["spawn"])
        .env("SWARM_PROVIDER", "scripted")
        .env("SWARM_TEAM", "t"))
    .failure(2);
    let usage = out
        .stderr
        .lines()
        .find(|l| l.starts_with("Usage:"))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert_eq!(usage, "Usage: swarm spawn <NAME>...", "{}", out.stderr);
}

#[test]
fn task_release_acts_as_with_as_and_still_takes_owner() {
    let env = TestEnv::with_team("t", &["alice"]);
    let claimed = |id: &str| {
        env.run(&["task", "add", &format!("job {id}")]).success();
        env.run(&["task", "claim", id, "--as", "alice"]).success();
    };
    claimed("1");
    let out = env.run(&["task", "release", "--as", "alice"]).success();
    assert!(out.stdout.contains("released #1"), "{}", out.stdout);
    claimed("2");
    let out = env.run(&["task", "release", "--owner", "alice"]).success();
    assert!(out.stdout.contains("released #2"), "{}", out.stdout);
    let help = env.run(&["task", "release", "--help"]).success().stdout;
    assert!(
        help.contains("--as <AGENT>") && !help.contains("--owner"),
        "{help}"
    );
}

#[test]
fn an_allow_rule_for_an_unknown_tool_is_refused() {
    let env = TestEnv::with_team("t", &[]);
    for args in [
        &["agent", "-p", "hi", "--allow", "Bsh(ls)"][..],
        &["spawn", "bob", "--dry-run", "--allow", "Bsh(ls)"],
    ] {
        let err = refused(env.run(args), 2);
        assert!(
            err.contains("unknown tool 'Bsh'") && err.contains("Bash, Read, Write"),
            "{args:?}: {err}"
        );
    }
    // Spawn also checks the model before any pane: a scripted one needs no key.
    env.run(&[
        "spawn",
        "bob",
        "--dry-run",
        "--allow",
        "Bash(ls)",
        "--provider",
        "scripted",
        "--base-url",
        "http://127.0.0.1:9",
    ])
    .success();
}

#[test]
fn an_empty_swarm_team_counts_as_unset() {
    let env = TestEnv::with_team("t", &[]);
    let out = run(env.swarm(&["task", "list"]).env("SWARM_TEAM", "")).success();
    assert_eq!(out.stdout.trim(), "no tasks");
}

#[test]
fn attaching_to_a_team_that_does_not_exist_says_so() {
    let env = TestEnv::with_team("t", &[]);
    let err = refused(env.run(&["attach", "nope"]), 3);
    assert!(err.contains("no team named 'nope'"), "{err}");
}

#[test]
fn task_next_with_nothing_ready_exits_10() {
    let env = TestEnv::with_team("t", &["alice"]);
    let out = env.run(&["task", "next", "--as", "alice"]).failure(10);
    assert_eq!(out.stdout.trim(), "no ready task for alice");
    env.run(&["task", "add", "job"]).success();
    env.run(&["task", "next", "--as", "alice"]).success();
}

#[test]
fn task_list_shows_only_blockers_still_in_the_way() {
    let env = TestEnv::with_team("t", &[]);
    env.run(&["task", "add", "first"]).success();
    env.run(&["task", "add", "second", "--blocked-by", "1"])
        .success();
    // Task #2's row in the table: ID, STATUS, OWNER, BLOCKED BY, SUBJECT.
    let second = || {
        let list = env.run(&["task", "list"]).success().stdout;
        let row = list
            .lines()
            .find(|l| l.starts_with("#2"))
            .unwrap_or("")
            .to_owned();
        row.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(second(), ["#2", "pending", "-", "#1", "second"]);
    env.run(&["task", "done", "1"]).success();
    assert_eq!(second(), ["#2", "pending", "-", "-", "second"]);
    // The file keeps its blocker, as Claude Code's does.
    let json: Value =
        serde_json::from_str(&env.run(&["--json", "task", "show", "2"]).success().stdout).unwrap();
    assert_eq!(json["blockedBy"], json!(["1"]));
}

#[test]
fn a_message_from_stdin_loses_its_final_newline_only() {
    let env = TestEnv::with_team("t", &["bob"]);
    for (input, sent) in [("hi\n", "hi"), ("two\n\n", "two\n"), ("none", "none")] {
        let mut child = env
            .swarm(&["send", "bob", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let status = wait_timeout(&mut child, COMMAND_TIMEOUT).expect("send hung");
        assert!(status.success());
        let texts = crate::harness::inbox_texts(&env, "t", "bob");
        assert_eq!(texts.last().map(String::as_str), Some(sent), "{input:?}");
    }
}

/// A teammate's pane names its model once, and says who approved its plan: here a person,
/// through `swarm approve`.
#[test]
fn a_teammate_pane_names_the_provider_once_and_who_approved_its_plan() {
    let env = TestEnv::with_team("t", &["bob"]);
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("plan")
                    .agent("bob")
                    .user_contains("make it")
                    .no_tool_result(true)
                    .reply(Reply::tool("ExitPlanMode", json!({"plan": "1. make it"}))),
            )
            .default_reply(Reply::text("done")),
    );
    env.run(&["send", "bob", "make it"]).success();
    let (_bob, output) = env.teammate("t", "bob", &model.url(), &["--plan-mode-required"]);
    let pane = || std::fs::read_to_string(&output).unwrap_or_default();
    let request = env
        .wait_for_lead_message("t", WAIT, |p| matches!(p, Protocol::PlanApprovalRequest(_)))
        .unwrap_or_else(|| panic!("no plan request:\n{}", pane()));
    let Protocol::PlanApprovalRequest(request) = request else {
        unreachable!()
    };
    env.run(&["--team", "t", "approve", &request.request_id])
        .success();
    assert!(
        wait_until(WAIT, || pane().contains("plan approved")),
        "{}",
        pane()
    );
    let pane = pane();
    assert!(pane.contains("· bob@t · scripted at http"), "{pane}");
    assert!(!pane.contains("scripted scripted"), "{pane}");
    assert!(pane.contains("← a person: plan approved"), "{pane}");
    assert!(!pane.contains("team-lead: plan approved"), "{pane}");
}

/// A run stopped with Ctrl-C ends in the same kind of state as a finished one: its lead
/// "exited" (with why), not "dead" as if it had been killed.
#[test]
fn a_run_stopped_with_ctrl_c_shows_its_lead_exited() {
    let env = TestEnv::new();
    let model = ScriptedModel::lead_with_one_task("build");
    let mut run = env.run_team("build it", &model);
    assert!(
        wait_until(WAIT, || env.root.join("tasks/t/1.json").is_file()),
        "the lead made no task"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(run.child().id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    assert!(run.wait(COMMAND_TIMEOUT).is_some(), "the run did not stop");
    let lead = || {
        env.teams()
            .open(&env.team_name("t"))
            .unwrap()
            .agents()
            .read_state(&AgentName::lead())
    };
    assert!(wait_until(WAIT, || lead().is_some_and(|s| s.exit.is_some())));
    let status: Value = serde_json::from_str(
        &env.run(&["--json", "--team", "t", "status"])
            .success()
            .stdout,
    )
    .unwrap();
    let lead = status["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "team-lead")
        .unwrap();
    assert_eq!(lead["state"], "exited", "{status:#}");
    assert!(
        lead["detail"].as_str().unwrap_or("").contains("stopped"),
        "{status:#}"
    );
}
