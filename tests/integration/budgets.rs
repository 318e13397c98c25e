//! Budgets: `swarm run --budget-tokens` stops the whole team at the limit, `swarm spawn
//! --budget-tokens` stops one teammate, and the lead hears once when 80 % is spent. The
//! scripted model reports a fixed usage per response, so every limit falls on a known call.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{RecordedRequest, Reply, Rule, Script};
use swarm_store::state::{Activity, AgentState};
use swarm_store::tasks::Status;
use swarm_util::meter::Spend;
use swarm_util::names::AgentName;

use crate::harness::{
    Backend, FAKE_CLAUDE, Guarded, ScriptedModel, TestEnv, on_every_backend, run, wait_until,
};

const T: Duration = Duration::from_secs(60);
/// Every scripted response bills 600 + 400 tokens.
const PER_CALL: u64 = 1000;

fn billed(reply: Reply) -> Reply {
    reply.usage(600, 400)
}

fn spent(env: &TestEnv, agent: &str) -> Spend {
    env.store("t")
        .budget()
        .spent(&AgentName::parse_any(agent).unwrap())
}

fn state(env: &TestEnv, agent: &str) -> Option<AgentState> {
    env.store("t")
        .agents()
        .read_state(&AgentName::parse_any(agent).unwrap())
}

fn requests_of(model: &ScriptedModel, agent: &str) -> Vec<RecordedRequest> {
    model
        .requests()
        .into_iter()
        .filter(|r| r.agent() == Some(agent))
        .collect()
}

/// The latest message of a request, as JSON text.
fn last_message(r: &RecordedRequest) -> String {
    r.body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(Value::to_string)
        .unwrap_or_default()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// `swarm run GOAL --team t` on the scripted model, output to files.
fn start_run(env: &TestEnv, model: &ScriptedModel, extra: &[&str]) -> Guarded {
    let work = env.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut cmd = env.swarm(&["run", "Keep the team busy.", "--team", "t", "--no-attach"]);
    cmd.args([
        "--provider",
        "scripted",
        "--base-url",
        &model.url(),
        "--cwd",
    ])
    .arg(&work)
    .args(extra)
    .stdout(std::fs::File::create(env.dir.path().join("run.out")).unwrap())
    .stderr(std::fs::File::create(env.dir.path().join("run.err")).unwrap());
    Guarded(Some(cmd.spawn().unwrap()))
}

fn run_output(env: &TestEnv) -> String {
    format!(
        "{}\n--- stderr\n{}\n--- lead log\n{}",
        read(&env.dir.path().join("run.out")),
        read(&env.dir.path().join("run.err")),
        read(&env.root.join("teams/t/logs/team-lead.log"))
    )
}

fn a_team_budget_stops_the_run_at_the_limit_and_returns_the_work(backend: Backend) {
    let Some(env) = TestEnv::on(backend) else {
        return;
    };
    // The lead makes one task and one teammate, who works on it without end: only the
    // budget can stop it.
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("lead plans")
                    .agent("team-lead")
                    .user_contains("Goal:")
                    .no_tool_result(true)
                    .times(1)
                    .reply(billed(
                        Reply::tool(
                            "TaskCreate",
                            json!({"subject": "spin", "description": "look at the list, forever"}),
                        )
                        .tool_call(
                            "Agent",
                            json!({"name": "worker", "description": "spinner", "prompt": "start"}),
                        ),
                    )),
            )
            .rule(
                Rule::new("lead waits")
                    .agent("team-lead")
                    .reply(billed(Reply::text("Waiting for news."))),
            )
            .rule(
                Rule::new("worker spins")
                    .agent("worker")
                    .user_contains("You have claimed task")
                    .reply(billed(Reply::tool("TaskList", json!({})))),
            )
            .rule(
                Rule::new("worker keeps spinning")
                    .agent("worker")
                    .no_tool_result(false)
                    .reply(billed(Reply::tool("TaskList", json!({})))),
            )
            .default_reply(billed(Reply::text("Ready."))),
    );
    let limit = 6 * PER_CALL;
    let mut run = start_run(&env, &model, &["--budget-tokens", &limit.to_string()]);
    let status = run.wait(Duration::from_secs(120)).unwrap_or_else(|| {
        panic!("the run did not end:\n{}", run_output(&env));
    });
    env.assert_on_its_backend("t");
    let out = run_output(&env);
    assert_eq!(status.code(), Some(9), "{out}");
    assert!(
        out.contains("Result: the budget ended the run: the team spent"),
        "{out}"
    );
    // Every request the server saw is in its agent's ledger, so none was sent after a
    // refusal; and only calls already in flight at the limit (one per agent at most) went
    // past it.
    let mut total = 0;
    for agent in ["team-lead", "worker"] {
        let ledger = spent(&env, agent);
        assert_eq!(
            ledger.calls,
            requests_of(&model, agent).len() as u64,
            "{agent}: {ledger:?}\n{out}"
        );
        assert_eq!(ledger.tokens, ledger.calls * PER_CALL, "{agent}");
        total += ledger.tokens;
    }
    assert!(
        total >= limit && total < limit + 2 * PER_CALL,
        "spent {total} of {limit}"
    );
    assert_eq!(model.requests().len() as u64, total / PER_CALL);
    // The worker stopped by itself, cleanly, and gave its task back.
    let worker = state(&env, "worker").expect("the worker's state");
    let exit = worker.exit.expect("the worker's exit");
    assert_eq!((exit.code, exit.clean), (9, true), "{exit:?}");
    assert!(
        exit.reason.starts_with("budget exhausted: the team spent "),
        "{exit:?}"
    );
    assert_eq!(exit.released_tasks, ["1"]);
    let task = env.store("t").tasks().get("1").unwrap();
    assert_eq!((task.status, task.owner), (Status::Pending, None));
    // The lead too.
    let lead = state(&env, "team-lead").unwrap();
    assert_eq!(lead.activity, Activity::Exited);
    assert_eq!(lead.exit.unwrap().code, 9);
    // `swarm status` shows the spend against the budget.
    let status = env.run(&["--team", "t", "--json", "status"]).success();
    let status: Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(status["budget"]["limits"]["tokens"], limit);
    assert_eq!(status["budget"]["spent"]["tokens"], total);
    let text = env.run(&["--team", "t", "status"]).success().stdout;
    assert!(
        text.contains(&format!("budget: {total} tokens of {limit}")),
        "{text}"
    );
}

fn the_lead_hears_once_at_80_percent_and_its_run_ends_at_the_limit(backend: Backend) {
    let Some(env) = TestEnv::on(backend) else {
        return;
    };
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("lead plans")
                    .agent("team-lead")
                    .user_contains("Goal:")
                    .no_tool_result(true)
                    .times(1)
                    .reply(billed(Reply::tool(
                        "TaskCreate",
                        json!({"subject": "later", "description": "not yet"}),
                    ))),
            )
            .default_reply(billed(Reply::text("Noted."))),
    );
    let mut run = start_run(&env, &model, &["--budget-tokens", "10000"]);
    // The lead planned (two calls) and waits for news.
    let idle_after = |calls: u64| {
        wait_until(T, || {
            state(&env, "team-lead")
                .is_some_and(|s| s.activity == Activity::Idle && s.model_calls == calls)
        })
    };
    assert!(idle_after(2), "{}", run_output(&env));
    env.assert_on_its_backend("t");
    assert!(
        model
            .requests()
            .iter()
            .all(|r| !last_message(r).contains("budget"))
    );
    // Agents of an earlier run spent 6500 tokens: with the lead's 2000 that is 85 %.
    env.store("t")
        .budget()
        .record_spend(
            &AgentName::new("earlier").unwrap(),
            &Spend {
                tokens: 6500,
                calls: 7,
                ..Spend::default()
            },
        )
        .unwrap();
    // The lead, idle, is woken for it: its next request says so.
    assert!(idle_after(3), "{}", run_output(&env));
    let third = last_message(&requests_of(&model, "team-lead")[2]);
    assert!(
        third.contains(
            "85 % of the team's budget is spent (8500 tokens of 10000): finish or cut scope"
        ),
        "{third}"
    );
    // Once: the next turn (at 95 %) does not say it again.
    env.deliver("t", "someone", "team-lead", "second news".into());
    assert!(idle_after(4), "{}", run_output(&env));
    let fourth = last_message(&requests_of(&model, "team-lead")[3]);
    assert!(
        fourth.contains("second news") && !fourth.contains("budget"),
        "{fourth}"
    );
    // 10500 of 10000: the next wake finds no budget left, and the run ends.
    env.deliver("t", "someone", "team-lead", "third news".into());
    let status = run
        .wait(T)
        .unwrap_or_else(|| panic!("{}", run_output(&env)));
    let out = run_output(&env);
    assert_eq!(status.code(), Some(9), "{out}");
    assert!(
        out.contains("Result: the budget ended the run: the team spent 10500 tokens of 10000"),
        "{out}"
    );
    assert_eq!(requests_of(&model, "team-lead").len(), 4);
}

fn spawn(env: &TestEnv, model: &ScriptedModel, name: &str, extra: &[&str]) {
    let work = env.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut cmd = env.swarm(&["--team", "t", "spawn", name, "--cwd"]);
    cmd.arg(&work)
        .args(extra)
        .env("SWARM_PROVIDER", "scripted")
        .env("SWARM_BASE_URL", model.url());
    run(&mut cmd).success();
}

fn a_teammates_own_budget_stops_only_that_teammate(backend: Backend) {
    let Some(env) = TestEnv::with_team_on(backend, "t", &[]) else {
        return;
    };
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("worker spins")
                    .agent("worker")
                    .user_contains("You have claimed task")
                    .reply(billed(Reply::tool("TaskList", json!({})))),
            )
            .rule(
                Rule::new("worker keeps spinning")
                    .agent("worker")
                    .no_tool_result(false)
                    .reply(billed(Reply::tool("TaskList", json!({})))),
            )
            // Each of its responses alone costs more than the worker's whole budget.
            .rule(
                Rule::new("other finishes")
                    .agent("other")
                    .user_regex(r"claimed task #(?P<id>\d+)")
                    .reply(
                        Reply::tool(
                            "TaskUpdate",
                            json!({"taskId": "{{id}}", "status": "completed"}),
                        )
                        .usage(3000, 1000),
                    ),
            )
            .rule(
                Rule::new("other reports")
                    .agent("other")
                    .reply(Reply::text("Done.").usage(3000, 1000)),
            )
            .default_reply(billed(Reply::text("Ready."))),
    );
    env.run(&["--team", "t", "task", "add", "spin"]).success();
    spawn(
        &env,
        &model,
        "worker",
        &["--prompt", "start", "--budget-tokens", "3000"],
    );
    assert!(
        wait_until(T, || state(&env, "worker")
            .is_some_and(|s| s.exit.is_some())),
        "the worker did not stop: {:?}\n{}",
        state(&env, "worker"),
        read(&env.root.join("teams/t/logs/worker.log"))
    );
    let exit = state(&env, "worker").unwrap().exit.unwrap();
    assert_eq!((exit.code, exit.clean), (9, true), "{exit:?}");
    assert_eq!(
        exit.reason,
        "budget exhausted: this agent spent 3000 tokens of 3000"
    );
    assert_eq!(exit.released_tasks, ["1"]);
    let ledger = spent(&env, "worker");
    assert_eq!((ledger.tokens, ledger.calls), (3000, 3));
    assert_eq!(requests_of(&model, "worker").len(), 3);
    // Another teammate, without a budget of its own, takes the task back up and goes on
    // past what the worker was allowed.
    spawn(&env, &model, "other", &[]);
    assert!(
        wait_until(T, || {
            env.store("t")
                .tasks()
                .get("1")
                .is_ok_and(|t| t.status == Status::Completed && t.owner.as_deref() == Some("other"))
        }),
        "{}",
        read(&env.root.join("teams/t/logs/other.log"))
    );
    assert!(
        wait_until(T, || spent(&env, "other").tokens == 8000),
        "{:?}",
        spent(&env, "other")
    );
    let other = state(&env, "other").unwrap();
    assert!(other.exit.is_none() && other.process_alive(), "{other:?}");
    assert_eq!(requests_of(&model, "worker").len(), 3);
    env.run(&["--team", "t", "shutdown", "other"]).success();
}

fn a_bad_budget_is_refused_before_anything_starts(backend: Backend) {
    let Some(env) = TestEnv::with_team_on(backend, "t", &[]) else {
        return;
    };
    for (flag, value) in [
        ("--budget-tokens", "0"),
        ("--budget-tokens", "lots"),
        ("--budget-usd", "0"),
        ("--budget-usd", "NaN"),
    ] {
        let out = env
            .run(&["run", "a goal", "--no-attach", flag, value])
            .failure(2);
        assert!(out.stderr.contains(flag), "{flag} {value}: {}", out.stderr);
    }
    // Claude Code keeps its own accounts: a budget for one is refused, not ignored.
    let out = env
        .run(&[
            "--team",
            "t",
            "spawn",
            "cc",
            "--engine",
            "claude",
            "--claude-bin",
            FAKE_CLAUDE,
            "--budget-tokens",
            "1000",
        ])
        .failure(2);
    assert!(
        out.stderr
            .contains("a budget applies to swarm teammates only"),
        "{}",
        out.stderr
    );
    assert!(!env.on_roster("t", "cc"));
}

on_every_backend!(
    a_team_budget_stops_the_run_at_the_limit_and_returns_the_work,
    the_lead_hears_once_at_80_percent_and_its_run_ends_at_the_limit,
    a_teammates_own_budget_stops_only_that_teammate,
    a_bad_budget_is_refused_before_anything_starts,
);
