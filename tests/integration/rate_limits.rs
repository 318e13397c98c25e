//! Rate limits across a team: a 429 makes every agent on the provider wait for the same
//! moment (the team's `rate-limit.json`), the wait shows in `status` and `watch`, the run
//! still completes; and a limit that outlasts `--rate-limit-wait` is final.

use std::time::{Duration, Instant};

use serde_json::Value;
use swarm_model_server::{Fault, Outcome, Reply, Rule, Script};

use crate::harness::{Guarded, ScriptedModel, TestEnv, run_timeout};

/// What the server asks for, in seconds.
const RETRY_AFTER: f64 = 3.0;
/// Requests already on their way when a 429 came back, or sent before its receiver wrote
/// the gate, may arrive this long after it: not a wait skipped.
const IN_FLIGHT: Duration = Duration::from_secs(1);

fn demo_run(env: &TestEnv, model: &ScriptedModel, job: &std::path::Path) -> std::process::Child {
    let mut cmd = env.swarm(&[
        "run",
        swarm_demo::job::GOAL,
        "--team",
        "t",
        "--no-attach",
        "--provider",
        "scripted",
        "--base-url",
    ]);
    cmd.arg(model.url())
        .args(["--cwd", &job.display().to_string()])
        .args(["--permission-mode", "acceptEdits"])
        .args(swarm_demo::job::ALLOW.iter().flat_map(|r| ["--allow", r]))
        .stdout(std::fs::File::create(env.dir.path().join("run.out")).unwrap())
        .stderr(std::fs::File::create(env.dir.path().join("run.err")).unwrap());
    cmd.spawn().unwrap()
}

#[test]
fn a_429_storm_across_three_teammates_waits_once_for_the_shared_moment() {
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    swarm_demo::job::make_job(&job, swarm_demo::job::Job::Toolkit).unwrap();
    // The demo's job, with the first three teammate requests after a TaskGet answered
    // 429: by then all three teammates are at work.
    let mut script = Script::from_json(swarm_demo::job::Job::Toolkit.script()).unwrap();
    script.rules.insert(
        0,
        Rule::new("storm")
            .system_contains("a teammate agent working in")
            .tool_result_contains("[in_progress]")
            .times(3)
            .fault(Fault::status(429).retry_after(format!("{RETRY_AFTER}"))),
    );
    let model = ScriptedModel::start(script);
    let mut run = Guarded(Some(demo_run(&env, &model, &job)));
    // While it runs, the waits show in status (text and JSON) and in watch.
    let (mut json_seen, mut text_seen, mut watch_seen) = (None, false, false);
    let started = Instant::now();
    while run.is_running() && started.elapsed() < Duration::from_secs(180) {
        let out = env.run(&["--team", "t", "--json", "status"]);
        let status: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
        for m in status["members"].as_array().into_iter().flatten() {
            if let Some(until) = m["rateLimitedUntil"].as_i64() {
                json_seen = Some((until, m["rateLimitReason"].clone(), m["detail"].clone()));
            }
        }
        if json_seen.is_some() && !(text_seen && watch_seen) {
            text_seen |= env
                .run(&["--team", "t", "status"])
                .stdout
                .lines()
                .any(|l| l.contains("waiting for rate limit") && l.contains("until "));
            watch_seen |= env
                .run(&["--team", "t", "watch", "--once", "--width", "200"])
                .stdout
                .contains("waiting for rate limit until");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = run
        .wait(Duration::from_secs(10))
        .expect("swarm run did not finish");
    let out = std::fs::read_to_string(env.dir.path().join("run.out")).unwrap();
    let err = std::fs::read_to_string(env.dir.path().join("run.err")).unwrap();
    assert!(status.success(), "{status:?}\n{out}\n{err}");
    assert!(out.contains("Result: done"), "{out}");
    assert!(swarm_demo::job::run_check(&job).unwrap().0);

    let requests = model.requests();
    let limited: Vec<Instant> = requests
        .iter()
        .filter(|r| r.outcome == Outcome::Rule("storm".into()))
        .map(|r| r.received_at)
        .collect();
    let t0 = requests[0].received_at;
    let timeline: Vec<String> = requests
        .iter()
        .map(|r| {
            let storm = r.outcome == Outcome::Rule("storm".into());
            let at = (r.received_at - t0).as_secs_f64();
            format!(
                "{at:7.3} {:<10} {}",
                r.agent().unwrap_or("?"),
                if storm { "429" } else { "" }
            )
        })
        .collect();
    eprintln!("requests:\n{}", timeline.join("\n"));
    assert_eq!(limited.len(), 3, "the storm did not happen");
    // Whoever got a 429, nobody (lead included) sent again before its moment: every
    // request that arrived after a 429 (beyond the in-flight margin) came when that 429's
    // retry-after had passed.
    let wait = Duration::from_secs_f64(RETRY_AFTER) - Duration::from_millis(50);
    for r in &requests {
        for &at in &limited {
            let after = r.received_at.saturating_duration_since(at);
            assert!(
                after <= IN_FLIGHT || after >= wait,
                "{:?} sent {after:?} after a 429, before the shared moment",
                r.agent()
            );
        }
    }
    // Every teammate that met the storm went on once it passed.
    let storm = Outcome::Rule("storm".into());
    for hit in requests.iter().filter(|r| r.outcome == storm) {
        assert!(
            requests.iter().any(|r| r.agent() == hit.agent()
                && r.received_at > hit.received_at
                && r.outcome != storm),
            "{:?} never got past the storm",
            hit.agent()
        );
    }
    let (until, reason, detail) = json_seen.expect("status never showed a rate-limit wait");
    assert!(
        until > 0 && reason.as_str().unwrap_or("").contains("429"),
        "{reason}"
    );
    assert!(
        detail
            .as_str()
            .unwrap_or("")
            .starts_with("waiting for rate limit until "),
        "{detail}"
    );
    assert!(text_seen, "`swarm status` never showed the wait");
    assert!(watch_seen, "`swarm watch` never showed the wait");
    // The team's gate file says who closed it last and until when.
    let gate: Value =
        serde_json::from_slice(&std::fs::read(env.root.join("teams/t/rate-limit.json")).unwrap())
            .unwrap();
    let key = format!("scripted {}", model.url());
    assert!(gate[&key]["until_ms"].as_i64().unwrap() > 0, "{gate}");
    assert!(
        ["alice", "bob", "carol"].contains(&gate[&key]["by"].as_str().unwrap()),
        "{gate}"
    );
    env.run(&["team", "delete", "t"]).success();
}

#[test]
fn a_rate_limit_that_outlasts_the_allowed_wait_is_final() {
    let env = TestEnv::new();
    let model = ScriptedModel::start(
        Script::new()
            .rule(Rule::new("limited").fault(Fault::status(429).retry_after("1.2")))
            .default_reply(Reply::text("never")),
    );
    let url = model.url();
    let started = Instant::now();
    let agent = [
        "agent",
        "-p",
        "hi",
        "--provider",
        "scripted",
        "--base-url",
        &url,
        "--rate-limit-wait",
        "4",
    ];
    let out = run_timeout(&mut env.swarm(&agent), Duration::from_secs(60)).failure(7);
    assert!(out.stderr.contains("429"), "{}", out.stderr);
    // Three waits of 1.2 s fit in four seconds, a fourth does not: four attempts, more
    // than the two retries other errors get, and none after the bound.
    assert_eq!(model.requests().len(), 4);
    assert!(started.elapsed() >= Duration::from_millis(3600));
    // The environment twin sets it too; a flag beats it.
    let out = run_timeout(
        env.swarm(&agent[..7]).env("SWARM_RATE_LIMIT_WAIT", "1"),
        Duration::from_secs(60),
    )
    .failure(7);
    assert!(out.stderr.contains("429"), "{}", out.stderr);
    assert_eq!(model.requests().len(), 4 + 1);
}
