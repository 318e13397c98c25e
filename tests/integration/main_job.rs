//! The main job end to end: `swarm demo` and `swarm run` on an isolated tmux server, with
//! the scripted model, as a person would run them (`--no-attach`: no terminal in CI).

use std::time::Duration;

use serde_json::Value;

use crate::harness::{ScriptedModel, TestEnv, git, run_timeout, wait_until};

/// Processes started for this test's root (their environment names it).
pub(crate) fn our_processes(env: &TestEnv) -> Vec<(i32, String)> {
    let marker = format!("SWARM_ROOT={}", env.root.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != std::process::id() as i32)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == marker.as_bytes()))
        })
        .filter(|pid| swarm_util::process::is_alive(*pid))
        .map(|pid| {
            (
                pid,
                std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .unwrap_or_default()
                    .replace('\0', " "),
            )
        })
        .collect()
}

pub(crate) fn tmux_panes(env: &TestEnv) -> String {
    let out = env
        .tmux_cmd()
        .args(["list-panes", "-a", "-F", "#{pane_id} #{@swarm-agent}"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_demo_runs_to_the_end_and_leaves_nothing_behind() {
    let _heavy = crate::harness::heavy();
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    let out = run_timeout(
        &mut env.swarm(&["demo", "--no-attach", "--dir", &job.display().to_string()]),
        Duration::from_secs(180),
    )
    .success();
    assert!(
        out.stdout.contains("Result: done: every task is completed"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout.contains("the job's check passed"),
        "{}",
        out.stdout
    );
    for file in [
        "lib/upper.sh",
        "lib/lower.sh",
        "lib/reverse.sh",
        "toolkit.sh",
    ] {
        assert!(job.join(file).exists(), "{file} was not written");
    }
    // It really ran as a team: four tasks, work spread over several teammates, bob's plan.
    assert!(
        out.stdout.contains("- [x] #4 Write toolkit.sh") && out.stdout.contains("after #1, #2, #3"),
        "{}",
        out.stdout
    );
    let workers = ["alice", "bob", "carol"]
        .iter()
        // The report names each one's provider and model.
        .filter(|n| {
            out.stdout
                .contains(&format!("- {n} (scripted/scripted): completed"))
        })
        .count();
    assert!(workers >= 2, "one teammate did everything:\n{}", out.stdout);
    // Nothing left: no process of ours, no pane, no team directory.
    assert!(
        wait_until(Duration::from_secs(10), || our_processes(&env).is_empty()),
        "left running: {:?}",
        our_processes(&env)
    );
    assert!(
        tmux_panes(&env).trim().is_empty(),
        "panes left: {}",
        tmux_panes(&env)
    );
    let teams = std::fs::read_dir(env.root.join("teams"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(teams, 0, "the team directory was left behind");
}

#[test]
fn the_demo_refuses_bad_input_before_starting_anything() {
    let _heavy = crate::harness::heavy();
    let env = TestEnv::new();
    let taken = env.dir.path().join("taken");
    std::fs::create_dir_all(&taken).unwrap();
    std::fs::write(taken.join("mine.txt"), "the user's").unwrap();
    let out = run_timeout(
        &mut env.swarm(&["demo", "--no-attach", "--dir", &taken.display().to_string()]),
        Duration::from_secs(30),
    )
    .failure(4);
    assert!(out.stderr.contains("not empty"), "{}", out.stderr);
    let out = run_timeout(
        &mut env.swarm(&["demo", "--no-attach", "--teammates", "4"]),
        Duration::from_secs(30),
    )
    .failure(2);
    assert!(out.stderr.contains("--teammates"), "{}", out.stderr);
}

#[test]
fn the_worktrees_demo_lands_every_teammates_branch_with_the_check_green() {
    let _heavy = crate::harness::heavy();
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    let out = run_timeout(
        &mut env.swarm(&[
            "demo",
            "--job",
            "worktrees",
            "--no-attach",
            "--dir",
            &job.display().to_string(),
        ]),
        Duration::from_secs(180),
    )
    .success();
    assert!(
        out.stdout.contains("the job's check passed"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    // Each tool was built in a worktree, on its own branch, and landed by the queue.
    let merged: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains("): merged as "))
        .collect();
    assert_eq!(merged.len(), 3, "{}", out.stdout);
    let log = git(&job, &["log", "--format=%s", "--first-parent"]);
    assert_eq!(
        log.lines()
            .filter(|l| l.starts_with("swarm: merge swarm/"))
            .count(),
        3,
        "{log}"
    );
    for file in ["lib/upper.sh", "lib/lower.sh", "lib/reverse.sh"] {
        assert!(
            job.join(file).exists(),
            "{file} did not land: {}",
            out.stdout
        );
    }
    // The teammates' branches went once their work was on the job's branch.
    // Nor is the merge queue's integration worktree left behind.
    let branches = git(&job, &["branch", "--list", "swarm/*"]);
    assert!(branches.trim().is_empty(), "{branches}");
    let worktrees = git(&job, &["worktree", "list"]);
    assert_eq!(worktrees.lines().count(), 1, "{worktrees}");
    assert!(
        wait_until(Duration::from_secs(10), || our_processes(&env).is_empty()),
        "left running: {:?}",
        our_processes(&env)
    );
}

fn run_with(
    env: &TestEnv,
    model: &ScriptedModel,
    job: &std::path::Path,
    extra: &[&str],
) -> std::process::Child {
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
        .args([
            "--cwd",
            &job.display().to_string(),
            "--permission-mode",
            "acceptEdits",
        ])
        .args(swarm_demo::job::ALLOW.iter().flat_map(|r| ["--allow", r]))
        .args(extra)
        .stdout(std::fs::File::create(env.dir.path().join("run.out")).unwrap())
        .stderr(std::fs::File::create(env.dir.path().join("run.err")).unwrap());
    cmd.spawn().unwrap()
}

fn demo_model() -> ScriptedModel {
    ScriptedModel::start(
        swarm_model_server::Script::from_json(swarm_demo::job::Job::Toolkit.script()).unwrap(),
    )
}

#[test]
fn swarm_run_with_the_lead_approving_plans() {
    let _heavy = crate::harness::heavy();
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    swarm_demo::job::make_job(&job, swarm_demo::job::Job::Toolkit).unwrap();
    let model = demo_model();
    let mut run = crate::harness::Guarded(Some(run_with(&env, &model, &job, &[])));
    let status = run
        .wait(Duration::from_secs(180))
        .expect("swarm run did not finish");
    let out = std::fs::read_to_string(env.dir.path().join("run.out")).unwrap();
    assert!(
        status.success(),
        "{out}\n{}",
        std::fs::read_to_string(env.dir.path().join("run.err")).unwrap()
    );
    assert!(out.contains("Result: done"), "{out}");
    // bob's plan was recorded and approved by the lead, exactly once.
    let approvals: Value = serde_json::from_str(
        &env.run(&["--team", "t", "--json", "approvals"])
            .success()
            .stdout,
    )
    .unwrap();
    let plans: Vec<&Value> = approvals
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "plan")
        .collect();
    assert!(!plans.is_empty(), "{approvals}");
    assert!(
        plans
            .iter()
            .all(|a| a["state"] == "approved" && a["resolvedBy"] == "team-lead"),
        "{approvals}"
    );
    assert!(swarm_demo::job::run_check(&job).unwrap().0);
    // The broadcast reached every teammate, and the lead heard them go idle.
    let delivered = |agent: &str| {
        std::fs::read_to_string(
            env.root
                .join(format!("teams/t/inboxes/{agent}.delivered.jsonl")),
        )
        .unwrap_or_default()
    };
    for mate in ["alice", "bob", "carol"] {
        assert!(
            delivered(mate).contains("Tasks #1-#3 are independent"),
            "{mate} never got the broadcast"
        );
    }
    assert!(
        delivered("team-lead").contains("idle_notification"),
        "the lead heard no idle notification"
    );
    env.run(&["team", "delete", "t"]).success();
}

#[test]
fn swarm_run_with_a_human_approver_waits_for_swarm_approve() {
    let _heavy = crate::harness::heavy();
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    swarm_demo::job::make_job(&job, swarm_demo::job::Job::Toolkit).unwrap();
    let model = demo_model();
    let mut run =
        crate::harness::Guarded(Some(run_with(&env, &model, &job, &["--approver", "human"])));
    // bob's plan waits for a person.
    let mut pending = String::new();
    assert!(
        wait_until(Duration::from_secs(60), || {
            let out = env.run(&["--team", "t", "--json", "approvals", "--pending"]);
            let list: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
            match list.as_array().and_then(|l| l.first()) {
                Some(a) => {
                    pending = a["requestId"].as_str().unwrap().to_owned();
                    true
                }
                None => false,
            }
        }),
        "no pending approval appeared: {}",
        std::fs::read_to_string(env.dir.path().join("run.err")).unwrap_or_default()
    );
    // While it waits, bob is awaiting approval and the lead did not answer for the human:
    // the lead read the request, and read its inbox again after whatever that led to.
    assert!(
        wait_until(Duration::from_secs(60), || env.acknowledged(
            "t",
            "team-lead",
            &pending
        )),
        "the lead never read bob's plan request"
    );
    env.wait_read_past("t", "team-lead");
    let status: Value = serde_json::from_str(
        &env.run(&["--team", "t", "--json", "status"])
            .success()
            .stdout,
    )
    .unwrap();
    let bob = status["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "bob")
        .unwrap();
    assert_eq!(bob["state"], "awaiting-approval", "{status}");
    let a: Value = serde_json::from_str(
        &env.run(&["--team", "t", "--json", "approvals"])
            .success()
            .stdout,
    )
    .unwrap();
    assert!(
        a.as_array()
            .unwrap()
            .iter()
            .any(|x| x["requestId"] == pending.as_str() && x["state"] == "pending")
    );
    // The person approves; bob goes on, and the run finishes.
    env.run(&["--team", "t", "approve", &pending]).success();
    // Exactly once: a second decision is refused.
    let again = env
        .run(&["--team", "t", "reject", &pending, "--feedback", "too late"])
        .failure(4);
    assert!(
        again.stderr.contains("already approved by human"),
        "{}",
        again.stderr
    );
    let status = run
        .wait(Duration::from_secs(180))
        .expect("swarm run did not finish after the approval");
    let out = std::fs::read_to_string(env.dir.path().join("run.out")).unwrap();
    assert!(status.success(), "{out}");
    assert!(out.contains("Result: done"), "{out}");
    assert!(swarm_demo::job::run_check(&job).unwrap().0);
    env.run(&["team", "delete", "t"]).success();
}
