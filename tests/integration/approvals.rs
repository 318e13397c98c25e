//! Approvals as durable state, with a person as the lead (no lead agent) and with a lead
//! agent that leaves them to a person: recorded by the teammate that asks, resolved exactly
//! once by `swarm approve`, expired when nobody answers in time or the teammate is gone.

use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{Reply, Rule, Script};
use swarm_store::protocol::Protocol;

use crate::harness::{Guarded, Run, ScriptedModel, TestEnv, run, wait_until};

const T: Duration = Duration::from_secs(30);

fn spawn(env: &TestEnv, model: &ScriptedModel, name: &str, extra: &[&str]) -> Run {
    let work = env.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut cmd = env.swarm(&["--team", "t", "spawn", name, "--cwd"]);
    cmd.arg(&work)
        .args(extra)
        .env("SWARM_PROVIDER", "scripted")
        .env("SWARM_BASE_URL", model.url());
    run(&mut cmd)
}

fn approvals(env: &TestEnv) -> Vec<Value> {
    let out = env.run(&["--team", "t", "--json", "approvals"]).success();
    serde_json::from_str::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// Waits for a request of `kind` from `agent` in state `state`; returns its record.
fn wait_for_record(env: &TestEnv, kind: &str, agent: &str, state: &str) -> Value {
    let mut found = None;
    wait_until(T, || {
        found = approvals(env)
            .into_iter()
            .find(|a| a["kind"] == kind && a["agent"] == agent && a["state"] == state);
        found.is_some()
    });
    found.unwrap_or_else(|| {
        panic!(
            "no {state} {kind} request from {agent}: {:?}\n{}",
            approvals(env),
            log(env, agent)
        )
    })
}

fn log(env: &TestEnv, agent: &str) -> String {
    std::fs::read_to_string(env.root.join(format!("teams/t/logs/{agent}.log"))).unwrap_or_default()
}

/// How many answers to `request_id` reached `agent`, read or not.
fn answers(env: &TestEnv, agent: &str, request_id: &str) -> usize {
    let (root, team) = (env.teams(), env.team_name("t"));
    let agent = swarm_util::names::AgentName::new(agent).unwrap();
    let live = root
        .open(&team)
        .unwrap()
        .mail()
        .read_all(&agent)
        .unwrap()
        .into_iter()
        .map(|d| d.envelope);
    let delivered = root
        .open(&team)
        .unwrap()
        .mail()
        .read_delivered(&agent)
        .unwrap();
    live.chain(delivered)
        .filter(|e| match e.protocol() {
            Some(Protocol::PlanApprovalResponse(r)) => r.request_id == request_id,
            Some(Protocol::PermissionResponse(r)) => r.request_id == request_id,
            _ => false,
        })
        .count()
}

#[test]
fn with_a_person_as_lead_requests_are_recorded_and_swarm_approve_unblocks_the_teammate() {
    let env = TestEnv::with_team("t", &[]);
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("plan")
                    .agent("carol")
                    .user_contains("write carol.txt")
                    .no_tool_result(true)
                    .reply(Reply::tool(
                        "ExitPlanMode",
                        json!({"plan": "1. write carol.txt"}),
                    )),
            )
            .rule(
                Rule::new("do")
                    .agent("carol")
                    .tool_result_contains("approved your plan")
                    .reply(Reply::tool(
                        "Write",
                        json!({"file_path": "carol.txt", "content": "approved"}),
                    )),
            )
            .rule(
                Rule::new("end")
                    .agent("carol")
                    .no_tool_result(false)
                    .reply(Reply::text("done")),
            ),
    );
    spawn(
        &env,
        &model,
        "carol",
        &["--plan-mode-required", "--prompt", "please write carol.txt"],
    )
    .success();
    // No lead process reads the lead's inbox: the teammate's own record is all there is.
    let plan = wait_for_record(&env, "plan", "carol", "pending");
    let plan_id = plan["requestId"].as_str().unwrap().to_owned();
    assert_eq!(plan["summary"], "plan: 1. write carol.txt", "{plan}");
    let out = env
        .run(&["--team", "t", "approvals", "--pending"])
        .success();
    assert!(out.stdout.contains(&plan_id), "{}", out.stdout);
    env.snapshot_settings()
        .bind(|| insta::assert_snapshot!("approvals_pending", out.stdout));
    env.run(&["--team", "t", "approve", &plan_id]).success();
    // Approved with no mode named: the default mode, so the write asks in turn.
    let permission = wait_for_record(&env, "permission", "carol", "pending");
    let permission_id = permission["requestId"].as_str().unwrap().to_owned();
    assert!(
        !env.dir.path().join("work/carol.txt").exists(),
        "wrote without permission"
    );
    env.run(&["--team", "t", "approve", &permission_id])
        .success();
    let written = env.dir.path().join("work/carol.txt");
    // The content, not the file: the Write tool creates it, then fills it.
    assert!(
        wait_until(T, || std::fs::read_to_string(&written)
            .is_ok_and(|c| c == "approved")),
        "carol did not go on after the approvals:\n{}",
        log(&env, "carol")
    );
    // Each resolved exactly once: one record each, approved by the person, one answer each.
    let all = approvals(&env);
    env.snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("approvals_resolved_json", all, {
            "[].createdMs" => "[ms]",
            "[].resolvedMs" => "[ms]",
        })
    });
    for id in [&plan_id, &permission_id] {
        let records: Vec<&Value> = all.iter().filter(|a| a["requestId"] == **id).collect();
        assert_eq!(records.len(), 1, "{all:?}");
        assert_eq!(records[0]["state"], "approved", "{all:?}");
        assert_eq!(records[0]["resolvedBy"], "human", "{all:?}");
        assert_eq!(answers(&env, "carol", id), 1, "{id}");
        let again = env.run(&["--team", "t", "approve", id]).failure(4);
        assert!(
            again.stderr.contains("already approved"),
            "{}",
            again.stderr
        );
    }
}

#[test]
fn a_permission_nobody_answers_in_time_expires_and_cannot_be_approved_later() {
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    std::fs::create_dir_all(&job).unwrap();
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("lead spawns bob")
                    .agent("team-lead")
                    .user_contains("Goal:")
                    .no_tool_result(true)
                    .reply(Reply::tool(
                        "Agent",
                        json!({"name": "bob", "prompt": "please write bob.txt"}),
                    )),
            )
            .rule(
                Rule::new("lead waits")
                    .agent("team-lead")
                    .reply(Reply::text("Waiting.")),
            )
            .rule(
                Rule::new("bob writes")
                    .agent("bob")
                    .user_contains("please write bob.txt")
                    .no_tool_result(true)
                    .reply(Reply::tool(
                        "Write",
                        json!({"file_path": "bob.txt", "content": "too late"}),
                    )),
            )
            .rule(
                Rule::new("bob gives up")
                    .agent("bob")
                    .no_tool_result(false)
                    .reply(Reply::text("I was not allowed to write bob.txt.")),
            ),
    );
    let mut cmd = env.swarm(&[
        "run",
        "write bob.txt",
        "--team",
        "t",
        "--no-attach",
        "--provider",
        "scripted",
        "--approver",
        "human",
        "--permission-mode",
        "default",
        "--permission-timeout",
        "1s",
        "--base-url",
    ]);
    cmd.arg(model.url())
        .arg("--cwd")
        .arg(&job)
        .stdout(std::fs::File::create(env.dir.path().join("run.out")).unwrap())
        .stderr(std::fs::File::create(env.dir.path().join("run.err")).unwrap());
    let _run = Guarded(Some(cmd.spawn().unwrap()));
    // Nobody answers: after the teammate's timeout the request is expired...
    let expired = wait_for_record(&env, "permission", "bob", "expired");
    let id = expired["requestId"].as_str().unwrap().to_owned();
    // ...the model is told it was denied, and nothing was written...
    assert!(
        wait_until(T, || model.requests().iter().any(|r| r.agent()
            == Some("bob")
            && r.body.to_string().contains("permission denied"))),
        "bob's model was not told:\n{}",
        log(&env, "bob")
    );
    assert!(!job.join("bob.txt").exists());
    // ...and a late approval is refused, in one line, as a conflict.
    let late = env.run(&["--team", "t", "approve", &id]).failure(4);
    assert!(late.stderr.contains("expired"), "{}", late.stderr);
    assert_eq!(late.stderr.trim().lines().count(), 1, "{}", late.stderr);
    assert_eq!(answers(&env, "bob", &id), 0);
    // With a person approving, the lead agent is told about the request (not asked, and
    // not woken for it): at its next wake, here a message.
    env.run(&[
        "--team",
        "t",
        "send",
        "team-lead",
        "any news?",
        "--from",
        "bob",
    ])
    .success();
    assert!(
        wait_until(T, || model.requests().iter().any(|r| r.agent()
            == Some("team-lead")
            && r.body.to_string().contains(&id))),
        "the lead was never told about {id}"
    );
    let all = approvals(&env);
    assert_eq!(
        all.iter().filter(|a| a["requestId"] == id.as_str()).count(),
        1
    );
}

#[test]
fn requests_of_a_teammate_that_stops_or_dies_expire() {
    let env = TestEnv::with_team("t", &[]);
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("plan")
                    .user_contains("make a plan")
                    .no_tool_result(true)
                    .reply(Reply::tool("ExitPlanMode", json!({"plan": "1. think"}))),
            )
            .default_reply(Reply::text("ok")),
    );
    for name in ["carol", "dave"] {
        spawn(
            &env,
            &model,
            name,
            &["--plan-mode-required", "--prompt", "make a plan"],
        )
        .success();
    }
    let carol = wait_for_record(&env, "plan", "carol", "pending");
    let dave = wait_for_record(&env, "plan", "dave", "pending");
    // carol is killed outright: whoever notices the death expires her request.
    env.signal_agent("t", "carol", nix::sys::signal::Signal::SIGKILL);
    assert!(wait_until(T, || {
        env.run(&["--team", "t", "status"]).success();
        approvals(&env)
            .iter()
            .any(|a| a["requestId"] == carol["requestId"] && a["state"] == "expired")
    }));
    // dave is asked to stop while he waits: he expires his own request on the way out.
    env.run(&["--team", "t", "shutdown", "dave"]).success();
    let record = approvals(&env)
        .into_iter()
        .find(|a| a["requestId"] == dave["requestId"])
        .unwrap();
    assert_eq!(record["state"], "expired", "{record}");
    for id in [&carol["requestId"], &dave["requestId"]] {
        let late = env
            .run(&["--team", "t", "approve", id.as_str().unwrap()])
            .failure(4);
        assert!(late.stderr.contains("expired"), "{}", late.stderr);
    }
}

#[test]
fn approving_in_a_team_with_no_requests_is_not_found() {
    let env = TestEnv::with_team("alpha", &[]);
    for args in [
        &["--team", "alpha", "approve", "plan_approval-1@x@alpha"][..],
        &[
            "--team",
            "alpha",
            "reject",
            "plan_approval-1@x@alpha",
            "--feedback",
            "no",
        ],
    ] {
        let out = env.run(args).failure(3);
        assert_eq!(
            out.stderr.trim(),
            "swarm: error: no request 'plan_approval-1@x@alpha' in team 'alpha'; see `swarm approvals`"
        );
    }
    assert!(!env.root.join("teams/alpha/approvals").exists());
}

#[test]
fn the_lead_agent_answers_a_permission_request_once_and_the_teammate_goes_on() {
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    std::fs::create_dir_all(&job).unwrap();
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("lead spawns bob")
                    .agent("team-lead")
                    .user_contains("Goal:")
                    .no_tool_result(true)
                    .reply(Reply::tool(
                        "Agent",
                        json!({"name": "bob", "prompt": "please write bob.txt"}),
                    )),
            )
            .rule(
                // The demo's rule: the request as the lead agent sees it in its inbox.
                Rule::new("lead grants")
                    .agent("team-lead")
                    .user_regex(r#"teammate_id="(?P<who>[^"]+)"[^>]*>\n[^\n]* asks permission to run (?P<what>.*?) \(request id (?P<rid>[^)]+)\)"#)
                    .reply(Reply::tool(
                        "SendMessage",
                        json!({"to": "{{who}}", "message": {"type": "permission_response",
                            "request_id": "{{rid}}", "approve": true}}),
                    )),
            )
            .rule(
                Rule::new("lead waits")
                    .agent("team-lead")
                    .reply(Reply::text("Waiting.")),
            )
            .rule(
                Rule::new("bob writes")
                    .agent("bob")
                    .user_contains("please write bob.txt")
                    .no_tool_result(true)
                    .reply(Reply::tool(
                        "Write",
                        json!({"file_path": "bob.txt", "content": "granted"}),
                    )),
            )
            .rule(
                Rule::new("bob is done")
                    .agent("bob")
                    .no_tool_result(false)
                    .reply(Reply::text("Written.")),
            ),
    );
    let mut cmd = env.swarm(&[
        "run",
        "write bob.txt",
        "--team",
        "t",
        "--no-attach",
        "--provider",
        "scripted",
        "--permission-mode",
        "default",
        "--base-url",
    ]);
    cmd.arg(model.url())
        .arg("--cwd")
        .arg(&job)
        .stdout(std::fs::File::create(env.dir.path().join("run.out")).unwrap())
        .stderr(std::fs::File::create(env.dir.path().join("run.err")).unwrap());
    let _run = Guarded(Some(cmd.spawn().unwrap()));
    let granted = wait_for_record(&env, "permission", "bob", "approved");
    assert_eq!(granted["resolvedBy"], "team-lead", "{granted}");
    let id = granted["requestId"].as_str().unwrap().to_owned();
    assert!(
        wait_until(T, || std::fs::read_to_string(job.join("bob.txt"))
            .is_ok_and(|c| c == "granted")),
        "bob did not go on after the lead granted it:\n{}",
        log(&env, "bob")
    );
    assert_eq!(answers(&env, "bob", &id), 1);
    env.run(&["team", "delete", "t", "--force"]).success();
}

#[test]
fn an_answer_by_mail_from_a_lead_that_keeps_no_records_resolves_the_request() {
    // Claude Code's lead answers a plan by mail and records nothing: the teammate that
    // takes the answer records it, so nothing stays pending that was decided.
    let env = TestEnv::with_team("t", &[]);
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("plan")
                    .agent("dora")
                    .no_tool_result(true)
                    .reply(Reply::tool("ExitPlanMode", json!({"plan": "1. rest"}))),
            )
            .rule(Rule::new("end").agent("dora").reply(Reply::text("done"))),
    );
    spawn(
        &env,
        &model,
        "dora",
        &["--plan-mode-required", "--prompt", "plan something"],
    )
    .success();
    let plan = wait_for_record(&env, "plan", "dora", "pending");
    let answer = Protocol::PlanApprovalResponse(swarm_store::protocol::PlanApprovalResponse {
        request_id: plan["requestId"].as_str().unwrap().to_owned(),
        approved: true,
        feedback: None,
        timestamp: swarm_util::clock::now_iso(),
        permission_mode: Some("acceptEdits".into()),
    });
    env.deliver("t", "team-lead", "dora", answer.to_text());
    let decided = wait_for_record(&env, "plan", "dora", "approved");
    assert_eq!(decided["resolvedBy"], "team-lead", "{decided}");
    assert_eq!(decided["mode"], "acceptEdits", "{decided}");
    // Recorded once: a person's approval after it is refused.
    let id = plan["requestId"].as_str().unwrap();
    let again = env.run(&["--team", "t", "approve", id]).failure(4);
    assert!(
        again.stderr.contains("already approved"),
        "{}",
        again.stderr
    );
}
