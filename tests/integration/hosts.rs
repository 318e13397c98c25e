//! `swarm host`: hosts recorded by their ssh target, listed, checked over real ssh (sshd in
//! a simulated host: `crate::sim_hosts`) and removed. The check says what a host lacks in
//! one line each and exits 8; the team's database is checked from the host, over its
//! link; a host cut off the network fails its ssh check within the connect timeout.

use std::time::{Duration, Instant};

use crate::harness::{TestEnv, run};
use crate::sim_hosts::SimNet;

/// `swarm ARGS` with the simulated hosts' ssh settings.
fn swarm(env: &TestEnv, net: &SimNet, args: &[&str]) -> crate::harness::Run {
    run(env.swarm(args).env("SWARM_SSH_CONFIG", &net.ssh_config))
}

#[test]
fn a_host_is_added_checked_over_ssh_and_removed() {
    let env = TestEnv::new();
    let Some(net) = SimNet::start(&env, 1) else {
        return;
    };
    net.add_all(&env);
    let h1 = &net.hosts[0];
    let listed = env.run(&["host", "list"]).success();
    assert!(
        listed.stdout.contains(&format!("h1  root@{}", h1.address)),
        "{}",
        listed.stdout
    );
    // The host sees none of the lead's files, and its own.
    let root = env.root.display().to_string();
    assert!(
        !h1.exec(&["test", "-e", &root]).status.success(),
        "the lead's root is visible"
    );
    assert!(
        h1.exec(&["test", "-d", "/run/host/project"])
            .status
            .success()
    );

    // The team's database, on the lead's side, reached over the host's link only.
    let Some(db) = swarm_store_pg::testing::Private::start_on(&[&h1.gateway]) else {
        return;
    };
    let url = db.url_at(&h1.gateway, "postgres");
    let checked = swarm(&env, &net, &["host", "check", "h1", "--store", &url]);
    assert_eq!(
        checked.status.code(),
        Some(0),
        "{}\n{}",
        checked.stdout,
        checked.stderr
    );
    for what in ["ssh", "tmux", "git", "swarm", "project", "database"] {
        assert!(
            checked
                .stdout
                .lines()
                .any(|l| l.starts_with("ok") && l.contains(what)),
            "{what}:\n{}",
            checked.stdout
        );
    }

    // The server's socket is on the lead's machine: not there.
    let local = swarm(
        &env,
        &net,
        &["host", "check", "h1", "--store", &db.url("postgres")],
    );
    assert_eq!(local.status.code(), Some(8), "{}", local.stdout);
    assert!(local.stdout.contains("FAIL database"), "{}", local.stdout);

    // A swarm that is not there, and a project that is not: each one line, exit 8.
    env.run(&[
        "host",
        "add",
        "wrong",
        &format!("root@{}:22", h1.address),
        "--swarm-bin",
        "/nonexistent/swarm",
        "--dir",
        "/nonexistent/project",
    ])
    .success();
    let wrong = swarm(&env, &net, &["host", "check", "wrong"]);
    assert_eq!(wrong.status.code(), Some(8), "{}", wrong.stdout);
    let failed: Vec<&str> = wrong
        .stdout
        .lines()
        .filter(|l| l.starts_with("FAIL"))
        .collect();
    assert_eq!(failed.len(), 2, "{}", wrong.stdout);
    assert!(
        wrong.stderr.contains("failed the check of swarm, project"),
        "{}",
        wrong.stderr
    );

    // Cut off: ssh fails, within its connect timeout, and the rest is not tried.
    h1.cut();
    let start = Instant::now();
    let away = swarm(&env, &net, &["host", "check", "h1"]);
    assert_eq!(away.status.code(), Some(8), "{}", away.stdout);
    assert!(away.stdout.starts_with("FAIL ssh"), "{}", away.stdout);
    assert_eq!(away.stdout.lines().count(), 1, "{}", away.stdout);
    assert!(start.elapsed() < Duration::from_secs(30));
    h1.restore();

    env.run(&["host", "remove", "wrong"]).success();
    env.run(&["host", "remove", "h1"]).success();
    let gone = env.run(&["host", "check", "h1"]).failure(3);
    assert!(
        gone.stderr.contains("no host named 'h1'"),
        "{}",
        gone.stderr
    );
}

#[test]
fn bad_hosts_are_refused_in_one_line() {
    let env = TestEnv::new();
    for (args, code) in [
        (vec!["host", "add", "x", "--", "-oProxyCommand=evil"], 2),
        (vec!["host", "add", "x", "root@h:99999"], 2),
        (vec!["host", "add", "bad name", "root@h"], 2),
        (vec!["host", "remove", "nothere"], 3),
    ] {
        let out = env.run(&args).failure(code);
        assert_eq!(
            out.stderr.trim().lines().count(),
            1,
            "{args:?}: {}",
            out.stderr
        );
    }
    env.run(&["host", "add", "x", "root@h"]).success();
    let again = env.run(&["host", "add", "x", "root@other"]).failure(4);
    assert!(again.stderr.contains("exists already"), "{}", again.stderr);
}
