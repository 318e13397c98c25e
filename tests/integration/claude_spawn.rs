//! Claude Code teammates (`--engine claude`): the client started in its own pane with
//! Claude Code's argv and environment, its roster entry, dry runs, a missing client, worktree
//! isolation, and `swarm run --engine claude`. The client is a stand-in: a python3 script
//! that records its argv, environment, directory and inbox as it starts, then sleeps.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{Reply, Rule, Script};

use crate::harness::{Guarded, ScriptedModel, TestEnv, run, wait_until};
use crate::team_tmux::{T, panes};

const KEY: &str = "sk-ant-test-secret-value";

/// The stand-in client: writes `<dir>/started-<agent-name>.json` and sleeps.
fn stand_in(env: &TestEnv) -> PathBuf {
    let path = env.dir.path().join("fake-claude");
    let script = format!(
        r#"#!/usr/bin/env python3
import json, os, sys, time
argv = sys.argv[1:]
name = argv[argv.index("--agent-name") + 1]
team = argv[argv.index("--team-name") + 1]
inbox = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "teams", team, "inboxes", name + ".json")
record = {{"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(),
          "inbox": json.load(open(inbox)) if os.path.exists(inbox) else None}}
out = os.path.join({dir:?}, "started-" + name + ".json")
with open(out + ".tmp", "w") as f:
    json.dump(record, f)
os.rename(out + ".tmp", out)
time.sleep(600)
"#,
        dir = env.dir.path().display().to_string()
    );
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn started(env: &TestEnv, name: &str) -> Value {
    let path = env.dir.path().join(format!("started-{name}.json"));
    assert!(
        wait_until(T, || path.exists()),
        "the client for {name} never started"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn spawn_claude(env: &TestEnv, bin: &Path, name: &str, extra: &[&str]) -> crate::harness::Run {
    let mut cmd = env.swarm(&["--team", "t", "spawn", name, "--engine", "claude"]);
    cmd.arg("--claude-bin")
        .arg(bin)
        .args(extra)
        .env("ANTHROPIC_API_KEY", KEY);
    run(&mut cmd)
}

fn roster(env: &TestEnv) -> Value {
    serde_json::from_str(&std::fs::read_to_string(env.root.join("teams/t/config.json")).unwrap())
        .unwrap()
}

fn roster_member(env: &TestEnv, name: &str) -> Value {
    roster(env)["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .cloned()
        .unwrap_or(Value::Null)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[test]
fn a_claude_teammate_starts_in_its_pane_as_claude_codes_lead_starts_one() {
    let env = TestEnv::with_team("t", &[]);
    let bin = stand_in(&env);
    spawn_claude(
        &env,
        &bin,
        "bob",
        &[
            "--prompt",
            "review the parser",
            "--model",
            "claude-sonnet-4-5",
            "--agent-type",
            "general-purpose",
            "--permission-mode",
            "bypassPermissions",
        ],
    )
    .success();
    let rec = started(&env, "bob");
    let sid = roster(&env)["leadSessionId"].as_str().unwrap().to_owned();
    let bob = roster_member(&env, "bob");
    let color = bob["color"].as_str().unwrap().to_owned();
    // The team's lead key, made by the spawn: the client checks the lead's mail with it.
    let key =
        swarm_store::mailbox::lead_key::load_or_create(&env.store_root(), &env.team_name("t"))
            .unwrap()
            .verify_key()
            .to_arg();
    assert_eq!(
        strings(&rec["argv"]),
        [
            "--agent-id",
            "bob@t",
            "--agent-name",
            "bob",
            "--team-name",
            "t",
            "--agent-color",
            &color,
            "--parent-session-id",
            &sid,
            "--lead-verify-key",
            &key,
            "--agent-type",
            "general-purpose",
            "--dangerously-skip-permissions",
            "--model",
            "claude-sonnet-4-5",
        ]
    );
    let e = &rec["env"];
    assert_eq!(e["CLAUDECODE"], "1");
    assert_eq!(e["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"], "1");
    assert_eq!(e["CLAUDE_CONFIG_DIR"], env.root.display().to_string());
    assert_eq!(
        e["ANTHROPIC_API_KEY"], KEY,
        "the key reaches it by environment"
    );
    assert_eq!(e["SWARM_AGENT_ID"], "bob@t");
    if is_root() {
        assert_eq!(e["IS_SANDBOX"], "1", "bypass as root needs IS_SANDBOX");
    }
    // The first instructions were in its inbox before it started.
    let inbox = rec["inbox"].as_array().unwrap();
    assert_eq!(inbox.len(), 1, "{inbox:?}");
    assert_eq!(inbox[0]["from"], "team-lead");
    assert_eq!(inbox[0]["text"], "review the parser");
    // The pane is tagged, and its process is the client, exactly as the roster says.
    let (pane, _, pid) = panes(&env)
        .into_iter()
        .find(|(_, agent, _)| agent == "bob")
        .expect("no pane tagged bob");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(
        !String::from_utf8_lossy(&cmdline).contains(KEY),
        "the key reached argv"
    );
    for (field, want) in [
        ("tmuxPaneId", json!(pane)),
        ("backendType", json!("tmux")),
        ("model", json!("claude-sonnet-4-5")),
        // Left to the client's first turn (until then, a first-run dialog is looked for).
        ("isActive", Value::Null),
        ("engine", json!("claude")),
        ("pid", json!(pid)),
        ("agentType", json!("general-purpose")),
    ] {
        assert_eq!(bob[field], want, "{field} in {bob}");
    }
    assert_eq!(
        Path::new(bob["cwd"].as_str().unwrap()),
        Path::new(rec["cwd"].as_str().unwrap())
    );

    // Plan mode: the flag, and no permission flag (the client keeps plan mode itself);
    // other modes go by --permission-mode.
    spawn_claude(&env, &bin, "carol", &["--plan-mode-required"]).success();
    let carol = strings(&started(&env, "carol")["argv"]);
    assert!(
        carol.contains(&"--plan-mode-required".to_owned()),
        "{carol:?}"
    );
    assert!(
        !carol
            .iter()
            .any(|a| a.starts_with("--permission-mode") || a.contains("dangerously")),
        "{carol:?}"
    );
    spawn_claude(&env, &bin, "dave", &["--permission-mode", "acceptEdits"]).success();
    let dave = started(&env, "dave");
    let argv = strings(&dave["argv"]);
    assert!(
        argv.windows(2)
            .any(|w| w == ["--permission-mode", "acceptEdits"]),
        "{argv:?}"
    );
    assert!(dave["env"].get("IS_SANDBOX").is_none(), "not in bypass");
    // swarm's own teammates say so too.
    let model = crate::team_tmux::idle_model();
    crate::team_tmux::spawn(&env, &model, "erin", &[]).success();
    assert_eq!(roster_member(&env, "erin")["engine"], "swarm");
}

#[test]
fn a_claude_dry_run_shows_the_client_its_argv_and_environment_with_secrets_redacted() {
    let env = TestEnv::with_team("t", &[]);
    let bin = stand_in(&env);
    let before = env.tree();
    let out = spawn_claude(
        &env,
        &bin,
        "bob",
        &[
            "--dry-run",
            "--model",
            "claude-sonnet-4-5",
            "--prompt",
            "hi",
        ],
    )
    .success()
    .stdout;
    assert_eq!(env.tree(), before, "a dry run created files");
    assert!(!out.contains(KEY), "{out}");
    let out = regex::Regex::new(r"-e '?PATH=[^ ']*'? ")
        .unwrap()
        .replace_all(&out, "-e PATH=$$PATH ")
        .replace(crate::harness::SWARM, "$SWARM")
        .replace(" -e SWARM_LOCK_TIMEOUT_MS=60000", "");
    env.snapshot_settings()
        .bind(|| insta::assert_snapshot!("claude_spawn_dry_run", out.trim()));
    let json: Value = serde_json::from_str(
        &run(env
            .swarm(&[
                "--team",
                "t",
                "--json",
                "spawn",
                "bob",
                "--engine",
                "claude",
                "--dry-run",
            ])
            .arg("--claude-bin")
            .arg(&bin)
            .env("ANTHROPIC_API_KEY", KEY))
        .success()
        .stdout,
    )
    .unwrap();
    assert_eq!(json["env"]["ANTHROPIC_API_KEY"], "<redacted>");
    assert_eq!(json["env"]["CLAUDECODE"], "1");
    assert_eq!(json["engine"], "claude");
    assert_eq!(json["argv"][0], bin.display().to_string());
}

#[test]
fn a_missing_client_is_refused_naming_both_ways_to_give_it() {
    let env = TestEnv::with_team("t", &[]);
    let before = roster(&env);
    for (flag, var) in [
        (None, None),
        (Some("/nonexistent/claude"), None),
        (None, Some("/nonexistent/claude")),
    ] {
        let mut cmd = env.swarm(&["--team", "t", "spawn", "bob", "--engine", "claude"]);
        cmd.env("PATH", "/usr/bin:/bin");
        if let Some(f) = flag {
            cmd.args(["--claude-bin", f]);
        }
        if let Some(v) = var {
            cmd.env("SWARM_CLAUDE_BIN", v);
        }
        let e = run(&mut cmd).failure(2).stderr;
        assert!(
            e.contains("--claude-bin") && e.contains("SWARM_CLAUDE_BIN"),
            "{e}"
        );
        assert_eq!(e.trim().lines().count(), 1, "{e}");
    }
    assert_eq!(roster(&env), before, "a refused spawn changed the roster");
    assert!(panes(&env).is_empty());
    // SWARM_CLAUDE_BIN alone is enough.
    let bin = stand_in(&env);
    let mut cmd = env.swarm(&["--team", "t", "spawn", "bob", "--engine", "claude"]);
    cmd.env("SWARM_CLAUDE_BIN", &bin);
    run(&mut cmd).success();
    assert_eq!(started(&env, "bob")["argv"][1], "bob@t");
}

#[test]
fn an_isolated_claude_teammate_works_in_its_worktree() {
    let env = TestEnv::with_team("t", &[]);
    let bin = stand_in(&env);
    let repo = env.repo("repo");
    spawn_claude(
        &env,
        &bin,
        "bob",
        &[
            "--isolation",
            "worktree",
            "--cwd",
            &repo.display().to_string(),
        ],
    )
    .success();
    let wt = repo
        .canonicalize()
        .unwrap()
        .join(".git/swarm-worktrees/t/bob");
    let rec = started(&env, "bob");
    assert_eq!(Path::new(rec["cwd"].as_str().unwrap()), wt);
    assert_eq!(
        Path::new(roster_member(&env, "bob")["cwd"].as_str().unwrap()),
        wt
    );
}

#[test]
fn swarm_run_with_the_claude_engine_has_the_lead_spawn_claude_code_teammates() {
    let env = TestEnv::new();
    let bin = stand_in(&env);
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("spawn")
                    .agent("team-lead")
                    .no_tool_result(true)
                    .times(1)
                    .reply(
                        Reply::tool("Agent", json!({"name": "bob", "prompt": "review it"}))
                            .tool_call(
                                "Agent",
                                json!({"name": "sam", "prompt": "help", "engine": "swarm"}),
                            ),
                    ),
            )
            .default_reply(Reply::text("ok")),
    );
    let mut cmd = env.swarm(&[
        "run",
        "review the code",
        "--team",
        "t",
        "--no-attach",
        "--engine",
        "claude",
        "--provider",
        "scripted",
        "--permission-mode",
        "acceptEdits",
        "--base-url",
    ]);
    cmd.arg(model.url())
        .arg("--claude-bin")
        .arg(&bin)
        .env("ANTHROPIC_API_KEY", KEY)
        .stdout(std::fs::File::create(env.dir.path().join("run.out")).unwrap())
        .stderr(std::fs::File::create(env.dir.path().join("run.err")).unwrap());
    let _run = Guarded(Some(cmd.spawn().unwrap()));
    let rec = started(&env, "bob");
    let argv = strings(&rec["argv"]);
    assert!(
        argv.windows(2).any(|w| w == ["--agent-id", "bob@t"]),
        "{argv:?}"
    );
    assert!(
        argv.windows(2)
            .any(|w| w == ["--permission-mode", "acceptEdits"]),
        "{argv:?}"
    );
    assert_eq!(rec["env"]["ANTHROPIC_API_KEY"], KEY);
    assert_eq!(rec["env"]["ANTHROPIC_BASE_URL"], model.url());
    assert_eq!(rec["inbox"][0]["text"], "review it");
    assert!(wait_until(T, || roster_member(&env, "sam")["engine"] == "swarm"));
    assert!(wait_until(Duration::from_secs(10), || roster_member(
        &env, "bob"
    )["engine"]
        == "claude"));
}
