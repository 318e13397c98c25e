//! The store's answers to the fault campaign (issue 10): a writer killed or stopped at a
//! chosen point (`SWARM_FAULT`), a full disk, symlinks planted under the root. Each test
//! failed before its fix.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use serde_json::Value;

use crate::harness::{TestEnv, run};

fn inbox_texts(env: &TestEnv, agent: &str) -> Vec<String> {
    let path = env.root.join(format!("teams/t/inboxes/{agent}.json"));
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let inbox: Value = serde_json::from_slice(&bytes).expect("inbox parses");
    inbox
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap().to_owned())
        .collect()
}

fn killed(status: std::process::ExitStatus) -> bool {
    status.signal() == Some(libc_sigkill())
}

fn libc_sigkill() -> i32 {
    nix::sys::signal::Signal::SIGKILL as i32
}

fn lock_dirs(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".lock"))
        .collect()
}

#[test]
fn a_writer_killed_right_after_taking_the_dir_lock_does_not_stall_the_next() {
    let env = TestEnv::with_team("t", &["bob"]);
    let dead = run(env
        .swarm(&["--team", "t", "send", "bob", "first"])
        .env("SWARM_FAULT", "lock.after_mkdir:kill"));
    assert!(
        killed(dead.status),
        "the fault point was not reached: {:?}",
        dead.status
    );
    let inboxes = env.root.join("teams/t/inboxes");
    assert_eq!(
        lock_dirs(&inboxes),
        ["bob.json.lock"],
        "the dead writer's lock is left"
    );
    // A timeout well under Claude Code's 10 s staleness: only recognising the dead owner
    // at once lets this send through.
    run(env
        .swarm(&["--team", "t", "send", "bob", "second"])
        .env("SWARM_LOCK_TIMEOUT_MS", "3000"))
    .success();
    assert!(inbox_texts(&env, "bob").contains(&"second".to_owned()));
    assert!(lock_dirs(&inboxes).is_empty());
}
