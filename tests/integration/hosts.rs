//! `swarm host`: hosts recorded by their ssh target, listed, checked over real ssh (sshd in
//! a simulated host: `crate::sim_hosts`) and removed. The check says what a host lacks in
//! one line each and exits 8; the team's database is checked from the host, over its
//! link; a host cut off the network fails its ssh check within the connect timeout.

use std::time::{Duration, Instant};

use crate::harness::{Backend, ScriptedModel, TestEnv, member_json, run};
use crate::pg_team::BEAT_TIMEOUT_MS;
use crate::sim_hosts::SimNet;

/// `swarm ARGS` with the simulated hosts' ssh settings.
fn swarm(env: &TestEnv, net: &SimNet, args: &[&str]) -> crate::harness::Run {
    run(env.swarm(args).env("SWARM_SSH_CONFIG", &net.ssh_config))
}

/// `n` simulated hosts, recorded with `swarm host add`; a PostgreSQL server on the lead's
/// side of their links, and `url` its database there; the scripted model beside it.
pub(crate) struct Lab {
    pub env: TestEnv,
    pub net: SimNet,
    pub db: swarm_store_pg::testing::Private,
    /// Each host's database role, in the order of `net.hosts`.
    pub roles: Vec<String>,
    pub url: String,
    pub model: ScriptedModel,
}

impl Lab {
    /// `None` where simulated hosts or PostgreSQL cannot run (said loudly).
    pub fn start(n: usize, script: swarm_model_server::Script) -> Option<Lab> {
        let env = TestEnv::new();
        let net = SimNet::start(&env, n)?;
        let db = swarm_store_pg::testing::Private::start_on(&[&net.gateway])?;
        // Each host has a database role of its own, which may change only its own agents'
        // rows, made as `swarm host add --db-role` tells an administrator.
        let roles: Vec<_> = net.hosts.iter().map(|h| db.host_role(&h.name)).collect();
        let names: Vec<String> = roles.iter().map(|r| r.name.clone()).collect();
        net.add_all_as(&env, &names);
        // Checked in full over every link; each side's password and root certificate are
        // its own user's, where `psql` would find them.
        let url = db.url_at(&net.gateway, Some("verify-full"));
        give_database(&env.home, &db, &db.password_line(&net.gateway));
        for (h, role) in net.hosts.iter().zip(&roles) {
            give_database(&h.home, &db, &db.password_line_for(&net.gateway, role));
        }
        let model = ScriptedModel::start_on_link(script, &net.gateway);
        Some(Lab {
            env,
            net,
            db,
            roles: names,
            url,
            model,
        })
    }

    /// `swarm ARGS` reaching the hosts, its model the scripted one.
    pub fn swarm(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = self.env.swarm(args);
        cmd.env("SWARM_SSH_CONFIG", &self.net.ssh_config)
            .env("SWARM_PROVIDER", "scripted")
            .env("SWARM_BASE_URL", self.model.url());
        cmd
    }

    /// Waits until bob of team `t` runs on h1 (its state names h1's hostname); fails the
    /// test, with the evidence, when it does not within a minute.
    fn wait_until_bob_is_on_h1(&self) {
        let store = self.env.store("t");
        let bob = swarm_util::names::AgentName::new("bob").unwrap();
        let there = crate::harness::wait_until(Duration::from_secs(60), || {
            store
                .agents()
                .read_state(&bob)
                .is_some_and(|s| s.host.as_deref() == Some("swarm-test-h1"))
        });
        if !there {
            self.env.print_evidence();
        }
        assert!(
            there,
            "bob did not start on h1: {:?}",
            store.agents().read_state(&bob)
        );
    }

    /// `swarm run GOAL` of team `t` on the database, unattached, with `extra` flags;
    /// stopped when the guard drops.
    fn run_team(&self, goal: &str, extra: &[&str]) -> crate::harness::Guarded {
        let mut args = vec![
            "run",
            goal,
            "--team",
            "t",
            "--store",
            &self.url,
            "--no-attach",
        ];
        args.extend_from_slice(extra);
        let mut cmd = self.swarm(&args);
        cmd.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        crate::harness::Guarded(Some(cmd.spawn().unwrap()))
    }
}

/// What a user keeps in `home` to reach the team's database `db` at `address`: its
/// password in `~/.pgpass`, the root that signed its certificate in
/// `~/.postgresql/root.crt`.
pub(crate) fn give_database(
    home: &std::path::Path,
    db: &swarm_store_pg::testing::Private,
    pgpass: &str,
) {
    crate::harness::write_private(&home.join(".pgpass"), pgpass);
    let root = home.join(".postgresql/root.crt");
    std::fs::create_dir_all(root.parent().unwrap()).unwrap();
    std::fs::copy(db.ca(), root).unwrap();
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
    let url = db.url_at(&h1.gateway, Some("verify-full"));
    give_database(&env.home, &db, &db.password_line(&h1.gateway));
    // The lead has the password; the host does not: its teammates could not connect, so
    // the check fails, as they would.
    let root = h1.home.join(".postgresql/root.crt");
    std::fs::create_dir_all(root.parent().unwrap()).unwrap();
    std::fs::copy(db.ca(), &root).unwrap();
    let lacking = swarm(&env, &net, &["host", "check", "h1", "--store", &url]);
    assert_eq!(lacking.status.code(), Some(8), "{}", lacking.stdout);
    assert!(
        lacking
            .stdout
            .lines()
            .any(|l| l.starts_with("FAIL") && l.contains("database") && l.contains("password")),
        "{}",
        lacking.stdout
    );
    give_database(&h1.home, &db, &db.password_line(&h1.gateway));
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

    // The server's socket is on the lead's machine: no host can reach it, said at once.
    let local = swarm(
        &env,
        &net,
        &["host", "check", "h1", "--store", &db.url("postgres")],
    );
    assert_eq!(local.status.code(), Some(2), "{}", local.stderr);
    assert!(
        local.stderr.contains("Unix socket") && local.stderr.trim().lines().count() == 1,
        "{}",
        local.stderr
    );

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
        (
            vec!["host", "add", "x", "root@h", "--db-role", "Bad; DROP"],
            2,
        ),
        (
            vec!["host", "add", "x", "root@h", "--db-role", "swarm_host"],
            2,
        ),
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
    let one_role = env.run(&["host", "add", "x", "root@h"]).success();
    assert!(one_role.stdout.contains("--db-role"), "{}", one_role.stdout);
    let again = env.run(&["host", "add", "x", "root@other"]).failure(4);
    assert!(again.stderr.contains("exists already"), "{}", again.stderr);
    // A role of its own: what an administrator runs to make it, and where it is kept.
    let added = env
        .run(&["host", "add", "y", "root@h", "--db-role", "swarm_y"])
        .success();
    assert!(
        added
            .stdout
            .contains("CREATE ROLE swarm_y LOGIN IN ROLE swarm_host;"),
        "{}",
        added.stdout
    );
    let listed = env.run(&["host", "list"]).success();
    assert!(listed.stdout.contains("role swarm_y"), "{}", listed.stdout);
}

/// A host ssh cannot reach is its own exit code (11, unreachable): one line naming the
/// host, and no teammate in the roster.
#[test]
fn a_host_ssh_cannot_reach_is_exit_11_in_one_line() {
    let Some(env) = TestEnv::with_team_on(Backend::Postgres, "t", &[]) else {
        return;
    };
    env.run(&["host", "add", "gone", "root@127.0.0.1:1", "--dir", "/srv/p"])
        .success();
    let out = run(env
        .swarm(&["--team", "t", "spawn", "bob", "--host", "gone"])
        .env("ANTHROPIC_API_KEY", SECRET))
    .failure(11);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("gone"), "{}", out.stderr);
    assert!(!out.stderr.contains(SECRET), "{}", out.stderr);
    let status = env.run(&["--team", "t", "status", "--json"]).success();
    assert!(!status.stdout.contains("\"bob\""), "{}", status.stdout);
}

/// A key the remote teammate must get, and nothing else may show.
const SECRET: &str = "sk-ant-test-hosts-0042";

/// A PostgreSQL team whose teammates run on two simulated hosts, spawned with `swarm spawn
/// --host` (argv over ssh, the team's database and model reached over the hosts' links).
/// alice, on h1, takes the task; h1 is cut off the network: alice's heartbeat stops, she
/// is declared dead, her task goes back and the lead is told once; bob, on h2, takes it and
/// finishes it. When h1 comes back, alice finds herself fenced and stops: the task is
/// bob's, done once.
#[test]
fn teammates_on_two_hosts_share_a_team_and_a_lost_host_gives_its_task_back() {
    // alice's answer takes 15 s: h1 is cut before it comes, however slow the machine (at
    // 3 s a loaded CI run once saw her finish first).
    let Some(lab) = Lab::start(2, ScriptedModel::slow_alice_quick_bob(15_000)) else {
        return;
    };
    let (env, net) = (&lab.env, &lab.net);
    let (h1, h2) = (&net.hosts[0], &net.hosts[1]);
    env.run(&["team", "create", "t", "--store", &lab.url])
        .success();
    env.run(&["--team", "t", "task", "add", "build the thing"])
        .success();
    let spawn = |name: &str, host: &str| {
        let out = run(lab
            .swarm(&["--team", "t", "spawn", name, "--host", host])
            .env("ANTHROPIC_API_KEY", SECRET));
        assert_eq!(out.status.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    };
    let evidence = || {
        env.print_evidence();
        for h in &net.hosts {
            let logs = h.exec(&["sh", "-c", "tail -n 30 /root/.claude/teams/t/logs/*.log"]);
            eprintln!(
                "--- {} logs:\n{}",
                h.name,
                String::from_utf8_lossy(&logs.stdout)
            );
        }
    };
    spawn("alice", "h1");
    let store = env.store("t");
    let alice = swarm_util::names::AgentName::new("alice").unwrap();
    let holding = crate::harness::wait_until(Duration::from_secs(60), || {
        store
            .agents()
            .read_state(&alice)
            .is_some_and(|s| s.current_task.as_deref() == Some("1"))
    });
    if !holding {
        evidence();
    }
    assert!(holding, "alice never took the task on h1");
    let state = store.agents().read_state(&alice).unwrap();
    assert_eq!(state.host.as_deref(), Some("swarm-test-h1"), "{state:?}");
    // Its key reached it through the session's environment for a moment, never a command
    // line, and is not left in the host's tmux.
    // Its pid is the host's: only the host's /proc knows it.
    let proc_file = |what: &str| {
        let read = h1.exec(&["cat", &format!("/proc/{}/{what}", state.pid)]);
        assert!(read.status.success(), "{read:?}");
        read.stdout
    };
    assert!(!String::from_utf8_lossy(&proc_file("cmdline")).contains(SECRET));
    assert!(String::from_utf8_lossy(&proc_file("environ")).contains(SECRET));
    let tmux_env = h1.exec(&["tmux", "-L", "swarm-t", "show-environment", "-t", "t-alice"]);
    assert!(tmux_env.status.success(), "{tmux_env:?}");
    assert!(!String::from_utf8_lossy(&tmux_env.stdout).contains(SECRET));
    let global = h1.exec(&["tmux", "-L", "swarm-t", "show-environment", "-g"]);
    assert!(!String::from_utf8_lossy(&global.stdout).contains(SECRET));
    spawn("bob", "h2");
    // No ssh is left open: the teammates live in their hosts' sessions, not on a
    // connection that could drop.
    let ssh_to = |address: &str| {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.starts_with("ssh ") && c.contains(&format!("root@{address}")))
            .count()
    };
    assert_eq!(ssh_to(&h1.address) + ssh_to(&h2.address), 0);
    let shown = env.status_json("t", BEAT_TIMEOUT_MS);
    assert_eq!(
        member_json(&shown, "alice")["host"],
        "swarm-test-h1",
        "{shown}"
    );

    h1.cut();
    let mut dead = serde_json::Value::Null;
    let declared = crate::harness::wait_until(Duration::from_secs(60), || {
        dead = member_json(&env.status_json("t", BEAT_TIMEOUT_MS), "alice");
        dead["state"] == "dead"
    });
    if !declared {
        evidence();
    }
    assert!(declared, "alice was never declared dead: {dead}");
    assert!(
        dead["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("heartbeat stopped"),
        "{dead}"
    );
    let done = crate::harness::wait_until(Duration::from_secs(60), || {
        store.tasks().get("1").is_ok_and(|t| {
            t.status == swarm_store::tasks::Status::Completed && t.owner.as_deref() == Some("bob")
        })
    });
    if !done {
        evidence();
    }
    assert!(
        done,
        "bob never finished alice's task: {:?}",
        store.tasks().get("1")
    );

    h1.restore();
    let stopped = crate::harness::wait_until(Duration::from_secs(60), || !h1.alive(state.pid));
    if !stopped {
        evidence();
    }
    assert!(stopped, "alice did not stop once back");
    // Stopped because the database refused her as fenced, not for any other reason: her
    // log on h1 says so (her exit code is in no state: the database refuses her writes).
    let log = h1.exec(&["cat", "/root/.claude/teams/t/logs/alice.log"]);
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(log.contains("this process was declared dead"), "{log}");
    let task = store.tasks().get("1").unwrap();
    assert_eq!(task.owner.as_deref(), Some("bob"), "{task:?}");
    env.status_json("t", BEAT_TIMEOUT_MS);
    let told = env
        .lead_inbox("t")
        .into_iter()
        .filter(|e| e.text.contains("teammate_terminated") && e.text.contains("alice"))
        .count();
    assert_eq!(told, 1);
}

/// A team whose teammates are all on other hosts, spawned by hand as the README shows, is
/// supervised on the lead's machine (issue 35 item 2): the first spawn opens the team
/// window with the lead in it, and when the host is cut off its teammate is declared dead
/// and its task goes back, with nobody running `swarm status`.
#[test]
fn a_team_spawned_on_hosts_by_hand_is_supervised_and_a_cut_host_gives_its_task_back() {
    let Some(lab) = Lab::start(1, ScriptedModel::slow_alice_quick_bob(60_000)) else {
        return;
    };
    let (env, h1) = (&lab.env, &lab.net.hosts[0]);
    env.run(&["team", "create", "t", "--store", &lab.url])
        .success();
    env.run(&["--team", "t", "task", "add", "build the thing"])
        .success();
    let out = run(lab
        .swarm(&["--team", "t", "spawn", "alice", "--host", "h1"])
        .env("ANTHROPIC_API_KEY", SECRET));
    assert_eq!(out.status.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    let store = env.store("t");
    let alice = swarm_util::names::AgentName::new("alice").unwrap();
    let lead = swarm_util::names::AgentName::lead();
    let holding = crate::harness::wait_until(Duration::from_secs(60), || {
        store
            .agents()
            .read_state(&alice)
            .is_some_and(|s| s.current_task.as_deref() == Some("1"))
            && store.agents().lead_running()
    });
    if !holding {
        env.print_evidence();
    }
    assert!(holding, "alice never took the task, or no lead runs here");
    // The supervisor is the lead, in the team window on this machine.
    let lead_state = store.agents().read_state(&lead).unwrap();
    assert_eq!(
        lead_state.host.as_deref(),
        Some(swarm_store::liveness::this_host()),
        "{lead_state:?}"
    );

    h1.cut();
    let returned = crate::harness::wait_until(Duration::from_secs(60), || {
        store
            .tasks()
            .get("1")
            .is_ok_and(|t| t.owner.as_deref() != Some("alice"))
    });
    if !returned {
        env.print_evidence();
    }
    assert!(
        returned,
        "alice's task never came back: {:?}",
        store.tasks().get("1")
    );
    // The lead noticed, by the heartbeat (it says so once the task is back).
    let log = env.root.join("teams/t/logs/team-lead.log");
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        crate::harness::wait_until(Duration::from_secs(30), || said()
            .contains("alice was terminated (its heartbeat stopped")),
        "{}",
        said()
    );
    h1.restore();
}

/// Steering teammates on another host: `swarm shutdown --force` ends a remote teammate's
/// session over ssh (never a local signal) and it stops cleanly, its session gone there;
/// a remote teammate killed with `kill -9` is noticed by its silence, as a lost host is.
#[test]
fn a_remote_teammate_is_shut_down_over_ssh_and_one_killed_there_is_noticed() {
    use swarm_model_server::{Reply, Script};
    let Some(lab) = Lab::start(1, Script::new().default_reply(Reply::text("Done."))) else {
        return;
    };
    let (env, h1) = (&lab.env, &lab.net.hosts[0]);
    env.run(&["team", "create", "t", "--store", &lab.url])
        .success();
    let with_hosts = |args: &[&str]| {
        let out = run(&mut lab.swarm(args));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}\n{}\n{}",
            out.stdout,
            out.stderr
        );
        out
    };
    with_hosts(&["--team", "t", "spawn", "bob", "carol", "--host", "h1"]);
    // dan hangs when told to stop: it stops itself (SIGSTOP) once it has its signal.
    let fault = |args: &[&str]| {
        let mut argv = vec!["tmux", "-L", "swarm-t"];
        argv.extend_from_slice(args);
        assert!(h1.exec(&argv).status.success(), "tmux {args:?} on h1");
    };
    fault(&[
        "set-environment",
        "-g",
        "SWARM_FAULT",
        "teammate.signalled:stop",
    ]);
    with_hosts(&["--team", "t", "spawn", "dan", "--host", "h1"]);
    fault(&["set-environment", "-gu", "SWARM_FAULT"]);
    let store = env.store("t");
    let idle = |name: &str| {
        let agent = swarm_util::names::AgentName::new(name).unwrap();
        store
            .agents()
            .read_state(&agent)
            .is_some_and(|s| s.activity == swarm_store::state::Activity::Idle)
    };
    let ready = crate::harness::wait_until(Duration::from_secs(60), || {
        idle("bob") && idle("carol") && idle("dan")
    });
    if !ready {
        env.print_evidence();
    }
    assert!(ready, "bob, carol and dan never went idle on h1");
    attach_and_detach(&lab, h1);

    let stopped = with_hosts(&["--team", "t", "shutdown", "bob", "--force"]);
    assert!(
        stopped.stdout.contains("ended its session on host h1")
            || stopped.stderr.contains("ended its session on host h1"),
        "{}\n{}",
        stopped.stdout,
        stopped.stderr
    );
    let bob = store
        .agents()
        .read_state(&swarm_util::names::AgentName::new("bob").unwrap())
        .unwrap();
    assert_eq!(
        bob.activity,
        swarm_store::state::Activity::Exited,
        "{bob:?}"
    );
    assert!(!h1.alive(bob.pid));
    let session = h1.exec(&["tmux", "-L", "swarm-t", "has-session", "-t", "=t-bob"]);
    assert!(!session.status.success(), "bob's session is still there");

    // A hung teammate outlives its session's end; the ladder kills it on its host, by its
    // pid and start time there.
    let dan = store
        .agents()
        .read_state(&swarm_util::names::AgentName::new("dan").unwrap())
        .unwrap();
    let killed = with_hosts(&["--team", "t", "shutdown", "dan", "--force"]);
    let said = format!("{}{}", killed.stdout, killed.stderr);
    assert!(said.contains("SIGKILL on host h1"), "{said}");
    assert!(!h1.alive(dan.pid), "{said}");

    let carol = store
        .agents()
        .read_state(&swarm_util::names::AgentName::new("carol").unwrap())
        .unwrap();
    h1.kill9(carol.pid);
    let mut dead = serde_json::Value::Null;
    let noticed = crate::harness::wait_until(Duration::from_secs(60), || {
        dead = member_json(&env.status_json("t", BEAT_TIMEOUT_MS), "carol");
        dead["state"] == "dead"
    });
    assert!(noticed, "carol's death was never noticed: {dead}");
    assert!(
        dead["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("heartbeat stopped"),
        "{dead}"
    );

    // Deleting the team makes h1 forget it too: its link and its agents' files there.
    let linked = |h: &crate::sim_hosts::SimHost| {
        h.exec(&["test", "-e", "/root/.claude/teams/t/store.json"])
            .status
            .success()
    };
    assert!(linked(h1), "h1 was never linked to the team");
    with_hosts(&["team", "delete", "t", "--force"]);
    assert!(!linked(h1), "h1 still points at the deleted team");
}

/// `swarm attach bob` in a terminal (`script` gives it one) opens bob's pane on h1 over
/// `ssh -t`, and returns, with success, when the person detaches.
fn attach_and_detach(lab: &Lab, h1: &crate::sim_hosts::SimHost) {
    if !crate::harness::require(
        "`script` (util-linux; Debian's bsdutils)",
        crate::harness::have_program("script"),
    ) {
        return;
    }
    let line = format!("'{}' --team t attach bob", crate::harness::SWARM);
    let screen = lab.env.dir.path().join("attach.out");
    let mut client = crate::harness::Guarded(Some(
        lab.env
            .command("script")
            .args(["-qfec", &line, "/dev/null"])
            .env("SWARM_SSH_CONFIG", &lab.net.ssh_config)
            .env("TERM", "xterm-256color")
            .env_remove("TMUX")
            .stdin(std::process::Stdio::piped())
            .stdout(std::fs::File::create(&screen).unwrap())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    ));
    let tmux = |args: &[&str]| {
        let mut argv = vec!["tmux", "-L", "swarm-t"];
        argv.extend_from_slice(args);
        String::from_utf8_lossy(&h1.exec(&argv).stdout).into_owned()
    };
    let attached = crate::harness::wait_until(Duration::from_secs(30), || {
        tmux(&["list-clients", "-F", "#{session_name}"]).contains("t-bob")
    });
    assert!(
        attached,
        "no client attached to bob's session on h1; the terminal showed:\n{}",
        std::fs::read_to_string(&screen).unwrap_or_default()
    );
    tmux(&["detach-client", "-s", "t-bob"]);
    let status = client.wait(Duration::from_secs(30));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}

/// The lead's Agent tool takes a `host`: a `swarm run` whose lead asks for bob on h1 gets
/// bob there, in h1's session, on the team's database; resumed after both died, the lead
/// starts bob again there.
#[test]
fn the_leads_agent_tool_starts_a_teammate_on_a_host() {
    use swarm_model_server::{Reply, Rule, Script};
    let Some(lab) = Lab::start(
        1,
        Script::new()
            .rule(
                Rule::new("spawn on h1")
                    .agent("team-lead")
                    .no_tool_result(true)
                    .times(1)
                    .reply(Reply::tool(
                        "Agent",
                        serde_json::json!({"name": "bob", "prompt": "say hi", "host": "h1"}),
                    )),
            )
            .default_reply(Reply::text("Done.")),
    ) else {
        return;
    };
    let env = &lab.env;
    let run = lab.run_team("get bob going", &[]);
    let made = crate::harness::wait_until(Duration::from_secs(30), || {
        env.root.join("teams/t/store.json").exists()
    });
    assert!(made, "the run made no team");
    lab.wait_until_bob_is_on_h1();
    let roster = env.store("t").roster().load().unwrap();
    assert_eq!(
        roster.member("bob").unwrap().extra.get("swarmHost"),
        Some(&serde_json::json!("h1"))
    );

    // The lead and bob die (kill -9, the run's waiter with them); `swarm resume` starts the
    // lead again, which starts bob again on h1, from bob's launch record there.
    let store = env.store("t");
    let state = |name: &str| {
        store
            .agents()
            .read_state(&swarm_util::names::AgentName::parse_any(name).unwrap())
    };
    let old_bob = state("bob").unwrap();
    drop(run);
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(state("team-lead").unwrap().pid),
        nix::sys::signal::Signal::SIGKILL,
    );
    // Bob's pid is h1's.
    lab.net.hosts[0].kill9(old_bob.pid);
    // Dead by their heartbeats, as the resumed lead (10 s, the default) will judge them.
    let dead = crate::harness::wait_until(Duration::from_secs(60), || {
        let seen = env.status_json("t", 10_000);
        ["team-lead", "bob"]
            .iter()
            .all(|n| member_json(&seen, n)["state"] == "dead")
    });
    assert!(dead, "{}", env.status_json("t", 10_000));
    let mut resume = lab.swarm(&["resume", "t", "--no-attach"]);
    resume
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let _resumed = crate::harness::Guarded(Some(resume.spawn().unwrap()));
    let again = crate::harness::wait_until(Duration::from_secs(60), || {
        state("bob")
            .is_some_and(|s| s.host.as_deref() == Some("swarm-test-h1") && s.pid != old_bob.pid)
    });
    if !again {
        env.print_evidence();
    }
    assert!(again, "bob was not started again on h1: {:?}", state("bob"));
    let log = std::fs::read_to_string(env.root.join("teams/t/logs/team-lead.log")).unwrap();
    assert!(
        log.contains("resume: bob:") && log.contains("on host h1"),
        "{log}"
    );
}

/// `swarm run --hosts h1,h2`: the lead's teammates go to the host with the fewest, so two
/// Agent calls that name no host land one on each; a run on files is refused, naming
/// `--store`.
#[test]
fn a_run_with_hosts_spreads_its_teammates_over_them() {
    use swarm_model_server::{Reply, Rule, Script};
    let Some(lab) = Lab::start(
        2,
        Script::new()
            .rule(
                Rule::new("spawn two")
                    .agent("team-lead")
                    .no_tool_result(true)
                    .times(1)
                    .reply(
                        Reply::tool(
                            "Agent",
                            serde_json::json!({"name": "bob", "prompt": "say hi"}),
                        )
                        .tool_call(
                            "Agent",
                            serde_json::json!({"name": "carol", "prompt": "say hi"}),
                        ),
                    ),
            )
            .default_reply(Reply::text("Done.")),
    ) else {
        return;
    };
    let env = &lab.env;
    let files = env
        .run(&[
            "run",
            "x",
            "--team",
            "f",
            "--hosts",
            "h1,h2",
            "--no-attach",
            "--provider",
            "scripted",
            "--base-url",
            "http://127.0.0.1:9",
        ])
        .failure(2);
    assert!(files.stderr.contains("--store"), "{}", files.stderr);
    assert!(
        !env.root.join("teams/f").exists(),
        "a refused run made its team"
    );
    let _run = lab.run_team("get two going", &["--hosts", "h1,h2"]);
    let hosts = || {
        let store = env.root.join("teams/t/store.json");
        if !store.exists() {
            return Vec::new();
        }
        let mut on: Vec<String> = ["bob", "carol"]
            .iter()
            .filter_map(|n| {
                env.store("t")
                    .agents()
                    .read_state(&swarm_util::names::AgentName::new(n).unwrap())
                    .and_then(|s| s.host)
            })
            .collect();
        on.sort();
        on
    };
    let spread = crate::harness::wait_until(Duration::from_secs(60), || {
        hosts() == ["swarm-test-h1", "swarm-test-h2"]
    });
    if !spread {
        env.print_evidence();
    }
    assert!(spread, "bob and carol are on {:?}", hosts());
}

/// An agent definition may name a host (`host:`): `swarm spawn --agent-type` starts its
/// teammate there, which reads the definition from the host's checkout of the project.
#[test]
fn an_agent_definition_names_the_host_its_teammates_start_on() {
    use swarm_model_server::{Reply, Script};
    let Some(lab) = Lab::start(1, Script::new().default_reply(Reply::text("Done."))) else {
        return;
    };
    let env = &lab.env;
    // In the lead's project, and in the host's checkout of it, where its teammate reads it.
    let project = lab.net.hosts[0].dir.join("project");
    for dir in [env.dir.path(), project.as_path()] {
        let agents = dir.join(".claude/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("gpu.md"),
            "---\nname: gpu\ndescription: runs where the GPUs are\nhost: h1\n---\nUse the GPU.\n",
        )
        .unwrap();
    }
    env.run(&["team", "create", "t", "--store", &lab.url])
        .success();
    let out = run(&mut lab.swarm(&["--team", "t", "spawn", "bob", "--agent-type", "gpu"]));
    assert_eq!(out.status.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    lab.wait_until_bob_is_on_h1();
}

/// A host with a role of its own (issue 34): its teammate works, `swarm host check` passes
/// as that role, and a shell there with the host's own `~/.pgpass` (what a model with a
/// Bash tool on it has) cannot rewrite what the lead's machine runs, forge the lead's
/// roster entry, or read another team.
#[test]
fn a_shell_on_a_host_with_its_own_role_cannot_reach_the_leads_rows() {
    use swarm_model_server::{Reply, Script};
    let Some(lab) = Lab::start(1, Script::new().default_reply(Reply::text("Done."))) else {
        return;
    };
    let (env, h1) = (&lab.env, &lab.net.hosts[0]);
    env.run(&["team", "create", "t", "--store", &lab.url])
        .success();
    env.run(&["team", "create", "other", "--store", &lab.url])
        .success();
    let checked = run(&mut lab.swarm(&["--team", "t", "host", "check", "h1"]));
    assert_eq!(checked.status.code(), Some(0), "{}", checked.stdout);
    let role = &lab.roles[0];
    assert!(
        checked
            .stdout
            .lines()
            .any(|l| l.starts_with("ok") && l.contains("database") && l.contains(role.as_str())),
        "{}",
        checked.stdout
    );
    let out = run(&mut lab.swarm(&["--team", "t", "spawn", "bob", "--host", "h1"]));
    assert_eq!(out.status.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    lab.wait_until_bob_is_on_h1();
    let record = env.store("t").launches().read_launch("bob").unwrap();
    assert!(record.is_some());

    // As a shell on h1 would: psql with the host's HOME, its password file and its role.
    let url = format!(
        "{} user={role}",
        lab.url.replace(" sslmode=verify-full", "")
    );
    let psql = |sql: &str| {
        let out = h1
            .command("psql")
            .env_clear()
            .env("HOME", "/root")
            .env("PATH", "/usr/bin:/bin")
            .env("PGSSLMODE", "verify-full")
            .args([url.as_str(), "-X", "-A", "-t", "-c", sql])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let (ok, said) = psql("SELECT current_user");
    assert!(ok && said.trim() == role, "{said}");
    let (ok, said) = psql(
        r#"UPDATE launch_records SET record = jsonb_set(record, '{argv}', '["sh","-c","id > /tmp/x"]')"#,
    );
    assert!(!ok && said.contains("permission denied"), "{said}");
    let (ok, said) = psql(
        r#"UPDATE teams SET config = jsonb_set(config, '{leadAgentId}', '"bob@t"') WHERE name = 't'"#,
    );
    assert!(!ok && said.contains("a host's role may not"), "{said}");
    let (ok, said) = psql("SELECT count(*) FROM teams WHERE name = 'other'");
    assert!(ok && said.trim() == "0", "{said}");
    let (ok, said) = psql("SELECT count(*) FROM teams WHERE name = 't'");
    assert!(ok && said.trim() == "1", "its own team it reads: {said}");
    assert_eq!(
        env.store("t").launches().read_launch("bob").unwrap(),
        record,
        "the launch record is the lead's"
    );
    assert_eq!(
        env.store("t").roster().load().unwrap().lead_agent_id,
        "team-lead@t"
    );
}
