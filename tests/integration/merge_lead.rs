//! The merge queue as a run drives it: teammates in worktrees commit their tasks, the
//! lead's queue lands each branch on the target through the check as tasks complete, a
//! completion with uncommitted files is refused, and the run ends with the work merged,
//! the worktrees gone and the report saying so.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{Reply, Rule, Script};

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
    let repo = repo_with_identity(&env);
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
    let out = run_team(&env, &repo, &model, &check);
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);

    // Every task's file is on main, in the user's (clean) checkout, which was fast-forwarded.
    assert_eq!(
        files(&repo),
        ["task-1.txt", "task-2.txt", "task-3.txt"],
        "{}",
        out.stdout
    );
    assert!(git(&repo, &["status", "--porcelain"]).trim().is_empty());
    let entries = queue(&env);
    assert!(!entries.is_empty());
    assert!(
        entries.iter().all(|e| e["state"] == "merged"),
        "every entry merged: {entries:#?}"
    );
    // The check ran once for each merge, in the integration worktree.
    let checks = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        checks.lines().count(),
        entries.len(),
        "{checks}\n{entries:#?}"
    );
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

// Hand-backs: a red check or a conflict goes back to the teammate whose branch it is, as a
// task it owns; it fixes its branch, completes the task, and the branch lands.

/// The lead makes one task per `(teammate, subject)`, spawns each teammate in a worktree,
/// and gives each its task (tasks `#1`, `#2`, ... in order), so who does what is fixed.
fn lead_assigns(work: &[(&str, &str)]) -> Rule {
    let mut reply = Reply::tool(
        "TaskCreate",
        json!({"subject": work[0].1, "description": "do it"}),
    );
    for (_, subject) in &work[1..] {
        reply = reply.tool_call(
            "TaskCreate",
            json!({"subject": subject, "description": "do it"}),
        );
    }
    for (name, _) in work {
        reply = reply.tool_call(
            "Agent",
            json!({"name": name, "prompt": "Wait for your task.", "isolation": "worktree"}),
        );
    }
    for (i, (name, _)) in work.iter().enumerate() {
        reply = reply.tool_call(
            "TaskUpdate",
            json!({"taskId": (i + 1).to_string(), "owner": name}),
        );
    }
    Rule::new("plan")
        .agent("team-lead")
        .user_contains("Goal:")
        .times(1)
        .reply(reply)
}

/// A teammate's answer to its spawn prompt, slow enough that the lead has given out every
/// task before the teammate would look for one to claim.
fn waits_for_its_task() -> Rule {
    Rule::new("waits")
        .user_contains("Wait for your task.")
        .delay_ms(500)
        .reply(Reply::text("waiting"))
}

/// The task assigned (by the lead or the merge queue) whose subject starts with
/// `subject`, captured as `id`: as mail, or held by a resumed teammate.
fn assigned(subject: &str) -> String {
    format!(
        r#"(?:assigned you task #|<task id=")(?P<id>\d+)(?:: |" subject="){}"#,
        regex::escape(subject)
    )
}

/// Writes `file` with `content`, commits (nothing when unchanged), completes the task.
fn writes(file: &str, content: &str) -> Reply {
    Reply::tool("Write", json!({"file_path": file, "content": content}))
        .tool_call("Bash", json!({"command": COMMIT}))
        .tool_call(
            "TaskUpdate",
            json!({"taskId": "{{id}}", "status": "completed"}),
        )
}

const COMMIT: &str = "git add -A && (git diff --cached --quiet || git commit -q -m 'task {{id}}')";

/// Fails on any `*.txt` file holding "BUG" (after running `before`).
fn bug_check(before: &str) -> String {
    format!("{before}if grep -Hn BUG *.txt; then exit 1; fi")
}

/// `swarm run` of team `t` in `repo` with `check`.
fn run_cmd(env: &TestEnv, repo: &Path, model: &ScriptedModel, check: &str) -> Command {
    env.swarm(&[
        "run",
        "write the notes",
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
        check,
    ])
}

/// `swarm run` of team `t` in `repo` with `check`, to its end.
fn run_team(env: &TestEnv, repo: &Path, model: &ScriptedModel, check: &str) -> crate::harness::Run {
    run_timeout(
        &mut run_cmd(env, repo, model, check),
        Duration::from_secs(180),
    )
}

fn repo_with_identity(env: &TestEnv) -> std::path::PathBuf {
    let repo = env.repo("job");
    git(&repo, &["config", "user.name", "swarm test"]);
    git(&repo, &["config", "user.email", "test@example.com"]);
    repo
}

fn queue(env: &TestEnv) -> Vec<Value> {
    let status: Value = serde_json::from_str(
        &env.run(&["--team", "t", "merge", "--status", "--json"])
            .success()
            .stdout,
    )
    .unwrap();
    status["entries"].as_array().unwrap().clone()
}

/// Every entry merged or abandoned; the states of `branch`'s entries, oldest first.
fn settled_states(entries: &[Value], branch: &str) -> Vec<String> {
    assert!(
        entries
            .iter()
            .all(|e| e["state"] == "merged" || e["state"] == "abandoned"),
        "every entry merged or abandoned: {entries:#?}"
    );
    entries
        .iter()
        .filter(|e| e["branch"] == branch)
        .map(|e| e["state"].as_str().unwrap().to_owned())
        .collect()
}

/// The task whose subject starts with `prefix`.
fn task(env: &TestEnv, prefix: &str) -> swarm_store::tasks::Task {
    let tasks = env.store("t").tasks().list().unwrap();
    tasks
        .iter()
        .find(|t| t.subject.starts_with(prefix))
        .cloned()
        .unwrap_or_else(|| panic!("no task \"{prefix}...\": {tasks:#?}"))
}

fn told(model: &ScriptedModel, agent: &str, text: &str) -> bool {
    model
        .requests()
        .iter()
        .any(|r| r.agent() == Some(agent) && r.body["messages"].to_string().contains(text))
}

/// Whether any commit on `branch`'s first-parent line has a file holding `text`.
fn ever_on(repo: &Path, branch: &str, text: &str) -> bool {
    git(repo, &["rev-list", "--first-parent", branch])
        .lines()
        .any(|c| {
            std::process::Command::new("git")
                .args(["grep", "-q", text, c])
                .current_dir(repo)
                .status()
                .unwrap()
                .success()
        })
}

#[test]
fn a_red_check_goes_back_to_the_running_teammate_and_its_fix_lands() {
    let env = TestEnv::new();
    let repo = repo_with_identity(&env);
    let model = ScriptedModel::start(
        Script::new()
            .rule(lead_assigns(&[
                ("alice", "Write alpha.txt"),
                ("bob", "Write beta.txt"),
            ]))
            .rule(
                Rule::new("alpha, with a bug")
                    .user_regex(assigned("Write alpha.txt"))
                    .reply(writes("alpha.txt", "BUG\n")),
            )
            .rule(
                Rule::new("beta")
                    .user_regex(assigned("Write beta.txt"))
                    .reply(writes("beta.txt", "beta\n")),
            )
            .rule(
                Rule::new("the fix")
                    .user_regex(assigned("Make the check pass on swarm/t/alice"))
                    .reply(writes("alpha.txt", "alpha, fixed\n")),
            )
            .rule(waits_for_its_task())
            .default_reply(Reply::text("ok")),
    );
    let out = run_team(&env, &repo, &model, &bug_check(""));
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);

    // The fix landed with bob's work, and no commit of main ever held the bug.
    assert_eq!(
        std::fs::read_to_string(repo.join("alpha.txt")).unwrap(),
        "alpha, fixed\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("beta.txt")).unwrap(),
        "beta\n"
    );
    assert!(
        !ever_on(&repo, "main", "BUG"),
        "{}",
        git(&repo, &["log", "--stat"])
    );
    // alice was given the hand-back as a task of hers, and did it.
    let fix = task(&env, "Make the check pass on swarm/t/alice");
    assert_eq!(fix.owner.as_deref(), Some("alice"), "{fix:?}");
    assert_eq!(fix.status, swarm_store::tasks::Status::Completed, "{fix:?}");
    assert!(
        fix.description.contains("alpha.txt:1:BUG"),
        "{}",
        fix.description
    );
    // Her first head was held and then superseded by the fixed one, which merged.
    let entries = queue(&env);
    assert_eq!(
        settled_states(&entries, "swarm/t/alice"),
        ["abandoned", "merged"],
        "{entries:#?}"
    );
    assert!(told(&model, "team-lead", "handed back to alice as task #3"));
}

/// alice and bob write shared.txt each their way, carol gamma.txt. carol's branch lands
/// alone: its check holds that run until alice and bob have both completed, so the next
/// run takes their branches together, in that order: alice's lands, bob's conflicts with
/// it. bob resolves a conflict as a teammate would: he brings the target in and keeps his
/// own side. Returns the model and the check.
fn conflict_team(env: &TestEnv) -> (ScriptedModel, String) {
    let dir = env.dir.path().display().to_string();
    let model = ScriptedModel::start(
        Script::new()
            .rule(lead_assigns(&[
                ("alice", "Write shared.txt as alice"),
                ("bob", "Write shared.txt as bob"),
                ("carol", "Write gamma.txt"),
            ]))
            .rule(
                Rule::new("gamma")
                    .user_regex(assigned("Write gamma.txt"))
                    .reply(writes("gamma.txt", "gamma\n")),
            )
            .rule(
                Rule::new("the shared file")
                    .user_regex(assigned("Write shared.txt as "))
                    .times(2)
                    .reply(
                        Reply::tool(
                            "Write",
                            json!({"file_path": "shared.txt", "content": "{{agent}}'s line\n"}),
                        )
                        .tool_call(
                            "Bash",
                            json!({"command": format!(
                                "n=0; while [ ! -f {dir}/started ] && [ $n -lt 600 ]; do n=$((n+1)); sleep 0.05; done; {COMMIT}"
                            )}),
                        )
                        .tool_call(
                            "TaskUpdate",
                            json!({"taskId": "{{id}}", "status": "completed"}),
                        )
                        .tool_call(
                            "Bash",
                            json!({"command": format!("touch {dir}/{{{{agent}}}}.done")}),
                        ),
                    ),
            )
            .rule(
                Rule::new("the resolution")
                    .user_regex(assigned("Rebase swarm/t/"))
                    .reply(
                        Reply::tool(
                            "Bash",
                            json!({"command": "git merge -q -X ours -m 'resolve with main' main"}),
                        )
                        .tool_call(
                            "TaskUpdate",
                            json!({"taskId": "{{id}}", "status": "completed"}),
                        ),
                    ),
            )
            .rule(waits_for_its_task())
            .default_reply(Reply::text("ok")),
    );
    let check = format!(
        "if [ -f gamma.txt ] && [ ! -f shared.txt ]; then touch {dir}/started; n=0; \
         while ! {{ [ -f {dir}/alice.done ] && [ -f {dir}/bob.done ]; }} && [ $n -lt 600 ]; do n=$((n+1)); sleep 0.05; done; fi"
    );
    (model, check)
}

#[test]
fn a_conflict_goes_back_to_the_teammate_that_landed_second_and_its_resolution_lands() {
    let env = TestEnv::new();
    let repo = repo_with_identity(&env);
    let (model, check) = conflict_team(&env);
    let out = run_team(&env, &repo, &model, &check);
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);

    let rebase = task(&env, "Rebase swarm/t/");
    assert_eq!(
        rebase.subject,
        "Rebase swarm/t/bob onto main and resolve conflicts in shared.txt"
    );
    assert_eq!(rebase.owner.as_deref(), Some("bob"));
    assert_eq!(rebase.status, swarm_store::tasks::Status::Completed);
    // His resolution (his own side) is what main has now, with no conflict markers.
    assert_eq!(
        std::fs::read_to_string(repo.join("shared.txt")).unwrap(),
        "bob's line\n"
    );
    assert!(git(&repo, &["status", "--porcelain"]).trim().is_empty());
    // Handed back once: what he was told to rebase onto had alice's work.
    let entries = queue(&env);
    assert_eq!(
        settled_states(&entries, "swarm/t/bob"),
        ["abandoned", "merged"],
        "{entries:#?}"
    );
    for first in ["swarm/t/alice", "swarm/t/carol"] {
        assert_eq!(settled_states(&entries, first), ["merged"], "{entries:#?}");
    }
}

#[test]
fn a_conflict_is_handed_back_only_once_the_target_has_what_it_conflicts_with() {
    let env = TestEnv::new();
    let repo = repo_with_identity(&env);
    let (model, check) = conflict_team(&env);
    // The lead dies the moment the queue has handed bob's branch back: what bob is told to
    // rebase onto is what main is then.
    let mut cmd = run_cmd(&env, &repo, &model, &check);
    cmd.env("SWARM_FAULT", "merge.handed_back:kill")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _run = crate::harness::Guarded(Some(cmd.spawn().unwrap()));
    let (root, team) = (env.teams(), env.team_name("t"));
    let lead = swarm_util::names::AgentName::lead();
    let died = crate::harness::wait_until(Duration::from_secs(120), || {
        root.open(&team)
            .unwrap()
            .agents()
            .read_state(&lead)
            .is_some_and(|s| s.pid > 0 && !swarm_util::process::is_alive(s.pid))
    });
    assert!(
        died,
        "the queue never handed a branch back: {:#?}",
        queue(&env)
    );
    let rebase = task(&env, "Rebase swarm/t/");
    assert_eq!(rebase.owner.as_deref(), Some("bob"), "{rebase:?}");
    assert_eq!(
        git(&repo, &["show", "main:shared.txt"]),
        "alice's line\n",
        "main when bob was told to rebase onto it: {}",
        git(&repo, &["log", "--stat", "main"])
    );
}

#[test]
fn a_teammate_that_stopped_is_restarted_for_its_hand_back_and_its_fix_lands() {
    let env = TestEnv::new();
    let repo = repo_with_identity(&env);
    // alice's process id, written before she completes her task, so the check can wait
    // for her to be gone: the hand-back then finds her stopped, whatever the timing.
    let pid_file = env.dir.path().join("alice.pid");
    let model = ScriptedModel::start(
        Script::new()
            .rule(lead_assigns(&[
                ("alice", "Write alpha.txt"),
                ("bob", "Write beta.txt"),
            ]))
            .rule(
                Rule::new("alpha, with a bug, then alice dies")
                    .user_regex(assigned("Write alpha.txt"))
                    .times(1)
                    .reply(
                        Reply::tool(
                            "Write",
                            json!({"file_path": "alpha.txt", "content": "BUG\n"}),
                        )
                        .tool_call(
                            "Bash",
                            json!({"command": format!(
                                "git add -A && git commit -q -m bug && echo $PPID > {}",
                                pid_file.display()
                            )}),
                        )
                        .tool_call(
                            "TaskUpdate",
                            json!({"taskId": "{{id}}", "status": "completed"}),
                        )
                        .tool_call("Bash", json!({"command": "kill -9 $PPID"})),
                    ),
            )
            .rule(
                Rule::new("beta")
                    .user_regex(assigned("Write beta.txt"))
                    .reply(writes("beta.txt", "beta\n")),
            )
            .rule(
                Rule::new("the fix")
                    .user_regex(assigned("Make the check pass on swarm/t/alice"))
                    .reply(writes("alpha.txt", "alpha, fixed\n")),
            )
            .rule(waits_for_its_task())
            .default_reply(Reply::text("ok")),
    );
    let wait_for_alice = format!(
        "n=0; while [ $n -lt 300 ] && kill -0 \"$(cat {} 2>/dev/null)\" 2>/dev/null; do n=$((n+1)); sleep 0.1; done; ",
        pid_file.display()
    );
    let out = run_team(&env, &repo, &model, &bug_check(&wait_for_alice));
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);

    // The lead heard that alice was restarted for it, and a new alice did the task.
    assert!(
        told(
            &model,
            "team-lead",
            "alice was not running, for the task its branch was handed back as: respawned"
        ),
        "{}",
        out.stdout
    );
    let killed: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let alice = swarm_util::names::AgentName::new("alice").unwrap();
    let now = env
        .teams()
        .open(&env.team_name("t"))
        .unwrap()
        .agents()
        .read_state(&alice)
        .expect("alice's state");
    assert_ne!(now.pid, killed, "alice was not restarted");
    let fix = task(&env, "Make the check pass on swarm/t/alice");
    assert_eq!(fix.owner.as_deref(), Some("alice"), "{fix:?}");
    assert_eq!(fix.status, swarm_store::tasks::Status::Completed, "{fix:?}");
    // Her fix landed, and main never held the bug.
    assert_eq!(
        std::fs::read_to_string(repo.join("alpha.txt")).unwrap(),
        "alpha, fixed\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("beta.txt")).unwrap(),
        "beta\n"
    );
    assert!(
        !ever_on(&repo, "main", "BUG"),
        "{}",
        git(&repo, &["log", "--stat"])
    );
    let entries = queue(&env);
    assert_eq!(
        settled_states(&entries, "swarm/t/alice"),
        ["abandoned", "merged"],
        "{entries:#?}"
    );
}
