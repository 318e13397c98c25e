//! The launch and worktree records' contract: each replaced whole and read from any
//! handle, none for an agent without one, worktrees listed by agent and removed (twice is
//! fine); a worktree record's lock is one agent's: a second holder waits for the first,
//! another agent's is free.

use std::path::PathBuf;

use crate::backends::Team;
use crate::contract;
use crate::merge_queue::second_waits_for_first;
use swarm_store::launch_record::LaunchRecord;
use swarm_store::worktrees::{Record, RecordState};

contract!(
    a_launch_record_is_replaced_whole,
    worktree_records_are_kept_per_agent,
    a_worktree_lock_is_one_agents,
);

fn launch(argv0: &str) -> LaunchRecord {
    LaunchRecord {
        argv: vec![argv0.into(), "agent".into(), "--name".into(), "bob".into()],
        env: vec![("SWARM_TEAM".into(), "contract".into())],
        secret_names: vec!["ANTHROPIC_API_KEY".into()],
        cwd: PathBuf::from("/work"),
        engine: Some("swarm".into()),
        host: Some("h1".into()),
        sig: Some("c2ln".into()),
    }
}

fn a_launch_record_is_replaced_whole(team: &Team) {
    assert_eq!(team.launches().read_launch("bob").unwrap(), None);
    team.launches()
        .save_launch("bob", &launch("swarm"))
        .unwrap();
    let mut newer = launch("/usr/bin/swarm");
    newer.engine = None;
    team.launches().save_launch("bob", &newer).unwrap();
    assert_eq!(
        team.open().launches().read_launch("bob").unwrap(),
        Some(newer)
    );
    assert_eq!(team.launches().read_launch("carol").unwrap(), None);
}

fn record(agent: &str, state: RecordState) -> Record {
    Record {
        agent: agent.into(),
        git_dir: PathBuf::from("/repo/.git"),
        path: PathBuf::from(format!("/repo/.swarm/{agent}")),
        branch: format!("swarm/{agent}"),
        name: format!("swarm-{agent}"),
        base: "a".repeat(40),
        state,
        created_at: 7,
        host: None,
    }
}

fn worktree_records_are_kept_per_agent(team: &Team) {
    let trees = team.worktrees();
    assert_eq!(trees.worktree("bob").unwrap(), None);
    assert!(trees.all_worktrees().unwrap().is_empty());
    for agent in ["carol", "bob", "Alice"] {
        trees
            .save_worktree(&record(agent, RecordState::Active))
            .unwrap();
    }
    trees
        .save_worktree(&record("bob", RecordState::Kept))
        .unwrap();
    assert_eq!(
        team.open().worktrees().worktree("bob").unwrap(),
        Some(record("bob", RecordState::Kept))
    );
    let agents: Vec<String> = trees
        .all_worktrees()
        .unwrap()
        .into_iter()
        .map(|r| r.agent)
        .collect();
    assert_eq!(agents, ["Alice", "bob", "carol"], "by name, capitals first");
    trees.remove_worktree("bob").unwrap();
    trees.remove_worktree("bob").unwrap();
    assert_eq!(trees.worktree("bob").unwrap(), None);
    assert_eq!(trees.all_worktrees().unwrap().len(), 2);
}

fn a_worktree_lock_is_one_agents(team: &Team) {
    // A record's lock is taken while it exists (the file store's lock file sits beside it).
    for agent in ["bob", "carol"] {
        team.worktrees()
            .save_worktree(&record(agent, RecordState::Active))
            .unwrap();
    }
    let bob = team.worktrees().lock_worktree("bob").unwrap();
    let carol = team.open().worktrees().lock_worktree("carol").unwrap();
    drop(carol);
    let other = team.open();
    second_waits_for_first(bob, || other.worktrees().lock_worktree("bob"));
}
