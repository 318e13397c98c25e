//! Faults found against the release binary (issue 10), each pinned through the real
//! binary: a key in the spawner's environment must reach its teammate and nothing else on
//! the tmux server; a member leaving the roster by any path must leave no task behind; and
//! `swarm shutdown` must never call a member gone when swarm cannot tell.

use std::process::Command;

use crate::harness::{TestEnv, run, wait_until};
use crate::team_tmux::{T, idle_model, member, status};

const KEY: &str = "sk-ant-test-secret";
const OTHER_SECRET: &str = "aws-test-secret";

/// `tmux -L <test socket> ARGS`, from a clean environment, so nothing of the person
/// running the tests can be mistaken for a leak.
fn tmux(env: &TestEnv, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args(["-L", &env.tmux_socket])
        .args(args)
        .output()
        .unwrap();
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
