//! The task board's contract: ids never reused, both sides of every dependency edge,
//! cycles refused, a claim a compare-and-set (none doubled by 8 racers over hundreds of
//! tasks), `next` the first ready task, `release` every open task of an owner.

use std::collections::HashSet;

use serde_json::json;

use crate::backends::Team;
use crate::contract;
use swarm_store::tasks::{ClaimRefusal, NewTask, Status, Task, TaskPatch};

contract!(
    dependencies_are_written_on_both_sides,
    bad_edges_are_refused,
    a_claim_is_refused_while_blocked_owned_or_busy,
    next_claims_the_first_ready_task,
    release_returns_every_open_task_of_an_owner,
    a_deleted_id_is_never_reused,
    eight_racers_over_hundreds_of_tasks_never_claim_one_twice,
    eight_racers_for_the_same_tasks_each_win_once,
);

fn new(team: &Team, subject: &str, blocked_by: &[&str]) -> Task {
    team.tasks()
        .create(NewTask {
            subject: subject.into(),
            blocked_by: blocked_by.iter().map(|s| s.to_string()).collect(),
            ..NewTask::default()
        })
        .unwrap()
}

fn edges(team: &Team, id: &str) -> (Vec<String>, Vec<String>) {
    let t = team.tasks().get(id).unwrap();
    (t.blocks, t.blocked_by)
}

fn dependencies_are_written_on_both_sides(team: &Team) {
    let a = new(team, "a", &[]);
    let b = new(team, "b", &["#1", "1"]);
    assert_eq!((a.id.as_str(), b.id.as_str()), ("1", "2"));
    assert_eq!(b.blocked_by, ["1"]);
    assert_eq!(edges(team, "1"), (vec!["2".into()], vec![]));
    let c = new(team, "c", &[]);
    team.tasks()
        .update(
            &c.id,
            TaskPatch {
                add_blocked_by: vec!["2".into()],
                ..TaskPatch::default()
            },
        )
        .unwrap();
    assert_eq!(edges(team, "2"), (vec!["3".into()], vec!["1".into()]));
    assert_eq!(edges(team, "3"), (vec![], vec!["2".into()]));
    let d = new(team, "d", &[]);
    team.tasks()
        .update(
            "1",
            TaskPatch {
                add_blocks: vec![d.id.clone()],
                ..TaskPatch::default()
            },
        )
        .unwrap();
    assert_eq!(edges(team, "4"), (vec![], vec!["1".into()]));
    assert_eq!(edges(team, "1").0, ["2", "4"]);
    let list = team.open().tasks().list().unwrap();
    assert_eq!(list.len(), 4);
    for t in &list {
        for blocker in &t.blocked_by {
            let other = list.iter().find(|o| &o.id == blocker).unwrap();
            assert!(
                other.blocks.contains(&t.id),
                "{} mirrors {}",
                other.id,
                t.id
            );
        }
    }
}

fn bad_edges_are_refused(team: &Team) {
    new(team, "a", &[]);
    new(team, "b", &["1"]);
    let missing = team
        .tasks()
        .create(NewTask {
            subject: "c".into(),
            blocked_by: vec!["9".into()],
            ..NewTask::default()
        })
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    assert_eq!(team.tasks().list().unwrap().len(), 2, "nothing made");
    let edge = |id: &str, on: &str| {
        team.tasks().update(
            id,
            TaskPatch {
                add_blocked_by: vec![on.into()],
                ..TaskPatch::default()
            },
        )
    };
    let cycle = edge("1", "2").unwrap_err();
    assert!(cycle.is_usage(), "{cycle}");
    assert!(cycle.to_string().contains("cycle"), "{cycle}");
    assert!(edge("1", "1").unwrap_err().is_usage());
    assert!(edge("1", "7").unwrap_err().is_not_found());
    assert!(edge("8", "1").unwrap_err().is_not_found());
    assert_eq!(edges(team, "1"), (vec!["2".into()], vec![]), "unchanged");
    let blank = team.tasks().create(NewTask::default()).unwrap_err();
    assert!(blank.is_usage());
}

fn a_claim_is_refused_while_blocked_owned_or_busy(team: &Team) {
    new(team, "a", &[]);
    new(team, "b", &["1"]);
    new(team, "c", &[]);
    let tasks = team.tasks();
    assert_eq!(
        tasks.claim("2", "bob", false).unwrap(),
        Err(ClaimRefusal::Blocked {
            blockers: vec!["1".into()]
        })
    );
    assert_eq!(
        tasks.claim("9", "bob", false).unwrap(),
        Err(ClaimRefusal::NotFound)
    );
    assert_eq!(
        tasks.claim("#1", "bob", false).unwrap(),
        Err(ClaimRefusal::NotFound)
    );
    let claimed = tasks.claim("1", "bob", false).unwrap().unwrap();
    assert_eq!(
        (claimed.owner.as_deref(), claimed.status),
        (Some("bob"), Status::InProgress)
    );
    assert!(
        tasks.claim("1", "bob", true).unwrap().is_ok(),
        "again by its owner"
    );
    assert_eq!(
        tasks.claim("1", "carol", false).unwrap(),
        Err(ClaimRefusal::AlreadyClaimed {
            owner: "bob".into()
        })
    );
    assert_eq!(
        tasks.claim("3", "bob", true).unwrap(),
        Err(ClaimRefusal::Busy {
            tasks: vec!["1".into()]
        })
    );
    let done = TaskPatch {
        status: Some(Status::Completed),
        ..TaskPatch::default()
    };
    tasks.update("1", done).unwrap();
    assert_eq!(
        tasks.claim("1", "bob", false).unwrap(),
        Err(ClaimRefusal::AlreadyCompleted)
    );
    assert_eq!(
        tasks
            .claim("2", "bob", true)
            .unwrap()
            .unwrap()
            .owner
            .as_deref(),
        Some("bob")
    );
    let refusal = ClaimRefusal::AlreadyClaimed {
        owner: "bob".into(),
    }
    .into_error("2", "carol");
    assert!(refusal.is_conflict());
}

fn next_claims_the_first_ready_task(team: &Team) {
    new(team, "a", &[]);
    new(team, "b", &["1"]);
    team.tasks()
        .create(NewTask {
            subject: "hidden".into(),
            metadata: json!({"_internal": true}).as_object().cloned(),
            ..NewTask::default()
        })
        .unwrap();
    new(team, "d", &[]);
    let tasks = team.tasks();
    assert_eq!(tasks.next("bob").unwrap().unwrap().id, "1");
    assert_eq!(
        tasks.next("carol").unwrap().unwrap().id,
        "4",
        "2 blocked, 3 hidden"
    );
    assert_eq!(tasks.next("dave").unwrap(), None);
    let done = TaskPatch {
        status: Some(Status::Completed),
        ..TaskPatch::default()
    };
    tasks.update("1", done).unwrap();
    let b = tasks.next("dave").unwrap().unwrap();
    assert_eq!((b.id.as_str(), b.owner.as_deref()), ("2", Some("dave")));
    assert_eq!(tasks.next("erin").unwrap(), None);
}

fn release_returns_every_open_task_of_an_owner(team: &Team) {
    for s in ["a", "b", "c"] {
        new(team, s, &[]);
    }
    let tasks = team.tasks();
    for id in ["1", "2"] {
        tasks.claim(id, "bob", false).unwrap().unwrap();
    }
    tasks.claim("3", "carol", false).unwrap().unwrap();
    let done = TaskPatch {
        status: Some(Status::Completed),
        ..TaskPatch::default()
    };
    tasks.update("2", done).unwrap();
    let released = tasks.release("bob").unwrap();
    assert_eq!(
        released.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["1"]
    );
    let one = tasks.get("1").unwrap();
    assert_eq!((one.owner, one.status), (None, Status::Pending));
    assert_eq!(
        tasks.get("2").unwrap().owner.as_deref(),
        Some("bob"),
        "done stays"
    );
    assert_eq!(tasks.get("3").unwrap().owner.as_deref(), Some("carol"));
    assert!(tasks.release("bob").unwrap().is_empty());
}

fn a_deleted_id_is_never_reused(team: &Team) {
    new(team, "a", &[]);
    new(team, "b", &["1"]);
    new(team, "c", &["2"]);
    let gone = team.tasks().delete("3").unwrap();
    assert_eq!(gone.subject, "c");
    assert_eq!(
        edges(team, "2"),
        (vec![], vec!["1".into()]),
        "its edges go with it"
    );
    assert!(team.tasks().delete("3").unwrap_err().is_not_found());
    assert!(team.tasks().get("3").unwrap_err().is_not_found());
    assert_eq!(new(team, "d", &[]).id, "4");
}

const RACERS: usize = 8;

fn eight_racers_over_hundreds_of_tasks_never_claim_one_twice(team: &Team) {
    const TASKS: usize = 240;
    for i in 0..TASKS {
        new(team, &format!("task {i}"), &[]);
    }
    let claims: Vec<(String, Task)> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..RACERS)
            .map(|r| {
                let handle = team.open();
                scope.spawn(move || {
                    let me = format!("racer{r}");
                    let mut mine = Vec::new();
                    while let Some(task) = handle.tasks().next(&me).unwrap() {
                        mine.push((me.clone(), task));
                    }
                    mine
                })
            })
            .collect();
        racers.into_iter().flat_map(|r| r.join().unwrap()).collect()
    });
    let ids: HashSet<&str> = claims.iter().map(|(_, t)| t.id.as_str()).collect();
    assert_eq!(
        claims.len(),
        TASKS,
        "{}: every task claimed once",
        team.kind
    );
    assert_eq!(ids.len(), TASKS, "no task claimed twice");
    for (me, task) in &claims {
        assert_eq!(team.tasks().get(&task.id).unwrap().owner.as_ref(), Some(me));
    }
}

fn eight_racers_for_the_same_tasks_each_win_once(team: &Team) {
    const TASKS: usize = 40;
    for i in 0..TASKS {
        new(team, &format!("task {i}"), &[]);
    }
    let wins: Vec<String> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..RACERS)
            .map(|r| {
                let handle = team.open();
                scope.spawn(move || {
                    let me = format!("racer{r}");
                    (1..=TASKS)
                        .filter_map(|id| {
                            let id = id.to_string();
                            handle
                                .tasks()
                                .claim(&id, &me, false)
                                .unwrap()
                                .ok()
                                .map(|_| id)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        racers.into_iter().flat_map(|r| r.join().unwrap()).collect()
    });
    let unique: HashSet<&String> = wins.iter().collect();
    assert_eq!(wins.len(), TASKS, "{}: one winner per task", team.kind);
    assert_eq!(unique.len(), TASKS);
}
