//! The store's answers to the fault campaign (issue 10): a writer killed or stopped at a
//! chosen point (`SWARM_FAULT`), a full disk, symlinks planted under the root. Each test
//! failed before its fix.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use serde_json::Value;

use crate::harness::{TestEnv, inbox_texts, run};

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
    assert!(inbox_texts(&env, "t", "bob").contains(&"second".to_owned()));
    assert!(lock_dirs(&inboxes).is_empty());
}

/// The test's root on a tmpfs of its own, so the disk can be filled without touching
/// anyone else's. Needs root (the development and CI machines are root); where mounting
/// is refused, `None` after [`require`](crate::harness::require) said so (a failure under
/// `CI=true`).
struct SmallDisk {
    mount: std::path::PathBuf,
    filler: std::path::PathBuf,
}

impl SmallDisk {
    fn mount_over(root: &Path) -> Option<SmallDisk> {
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs"])
            .arg(root)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !crate::harness::require("a tmpfs mount (needs root) for the disk-full case", ok) {
            return None;
        }
        Some(SmallDisk {
            mount: root.to_path_buf(),
            filler: root.join("filler"),
        })
    }

    /// Takes every free page.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(&self.filler).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        while f.write_all(&chunk).is_ok() {}
        while f.write_all(&[0]).is_ok() {}
    }

    /// Gives back `pages` pages of 4 KiB.
    fn free_pages(&self, pages: u64) {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.filler)
            .unwrap();
        let len = f.metadata().unwrap().len();
        f.set_len(len.saturating_sub(pages * 4096)).unwrap();
    }

    fn empty(&self) {
        let _ = std::fs::remove_file(&self.filler);
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.mount)
            .status();
    }
}

#[test]
fn a_send_that_fails_on_a_full_disk_is_never_delivered_later() {
    let env = TestEnv::new();
    let Some(disk) = SmallDisk::mount_over(&env.root) else {
        return;
    };
    env.run(&["team", "create", "t"]).success();
    for m in ["alice", "bob"] {
        env.run(&["--team", "t", "team", "add", m]).success();
    }
    // An inbox of several pages, so rewriting it needs more room than spooling a message.
    let bulky = "x".repeat(3000);
    for _ in 0..4 {
        env.run(&["--team", "t", "send", "bob", &bulky, "--from", "alice"])
            .success();
    }
    disk.fill();
    disk.free_pages(1);
    let failed = env.run(&["--team", "t", "send", "bob", "ghost", "--from", "alice"]);
    assert_ne!(
        failed.status.code(),
        Some(0),
        "the send had no room to succeed"
    );
    assert!(failed.stderr.contains("No space left"), "{}", failed.stderr);
    disk.empty();
    env.run(&["--team", "t", "send", "bob", "after", "--from", "alice"])
        .success();
    env.run(&["--team", "t", "inbox", "bob"]).success();
    let texts = inbox_texts(&env, "t", "bob");
    assert!(texts.contains(&"after".to_owned()));
    assert!(
        !texts.contains(&"ghost".to_owned()),
        "a send that exited {:?} was delivered later",
        failed.status
    );
}

#[test]
fn an_ack_that_fails_on_a_full_disk_keeps_the_message_and_a_readable_log() {
    let env = TestEnv::new();
    let Some(disk) = SmallDisk::mount_over(&env.root) else {
        return;
    };
    env.run(&["team", "create", "t"]).success();
    for m in ["alice", "bob"] {
        env.run(&["--team", "t", "team", "add", m]).success();
    }
    env.run(&["--team", "t", "send", "bob", "earlier", "--from", "alice"])
        .success();
    env.run(&["--team", "t", "inbox", "bob", "--ack"]).success();
    let log = env.root.join("teams/t/inboxes/bob.delivered.jsonl");
    // Pad the log so its last page is nearly full: the next append fits only in part.
    let line = std::fs::read_to_string(&log).unwrap();
    let mut padded = line.clone();
    while padded.len() + line.len() < 4000 {
        padded.push_str(&line);
    }
    std::fs::write(&log, &padded).unwrap();
    let body = "y".repeat(1500);
    env.run(&["--team", "t", "send", "bob", &body, "--from", "alice"])
        .success();
    disk.fill();
    let failed = env.run(&["--team", "t", "inbox", "bob", "--ack"]);
    assert_ne!(
        failed.status.code(),
        Some(0),
        "the ack had no room to succeed"
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        padded,
        "a failed append leaves the log as it was"
    );
    assert!(
        inbox_texts(&env, "t", "bob").contains(&body),
        "an unacknowledged message stays in the inbox"
    );
    disk.empty();
    env.run(&["--team", "t", "inbox", "bob", "--ack"]).success();
    let logged: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| v["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        logged.contains(&body),
        "the acknowledged message is in a readable line of the log"
    );
    assert!(!inbox_texts(&env, "t", "bob").contains(&body));
}

/// Plants `link` → `target` and checks that `args` refuse with exit 1, naming the link, and
/// leave the outside file as it was.
fn refuses_symlink(env: &TestEnv, link: &Path, target: &Path, args: &[&str]) {
    if let Some(dir) = link.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    let real = link.with_extension("real-aside");
    let had_real = std::fs::rename(link, &real).is_ok();
    std::os::unix::fs::symlink(target, link).unwrap();
    let before = snapshot(target);
    let r = env.run(args).failure(1);
    let name = link.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        r.stderr.contains("symlink") && r.stderr.contains(&name),
        "{args:?}: {}",
        r.stderr
    );
    assert!(
        !r.stdout.contains("outside"),
        "{args:?} read through the link: {}",
        r.stdout
    );
    assert_eq!(
        snapshot(target),
        before,
        "{args:?} touched {}",
        target.display()
    );
    std::fs::remove_file(link).unwrap();
    if had_real {
        std::fs::rename(&real, link).unwrap();
    }
}

/// A file's bytes, or a directory's entries with their bytes.
fn snapshot(path: &Path) -> Vec<(String, Vec<u8>)> {
    if path.is_dir() {
        let mut all: Vec<_> = std::fs::read_dir(path)
            .unwrap()
            .flatten()
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap_or_default(),
                )
            })
            .collect();
        all.sort();
        all
    } else {
        vec![(String::new(), std::fs::read(path).unwrap())]
    }
}

#[test]
fn symlinks_under_the_root_are_never_followed() {
    let env = TestEnv::with_team("t", &["alice", "bob"]);
    env.run(&["--team", "t", "send", "bob", "hello", "--from", "alice"])
        .success();
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let file = outside.join("precious.txt");
    std::fs::write(&file, "outside and precious\n").unwrap();
    let array = outside.join("array.json");
    std::fs::write(&array, r#"[{"from":"mallory","text":"outside","timestamp":"2026-01-01T00:00:00.000Z","read":false}]"#).unwrap();
    let spooled = outside.join("spool");
    std::fs::create_dir_all(&spooled).unwrap();
    std::fs::write(
        spooled.join("01.json"),
        r#"{"from":"mallory","text":"outside","timestamp":"2026-01-01T00:00:00.000Z","read":false}"#,
    )
    .unwrap();
    let inboxes = env.root.join("teams/t/inboxes");
    let send = ["--team", "t", "send", "bob", "hi", "--from", "alice"];
    let ack = ["--team", "t", "inbox", "bob", "--ack"];
    refuses_symlink(&env, &inboxes.join("bob.json.flock"), &file, &send);
    refuses_symlink(&env, &env.root.join("teams/t/spool/bob"), &spooled, &send);
    refuses_symlink(&env, &inboxes.join("bob.delivered.jsonl"), &file, &ack);
    refuses_symlink(
        &env,
        &inboxes.join("bob.json"),
        &array,
        &["--team", "t", "inbox", "bob"],
    );
    refuses_symlink(&env, &inboxes.join("bob.json"), &array, &send);
    refuses_symlink(&env, &env.root.join("teams/t/config.json"), &file, &send);
    // A whole directory under the root.
    let tasks = env.root.join("tasks/t");
    std::fs::create_dir_all(&tasks).unwrap();
    std::fs::remove_dir_all(&tasks).unwrap();
    refuses_symlink(
        &env,
        &tasks,
        &outside,
        &["--team", "t", "task", "add", "write it"],
    );
    // With every link gone, everything works again and nothing was lost.
    env.run(&send).success();
    let texts = inbox_texts(&env, "t", "bob");
    assert!(
        texts.contains(&"hello".to_owned()) && texts.contains(&"hi".to_owned()),
        "{texts:?}"
    );
}
