//! A team of mixed models: a lead on one provider and teammates on another (an agent
//! definition's `provider:`/`base_url:` through the lead's Agent tool, and `swarm spawn
//! --provider --base-url --model`), each model server reached only by its own members, and
//! `status` naming each member's provider and model; and a rate limit on one server that
//! does not hold up a teammate on another. Two scripted model servers on 127.0.0.1, real
//! tmux, real processes.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{Fault, Outcome, Reply, Rule, Script};

use crate::harness::{Guarded, ScriptedModel, TestEnv, run, wait_until};
use crate::team_tmux::{member, status};

const T: Duration = Duration::from_secs(45);

/// The models a server was asked for (the `model` of each request's body).
fn models_asked(server: &ScriptedModel) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter_map(|r| r.body["model"].as_str().map(str::to_owned))
        .collect()
}

fn provider_and_model(s: &Value, name: &str) -> Option<(String, String)> {
    let m = member(s, name)?;
    Some((
        m["provider"].as_str()?.to_owned(),
        m["model"].as_str()?.to_owned(),
    ))
}

#[test]
fn a_lead_and_its_teammates_on_two_providers_each_reach_only_their_own_server() {
    let env = TestEnv::new();
    // The lead's server (the Anthropic wire protocol), and the teammates' (OpenAI's).
    let lead_server = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("spawn")
                    .user_contains("Goal:")
                    .times(1)
                    .reply(Reply::tool(
                        "Agent",
                        json!({"name": "mate", "prompt": "say hi", "subagent_type": "local"}),
                    )),
            )
            .default_reply(Reply::text("ok")),
    );
    let local = ScriptedModel::start(Script::new().default_reply(Reply::text("hi")));
    let project = env.dir.path().join("proj");
    std::fs::create_dir_all(project.join(".claude/agents")).unwrap();
    std::fs::write(
        project.join(".claude/agents/local.md"),
        format!(
            "---\nname: local\ndescription: A teammate on a local server\nprovider: openai\n\
             base_url: {}/v1\nmodel: local-model\n---\nBe brief.\n",
            local.url()
        ),
    )
    .unwrap();
    let mut cmd = env.swarm(&[
        "run",
        "greet the team",
        "--team",
        "t",
        "--no-attach",
        "--provider",
        "scripted",
        "--base-url",
        &lead_server.url(),
        "--cwd",
        &project.display().to_string(),
    ]);
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let _run = Guarded(Some(cmd.spawn().unwrap()));

    // The lead's Agent call names the definition: its teammate talks to the local server.
    assert!(
        wait_until(T, || models_asked(&local)
            .iter()
            .any(|m| m == "local-model")),
        "the definition's teammate never reached its own server: {:?}",
        models_asked(&local)
    );
    // A teammate spawned by hand with its own provider, URL and model: the same server.
    run(env
        .swarm(&[
            "--team",
            "t",
            "spawn",
            "bob",
            "--provider",
            "openai",
            "--base-url",
            &local.url(),
            "--model",
            "other-model",
            "--prompt",
            "say hi too",
            "--cwd",
            &project.display().to_string(),
        ])
        .env("ANTHROPIC_API_KEY", "sk-never-used"))
    .success();
    assert!(
        wait_until(T, || models_asked(&local)
            .iter()
            .any(|m| m == "other-model")),
        "bob never reached its own server: {:?}",
        models_asked(&local)
    );

    // Status names each member's provider and model, as each resolved it.
    let want = |s: &Value| {
        provider_and_model(s, "team-lead") == Some(("scripted".into(), "scripted".into()))
            && provider_and_model(s, "mate") == Some(("openai".into(), "local-model".into()))
            && provider_and_model(s, "bob") == Some(("openai".into(), "other-model".into()))
    };
    assert!(wait_until(T, || want(&status(&env))), "{}", status(&env));
    let text = env.run(&["--team", "t", "status"]).success().stdout;
    for cell in [
        "scripted/scripted",
        "openai/local-model",
        "openai/other-model",
    ] {
        assert!(text.contains(cell), "status lacks {cell}:\n{text}");
    }

    // Each server heard only its own members: the lead's every request is the lead's
    // (its client names the agent), the local server's every request is OpenAI's, for
    // one of the two teammates' models.
    let lead_requests = lead_server.requests();
    assert!(
        lead_requests.len() >= 2,
        "the lead's server heard too little"
    );
    for r in &lead_requests {
        assert_eq!(
            r.agent(),
            Some("team-lead"),
            "{} reached the lead's server",
            r.path
        );
    }
    for r in local.requests() {
        assert_eq!(r.path, "/v1/chat/completions");
        assert!(
            ["local-model", "other-model"].contains(&r.body["model"].as_str().unwrap_or("")),
            "{}",
            r.body["model"]
        );
    }
    let asked = models_asked(&local).join(" ");
    assert!(!asked.contains("scripted"), "{asked}");
}

#[test]
fn a_rate_limit_on_one_server_does_not_hold_up_a_teammate_on_another() {
    let env = TestEnv::with_team("t", &[]);
    // Two servers of the same kind, so only the base URL tells their limits apart.
    let limited = ScriptedModel::start(
        Script::new().rule(Rule::new("limited").fault(Fault::status(429).retry_after("120"))),
    );
    let free = ScriptedModel::start(Script::new().default_reply(Reply::text("ok")));
    let spawn = |name: &str, server: &ScriptedModel, prompt: &str| {
        run(&mut env.swarm(&[
            "--team",
            "t",
            "spawn",
            name,
            "--provider",
            "scripted",
            "--base-url",
            &server.url(),
            "--prompt",
            prompt,
        ]))
        .success();
    };
    spawn("slow", &limited, "hello");
    // First the limit, in force for the team: the 429 came and the gate is closed.
    let gate_until = || -> Option<i64> {
        let bytes = std::fs::read(env.root.join("teams/t/rate-limit.json")).ok()?;
        let gates: Value = serde_json::from_slice(&bytes).ok()?;
        gates
            .as_object()?
            .values()
            .filter_map(|g| g["until_ms"].as_i64())
            .max()
    };
    assert!(
        wait_until(T, || {
            limited
                .requests()
                .iter()
                .any(|r| r.outcome == Outcome::Rule("limited".into()))
                && gate_until().is_some()
                && member(&status(&env), "slow").is_some_and(|m| m["rateLimitedUntil"].is_i64())
        }),
        "the limit never closed the gate: {}",
        status(&env)
    );
    let until = gate_until().unwrap();
    // Then a teammate on the other server works at once, while the gate is still closed.
    spawn("fast", &free, "ping-after-limit");
    assert!(
        wait_until(T, || free.requests().iter().any(|r| r.agent()
            == Some("fast")
            && r.body.to_string().contains("ping-after-limit"))),
        "the teammate on the other server was held up: {}",
        status(&env)
    );
    assert!(
        swarm_util::clock::now_ms() < until,
        "the gate opened before the check"
    );
    assert!(
        member(&status(&env), "slow").is_some_and(|m| m["rateLimitedUntil"].is_i64()),
        "slow stopped waiting"
    );
    assert!(
        free.requests().iter().all(|r| r.agent() != Some("slow")),
        "slow reached the other server"
    );
}
