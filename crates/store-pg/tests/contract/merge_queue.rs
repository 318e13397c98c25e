//! The merge queue's contract: changed whole under its lock (eight writers at once lose no
//! entry), read the same from any handle, and one run at a time (a second run waits until
//! the first is dropped).

use std::sync::mpsc;
use std::time::Duration;

use crate::backends::Team;
use crate::contract;
use swarm_store::error::Result;
use swarm_store::merge_queue::{Entry, EntryState, Strategy};
use swarm_store::seam::Hold;

contract!(
    the_queue_is_changed_whole_under_its_lock,
    a_run_waits_for_the_one_before,
);

fn entry(agent: &str, n: usize) -> Entry {
    Entry {
        agent: agent.into(),
        branch: format!("swarm/{agent}"),
        task: Some(n.to_string()),
        base: "b".repeat(40),
        head: format!("{n:040}"),
        state: EntryState::Queued,
        queued_at: n as i64,
        updated_at: n as i64,
        conflicts: Vec::new(),
        check_output: None,
        merged_commit: None,
        handed_back: None,
    }
}

fn the_queue_is_changed_whole_under_its_lock(team: &Team) {
    const WRITERS: usize = 8;
    const EACH: usize = 10;
    assert_eq!(team.merge_queue().load().unwrap(), Default::default());
    let len = team
        .merge_queue()
        .update(|q| {
            q.target = Some("main".into());
            q.strategy = Some(Strategy::Squash);
            q.entries.push(entry("bob", 0));
            q.entries.len()
        })
        .unwrap();
    assert_eq!(len, 1);
    let seen = team.open().merge_queue().load().unwrap();
    assert_eq!(
        (seen.target.as_deref(), seen.strategy),
        (Some("main"), Some(Strategy::Squash))
    );
    assert_eq!(seen.entries, [entry("bob", 0)]);
    std::thread::scope(|scope| {
        for w in 0..WRITERS {
            let handle = team.open();
            scope.spawn(move || {
                for i in 0..EACH {
                    let e = entry(&format!("w{w}"), w * EACH + i + 1);
                    handle.merge_queue().update(|q| q.entries.push(e)).unwrap();
                }
            });
        }
    });
    let queue = team.merge_queue().load().unwrap();
    assert_eq!(
        queue.entries.len(),
        1 + WRITERS * EACH,
        "{}: no entry lost",
        team.kind
    );
    for w in 0..WRITERS {
        let own: Vec<&str> = queue
            .entries
            .iter()
            .filter(|e| e.agent == format!("w{w}"))
            .filter_map(|e| e.task.as_deref())
            .collect();
        let expected: Vec<String> = (0..EACH).map(|i| (w * EACH + i + 1).to_string()).collect();
        assert_eq!(own, expected, "each writer's in its order");
    }
    assert_eq!(queue.target.as_deref(), Some("main"), "settings kept");
}

fn a_run_waits_for_the_one_before(team: &Team) {
    let first = team.merge_queue().acquire_run().unwrap();
    let other = team.open();
    second_waits_for_first(first, || other.merge_queue().acquire_run());
}

/// `second` (another handle's take of what `first` holds) waits while `first` is held and
/// gets it once `first` is dropped. The wait is seen as nothing arriving within a while
/// after the taker said it asks: a slow taker could make that pass without proving the
/// wait, never fail falsely; getting it after the drop is the positive half.
pub fn second_waits_for_first(first: Hold, second: impl FnOnce() -> Result<Hold> + Send) {
    let (said, heard) = mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            said.send("asking").unwrap();
            let held = second().unwrap();
            said.send("got").unwrap();
            drop(held);
        });
        let wait = Duration::from_secs(20);
        assert_eq!(heard.recv_timeout(wait).unwrap(), "asking");
        assert!(
            heard.recv_timeout(Duration::from_millis(300)).is_err(),
            "taken while held"
        );
        drop(first);
        assert_eq!(heard.recv_timeout(wait).unwrap(), "got");
    });
}
