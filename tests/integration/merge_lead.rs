//! The merge queue as a run drives it: teammates in worktrees commit their tasks, the
//! lead's queue lands each branch on the target through the check as tasks complete, a
//! completion with uncommitted files is refused, and the run ends with the work merged,
//! the worktrees gone and the report saying so.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use swarm::llm::model_server::{Reply, Rule, Script};

use crate::harness::{ScriptedModel, TestEnv, git, run_timeout};

/// Each teammate's work on a task: a file named for the task, committed, then completed.
fn work(agent: &str) -> Rule {
    Rule::new(format!("{agent} works"))
        .agent(agent)
        .user_regex(r"claimed task #(?P<id>\d+)")
        .no_tool_result(true)
        .reply(
            Reply::tool(
                "Write",
                json!({"file_path": "task-{{id}}.txt", "content": format!("{agent} did task {{{{id}}}}\n")}),
            )
            .tool_call(
                "Bash",
                json!({"command": "git add -A && git commit -q -m 'task {{id}}'"}),
            )
            .tool_call(
                "TaskUpdate",
                json!({"taskId": "{{id}}", "status": "completed"}),
            ),
        )
}

fn lead_plan() -> Rule {
    let mut reply = Reply::tool(
        "TaskCreate",
        json!({"subject": "Write task file 1", "description": "write it"}),
    );
    for n in 2..=3 {
        reply = reply.tool_call(
            "TaskCreate",
            json!({"subject": format!("Write task file {n}"), "description": "write it"}),
        );
    }
    for name in ["alice", "bob", "carol"] {
        reply = reply.tool_call(
            "Agent",
            json!({"name": name, "prompt": "take a task", "isolation": "worktree"}),
        );
    }
    Rule::new("plan")
        .agent("team-lead")
        .user_contains("Goal:")
        .times(1)
        .reply(reply)
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("task-"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_runs_worktree_branches_land_on_the_target_through_the_check_as_tasks_complete() {
    let env = TestEnv::new();
    let repo = env.repo("job");
    git(&repo, &["config", "user.name", "swarm test"]);
    git(&repo, &["config", "user.email", "test@example.com"]);
    let log = env.dir.path().join("checks.log");
    let model = ScriptedModel::start(
        Script::new()
            .rule(lead_plan())
            // alice first completes without committing: refused, she commits and completes.
            .rule(
                Rule::new("alice forgets to commit")
                    .agent("alice")
                    .user_regex(r"claimed task #(?P<id>\d+)")
                    .no_tool_result(true)
                    .times(1)
                    .reply(
                        Reply::tool(
                            "Write",
                            json!({"file_path": "task-{{id}}.txt", "content": "alice did task {{id}}\n"}),
                        )
                        .tool_call(
                            "TaskUpdate",
                            json!({"taskId": "{{id}}", "status": "completed"}),
                        ),
                    ),
            )
            .rule(
                Rule::new("alice commits")
                    .agent("alice")
                    .tool_result_contains("commit your work first")
                    .user_regex(r"complete task #(?P<id>\d+)")
                    .reply(
                        Reply::tool(
                            "Bash",
                            json!({"command": "git add -A && git commit -q -m 'task {{id}}'"}),
                        )
                        .tool_call(
                            "TaskUpdate",
                            json!({"taskId": "{{id}}", "status": "completed"}),
                        ),
                    ),
            )
            .rule(work("alice"))
            .rule(work("bob"))
            .rule(work("carol"))
            .default_reply(Reply::text("ok")),
    );
    let check = format!("echo checked >> {}; test -f README.md", log.display());
    let mut cmd = env.swarm(&[
        "run",
        "write the task files",
        "--team",
        "t",
        "--no-attach",
        "--provider",
        "scripted",
        "--base-url",
        &model.url(),
        "--cwd",
        &repo.display().to_string(),
        "--permission-mode",
        "bypassPermissions",
        "--check",
        &check,
    ]);
    let out = run_timeout(&mut cmd, Duration::from_secs(180));
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);

    // Every task's file is on main, in the user's (clean) checkout, which was fast-forwarded.
    assert_eq!(
        files(&repo),
        ["task-1.txt", "task-2.txt", "task-3.txt"],
        "{}",
        out.stdout
    );
    assert!(git(&repo, &["status", "--porcelain"]).trim().is_empty());
    let queue: Value = serde_json::from_str(
        &env.run(&["--team", "t", "merge", "--status", "--json"])
            .success()
            .stdout,
    )
    .unwrap();
    let entries = queue["entries"].as_array().unwrap();
    assert!(!entries.is_empty(), "{queue}");
    assert!(
        entries.iter().all(|e| e["state"] == "merged"),
        "every entry merged: {queue}"
    );
    // The check ran once for each merge, in the integration worktree.
    let checks = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(checks.lines().count(), entries.len(), "{checks}\n{queue}");
    // The refusal reached alice, and she did not lose her file.
    let refused = model.requests().iter().any(|r| {
        r.agent() == Some("alice")
            && r.body["messages"]
                .to_string()
                .contains("commit your work first")
    });
    assert!(refused, "alice's uncommitted completion was not refused");
    // The lead was told what landed.
    let told = model.requests().iter().any(|r| {
        r.agent() == Some("team-lead")
            && r.body["messages"]
                .to_string()
                .contains("Merge queue: merged")
    });
    assert!(told, "the lead never heard of a merge");
    // The teammates' worktrees and branches went once their work was on main.
    let branches = git(&repo, &["branch", "--list", "swarm/t/*"]);
    for name in ["alice", "bob", "carol"] {
        assert!(
            !branches.contains(&format!("swarm/t/{name}\n")),
            "{name}'s branch is left: {branches}"
        );
    }
    assert!(
        out.stdout.contains("merged"),
        "the report lists the merges: {}",
        out.stdout
    );
}
