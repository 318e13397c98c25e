//! The scripted model server over real HTTP on 127.0.0.1 (rules, captures, unmatched
//! requests, loopback only), and the `swarm model-server` and `swarm agent` commands end to
//! end against it. Helpers are in `llm.rs`.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::json;
use swarm_llm::{LlmConfig, LlmError, build_client};
use swarm_model_server::{ModelServer, Outcome, Reply, Rule, Script};

use crate::harness::{ScriptedModel, TestEnv, run, wait_timeout};
use crate::llm::{HANG, complete, request, scripted, serve, text_of, tool_uses};

#[tokio::test]
async fn script_rules_captures_and_unmatched_requests_over_http() {
    let server = serve(
        Script::new()
            .rule(
                Rule::new("lead approves plans")
                    .agent("team-lead")
                    .user_regex(r#"requestId":"(?P<rid>[^"]+)""#)
                    .times(1)
                    .reply(Reply::text("Approving {{rid}}.").tool_call(
                        "SendMessage",
                        json!({"to": "bob", "message": {"type": "plan_approval_response",
                               "request_id": "{{rid}}", "approve": true}}),
                    )),
            )
            .rule(
                Rule::new("bob waits")
                    .agent("bob")
                    .delay_ms(50)
                    .reply(Reply::text("waiting, says {{agent}}")),
            ),
    )
    .await;
    let client = scripted(&server, |_| {});
    let mut lead = request(r#"plan ready: {"requestId":"plan-42"}"#);
    lead.agent = Some("team-lead".into());
    let r = complete(client.as_ref(), &lead).await.result.unwrap();
    assert_eq!(text_of(&r), "Approving plan-42.");
    assert_eq!(
        tool_uses(&r)[0].2["message"]["request_id"],
        json!("plan-42")
    );
    let r = complete(client.as_ref(), &request("anything"))
        .await
        .result
        .unwrap();
    assert_eq!(text_of(&r), "waiting, says bob");

    // The lead's rule is used up and nothing else matches the lead: a clear, final error.
    let out = complete(client.as_ref(), &lead).await;
    match out.err() {
        LlmError::Api {
            status: 500,
            message,
            ..
        } => assert!(
            message.contains("no rule") && message.contains("team-lead"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(out.retries().is_empty());
    let outcomes: Vec<Outcome> = server.requests().into_iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        vec![
            Outcome::Rule("lead approves plans".into()),
            Outcome::Rule("bob waits".into()),
            Outcome::Unmatched
        ]
    );
    assert_eq!(server.unmatched().len(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_server_told_to_forget_requests_keeps_none_but_still_logs_them() {
    let server = serve(Script::new().default_reply(Reply::text("ok"))).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    server.log_requests(&log).unwrap();
    let client = scripted(&server, |_| {});
    complete(client.as_ref(), &request("first"))
        .await
        .result
        .unwrap();
    assert_eq!(server.requests().len(), 1);
    server.forget_requests();
    assert!(server.requests().is_empty());
    complete(client.as_ref(), &request("second"))
        .await
        .result
        .unwrap();
    assert!(server.requests().is_empty(), "a request was kept");
    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(lines.lines().count(), 2, "{lines}");
    assert!(lines.contains("\"userText\":\"second\""), "{lines}");
    server.shutdown().await;
}

#[tokio::test]
async fn the_server_refuses_non_loopback_addresses() {
    let err = ModelServer::start(Script::new(), "0.0.0.0:0".parse().unwrap())
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("loopback"), "{err}");
    assert_eq!(swarm::exit::exit_code(&err), swarm_util::error::exit::USAGE);
}

#[test]
fn model_server_command_end_to_end() {
    let env = TestEnv::new();
    let script_path = env.dir.path().join("script.json");
    std::fs::write(
        &script_path,
        "// the demo's lead\n".to_string()
            + &Script::new()
                .rule(
                    Rule::new("lead")
                        .agent("team-lead")
                        .reply(Reply::text("hello lead")),
                )
                .default_reply(Reply::text("hello {{agent}}"))
                .to_json(),
    )
    .unwrap();
    let log = env.dir.path().join("requests.jsonl");
    let short_log = env.dir.path().join("short.jsonl");
    let mut child = env
        .swarm(&[
            "model-server",
            "--script",
            script_path.to_str().unwrap(),
            "--log-requests",
            log.to_str().unwrap(),
            "--log",
            short_log.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Read the first line on a thread so that a server that never prints fails the test.
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let url = rx.recv_timeout(HANG).expect("no URL on stdout");
    let url = url.trim().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let texts = runtime.block_on(async {
        let client = build_client(&LlmConfig::scripted(&url).unwrap()).unwrap();
        let mut lead = request("hi");
        lead.agent = Some("team-lead".into());
        let a = complete(client.as_ref(), &lead).await.result.unwrap();
        let b = complete(client.as_ref(), &request("hi"))
            .await
            .result
            .unwrap();
        (text_of(&a), text_of(&b))
    });
    assert_eq!(texts, ("hello lead".into(), "hello bob".into()));
    // --log-requests: one line per request, with its agent and its whole body.
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["agent"], "team-lead");
    assert_eq!(lines[1]["agent"], "bob");
    assert_eq!(lines[0]["path"], "/v1/messages");
    assert!(lines[0]["receivedMs"].as_u64().is_some_and(|ms| ms > 0));
    assert_eq!(lines[0]["body"]["messages"][0]["role"], "user");
    assert!(lines[0]["body"]["messages"].to_string().contains("hi"));
    // --log: one short line per request, naming what answered it.
    let short: Vec<serde_json::Value> = std::fs::read_to_string(&short_log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(short.len(), 2, "{short:?}");
    assert_eq!(
        (&short[0]["agent"], &short[0]["rule"], &short[0]["userText"]),
        (&"team-lead".into(), &"lead".into(), &"hi".into())
    );
    assert_eq!(short[1]["rule"], "(default)");
    assert!(short[0]["bytes"].as_u64().is_some_and(|n| n > 0));

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = wait_timeout(&mut child, HANG).expect("the server did not stop on SIGTERM");
    assert!(status.success(), "{status:?}");
}

#[test]
fn model_server_command_refuses_bad_input() {
    let env = TestEnv::new();
    let script = env.dir.path().join("script.json");
    std::fs::write(&script, r#"{"rules": [{"name": "r", "user_regex": "("}]}"#).unwrap();
    let out =
        run(&mut env.swarm(&["model-server", "--script", script.to_str().unwrap()])).failure(2);
    assert!(
        out.stderr.contains("invalid script") && out.stderr.contains("rule r: user_regex"),
        "{}",
        out.stderr
    );
    std::fs::write(&script, "{}").unwrap();
    let out = run(&mut env.swarm(&[
        "model-server",
        "--script",
        script.to_str().unwrap(),
        "--listen",
        "0.0.0.0:0",
    ]))
    .failure(2);
    assert!(out.stderr.contains("loopback"), "{}", out.stderr);
    assert!(out.stdout.is_empty());
    let out = run(&mut env.swarm(&[
        "model-server",
        "--script",
        script.to_str().unwrap(),
        "--listen",
        "localhost",
    ]))
    .failure(2);
    assert!(out.stderr.contains("invalid --listen"), "{}", out.stderr);
    run(&mut env.swarm(&["model-server", "--script", "/nonexistent/s.json"])).failure(1);
}

#[test]
fn agent_command_uses_a_local_openai_compatible_server_without_a_key() {
    let env = TestEnv::new();
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("local hello")));
    let base_url = format!("{}/v1", model.url());
    let out = env
        .run(&[
            "agent",
            "-p",
            "hi",
            "--provider",
            "openai",
            "--base-url",
            &base_url,
        ])
        .success();
    assert!(out.stdout.contains("local hello"), "{}", out.stdout);
    let sent = model.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v1/chat/completions");
    assert_eq!(sent[0].header("authorization"), None);
}

#[test]
fn agent_command_sends_the_chosen_anthropic_version() {
    let env = TestEnv::new();
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("ok")));
    let url = model.url();
    let agent = [
        "agent",
        "-p",
        "hi",
        "--provider",
        "scripted",
        "--base-url",
        &url,
    ];
    env.run(&agent).success();
    let mut with_flag = agent.to_vec();
    with_flag.extend(["--anthropic-version", "2099-01-01"]);
    env.run(&with_flag).success();
    run(env.swarm(&agent).env("ANTHROPIC_VERSION", "2098-12-31")).success();
    // A flag beats the environment.
    run(env.swarm(&with_flag).env("ANTHROPIC_VERSION", "2098-12-31")).success();
    let versions: Vec<String> = model
        .requests()
        .iter()
        .map(|r| r.header("anthropic-version").unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        versions,
        ["2023-06-01", "2099-01-01", "2098-12-31", "2099-01-01"]
    );
}
