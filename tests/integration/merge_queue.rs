//! The merge queue by hand (`swarm merge`): real git repositories, teammate branches and
//! worktree records made directly (no model needed), the check gate, conflicts, a dirty
//! user checkout and a crash mid-queue.

use std::path::{Path, PathBuf};

use serde_json::Value;
use swarm_store::worktrees::{Record, RecordState};

use crate::harness::{Run, TestEnv, git, run};

/// A repository with a local identity (the integration worktree commits merges).
fn repo(env: &TestEnv) -> PathBuf {
    let repo = env.repo("repo");
    git(&repo, &["config", "user.name", "swarm test"]);
    git(&repo, &["config", "user.email", "test@example.com"]);
    repo
}

/// A teammate branch `swarm/t/<agent>` in its own worktree with one commit writing
/// `files`, and its worktree record.
fn teammate(env: &TestEnv, repo: &Path, agent: &str, files: &[(&str, &str)]) {
    let git_dir = repo.join(".git").canonicalize().unwrap();
    let path = git_dir.join("swarm-worktrees/t").join(agent);
    let branch = format!("swarm/t/{agent}");
    let base = git(repo, &["rev-parse", "HEAD"]).trim().to_owned();
    git(
        repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            &branch,
            path.to_str().unwrap(),
        ],
    );
    for (name, content) in files {
        std::fs::write(path.join(name), content).unwrap();
    }
    git(&path, &["add", "."]);
    git(&path, &["commit", "-q", "-m", &format!("{agent}'s work")]);
    let record = Record {
        agent: agent.to_owned(),
        git_dir,
        path,
        branch,
        name: format!("swarm-t-{agent}"),
        base,
        state: RecordState::Kept,
        created_at: 0,
        host: None,
    };
    env.teams()
        .open(&env.team_name("t"))
        .unwrap()
        .worktrees()
        .save_worktree(&record)
        .unwrap();
}

fn merge(env: &TestEnv, repo: &Path, extra: &[&str]) -> Run {
    let mut cmd = env.swarm(&["--team", "t", "merge"]);
    cmd.args(extra).current_dir(repo);
    run(&mut cmd)
}

fn status(env: &TestEnv) -> Value {
    serde_json::from_str(
        &env.run(&["--team", "t", "--json", "merge", "--status"])
            .success()
            .stdout,
    )
    .unwrap()
}

fn states(env: &TestEnv) -> Vec<(String, String)> {
    status(env)["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["agent"].as_str().unwrap().to_owned(),
                e["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

/// The files `main` holds.
fn files_on(repo: &Path, branch: &str) -> Vec<String> {
    git(repo, &["ls-tree", "--name-only", branch])
        .lines()
        .map(str::to_owned)
        .collect()
}

fn check_logging_to(log: &Path) -> String {
    format!(
        "ls *.txt | tr '\\n' ' ' >> {} && echo >> {}",
        log.display(),
        log.display()
    )
}

#[test]
fn three_branches_land_in_queue_order_with_the_check_after_each() {
    let env = TestEnv::with_team("t", &[]);
    let repo = repo(&env);
    for a in ["alice", "bob", "carol"] {
        teammate(&env, &repo, a, &[(&format!("{a}.txt"), "hi\n")]);
    }
    // bob's finished task is named in his merge.
    let store = env.store("t");
    let tasks = store.tasks();
    let task = tasks
        .create(swarm_store::tasks::NewTask {
            subject: "bob's part".into(),
            ..Default::default()
        })
        .unwrap();
    tasks
        .update(
            &task.id,
            swarm_store::tasks::TaskPatch {
                owner: Some(Some("bob".into())),
                status: Some(swarm_store::tasks::Status::Completed),
                ..Default::default()
            },
        )
        .unwrap();
    let log = env.dir.path().join("check.log");
    let out = merge(&env, &repo, &["--check", &check_logging_to(&log)]).success();
    assert!(out.stdout.contains("main is at"), "{}", out.stdout);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "alice.txt \nalice.txt bob.txt \nalice.txt bob.txt carol.txt \n"
    );
    let subjects = git(&repo, &["log", "--first-parent", "--format=%s", "main"]);
    let subjects: Vec<&str> = subjects.lines().collect();
    assert_eq!(subjects.len(), 4, "{subjects:?}");
    for (s, a) in subjects.iter().zip(["carol", "bob", "alice"]) {
        assert!(s.contains(&format!("swarm/t/{a}")) && s.contains(a), "{s}");
    }
    assert!(
        subjects[1].contains(&format!("task {}", task.id)),
        "{subjects:?}"
    );
    // The user's clean checkout of main was fast-forwarded.
    assert!(repo.join("carol.txt").exists());
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert_eq!(
        states(&env),
        pairs(&[("alice", "merged"), ("bob", "merged"), ("carol", "merged")])
    );
    // Their work is on main: the kept worktrees and branches go, through the usual removal.
    assert!(
        out.stdout.contains("removed alice's worktree"),
        "{}",
        out.stdout
    );
    assert_eq!(git(&repo, &["branch", "--list", "swarm/t/a*"]), "");
    assert!(
        env.teams()
            .open(&env.team_name("t"))
            .unwrap()
            .worktrees()
            .all_worktrees()
            .unwrap()
            .is_empty()
    );
    // Nothing new: a second run merges nothing and succeeds.
    let head = git(&repo, &["rev-parse", "main"]);
    merge(&env, &repo, &[]).success();
    assert_eq!(git(&repo, &["rev-parse", "main"]), head);
    assert_eq!(states(&env).len(), 3);
    // Deleting the team takes the integration worktree and branch: main has it all.
    env.run(&["team", "delete", "t"]).success();
    assert_eq!(git(&repo, &["branch", "--list", "swarm/*"]), "");
    assert_eq!(git(&repo, &["worktree", "list"]).lines().count(), 1);
}

#[test]
fn a_branch_whose_check_fails_is_not_merged_and_the_next_one_is() {
    let env = TestEnv::with_team("t", &[]);
    let repo = repo(&env);
    for a in ["alice", "bob", "carol"] {
        teammate(&env, &repo, a, &[(&format!("{a}.txt"), "hi\n")]);
    }
    let out = merge(
        &env,
        &repo,
        &[
            "--check",
            "if test -f bob.txt; then echo bob broke it; exit 1; fi",
        ],
    )
    .failure(4);
    assert!(out.stderr.contains("held"), "{}", out.stderr);
    assert_eq!(
        states(&env),
        pairs(&[
            ("alice", "merged"),
            ("bob", "check-failed"),
            ("carol", "merged")
        ])
    );
    let bob = &status(&env)["entries"][1];
    assert!(
        bob["checkOutput"]
            .as_str()
            .unwrap()
            .contains("bob broke it"),
        "{bob}"
    );
    let files = files_on(&repo, "main");
    assert!(files.contains(&"alice.txt".to_owned()) && files.contains(&"carol.txt".to_owned()));
    assert!(!files.contains(&"bob.txt".to_owned()), "{files:?}");
}

#[test]
fn the_second_of_two_branches_editing_the_same_lines_is_held_as_a_conflict() {
    let env = TestEnv::with_team("t", &[]);
    let repo = repo(&env);
    teammate(&env, &repo, "alice", &[("README.md", "# alice's title\n")]);
    teammate(&env, &repo, "bob", &[("README.md", "# bob's title\n")]);
    let out = merge(&env, &repo, &[]).failure(4);
    assert!(out.stdout.contains("README.md"), "{}", out.stdout);
    assert_eq!(
        states(&env),
        pairs(&[("alice", "merged"), ("bob", "conflict")])
    );
    assert_eq!(status(&env)["entries"][1]["conflicts"][0], "README.md");
    assert_eq!(git(&repo, &["show", "main:README.md"]), "# alice's title\n");
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
}

/// bob's worktree, as the teammate helper made it.
fn worktree_of(repo: &Path, agent: &str) -> PathBuf {
    repo.join(".git")
        .canonicalize()
        .unwrap()
        .join("swarm-worktrees/t")
        .join(agent)
}

#[test]
fn a_conflict_is_handed_back_to_its_teammate_and_lands_once_resolved() {
    let env = TestEnv::with_team("t", &["alice", "bob"]);
    let repo = repo(&env);
    teammate(&env, &repo, "alice", &[("README.md", "# alice's title\n")]);
    teammate(&env, &repo, "bob", &[("README.md", "# bob's title\n")]);
    let out = merge(&env, &repo, &[]).failure(4);
    assert!(
        out.stdout.contains("handed back to bob as task #1"),
        "{}",
        out.stdout
    );
    let watched = env
        .run(&["watch", "t", "--once", "--width", "220", "--height", "30"])
        .success()
        .stdout;
    assert!(
        watched.contains("merge queue: 1 merged · 1 conflict"),
        "{watched}"
    );
    let task = env.store("t").tasks().get("1").unwrap();
    assert_eq!(task.owner.as_deref(), Some("bob"), "{task:?}");
    assert_eq!(task.status, swarm_store::tasks::Status::InProgress);
    assert!(
        task.subject
            .contains("Rebase swarm/t/bob onto main and resolve conflicts in README.md"),
        "{task:?}"
    );
    assert!(
        crate::harness::inbox_texts(&env, "t", "bob")
            .iter()
            .any(|t| t.contains("task_assignment") && t.contains("README.md")),
        "bob was not told"
    );
    // bob does what the task says: rebases onto main and resolves the conflict.
    let wt = worktree_of(&repo, "bob");
    let _ = crate::harness::run(
        std::process::Command::new("git")
            .args(["rebase", "main"])
            .current_dir(&wt),
    );
    std::fs::write(wt.join("README.md"), "# alice's and bob's title\n").unwrap();
    git(&wt, &["add", "README.md"]);
    git(&wt, &["-c", "core.editor=true", "rebase", "--continue"]);
    merge(&env, &repo, &[]).success();
    assert_eq!(
        git(&repo, &["show", "main:README.md"]),
        "# alice's and bob's title\n"
    );
    assert_eq!(
        states(&env).last().unwrap(),
        &pairs(&[("bob", "merged")])[0]
    );
}

#[test]
fn a_branch_is_handed_back_at_most_twice_then_held_for_a_person() {
    let env = TestEnv::with_team("t", &["alice", "bob"]);
    let repo = repo(&env);
    teammate(&env, &repo, "alice", &[("README.md", "# alice's title\n")]);
    teammate(&env, &repo, "bob", &[("README.md", "# bob's title\n")]);
    merge(&env, &repo, &[]).failure(4);
    let wt = worktree_of(&repo, "bob");
    // bob commits again twice without resolving anything: each is a new round.
    for round in 2..=3 {
        std::fs::write(
            wt.join("README.md"),
            format!("# bob's title, take {round}\n"),
        )
        .unwrap();
        git(&wt, &["commit", "-qam", "again"]);
        let out = merge(&env, &repo, &[]).failure(4);
        if round == 2 {
            assert!(out.stdout.contains("as task #2"), "{}", out.stdout);
        } else {
            assert!(
                out.stdout
                    .contains("held for you: handed back 2 times already"),
                "{}",
                out.stdout
            );
        }
    }
    assert_eq!(env.store("t").tasks().list().unwrap().len(), 2);
}

#[test]
fn a_dirty_user_checkout_is_never_touched_and_the_result_stays_on_the_integration_branch() {
    let env = TestEnv::with_team("t", &[]);
    let repo = repo(&env);
    teammate(&env, &repo, "alice", &[("alice.txt", "hi\n")]);
    std::fs::write(repo.join("README.md"), "my own edit\n").unwrap();
    std::fs::write(repo.join("scratch.txt"), "mine\n").unwrap();
    let before_status = git(&repo, &["status", "--porcelain"]);
    let before_main = git(&repo, &["rev-parse", "main"]);
    let out = merge(&env, &repo, &[]).success();
    assert!(
        out.stdout.contains("swarm/t/integration") && out.stdout.contains("uncommitted"),
        "{}",
        out.stdout
    );
    assert_eq!(git(&repo, &["status", "--porcelain"]), before_status);
    assert_eq!(git(&repo, &["rev-parse", "main"]), before_main);
    assert_eq!(
        std::fs::read_to_string(repo.join("README.md")).unwrap(),
        "my own edit\n"
    );
    assert!(!repo.join("alice.txt").exists());
    assert_eq!(
        git(&repo, &["show", "swarm/t/integration:alice.txt"]),
        "hi\n"
    ); // Not on main yet: alice's branch and worktree stay.
    assert_ne!(git(&repo, &["branch", "--list", "swarm/t/alice"]), "");
    assert!(
        env.store("t")
            .worktrees()
            .worktree("alice")
            .unwrap()
            .is_some()
    );
    // A forced delete keeps the integration branch, which holds what main lacks.
    let out = env.run(&["team", "delete", "t", "--force"]).success();
    assert!(
        out.stdout.contains("kept branch swarm/t/integration")
            || out.stderr.contains("kept branch swarm/t/integration"),
        "{}{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(
        git(&repo, &["show", "swarm/t/integration:alice.txt"]),
        "hi\n"
    );
}

#[test]
fn a_crash_mid_queue_resumes_without_merging_anything_twice() {
    let env = TestEnv::with_team("t", &[]);
    let repo = repo(&env);
    for a in ["alice", "bob", "carol"] {
        teammate(&env, &repo, a, &[(&format!("{a}.txt"), "hi\n")]);
    }
    let log = env.dir.path().join("check.log");
    let check = check_logging_to(&log);
    let mut cmd = env.swarm(&["--team", "t", "merge", "--check", &check]);
    cmd.current_dir(&repo)
        .env("SWARM_FAULT", "merge.after_merge:kill@2");
    let crashed = run(&mut cmd);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&crashed.status),
        Some(9),
        "{crashed:?}"
    );
    assert_eq!(
        states(&env),
        pairs(&[("alice", "merged"), ("bob", "merging"), ("carol", "queued")])
    );
    merge(&env, &repo, &["--check", &check]).success();
    assert_eq!(
        states(&env),
        pairs(&[("alice", "merged"), ("bob", "merged"), ("carol", "merged")])
    );
    let merges = git(&repo, &["log", "--merges", "--format=%s", "main"]);
    assert_eq!(merges.lines().count(), 3, "{merges}");
    for a in ["alice", "bob", "carol"] {
        assert_eq!(
            merges.matches(&format!("swarm/t/{a} ")).count(),
            1,
            "{merges}"
        );
    }
    // Every kept merge was checked: alice's before the crash, bob's and carol's after.
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "alice.txt \nalice.txt bob.txt \nalice.txt bob.txt carol.txt \n"
    );
}

#[test]
fn bad_input_is_refused_with_its_exit_code_and_no_worktrees_is_nothing_to_merge() {
    let env = TestEnv::with_team("t", &[]);
    let repo = repo(&env);
    let out = merge(&env, &repo, &[]).success();
    assert!(out.stdout.contains("nothing to merge"), "{}", out.stdout);
    teammate(&env, &repo, "alice", &[("alice.txt", "hi\n")]);
    let out = merge(&env, &repo, &["--merge-strategy", "octopus"]).failure(2);
    assert!(
        out.stderr.contains("merge, rebase or squash"),
        "{}",
        out.stderr
    );
    let out = merge(&env, &repo, &["--into", "no-such-branch"]).failure(2);
    assert!(out.stderr.contains("--into"), "{}", out.stderr);
    env.run(&["merge", "nope"]).failure(3);
    // None of that queued anything; a dry run lists without merging.
    assert!(states(&env).is_empty());
    let head = git(&repo, &["rev-parse", "main"]);
    let out = merge(&env, &repo, &["--dry-run"]).success();
    assert!(
        out.stdout.contains("would merge swarm/t/alice"),
        "{}",
        out.stdout
    );
    assert_eq!(git(&repo, &["rev-parse", "main"]), head);
    assert!(states(&env).is_empty());
}

#[test]
fn rebase_and_squash_land_without_a_merge_commit() {
    for strategy in ["rebase", "squash"] {
        let env = TestEnv::with_team("t", &[]);
        let repo = repo(&env);
        teammate(&env, &repo, "alice", &[("alice.txt", "hi\n")]);
        teammate(&env, &repo, "bob", &[("bob.txt", "hi\n")]);
        merge(&env, &repo, &["--merge-strategy", strategy]).success();
        assert_eq!(git(&repo, &["log", "--merges", "--oneline", "main"]), "");
        let files = files_on(&repo, "main");
        assert!(
            files.contains(&"alice.txt".to_owned()) && files.contains(&"bob.txt".to_owned()),
            "{strategy}: {files:?}"
        );
        assert_eq!(
            states(&env),
            pairs(&[("alice", "merged"), ("bob", "merged")]),
            "{strategy}"
        );
    }
}

#[test]
fn without_check_the_projects_swarm_check_setting_gates_the_merge() {
    let env = TestEnv::with_team("t", &[]);
    let repo = repo(&env);
    std::fs::create_dir_all(repo.join(".claude")).unwrap();
    std::fs::write(
        repo.join(".claude/settings.json"),
        r#"{"swarm": {"check": "echo from settings; test ! -f alice.txt"}}"#,
    )
    .unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "settings"]);
    teammate(&env, &repo, "alice", &[("alice.txt", "hi\n")]);
    merge(&env, &repo, &[]).failure(4);
    assert_eq!(states(&env), pairs(&[("alice", "check-failed")]));
    let out = &status(&env)["entries"][0]["checkOutput"];
    assert!(out.as_str().unwrap().contains("from settings"), "{out}");
    assert!(!files_on(&repo, "main").contains(&"alice.txt".to_owned()));
}

#[test]
fn a_merge_that_fails_for_another_reason_than_a_conflict_is_an_error_and_stays_queued() {
    let env = TestEnv::with_team("t", &[]);
    let repo = repo(&env);
    teammate(&env, &repo, "alice", &[("alice.txt", "hi\n")]);
    // A pre-merge-commit hook refuses: git fails with no conflicted file.
    let hooks = repo.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let hook = hooks.join("pre-merge-commit");
    std::fs::write(&hook, "#!/bin/sh\necho refused by hook >&2\nexit 1\n").unwrap();
    let mut perms = std::fs::metadata(&hook).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&hook, perms).unwrap();
    let out = merge(&env, &repo, &[]).failure(1);
    assert!(out.stderr.contains("refused by hook"), "{}", out.stderr);
    assert_eq!(states(&env), pairs(&[("alice", "queued")]));
    std::fs::remove_file(&hook).unwrap();
    merge(&env, &repo, &[]).success();
    assert_eq!(states(&env), pairs(&[("alice", "merged")]));
}
