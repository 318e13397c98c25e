//! Agent definitions end to end: `swarm agents list`, a teammate applying its definition,
//! and `swarm spawn` resolving the teammate's model through every rung.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{Reply, Rule, Script};
use swarm_store::protocol::Protocol;

use crate::harness::{ScriptedModel, TestEnv, run, wait_until};

const T: Duration = Duration::from_secs(30);

fn write(dir: &Path, file: &str, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(file);
    std::fs::write(&p, text).unwrap();
    p
}

fn definition(name: &str, extra: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: the {name} agent\n{extra}---\n{body}\n")
}

#[test]
fn agents_list_shows_every_scope_with_precedence_and_reports_a_broken_file() {
    let env = TestEnv::new();
    let user = env.home.join(".claude/agents");
    let project = env.dir.path().join("proj");
    let agents = project.join(".claude/agents");
    write(&user, "shared.md", &definition("shared", "", "user's"));
    write(
        &user,
        "mine.md",
        &definition("mine", "model: haiku\n", "only mine"),
    );
    write(
        &agents,
        "shared.md",
        &definition(
            "shared",
            "tools: Read, Grep\nisolation: worktree\n",
            "project's",
        ),
    );
    write(
        &agents,
        "broken.md",
        &definition("broken", "permissionMode: yolo\n", ""),
    );
    // From a subdirectory of the project too.
    let deep = project.join("src/deep");
    std::fs::create_dir_all(&deep).unwrap();
    let out = env
        .run(&[
            "--json",
            "agents",
            "list",
            "--cwd",
            &deep.display().to_string(),
        ])
        .success();
    let list: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    // The broken file is reported as invalid, never listed as an agent of its own.
    assert!(list.iter().any(|e| e["status"] == "invalid"), "{list:#?}");
    assert!(!list.iter().any(|e| e["name"] == "broken"), "{list:#?}");
    let text = env
        .run(&["agents", "list", "--cwd", &project.display().to_string()])
        .success()
        .stdout;
    // Every scope, paths as $HOME/... and $TMP/proj/... (either spelling of the temp dir):
    // the built-ins, the project's `shared` over the user's (shadowed), the user's `mine`,
    // and the broken file with the field at fault.
    env.snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("agents_list_json", list);
        insta::assert_snapshot!("agents_list_warnings", out.stderr);
        insta::assert_snapshot!("agents_list", text);
    });
}

#[test]
fn a_teammate_applies_its_definitions_instructions_tools_mode_and_turn_limit() {
    let _heavy = crate::harness::heavy();
    let env = TestEnv::with_team("t", &["bob", "carol"]);
    let work = env.dir.path().join("work");
    write(
        &work.join(".claude/agents"),
        "reviewer.md",
        &definition(
            "reviewer",
            "tools: [Read, Grep, Bash]\ndisallowedTools: Bash, WebFetch\npermissionMode: acceptEdits\nmaxTurns: 1\n",
            "Always answer in haiku.",
        ),
    );
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("keeps calling tools")
                    .reply(Reply::tool("Read", json!({"file_path": "nothing.txt"}))),
            )
            .default_reply(Reply::text("ok")),
    );
    env.deliver("t", "team-lead", "bob", "review this".to_owned());
    let (_bob, _) = env.teammate("t", "bob", &model.url(), &["--agent-type", "reviewer"]);
    let note = env
        .wait_for_lead_message(
            "t",
            T,
            |p| matches!(p, Protocol::IdleNotification(n) if n.from == "bob"),
        )
        .expect("no idle notification from bob");
    let Protocol::IdleNotification(note) = note else {
        unreachable!()
    };
    assert!(
        note.failure_reason
            .as_deref()
            .is_some_and(|f| f.contains("after 1 model turns")),
        "maxTurns did not apply: {note:?}"
    );
    let request = model
        .requests()
        .into_iter()
        .find(|r| r.agent() == Some("bob"))
        .unwrap();
    let system = request.body["system"].to_string();
    assert!(
        system.contains("# Custom Agent Instructions\\nAlways answer in haiku."),
        "{system}"
    );
    let tools: Vec<&str> = request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "Read",
            "Grep",
            "SendMessage",
            "TaskGet",
            "TaskList",
            "TaskUpdate",
            "ExitPlanMode"
        ]
    );
    let roster = env
        .teams()
        .open(&env.team_name("t"))
        .unwrap()
        .roster()
        .load()
        .unwrap();
    assert_eq!(
        roster.member("bob").unwrap().mode.as_deref(),
        Some("acceptEdits")
    );
    let err = std::fs::read_to_string(env.dir.path().join("bob.err")).unwrap();
    assert!(
        err.contains("names tools swarm does not have: WebFetch"),
        "{err}"
    );

    // What the command line says beats the definition.
    let (_carol, _) = env.teammate(
        "t",
        "carol",
        &model.url(),
        &["--agent-type", "reviewer", "--permission-mode", "default"],
    );
    assert!(wait_until(T, || env
        .teams()
        .open(&env.team_name("t"))
        .unwrap()
        .roster()
        .load()
        .unwrap()
        .member("carol")
        .unwrap()
        .mode
        .as_deref()
        == Some("default")));

    // An unknown type is refused, naming the ones there are.
    let mut cmd = env.swarm(&[
        "teammate",
        "--agent-id",
        "bob@t",
        "--agent-name",
        "bob",
        "--team-name",
        "t",
        "--agent-type",
        "nope",
        "--cwd",
        &work.display().to_string(),
    ]);
    let out = run(&mut cmd).failure(2);
    assert!(
        out.stderr.contains(
            "unknown agent type 'nope'; available: general-purpose, Explore, Plan, reviewer"
        ),
        "{}",
        out.stderr
    );
}

fn teammate_argv(env: &TestEnv, name: &str) -> Vec<String> {
    let roster = || {
        env.teams()
            .open(&env.team_name("t"))
            .unwrap()
            .roster()
            .load()
            .unwrap()
    };
    assert!(
        wait_until(T, || roster().member(name).and_then(|m| m.pid).is_some()),
        "{name} never registered"
    );
    let pid = roster().member(name).unwrap().pid.unwrap();
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap()
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

#[test]
fn spawn_resolves_the_model_from_the_definition_and_the_environment() {
    let _heavy = crate::harness::heavy();
    let env = TestEnv::with_team("t", &[]);
    let project = env.dir.path().join("proj");
    write(
        &project.join(".claude/agents"),
        "tester.md",
        &definition(
            "tester",
            "model: def-model\ncolor: cyan\ninitialPrompt: start testing\n",
            "Test things.",
        ),
    );
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("ok")));
    let spawn_as = |agent_type: &str, name: &str, subagent_model: Option<&str>, extra: &[&str]| {
        let mut cmd = env.swarm(&[
            "--team",
            "t",
            "spawn",
            name,
            "--agent-type",
            agent_type,
            "--cwd",
            &project.display().to_string(),
        ]);
        cmd.args(extra)
            .env("SWARM_PROVIDER", "scripted")
            .env("SWARM_BASE_URL", model.url())
            .env("SWARM_MODEL", "lead-model");
        if let Some(m) = subagent_model {
            cmd.env("SWARM_SUBAGENT_MODEL", m);
        }
        run(&mut cmd)
    };
    let spawn = |name: &str, subagent_model: Option<&str>, extra: &[&str]| {
        spawn_as("tester", name, subagent_model, extra)
    };
    let model_flags = |argv: &[String]| -> Vec<String> {
        argv.iter()
            .filter(|a| a.starts_with("--model"))
            .cloned()
            .collect()
    };
    // The definition's model beats the lead's.
    spawn("d1", None, &[]).success();
    let argv = teammate_argv(&env, "d1");
    // (Each is waited for: the ladder cannot stop a teammate that is still starting.)
    assert_eq!(model_flags(&argv), ["--model=def-model"], "{argv:?}");
    assert!(argv.contains(&"--agent-type=tester".to_owned()));
    assert!(argv.contains(&"--agent-color=cyan".to_owned()), "{argv:?}");
    // The spawn's model beats the definition's.
    spawn("d2", None, &["--model", "spawn-model"]).success();
    assert_eq!(
        model_flags(&teammate_argv(&env, "d2")),
        ["--model=spawn-model"]
    );
    // SWARM_SUBAGENT_MODEL beats them all; `inherit` means the lead's.
    spawn("d3", Some("env-model"), &["--model", "spawn-model"]).success();
    assert_eq!(
        model_flags(&teammate_argv(&env, "d3")),
        ["--model=env-model"]
    );
    spawn("d4", Some("inherit"), &[]).success();
    assert_eq!(
        model_flags(&teammate_argv(&env, "d4")),
        ["--model=lead-model"]
    );
    let roster = env
        .teams()
        .open(&env.team_name("t"))
        .unwrap()
        .roster()
        .load()
        .unwrap();
    let d1 = roster.member("d1").unwrap();
    assert_eq!(d1.model.as_deref(), Some("def-model"));
    assert_eq!(d1.prompt.as_deref(), Some("start testing"), "initialPrompt");
    // The teammate got the definition's initial prompt as its first message.
    assert!(wait_until(T, || model.requests().iter().any(|r| r.agent()
        == Some("d1")
        && r.body["messages"].to_string().contains("start testing"))));
    let out = spawn_as("nope", "d5", None, &[]).failure(2);
    assert!(
        out.stderr.contains(
            "unknown agent type 'nope'; available: general-purpose, Explore, Plan, tester"
        ),
        "{}",
        out.stderr
    );
    env.run(&["team", "delete", "t", "--force"]).success();
}
