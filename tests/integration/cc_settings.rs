//! Claude Code's settings files: a project set up for Claude Code runs under swarm with
//! the same model, environment and permissions (local over project over user), flags and
//! the environment still win, and `swarm config` says where each value came from. The
//! user's files are under this test's own HOME.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use swarm_model_server::{Reply, Rule, Script};

use crate::harness::{ScriptedModel, TestEnv, run};

/// A project with all three settings files; returns its directory.
fn project(env: &TestEnv) -> PathBuf {
    let user = env.home.join(".claude");
    let dir = env.dir.path().join("proj");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    let write = |path: &Path, v: Value| std::fs::write(path, v.to_string()).unwrap();
    write(
        &user.join("settings.json"),
        json!({"model": "user-model", "env": {"GREETING": "from-user", "ONLY_USER": "u"},
               "permissions": {"allow": ["Bash(true)"]}}),
    );
    write(
        &dir.join(".claude/settings.json"),
        json!({"model": "project-model", "env": {"GREETING": "from-project"},
               "permissions": {"allow": ["Bash(echo:*)", "WebFetch(domain:example.com)"],
                               "deny": ["Bash(rm:*)"], "defaultMode": "plan"}}),
    );
    write(
        &dir.join(".claude/settings.local.json"),
        json!({"permissions": {"defaultMode": "acceptEdits"}}),
    );
    dir
}

/// `swarm agent -p` in `dir` on a model that echoes `$GREETING`, tries `rm`, then writes a
/// file; returns the model's requests.
fn agent_in(env: &TestEnv, dir: &Path, extra_env: &[(&str, &str)]) -> Vec<Value> {
    std::fs::write(dir.join("keep.txt"), "mine").unwrap();
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("echo")
                    .times(1)
                    .no_tool_result(true)
                    .reply(Reply::tool(
                        "Bash",
                        json!({"command": "echo \"$GREETING\""}),
                    )),
            )
            .rule(
                Rule::new("rm")
                    .times(1)
                    .tool_result_contains("from-")
                    .reply(Reply::tool("Bash", json!({"command": "rm keep.txt"}))),
            )
            .rule(
                Rule::new("write")
                    .times(1)
                    .tool_result_contains("deny rule")
                    .reply(Reply::tool(
                        "Write",
                        json!({"file_path": "new.txt", "content": "hi"}),
                    )),
            )
            .default_reply(Reply::text("done")),
    );
    let url = model.url();
    let mut cmd = env.swarm(&[
        "agent",
        "-p",
        "go",
        "--provider",
        "scripted",
        "--base-url",
        &url,
    ]);
    cmd.current_dir(dir);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    run(&mut cmd).success();
    model.requests().into_iter().map(|r| r.body).collect()
}

#[test]
fn an_agent_runs_with_the_projects_claude_code_settings() {
    let env = TestEnv::new();
    let dir = project(&env);
    let bodies = agent_in(&env, &dir, &[]);
    assert_eq!(bodies[0]["model"], "project-model", "project over user");
    let all = serde_json::to_string(&bodies).unwrap();
    // The project's env, allowed by its rule without asking.
    assert!(all.contains("from-project"), "{all}");
    // Refused by the deny rule; the file stays.
    assert!(all.contains("deny rule Bash(rm:*)"), "{all}");
    assert_eq!(
        std::fs::read_to_string(dir.join("keep.txt")).unwrap(),
        "mine"
    );
    // acceptEdits from the local file, over the project's plan.
    assert_eq!(std::fs::read_to_string(dir.join("new.txt")).unwrap(), "hi");
}

#[test]
fn flags_and_the_environment_win_over_the_settings_files() {
    let env = TestEnv::new();
    let dir = project(&env);
    let bodies = agent_in(
        &env,
        &dir,
        &[
            ("SWARM_MODEL", "env-model"),
            ("GREETING", "from-env"),
            ("SWARM_PERMISSION_MODE", "default"),
        ],
    );
    assert_eq!(bodies[0]["model"], "env-model");
    let all = serde_json::to_string(&bodies).unwrap();
    assert!(all.contains("from-env"), "{all}");
    // Default mode: the write needs permission, which nobody is there to give.
    assert!(!dir.join("new.txt").exists());
}

#[test]
fn swarm_config_shows_each_value_and_where_it_came_from() {
    let env = TestEnv::new();
    let dir = project(&env);
    let mut cmd = env.swarm(&["--json", "config"]);
    cmd.current_dir(&dir);
    let out = run(&mut cmd).success();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let find = |key: &str| -> Vec<(String, String)> {
        v["settings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["key"] == key)
            .map(|s| {
                (
                    s["value"].as_str().unwrap().to_owned(),
                    s["from"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let local = dir
        .join(".claude/settings.local.json")
        .display()
        .to_string();
    let shared = dir.join(".claude/settings.json").display().to_string();
    let user = env.home.join(".claude/settings.json").display().to_string();
    assert_eq!(find("model"), [("project-model".into(), shared.clone())]);
    assert_eq!(
        find("permissions.defaultMode"),
        [("acceptEdits".into(), local)]
    );
    assert_eq!(
        find("permissions.allow"),
        [
            ("Bash(true)".into(), user.clone()),
            ("Bash(echo:*)".into(), shared.clone())
        ]
    );
    assert_eq!(
        find("permissions.deny"),
        [("Bash(rm:*)".into(), shared.clone())]
    );
    assert_eq!(find("env.GREETING"), [("from-project".into(), shared)]);
    assert_eq!(find("env.ONLY_USER"), [("u".into(), user)]);
    assert!(
        out.stderr.contains("WebFetch(domain:example.com)"),
        "the unknown rule is not warned about: {}",
        out.stderr
    );
    // A command that does not use them says nothing about them.
    let mut cmd = env.swarm(&["team", "list"]);
    cmd.current_dir(&dir);
    let out = run(&mut cmd).success();
    assert!(!out.stderr.contains("WebFetch"), "{}", out.stderr);
    // The environment wins, and says so.
    let mut cmd = env.swarm(&["config"]);
    cmd.current_dir(&dir).env("SWARM_MODEL", "env-model");
    let out = run(&mut cmd).success();
    let line = out.stdout.lines().find(|l| l.starts_with("model")).unwrap();
    assert!(
        line.contains("env-model") && line.contains("environment SWARM_MODEL"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_spawned_teammate_gets_the_settings_files_mode() {
    let env = TestEnv::new();
    let dir = project(&env);
    env.run(&["team", "create", "t"]).success();
    // A scripted model: spawn checks the model before anything, and needs no key for it.
    let spawn = || {
        let mut cmd = env.swarm(&["--team", "t", "spawn", "bob", "--dry-run"]);
        cmd.args(["--provider", "scripted", "--base-url", "http://127.0.0.1:9"])
            .current_dir(&dir);
        cmd
    };
    let out = run(&mut spawn()).success();
    assert!(
        out.stdout.contains("--permission-mode=acceptEdits"),
        "{}",
        out.stdout
    );
    let out = run(spawn().env("SWARM_PERMISSION_MODE", "plan")).success();
    assert!(
        out.stdout.contains("--permission-mode=plan"),
        "{}",
        out.stdout
    );
}
