//! Work on other hosts lands through the merge queue: a lead on one simulated host, its
//! teammates on two others, each in a worktree of the project made there by swarm, their
//! commits fetched back and landed one at a time behind the project's check. Nothing of
//! the lead's is visible on a teammate's host but what git carried there.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::hosts::Lab;
use crate::sim_hosts::SimHost;
use swarm_demo::job::Job;

/// `swarm ARGS` on the lead's host, with a root, home and ssh settings of its own there.
fn on_lead(lab: &Lab, lead: &SimHost, ssh_config: &str, args: &[&str]) -> Command {
    let mut cmd = lead.command("/run/host-bin/swarm");
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", "/run/host/home")
        .env("TMPDIR", "/tmp")
        .env("SWARM_ROOT", "/run/host/root")
        .env("SWARM_TMUX_SOCKET", "swarm-test-lead")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("SWARM_LOCK_TIMEOUT_MS", "60000")
        .env("SWARM_SSH_CONFIG", ssh_config)
        .env("SWARM_PROVIDER", "scripted")
        .env("SWARM_BASE_URL", lab.model.url())
        .current_dir("/")
        .stdin(Stdio::null());
    cmd
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The last lines of every log on each host, and the run's own output.
fn print_evidence(lab: &Lab, run_out: &Path) {
    eprintln!(
        "--- the run's output\n{}",
        std::fs::read_to_string(run_out).unwrap_or_default()
    );
    for host in &lab.net.hosts {
        let logs = host.exec(&[
            "sh",
            "-c",
            "for f in /run/host/root/teams/*/logs/* /root/.claude/teams/*/logs/*; do [ -f \"$f\" ] && echo \"--- $f\" && tail -n 40 \"$f\"; done; true",
        ]);
        eprintln!(
            "=== host {}\n{}",
            host.name,
            String::from_utf8_lossy(&logs.stdout)
        );
    }
}

#[test]
fn a_lead_on_one_host_lands_the_work_of_teammates_on_two_others() {
    let _heavy = crate::harness::heavy();
    // Each tool takes its teammate a few seconds to write, so that every teammate (they
    // start over ssh, some tenths of a second apart) finds a task to claim.
    let mut script: serde_json::Value = serde_json::from_str(Job::Worktrees.script()).unwrap();
    for rule in script["rules"].as_array_mut().unwrap() {
        if rule["name"] == "write" {
            rule["delay_ms"] = 3000.into();
        }
    }
    let script = swarm_model_server::Script::from_json(&script.to_string()).unwrap();
    let Some(lab) = Lab::start(3, script) else {
        return;
    };
    let (lead, h2, h3) = (&lab.net.hosts[0], &lab.net.hosts[1], &lab.net.hosts[2]);
    let ssh_config = lab.net.give_ssh_to(lead);
    // The lead's machine is h1 here: it has the lead's database role, as the user does.
    crate::hosts::give_database(&lead.home, &lab.db, &lab.db.password_line(&lab.net.gateway));
    let job = lead.dir.join("job");
    swarm_demo::job::make_job(&job, Job::Worktrees).unwrap();
    for (h, role) in [h2, h3].into_iter().zip(&lab.roles[1..]) {
        let target = format!("root@{}", h.address);
        let added = on_lead(
            &lab,
            lead,
            &ssh_config,
            &[
                "host",
                "add",
                &h.name,
                &target,
                "--swarm-bin",
                "/run/host-bin/swarm",
                "--dir",
                "/run/host/project",
                "--db-role",
                role,
            ],
        )
        .output()
        .unwrap();
        assert!(added.status.success(), "{added:?}");
    }

    let run_out = lab.env.dir.path().join("run.out");
    let mut args = vec![
        "run",
        Job::Worktrees.goal(),
        "--team",
        "t",
        "--store",
        &lab.url,
        "--hosts",
        "h2,h3",
        "--no-attach",
        "--cwd",
        "/run/host/job",
        "--permission-mode",
        "acceptEdits",
        "--check",
        "bash lint.sh",
    ];
    let allow = Job::Worktrees.allow();
    for rule in &allow {
        args.extend(["--allow", rule]);
    }
    let mut cmd = on_lead(&lab, lead, &ssh_config, &args);
    cmd.stdout(std::fs::File::create(&run_out).unwrap())
        .stderr(std::fs::File::create(lab.env.dir.path().join("run.err")).unwrap());
    let mut run = crate::harness::Guarded(Some(cmd.spawn().unwrap()));
    let status = run.wait(Duration::from_secs(150));
    let out = std::fs::read_to_string(&run_out).unwrap_or_default();
    if !status.is_some_and(|s| s.success()) || !out.contains("Result: done") {
        print_evidence(&lab, &run_out);
        panic!("the run did not finish well: {status:?}");
    }

    // Each tool landed, one merge per teammate that built any, the check green.
    let log = git(&job, &["log", "--format=%s", "--first-parent"]);
    let merged: std::collections::BTreeSet<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("swarm: merge swarm/t/"))
        .collect();
    assert!(merged.len() >= 2, "{log}\n{out}");
    assert!(swarm_demo::job::run_check(&job).unwrap().0);
    // Each tool was committed on a teammate's host, by the identity the project set: its
    // commit is in exactly one host's repository; and both hosts built some.
    let mut builders = std::collections::BTreeSet::new();
    for file in ["lib/upper.sh", "lib/lower.sh", "lib/reverse.sh"] {
        let commit = git(&job, &["log", "-1", "--format=%H %an", "--", file]);
        let (commit, author) = commit.trim().split_once(' ').unwrap();
        assert_eq!(author, "swarm demo", "{file}");
        let made_on: Vec<&str> = [h2, h3]
            .into_iter()
            .filter(|h| {
                h.exec(&["git", "-C", "/run/host/project", "cat-file", "-e", commit])
                    .status
                    .success()
            })
            .map(|h| h.name.as_str())
            .collect();
        assert_eq!(made_on.len(), 1, "{file}'s commit {commit}: {made_on:?}");
        builders.insert(made_on[0]);
    }
    assert_eq!(builders.len(), 2, "{builders:?}\n{out}");
    // The report says where each teammate ran.
    for h in ["swarm-test-h2", "swarm-test-h3"] {
        assert!(out.contains(&format!(" on {h}:")), "{out}");
    }
    // Every teammate's worktree and branch went once its work was on the target, there
    // and here.
    for h in [h2, h3] {
        let left = h.exec(&["git", "-C", "/run/host/project", "branch", "--list"]);
        assert_eq!(
            String::from_utf8_lossy(&left.stdout).trim(),
            "",
            "{}",
            h.name
        );
        let trees = h.exec(&["git", "-C", "/run/host/project", "worktree", "list"]);
        assert_eq!(
            String::from_utf8_lossy(&trees.stdout).lines().count(),
            1,
            "{}",
            h.name
        );
    }
    // Here only the merge queue's own branch is left (checked out in its worktree: +),
    // as after any run.
    let branches = git(&job, &["branch", "--list", "swarm/*"]);
    assert_eq!(branches.trim(), "+ swarm/t/integration", "{branches}");
}

/// A remote teammate's branch that conflicts with the target is handed back: the merge
/// queue fetched it from the host, found the conflict, and sent the target to the host's
/// repository, where the teammate is to rebase onto it.
#[test]
fn a_conflicting_remote_branch_is_handed_back_with_the_target_sent_to_its_host() {
    use swarm_model_server::{Reply, Script};
    let Some(lab) = Lab::start(1, Script::new().default_reply(Reply::text("Done."))) else {
        return;
    };
    let (env, h1) = (&lab.env, &lab.net.hosts[0]);
    let project = env.dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    git(&project, &["init", "-q", "-b", "main"]);
    git(&project, &["config", "user.name", "swarm test"]);
    git(&project, &["config", "user.email", "test@swarm.invalid"]);
    std::fs::write(project.join("a.txt"), "one\n").unwrap();
    git(&project, &["add", "."]);
    git(&project, &["commit", "-q", "-m", "first"]);
    env.run(&["team", "create", "t", "--store", &lab.url])
        .success();
    // --dry-run shows the worktree's steps on the host, and the teammate working there.
    let shown = crate::harness::run(
        lab.swarm(&["--team", "t", "spawn", "bob", "--host", "h1", "--dry-run"])
            .current_dir(&project),
    );
    assert_eq!(shown.status.code(), Some(0), "{}", shown.stderr);
    let wt = "/run/host/project/swarm-worktrees/t/bob";
    for step in [
        " push ",
        ":refs/heads/swarm/t/bob",
        &format!("worktree add -q {wt} swarm/t/bob"),
        &format!("--cwd={wt}"),
    ] {
        assert!(shown.stdout.contains(step), "{step}:\n{}", shown.stdout);
    }
    assert!(
        !h1.exec(&["test", "-e", "/run/host/project/HEAD"])
            .status
            .success(),
        "the dry run made the host's repository"
    );
    let spawned = crate::harness::run(
        lab.swarm(&["--team", "t", "spawn", "bob", "--host", "h1"])
            .current_dir(&project),
    );
    assert_eq!(spawned.status.code(), Some(0), "{}", spawned.stderr);

    // bob's commit on h1, in his worktree there; another on main here, on the same line.
    let on_h1 = |argv: &[&str]| {
        let out = h1.exec(argv);
        assert!(out.status.success(), "{argv:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    on_h1(&["sh", "-c", &format!("echo bob > {wt}/a.txt")]);
    on_h1(&["git", "-C", wt, "commit", "-q", "-am", "bob's line"]);
    let bobs = on_h1(&["git", "-C", wt, "rev-parse", "HEAD"]);
    std::fs::write(project.join("a.txt"), "main\n").unwrap();
    git(&project, &["commit", "-q", "-am", "main's line"]);
    let main = git(&project, &["rev-parse", "main"]).trim().to_owned();

    let merged = crate::harness::run(
        lab.swarm(&["--team", "t", "--json", "merge"])
            .current_dir(&project),
    );
    let queue: serde_json::Value = serde_json::from_str(&merged.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", merged.stdout, merged.stderr));
    let entry = queue["entries"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["branch"] == "swarm/t/bob"))
        .unwrap_or_else(|| panic!("{queue}"));
    assert_eq!(entry["head"], bobs.as_str(), "{queue}");
    assert_eq!(entry["state"], "conflict", "{queue}");
    assert!(
        entry["handedBack"]
            .as_str()
            .is_some_and(|h| h.starts_with('#')),
        "{queue}"
    );
    // The target is there for bob to rebase onto.
    assert_eq!(
        on_h1(&["git", "-C", wt, "rev-parse", "refs/heads/main"]),
        main
    );
}
