//! A big team on one machine: what one agent costs must not grow with the team. An idle
//! teammate is woken by its own mail only.

use std::process::{Child, Stdio};
use std::time::Duration;


use swarm::roles::teammate::inbox::Inbox;
use swarm::store::names::AgentName;
use swarm::util::watcher::DirWatcher;

use crate::harness::{TestEnv, wait_until};

const T: Duration = Duration::from_secs(30);

fn wait_all(children: Vec<Child>) {
    for mut c in children {
        let out = c.wait().unwrap();
        assert!(out.success(), "a load process failed: {out}");
    }
}

#[test]
fn an_inbox_is_woken_by_its_own_mail_only_however_busy_the_team() {
    let _heavy = crate::harness::heavy();
    let peers: Vec<String> = (0..8).map(|i| format!("peer{i}")).collect();
    let mut members: Vec<&str> = peers.iter().map(String::as_str).collect();
    members.push("me");
    let env = TestEnv::with_team("t", &members);
    let (root, team) = (env.store_root(), env.team_name("t"));
    let me = AgentName::new("me").unwrap();
    let inbox = Inbox::open(&root, &team, &me);
    // What a watch on the inbox directory (how teammates used to wait) hears meanwhile:
    // proof that the load below is the kind that used to wake every teammate.
    let dir_watch = DirWatcher::file(&root.inbox_path(&team, &me), || {});

    // The rest of the team at work: every peer is sent mail by real processes and reads
    // and acknowledges it (inbox rewrites, lock directories, sidecars, delivered logs).
    let r = env.root.display().to_string();
    let mut load = Vec::new();
    for (i, peer) in peers.iter().enumerate() {
        let from = &peers[(i + 1) % peers.len()];
        load.push(
            env.stress(&["send", &r, "t", from, peer, "20"])
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let seen = env.dir.path().join(format!("{peer}.drained"));
        load.push(
            env.stress(&["drain", &r, "t", peer, "20", &seen.display().to_string()])
                .spawn()
                .unwrap(),
        );
    }
    wait_all(load);
    assert!(
        wait_until(T, || dir_watch.events() > 0),
        "the peers' mail never showed in the inbox directory"
    );

    // Then its own: the bell wakes it at once (no rescan runs here), and it is the first
    // and only wake-up it had.
    env.run(&["--team", "t", "send", "me", "for me", "--from", "peer0"])
        .success();
    assert!(
        wait_until(T, || inbox.wakeups() >= 1),
        "its own mail did not wake it"
    );
    assert_eq!(
        inbox.wakeups(),
        1,
        "woken by other agents' mail ({} wake-ups of a directory watch meanwhile)",
        dir_watch.events()
    );
    let mail = swarm::store::mailbox::read_unread(&root, &team, &me).unwrap();
    assert_eq!(mail.len(), 1);
    assert_eq!(mail[0].envelope.text, "for me");
}
