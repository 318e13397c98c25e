//! Faults found against the release binary (issue 10), each pinned through the real
//! binary: a key in the spawner's environment must reach its teammate and nothing else on
//! the tmux server; a member leaving the roster by any path must leave no task behind; and
//! `swarm shutdown` must never call a member gone when swarm cannot tell.

use std::time::Duration;

use swarm_store::protocol::{Protocol, ShutdownApproved};
use swarm_store::roster::Member;
use swarm_store::tasks::Status;
use swarm_util::names::AgentName;

use crate::harness::{Guarded, TestEnv, run, run_timeout, wait_until};
use crate::team_tmux::{T, idle_model, member, status};

const KEY: &str = "sk-ant-test-secret";
const OTHER_SECRET: &str = "aws-test-secret";

/// `tmux ARGS` on the test's server, from the test's clean environment, so nothing of the
/// person running the tests can be mistaken for a leak.
fn tmux(env: &TestEnv, args: &[&str]) -> String {
    let out = env.tmux_cmd().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "tmux {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn environ(pid: i32) -> String {
    String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/environ")).unwrap()).into_owned()
}

#[test]
fn a_key_reaches_its_teammate_and_no_tmux_process_or_later_pane() {
    let env = TestEnv::with_team("t", &[]);
    let model = idle_model();
    let mut spawn = env.swarm(&["--team", "t", "spawn", "bob", "--prompt", "stand by"]);
    spawn
        .env("SWARM_PROVIDER", "scripted")
        .env("SWARM_BASE_URL", model.url())
        .env("ANTHROPIC_API_KEY", KEY)
        .env("AWS_SECRET_ACCESS_KEY", OTHER_SECRET);
    run(&mut spawn).success();
    let mut pid = None;
    assert!(
        wait_until(T, || {
            pid = member(&status(&env), "bob")
                .filter(|m| m["alive"] == true)
                .and_then(|m| m["pid"].as_i64());
            pid.is_some()
        }),
        "bob never registered: {}",
        status(&env)
    );
    let leaks = |what: &str, text: &str| {
        for secret in [KEY, OTHER_SECRET] {
            assert!(!text.contains(secret), "{what} holds {secret}:\n{text}");
        }
    };
    leaks(
        "the global environment",
        &tmux(&env, &["show-environment", "-g"]),
    );
    let session = tmux(&env, &["list-sessions", "-F", "#{session_id}"]);
    let session = session.lines().next().unwrap().to_owned();
    leaks(
        "the session environment",
        &tmux(&env, &["show-environment", "-t", &session]),
    );
    let server: i32 = tmux(&env, &["display", "-p", "#{pid}"])
        .trim()
        .parse()
        .unwrap();
    leaks("the tmux server's environment", &environ(server));

    // A pane a person opens on that server later.
    let dump = env.dir.path().join("user-pane.env");
    let script = format!("env > {0}.tmp && mv {0}.tmp {0}", dump.display());
    tmux(
        &env,
        &[
            "new-window",
            "-d",
            "-t",
            &session,
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert!(wait_until(T, || dump.exists()), "the user's pane never ran");
    let pane = std::fs::read_to_string(&dump).unwrap();
    assert!(pane.contains("PATH="), "not an environment dump: {pane}");
    leaks("a later user pane", &pane);

    // The documented way: the teammate's own environment has the key, and only the keys
    // it is meant to get.
    let teammate = environ(pid.unwrap() as i32);
    assert!(teammate.contains(&format!("ANTHROPIC_API_KEY={KEY}")));
    assert!(!teammate.contains(OTHER_SECRET), "a key not passed on");
}

#[test]
fn shutting_down_a_member_that_never_started_returns_its_tasks() {
    let env = TestEnv::with_team("t", &["hal"]);
    env.run(&["--team", "t", "task", "add", "job"]).success();
    env.run(&["--team", "t", "task", "claim", "1", "--as", "hal"])
        .success();
    let out = env.run(&["--team", "t", "shutdown", "hal"]).success();
    assert!(
        out.stdout.contains("removed from the roster"),
        "{}",
        out.stdout
    );
    assert!(!env.on_roster("t", "hal"));
    let task = env.store("t").tasks().get("1").unwrap();
    assert_eq!(task.status, Status::Pending, "{task:?}");
    assert_eq!(task.owner, None);
}

#[test]
fn the_lead_returns_tasks_whose_owner_left_the_roster_some_other_way() {
    let env = TestEnv::with_team("t", &["hal"]);
    env.run(&["--team", "t", "task", "add", "job"]).success();
    env.run(&["--team", "t", "task", "claim", "1", "--as", "hal"])
        .success();
    // Another program (a Claude Code lead does this on `shutdown_approved`) takes hal off
    // the roster and leaves the task list alone.
    env.teams()
        .open(&env.team_name("t"))
        .unwrap()
        .roster()
        .update(|c| {
            c.members.retain(|m| m.name != "hal");
            Ok(())
        })
        .unwrap();
    let store = env.store("t");
    let list = store.tasks();
    assert!(list.get("1").unwrap().owned_by("hal"));
    let mut lead = env.swarm(&["--team", "t", "lead"]);
    lead.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let _lead = Guarded(Some(lead.spawn().unwrap()));
    assert!(
        wait_until(T, || list.get("1").unwrap().status == Status::Pending),
        "the lead left task 1 with {:?}",
        list.get("1").unwrap().owner
    );
    assert_eq!(list.get("1").unwrap().owner, None);
}

#[test]
fn a_removal_killed_before_its_tasks_were_returned_is_finished_by_the_next_look() {
    let env = TestEnv::with_team("t", &["hal"]);
    env.run(&["--team", "t", "task", "add", "job"]).success();
    env.run(&["--team", "t", "task", "claim", "1", "--as", "hal"])
        .success();
    let mut remove = env.swarm(&["--team", "t", "team", "remove", "hal"]);
    remove.env("SWARM_FAULT", "roster.removed:kill");
    let out = run(&mut remove);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(9),
        "{out:?}"
    );
    assert!(!env.on_roster("t", "hal"));
    let store = env.store("t");
    let list = store.tasks();
    assert!(list.get("1").unwrap().owned_by("hal"));
    // Whoever looks next (here `swarm status`, which reconciles as the lead does).
    env.run(&["--team", "t", "status"]).success();
    let task = list.get("1").unwrap();
    assert_eq!((task.status, task.owner), (Status::Pending, None));
}

/// A member as a Claude Code teammate writes itself into a roster: a pane id on some tmux
/// server, active, and no pid swarm could check.
fn add_claude_code_member(env: &TestEnv, name: &str) {
    env.teams()
        .open(&env.team_name("t"))
        .unwrap()
        .roster()
        .update(|c| {
            c.members.push(Member {
                agent_id: format!("{name}@t"),
                name: name.to_owned(),
                agent_type: Some("general-purpose".into()),
                color: Some("blue".into()),
                joined_at: 1,
                tmux_pane_id: "%77".into(),
                cwd: "/".into(),
                backend_type: Some("tmux".into()),
                is_active: Some(true),
                ..Member::default()
            });
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_member_swarm_cannot_see_is_declared_dead_only_after_its_silence() {
    let env = TestEnv::with_team("t", &[]);
    add_claude_code_member(&env, "cc");
    env.run(&["--team", "t", "task", "add", "job"]).success();
    env.run(&["--team", "t", "task", "claim", "1", "--as", "cc"])
        .success();
    // Forced, there is nothing swarm could signal, and it will not skip asking: refused at
    // once, and it stays, still maybe working on its task.
    let out = env
        .run(&["--team", "t", "shutdown", "cc", "--force"])
        .failure(4);
    assert!(
        out.stderr
            .contains("cannot tell whether cc is still running"),
        "{}",
        out.stderr
    );
    assert!(env.on_roster("t", "cc"));
    assert!(env.store("t").tasks().get("1").unwrap().owned_by("cc"));
    let out = run_timeout(
        &mut env.swarm(&["--team", "t", "shutdown", "cc", "--timeout", "1s"]),
        Duration::from_secs(60),
    )
    .success();
    // It was asked, the way Claude Code understands, and declared dead only on its silence.
    let inbox = env
        .teams()
        .open(&env.team_name("t"))
        .unwrap()
        .mail()
        .read_all(&AgentName::new("cc").unwrap())
        .unwrap();
    assert!(
        inbox
            .iter()
            .any(|d| matches!(d.envelope.protocol(), Some(Protocol::ShutdownRequest(_))))
    );
    assert!(
        out.stdout
            .contains("did not answer the shutdown request within 1 s: declared dead"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("removed from the roster"),
        "{}",
        out.stdout
    );
    assert!(!env.on_roster("t", "cc"));
    assert_eq!(
        env.store("t").tasks().get("1").unwrap().status,
        Status::Pending
    );
}

#[test]
fn a_member_swarm_cannot_see_leaves_when_it_agrees() {
    let env = TestEnv::with_team("t", &[]);
    add_claude_code_member(&env, "cc");
    env.run(&["--team", "t", "task", "add", "job"]).success();
    env.run(&["--team", "t", "task", "claim", "1", "--as", "cc"])
        .success();
    let mut shutdown = env.swarm(&["--team", "t", "shutdown", "cc", "--timeout", "60s"]);
    let out_path = env.dir.path().join("shutdown.out");
    shutdown
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::process::Stdio::null());
    let mut shutdown = Guarded(Some(shutdown.spawn().unwrap()));
    // Answer as Claude Code does.
    let (root, team) = (env.teams(), env.team_name("t"));
    let mut request = None;
    assert!(wait_until(T, || {
        request = root
            .open(&team)
            .unwrap()
            .mail()
            .read_all(&AgentName::new("cc").unwrap())
            .unwrap()
            .into_iter()
            .find_map(|d| match d.envelope.protocol() {
                Some(Protocol::ShutdownRequest(r)) => Some(r.request_id),
                _ => None,
            });
        request.is_some()
    }));
    let approved = Protocol::ShutdownApproved(ShutdownApproved {
        request_id: request.unwrap(),
        from: "cc".into(),
        timestamp: "2026-01-01T00:00:00.000Z".into(),
        pane_id: Some("%77".into()),
        backend_type: Some("tmux".into()),
    });
    env.deliver("t", "cc", "team-lead", approved.to_text());
    let status = shutdown.wait(T).expect("shutdown did not finish");
    let out = std::fs::read_to_string(&out_path).unwrap();
    assert!(status.success(), "{out}");
    assert!(out.contains("removed from the roster"), "{out}");
    assert!(!env.on_roster("t", "cc"));
    assert_eq!(
        env.store("t").tasks().get("1").unwrap().status,
        Status::Pending
    );
}
