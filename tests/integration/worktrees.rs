//! Worktree isolation end to end: real git repositories, real tmux, real teammates on the
//! scripted model, and the real shutdown ladder and `team delete`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{Reply, Rule, Script};

use crate::harness::{Run, ScriptedModel, TestEnv, git, run, wait_until};

const T: Duration = Duration::from_secs(30);

fn spawn(env: &TestEnv, model: &ScriptedModel, name: &str, extra: &[&str]) -> Run {
    let mut cmd = env.swarm(&["--team", "t", "--json", "spawn", name]);
    cmd.args(extra)
        .env("SWARM_PROVIDER", "scripted")
        .env("SWARM_BASE_URL", model.url());
    run(&mut cmd)
}

fn roster(env: &TestEnv) -> Value {
    serde_json::from_slice(&std::fs::read(env.root.join("teams/t/config.json")).unwrap()).unwrap()
}

fn member(env: &TestEnv, name: &str) -> Option<Value> {
    roster(env)["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .cloned()
}

fn alive(env: &TestEnv, name: &str) -> bool {
    let s: Value = serde_json::from_str(
        &env.run(&["--team", "t", "--json", "status"])
            .success()
            .stdout,
    )
    .unwrap();
    s["members"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["name"] == name && m["alive"] == true)
        // Registered too: its state is what `signal_agent` reads.
        && env
            .store("t")
            .agents()
            .read_state(&swarm_util::names::AgentName::parse_any(name).unwrap())
            .is_some()
}

fn branches(repo: &Path) -> String {
    git(repo, &["branch", "--list", "swarm/*"])
}

fn lead_texts(env: &TestEnv) -> Vec<String> {
    env.lead_inbox("t").into_iter().map(|e| e.text).collect()
}

fn spawned_worktree(out: &str) -> PathBuf {
    let v: Value = serde_json::from_str(out).unwrap();
    PathBuf::from(v["worktree"]["path"].as_str().expect("a worktree"))
}

#[test]
fn a_teammate_in_a_worktree_works_unseen_by_the_main_checkout_and_its_changes_are_kept() {
    let env = TestEnv::with_team("t", &[]);
    let repo = env.repo("repo");
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("write")
                    .agent("bob")
                    .user_contains("write your file")
                    .no_tool_result(true)
                    .reply(Reply::tool(
                        "Write",
                        json!({"file_path": "made-by-bob.txt", "content": "bob was here\n"}),
                    )),
            )
            .default_reply(Reply::text("done")),
    );
    let repo_s = repo.join("src").display().to_string();
    let out = spawn(
        &env,
        &model,
        "bob",
        &[
            "--isolation",
            "worktree",
            "--cwd",
            &repo_s,
            "--prompt",
            "write your file",
            "--permission-mode",
            "bypassPermissions",
        ],
    )
    .success()
    .stdout;
    let wt = spawned_worktree(&out);
    let canon = repo.canonicalize().unwrap();
    assert_eq!(wt, canon.join(".git/swarm-worktrees/t/bob"));
    let m = member(&env, "bob").unwrap();
    assert_eq!(m["worktreePath"], wt.display().to_string());
    assert_eq!(
        m["cwd"],
        wt.join("src").display().to_string(),
        "same subdirectory"
    );
    assert_eq!(m["worktreeBranch"], "swarm/t/bob");
    assert_eq!(
        m["worktreeBaseCommit"].as_str().unwrap(),
        git(&repo, &["rev-parse", "HEAD"]).trim()
    );
    assert!(branches(&repo).contains("swarm/t/bob"));
    let made = wt.join("src/made-by-bob.txt");
    assert!(
        wait_until(T, || made.exists()),
        "bob wrote nothing into {}",
        wt.display()
    );
    assert!(!repo.join("src/made-by-bob.txt").exists());
    assert_eq!(
        git(&repo, &["status", "--porcelain", "--untracked-files=all"]),
        "",
        "the main checkout saw the worktree"
    );

    // The real ladder: the file is a change, so the worktree and its branch stay.
    let out = env
        .run(&["--team", "t", "shutdown", "bob", "--timeout", "10s"])
        .success();
    assert!(member(&env, "bob").is_none(), "{}", out.stdout);
    assert!(made.exists(), "bob's work was deleted");
    assert!(branches(&repo).contains("swarm/t/bob"));
    assert!(
        wait_until(T, || lead_texts(&env)
            .iter()
            .any(|t| t.contains("swarm/t/bob")
                && t.contains(&wt.display().to_string())
                && t.contains("1 uncommitted file(s)"))),
        "the lead was not told about the kept worktree: {:?}",
        lead_texts(&env)
    );

    // team delete keeps unmerged work unless forced, and says why.
    let mut said = String::new();
    let refused = env.run(&["team", "delete", "t"]).failure(4);
    said += &format!("$ swarm team delete t => 4\n{}", refused.stderr);
    assert!(made.exists() && env.root.join("teams/t/config.json").exists());
    // Committing it does not make it merged.
    git(&wt, &["add", "."]);
    git(&wt, &["commit", "-q", "-m", "bob's work"]);
    let refused = env.run(&["team", "delete", "t"]).failure(4);
    said += &format!("$ swarm team delete t => 4\n{}", refused.stderr);
    let out = env.run(&["team", "delete", "t", "--force"]).success();
    said += &format!("$ swarm team delete t --force => 0\n{}", out.stdout);
    // Unmerged work named by branch and what it holds: a changed file, then a commit.
    env.snapshot_settings()
        .bind(|| insta::assert_snapshot!("team_delete_unmerged_worktree", said));
    assert!(!wt.exists());
    assert_eq!(branches(&repo), "");
    assert!(!env.root.join("teams/t").exists());
    assert!(!git(&repo, &["worktree", "list"]).contains("swarm-worktrees"));
}

#[test]
fn an_unchanged_worktree_and_its_branch_go_when_the_teammate_shuts_down() {
    let env = TestEnv::with_team("t", &[]);
    let repo = env.repo("repo");
    // Isolation from the agent definition, not the command line.
    std::fs::create_dir_all(repo.join(".claude/agents")).unwrap();
    std::fs::write(
        repo.join(".claude/agents/isolated.md"),
        "---\nname: isolated\ndescription: works apart\nisolation: worktree\n---\nStay tidy.\n",
    )
    .unwrap();
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("ok")));
    let repo_s = repo.display().to_string();
    let out = spawn(
        &env,
        &model,
        "carol",
        &["--agent-type", "isolated", "--cwd", &repo_s],
    )
    .success()
    .stdout;
    let wt = spawned_worktree(&out);
    assert!(wt.join("README.md").is_file());
    assert!(wait_until(T, || alive(&env, "carol")));
    // The main checkout moving on is no change of carol's.
    std::fs::write(repo.join(".gitignore"), "target/\n").unwrap();
    git(&repo, &["add", ".gitignore"]);
    git(&repo, &["commit", "-q", "-m", "ignore target"]);
    env.run(&["--team", "t", "shutdown", "carol", "--timeout", "10s"])
        .success();
    assert!(
        wait_until(T, || !wt.exists()),
        "the unchanged worktree is still there"
    );
    assert_eq!(branches(&repo), "", "the branch is still there");
    assert!(!env.root.join("teams/t/worktrees/carol.json").exists());
    assert!(
        !lead_texts(&env)
            .iter()
            .any(|t| t.contains("worktree was kept")),
        "{:?}",
        lead_texts(&env)
    );
    // The name and the branch are free again.
    spawn(
        &env,
        &model,
        "carol",
        &["--isolation", "worktree", "--cwd", &repo_s],
    )
    .success();
    assert!(wait_until(T, || alive(&env, "carol")));
    env.run(&["team", "delete", "t", "--force"]).success();
    assert_eq!(branches(&repo), "");
}

#[test]
fn isolation_outside_a_git_repository_is_refused_and_leaves_nothing() {
    let env = TestEnv::with_team("t", &[]);
    let plain = env.dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("ok")));
    let plain_s = plain.display().to_string();
    let out = spawn(
        &env,
        &model,
        "bob",
        &["--isolation", "worktree", "--cwd", &plain_s],
    )
    .failure(2);
    assert!(
        out.stderr.contains("needs a git repository")
            && out
                .stderr
                .contains(&plain.canonicalize().unwrap().display().to_string()),
        "{}",
        out.stderr
    );
    assert!(member(&env, "bob").is_none());
    let out = spawn(&env, &model, "bob", &["--isolation", "sideways"]).failure(2);
    assert!(
        out.stderr.contains("unknown isolation 'sideways'"),
        "{}",
        out.stderr
    );
    // A branch left from earlier work is not overwritten.
    let repo = env.repo("repo");
    git(&repo, &["branch", "swarm/t/bob"]);
    let repo_s = repo.display().to_string();
    let out = spawn(
        &env,
        &model,
        "bob",
        &["--isolation", "worktree", "--cwd", &repo_s],
    )
    .failure(4);
    assert!(
        out.stderr.contains("branch swarm/t/bob already exists"),
        "{}",
        out.stderr
    );
    assert!(member(&env, "bob").is_none());
}

#[test]
fn the_leads_agent_tool_spawns_into_a_worktree_whose_committed_work_lands_on_main() {
    let env = TestEnv::new();
    let repo = env.repo("job");
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("plan and spawn")
                    .agent("team-lead")
                    .user_contains("write notes")
                    .no_tool_result(true)
                    .times(1)
                    .reply(
                        Reply::tool(
                            "TaskCreate",
                            json!({"subject": "Write notes.txt", "description": "write it"}),
                        )
                        .tool_call(
                            "Agent",
                            json!({"name": "bob", "prompt": "take the task",
                                "subagent_type": "general-purpose", "isolation": "worktree"}),
                        ),
                    ),
            )
            .rule(
                Rule::new("work")
                    .agent("bob")
                    .user_regex(r"claimed task #(?P<id>\d+)")
                    .no_tool_result(true)
                    .reply(
                        Reply::tool(
                            "Write",
                            json!({"file_path": "notes.txt", "content": "notes\n"}),
                        )
                        .tool_call(
                            "Bash",
                            json!({"command": "git add -A && git -c user.name=bob -c user.email=bob@example.com commit -q -m notes"}),
                        )
                        .tool_call(
                            "TaskUpdate",
                            json!({"taskId": "{{id}}", "status": "completed"}),
                        ),
                    ),
            )
            .default_reply(Reply::text("ok")),
    );
    let mut cmd = env.swarm(&[
        "run",
        "write notes",
        "--team",
        "t",
        "--no-attach",
        "--teammates",
        "1",
        "--provider",
        "scripted",
        "--base-url",
        &model.url(),
        "--cwd",
        &repo.display().to_string(),
        "--permission-mode",
        "bypassPermissions",
    ]);
    let out = crate::harness::run_timeout(&mut cmd, Duration::from_secs(120));
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);
    let wt = repo
        .canonicalize()
        .unwrap()
        .join(".git/swarm-worktrees/t/bob");
    // The lead ran the ladder as it finished: bob's committed work was kept, and the
    // lead told so; then the merge queue landed it on main, in the (clean) checkout, and
    // removed the worktree and branch.
    assert!(
        lead_texts(&env)
            .iter()
            .any(|t| t.contains("bob's worktree was kept") && t.contains("merge queue")),
        "{:?}",
        lead_texts(&env)
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("notes.txt")).unwrap_or_default(),
        "notes\n",
        "bob's work did not land on main: {}",
        out.stdout
    );
    // The repository has no identity: the merge commit is the queue's own.
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%an <%ae>", "main"]).trim(),
        "swarm merge queue <swarm@localhost>"
    );
    assert!(!wt.exists(), "bob's merged worktree is left");
    assert!(!branches(&repo).contains("swarm/t/bob"));
    // The person hears it too: the report lists what landed.
    assert!(
        out.stdout.contains("## Merge queue (onto main)")
            && out
                .stdout
                .contains("- swarm/t/bob (bob, task #1): merged as "),
        "{}",
        out.stdout
    );
    let tool_result = model
        .requests()
        .iter()
        .filter(|r| r.agent() == Some("team-lead"))
        .map(|r| r.body["messages"].to_string())
        .find(|m| m.contains("Spawned successfully"))
        .unwrap_or_default();
    assert!(
        tool_result.contains("worktree: ") && tool_result.contains("(branch swarm/t/bob)"),
        "{tool_result}"
    );
    // Nothing unmerged is left: the team goes without --force.
    env.run(&["team", "delete", "t"]).success();
}

#[test]
fn the_supervisor_settles_the_worktree_of_a_teammate_that_died() {
    let _heavy = crate::harness::heavy();
    let env = TestEnv::with_team("t", &[]);
    let repo = env.repo("repo");
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("ok")));
    let repo_s = repo.display().to_string();
    let mut worktrees = Vec::new();
    for name in ["dave", "erin"] {
        let out = spawn(
            &env,
            &model,
            name,
            &["--isolation", "worktree", "--cwd", &repo_s],
        )
        .success()
        .stdout;
        worktrees.push(spawned_worktree(&out));
        assert!(wait_until(T, || alive(&env, name)));
    }
    // erin leaves a file behind; then both die without any shutdown code running.
    std::fs::write(worktrees[1].join("half-done.txt"), "wip").unwrap();
    for name in ["dave", "erin"] {
        env.signal_agent("t", name, nix::sys::signal::Signal::SIGKILL);
    }
    // The lead in the team window notices: dave's clean worktree goes, erin's stays.
    assert!(
        wait_until(T, || !worktrees[0].exists()),
        "dave's clean worktree outlived him"
    );
    assert!(
        wait_until(T, || lead_texts(&env).iter().any(|t| t
            .contains("erin's worktree was kept")
            && t.contains("swarm/t/erin"))),
        "{:?}",
        lead_texts(&env)
    );
    assert!(worktrees[1].join("half-done.txt").exists());
    assert_eq!(
        branches(&repo).trim_start_matches('+').trim(),
        "swarm/t/erin"
    );
    env.run(&["team", "delete", "t", "--force"]).success();
    assert_eq!(branches(&repo), "");
}

#[test]
fn a_teammate_in_a_worktree_reads_the_projects_uncommitted_definitions_and_local_hooks() {
    let env = TestEnv::with_team("t", &[]);
    let repo = env.repo("repo");
    // A committed `.claude/` makes the worktree a project of its own, without the files
    // below: one not committed yet and one git ignores.
    std::fs::create_dir_all(repo.join(".claude/agents")).unwrap();
    std::fs::write(repo.join(".claude/settings.json"), "{}").unwrap();
    git(&repo, &["add", ".claude/settings.json"]);
    git(&repo, &["commit", "-q", "-m", "settings"]);
    std::fs::write(
        repo.join(".claude/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: reviews\n---\nReview.\n",
    )
    .unwrap();
    let started = env.dir.path().join("started.json");
    let hook = json!({"hooks": {"SubagentStart": [{"hooks": [
        {"type": "command", "command": format!("cat > '{}'", started.display())}
    ]}]}});
    std::fs::write(repo.join(".claude/settings.local.json"), hook.to_string()).unwrap();
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("ok")));
    let repo_s = repo.display().to_string();
    let out = spawn(
        &env,
        &model,
        "bob",
        &[
            "--agent-type",
            "reviewer",
            "--isolation",
            "worktree",
            "--cwd",
            &repo_s,
        ],
    )
    .success()
    .stdout;
    let wt = spawned_worktree(&out);
    assert!(wt.join(".claude/settings.json").is_file());
    assert!(!wt.join(".claude/agents/reviewer.md").exists());
    assert!(
        // Parsed, not only there: `cat >` creates the file before it writes it.
        wait_until(T, || std::fs::read(&started)
            .is_ok_and(|b| serde_json::from_slice::<Value>(&b).is_ok())
            && alive(&env, "bob")),
        "bob did not start with the project's definition and hook; his log:\n{}",
        std::fs::read_to_string(env.root.join("teams/t/logs/bob.log")).unwrap_or_default()
    );
    let event: Value = serde_json::from_slice(&std::fs::read(&started).unwrap()).unwrap();
    assert_eq!(event["hook_event_name"], "SubagentStart");
    env.run(&["team", "delete", "t", "--force"]).success();
}

#[test]
fn a_teammate_that_dies_before_it_registers_is_reported_and_its_worktree_settled() {
    let env = TestEnv::with_team("t", &[]);
    let repo = env.repo("repo");
    let repo_s = repo.display().to_string();
    // Killed at its start: the teammate stops before it ever registers.
    let mut cmd = env.swarm(&[
        "--team",
        "t",
        "--json",
        "spawn",
        "bob",
        "--isolation",
        "worktree",
        "--cwd",
        &repo_s,
    ]);
    cmd.env("SWARM_PROVIDER", "scripted")
        .env("SWARM_BASE_URL", "http://127.0.0.1:9")
        .env("SWARM_FAULT", "teammate.start:kill");
    let wt = spawned_worktree(&run(&mut cmd).success().stdout);
    assert!(
        wait_until(T, || lead_texts(&env)
            .iter()
            .any(|t| t.contains("bob was terminated"))),
        "{:?}",
        lead_texts(&env)
    );
    // The worktree goes before its branch: wait for both, not for the first.
    assert!(
        wait_until(T, || !wt.exists() && branches(&repo).is_empty()),
        "the unchanged worktree or its branch is still there: {}",
        branches(&repo)
    );
    env.run(&["team", "delete", "t", "--force"]).success();
}
