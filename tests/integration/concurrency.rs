//! Many processes against one store: nothing lost, nothing doubled, every file parses.
//! Processes, not threads: flock is per open file, and threads would hide cross-process bugs.

use std::collections::{HashMap, HashSet};
use std::process::{Child, Stdio};
use std::time::Duration;

use swarm_store::tasks::NewTask;

use crate::harness::{Guarded, TestEnv, inbox_texts, run, wait_timeout, wait_until};

const TIMEOUT: Duration = Duration::from_secs(120);

fn wait_all(children: Vec<Child>) -> Vec<String> {
    children
        .into_iter()
        .map(|mut c| {
            let status = wait_timeout(&mut c, TIMEOUT).expect("stress process timed out");
            let mut out = String::new();
            std::io::Read::read_to_string(c.stdout.as_mut().unwrap(), &mut out).unwrap();
            assert!(status.success(), "stress process failed: {status:?}");
            out
        })
        .collect()
}

fn root(env: &TestEnv) -> String {
    env.root.display().to_string()
}

#[test]
fn fan_in_8_senders_x_250_messages_all_arrive_once() {
    let _heavy = crate::harness::heavy();
    let senders: Vec<String> = (0..8).map(|i| format!("s{i}")).collect();
    let mut members: Vec<&str> = senders.iter().map(String::as_str).collect();
    members.push("sink");
    let env = TestEnv::with_team("t", &members);
    let r = root(&env);
    let children: Vec<Child> = senders
        .iter()
        .map(|s| {
            env.stress(&["send", &r, "t", s, "sink", "250"])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    wait_all(children);
    let got = inbox_texts(&env, "t", "sink");
    assert_eq!(got.len(), 2000);
    let unique: HashSet<&String> = got.iter().collect();
    assert_eq!(unique.len(), 2000, "duplicates");
    // Each sender's messages arrive in the order it sent them.
    for s in &senders {
        let seq: Vec<usize> = got
            .iter()
            .filter_map(|t| t.strip_prefix(&format!("{s}-")).map(|n| n.parse().unwrap()))
            .collect();
        assert_eq!(seq, (0..250).collect::<Vec<_>>(), "order of {s}");
    }
}

#[test]
fn send_against_acknowledge_delivers_each_message_exactly_once() {
    let _heavy = crate::harness::heavy();
    let senders: Vec<String> = (0..8).map(|i| format!("s{i}")).collect();
    let mut members: Vec<&str> = senders.iter().map(String::as_str).collect();
    members.push("sink");
    let env = TestEnv::with_team("t", &members);
    let r = root(&env);
    let out = env.dir.path().join("drained.txt");
    let drainer = env
        .stress(&["drain", &r, "t", "sink", "2000", &out.display().to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let children: Vec<Child> = senders
        .iter()
        .map(|s| {
            env.stress(&["send", &r, "t", s, "sink", "250"])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    wait_all(children);
    wait_all(vec![drainer]);
    let drained = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = drained.lines().collect();
    let unique: HashSet<&str> = lines.iter().copied().collect();
    assert_eq!(unique.len(), 2000, "lost messages");
    assert_eq!(lines.len(), 2000, "delivered twice");
    assert!(
        inbox_texts(&env, "t", "sink").is_empty(),
        "acknowledged messages resurrected"
    );
    let log =
        std::fs::read_to_string(env.root.join("teams/t/inboxes/sink.delivered.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 2000);
}

#[test]
fn all_to_all_among_six_agents_while_each_reads_its_own() {
    let _heavy = crate::harness::heavy();
    let agents: Vec<String> = (0..6).map(|i| format!("a{i}")).collect();
    let members: Vec<&str> = agents.iter().map(String::as_str).collect();
    let env = TestEnv::with_team("t", &members);
    let r = root(&env);
    let per_pair = 100;
    let mut children = Vec::new();
    let mut outs = Vec::new();
    for a in &agents {
        let out = env.dir.path().join(format!("{a}.drained"));
        children.push(
            env.stress(&[
                "drain",
                &r,
                "t",
                a,
                &(per_pair * 5).to_string(),
                &out.display().to_string(),
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
        );
        outs.push((a.clone(), out));
        for b in agents.iter().filter(|b| *b != a) {
            children.push(
                env.stress(&["send", &r, "t", a, b, &per_pair.to_string()])
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap(),
            );
        }
    }
    wait_all(children);
    for (agent, out) in outs {
        let text = std::fs::read_to_string(out).unwrap();
        let mut per_sender: HashMap<&str, Vec<usize>> = HashMap::new();
        for line in text.lines() {
            let (from, n) = line.rsplit_once('-').unwrap();
            per_sender.entry(from).or_default().push(n.parse().unwrap());
        }
        assert_eq!(
            per_sender.len(),
            5,
            "{agent} heard from {:?}",
            per_sender.keys()
        );
        for (from, seq) in per_sender {
            assert_eq!(seq, (0..per_pair).collect::<Vec<_>>(), "{from} -> {agent}");
        }
        assert!(inbox_texts(&env, "t", &agent).is_empty());
    }
}

#[test]
fn kill_9_of_writers_never_corrupts_or_loses_an_acknowledged_send() {
    let _heavy = crate::harness::heavy();
    let env = TestEnv::with_team("t", &["w0", "w1", "sink"]);
    let r = root(&env);
    let acked = env.dir.path().join("acked.txt");
    let seed = std::env::var("SWARM_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("kill -9 test seed: {seed} (replay with SWARM_TEST_SEED={seed})");
    let mut rng = fastrand::Rng::with_seed(seed);
    let inbox = env.root.join("teams/t/inboxes/sink.json");
    for round in 0..60 {
        // Two writers at once, so kills also land while the other one waits for the lock.
        let mut writers: Vec<Child> = ["w0", "w1"]
            .iter()
            .map(|w| {
                env.stress(&[
                    "send",
                    &r,
                    "t",
                    w,
                    "sink",
                    "100000",
                    &acked.display().to_string(),
                ])
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
            })
            .collect();
        std::thread::sleep(Duration::from_millis(rng.u64(5..60)));
        for w in &mut writers {
            w.kill().unwrap();
            w.wait().unwrap();
        }
        let present: HashSet<String> = inbox_texts(&env, "t", "sink").into_iter().collect();
        let acked_text = std::fs::read_to_string(&acked).unwrap_or_default();
        for line in acked_text.lines() {
            // The acked log line is written after the send returned; a torn last line is the
            // kill landing inside that write, not a lost message.
            if acked_text.contains(&format!("{line}\n")) {
                assert!(
                    present.contains(line),
                    "round {round}: acknowledged {line} is missing"
                );
            }
        }
        // Keep the inbox small so each round stays fast.
        if present.len() > 2000 {
            std::fs::write(&inbox, b"[]").unwrap();
            std::fs::write(&acked, b"").unwrap();
        }
    }
    // Stale temp files are cleaned up by the next writer's first write in the directory.
    run(&mut env.swarm(&["send", "sink", "after the storm", "--from", "w0"])).success();
    let leftovers: Vec<String> = std::fs::read_dir(env.root.join("teams/t/inboxes"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp.") || n.ends_with(".lock"))
        .collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
}

#[test]
fn a_dead_lock_holder_never_blocks_anyone() {
    let _heavy = crate::harness::heavy();
    let env = TestEnv::with_team("t", &["bob"]);
    let r = root(&env);
    let mut holder = env
        .stress(&["hold", &r, "t", "bob"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    assert!(env.root.join("teams/t/inboxes/bob.json.lock").is_dir());
    // While it lives, others wait and time out.
    run(env
        .swarm(&["send", "bob", "x"])
        .env("SWARM_LOCK_TIMEOUT_MS", "300"))
    .failure(5);
    holder.kill().unwrap();
    holder.wait().unwrap();
    // Once dead: the flock is gone with it, and its directory lock is recognised as its own
    // and removed at once rather than after 10 s.
    run(env
        .swarm(&["send", "bob", "y"])
        .env("SWARM_LOCK_TIMEOUT_MS", "2000"))
    .success();
    assert!(!env.root.join("teams/t/inboxes/bob.json.lock").exists());
}

#[test]
fn a_held_lock_directory_is_kept_fresh() {
    let _heavy = crate::harness::heavy();
    let env = TestEnv::with_team("t", &["bob"]);
    let r = root(&env);
    let mut holder = Guarded(Some(
        env.stress(&["hold", &r, "t", "bob"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.child().stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    // Claude Code breaks a lock directory untouched for 10 s, so a holder must keep touching
    // it however long it holds the lock: watch it move forward twice.
    let lockdir = env.root.join("teams/t/inboxes/bob.json.lock");
    let mtime = || std::fs::metadata(&lockdir).unwrap().modified().unwrap();
    let mut last = mtime();
    for refresh in 1..=2 {
        assert!(
            wait_until(Duration::from_secs(30), || mtime() > last),
            "refresh {refresh}: the lock directory's mtime stayed at {last:?}"
        );
        last = mtime();
    }
    assert!(holder.is_running());
}

#[test]
fn claim_race_8_processes_over_200_tasks_each_claimed_once() {
    let _heavy = crate::harness::heavy();
    let agents: Vec<String> = (0..8).map(|i| format!("c{i}")).collect();
    let members: Vec<&str> = agents.iter().map(String::as_str).collect();
    let env = TestEnv::with_team("t", &members);
    let store = env.teams().open(&env.team_name("t")).unwrap();
    let list = store.tasks();
    for i in 0..200 {
        list.create(NewTask {
            subject: format!("task {i}"),
            ..NewTask::default()
        })
        .unwrap();
    }
    let r = root(&env);
    let children: Vec<Child> = agents
        .iter()
        .map(|a| {
            env.stress(&["next", &r, "t", a])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs = wait_all(children);
    let mut claimed: Vec<u64> = outputs
        .iter()
        .flat_map(|o| o.lines().map(|l| l.parse::<u64>().unwrap()))
        .collect();
    claimed.sort_unstable();
    assert_eq!(
        claimed,
        (1..=200).collect::<Vec<_>>(),
        "each task claimed exactly once"
    );
    for (agent, out) in agents.iter().zip(&outputs) {
        for id in out.lines() {
            assert!(
                list.get(id).unwrap().owned_by(agent),
                "task {id} not owned by {agent} on disk"
            );
        }
    }
}
