//! The task list after a crash: a dependency edit killed between the two sides of an edge
//! (`blockedBy` on the waiting task, `blocks` on its blocker) leaves a graph that the next
//! swarm command makes whole, and a task that waits for an open blocker stays unclaimable.
//! The kill is exact: `SWARM_FAULT=tasks.between_edge_writes:kill`.

use std::os::unix::process::ExitStatusExt;

use serde_json::Value;

use crate::harness::{TestEnv, run};

const KILL_BETWEEN_SIDES: &str = "tasks.between_edge_writes:kill";

fn team() -> TestEnv {
    let env = TestEnv::with_team("t", &["bob", "carol"]);
    for subject in ["one", "two"] {
        env.run(&["--team", "t", "task", "add", subject]).success();
    }
    env
}

/// Runs `swarm ARGS` with the fault armed and checks that it died there.
fn killed_between_sides(env: &TestEnv, args: &[&str]) {
    let r = run(env.swarm(args).env("SWARM_FAULT", KILL_BETWEEN_SIDES));
    assert_eq!(
        r.status.signal(),
        Some(9),
        "expected a kill between the two sides, got {:?}\nstderr:\n{}",
        r.status,
        r.stderr
    );
}

fn task_file(env: &TestEnv, id: &str) -> Value {
    let path = env.root.join(format!("tasks/t/{id}.json"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).expect("task file parses")
}

fn ids(task: &Value, field: &str) -> Vec<String> {
    task[field]
        .as_array()
        .unwrap_or_else(|| panic!("{field} is an array: {task}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

/// Every edge written on one side only, as a Claude Code teammate reading the files
/// would find it: `A.blockedBy ∋ B` without `B.blocks ∋ A`, or the reverse.
fn one_sided(env: &TestEnv) -> Vec<String> {
    let mut tasks = Vec::new();
    for entry in std::fs::read_dir(env.root.join("tasks/t")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(id) = name.strip_suffix(".json") {
            tasks.push((id.to_owned(), task_file(env, id)));
        }
    }
    let get = |id: &str| tasks.iter().find(|(i, _)| i == id).map(|(_, t)| t);
    let mut found = Vec::new();
    for (id, t) in &tasks {
        for b in ids(t, "blockedBy") {
            if get(&b).is_some_and(|b| !ids(b, "blocks").contains(id)) {
                found.push(format!(
                    "#{id} blockedBy #{b}, but #{b} does not block #{id}"
                ));
            }
        }
        for c in ids(t, "blocks") {
            if get(&c).is_some_and(|c| !ids(c, "blockedBy").contains(id)) {
                found.push(format!(
                    "#{id} blocks #{c}, but #{c} is not blocked by #{id}"
                ));
            }
        }
    }
    found
}

#[test]
fn a_killed_update_blocks_leaves_both_sides_after_the_next_list() {
    let env = team();
    killed_between_sides(
        &env,
        &["--team", "t", "task", "update", "1", "--blocks", "2"],
    );
    env.run(&["--team", "t", "task", "list"]).success();
    assert_eq!(one_sided(&env), Vec::<String>::new());
    assert_eq!(ids(&task_file(&env, "2"), "blockedBy"), ["1"]);
    assert_eq!(ids(&task_file(&env, "1"), "blocks"), ["2"]);
    // The waiting task cannot start before its blocker is done, by name or as the next.
    env.run(&["--team", "t", "task", "claim", "2", "--as", "bob"])
        .failure(4);
    let next = env
        .run(&["--team", "t", "--json", "task", "next", "--as", "carol"])
        .success();
    let claimed: Value = serde_json::from_str(&next.stdout).unwrap();
    assert_eq!(claimed["id"], "1", "{}", next.stdout);
}

#[test]
fn a_killed_update_blocked_by_leaves_both_sides_after_the_next_claim() {
    let env = team();
    killed_between_sides(
        &env,
        &["--team", "t", "task", "update", "2", "--blocked-by", "1"],
    );
    env.run(&["--team", "t", "task", "claim", "2", "--as", "bob"])
        .failure(4);
    assert_eq!(one_sided(&env), Vec::<String>::new());
    assert_eq!(ids(&task_file(&env, "1"), "blocks"), ["2"]);
}

#[test]
fn a_killed_add_blocked_by_leaves_both_sides_after_the_next_claim() {
    let env = team();
    killed_between_sides(
        &env,
        &[
            "--team",
            "t",
            "task",
            "add",
            "three",
            "--blocked-by",
            "1",
            "--blocked-by",
            "2",
        ],
    );
    env.run(&["--team", "t", "task", "claim", "1", "--as", "bob"])
        .success();
    assert_eq!(one_sided(&env), Vec::<String>::new());
    assert_eq!(ids(&task_file(&env, "3"), "blockedBy"), ["1", "2"]);
    env.run(&["--team", "t", "task", "claim", "3", "--as", "carol"])
        .failure(4);
}

#[test]
fn a_blocks_entry_without_its_blocked_by_is_dropped_and_blocks_nothing() {
    // What a two-step blockTask (Claude Code's) leaves when it dies after its first step:
    // only the blocker says so. `blockedBy` is what every claimer reads, so the waiting
    // side decides: the edge was never made.
    let env = team();
    let path = env.root.join("tasks/t/1.json");
    let mut one = task_file(&env, "1");
    one["blocks"] = serde_json::json!(["2"]);
    std::fs::write(&path, serde_json::to_vec_pretty(&one).unwrap()).unwrap();
    let listed = env
        .run(&["--team", "t", "--json", "task", "list"])
        .success();
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed[0]["blocks"], serde_json::json!([]), "{listed}");
    assert_eq!(one_sided(&env), Vec::<String>::new());
    env.run(&["--team", "t", "task", "claim", "2", "--as", "bob"])
        .success();
}
