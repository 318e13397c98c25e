//! Advisory file leases: `task add --files` keeps the files under `metadata.swarmFiles` in
//! a task Claude Code still reads, a teammate's Write to a file another owner's open task
//! names is warned (and still written), and `swarm status` shows overlapping leases.

use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{Reply, Rule, Script};
use swarm_store::protocol::Protocol;

use crate::harness::{Backend, ScriptedModel, TestEnv, on_every_backend};

const T: Duration = Duration::from_secs(30);

fn task_add_files_round_trip_under_metadata_in_claude_codes_key_order(backend: Backend) {
    let Some(env) = TestEnv::with_team_on(backend, "t", &["bob"]) else {
        return;
    };
    env.run(&[
        "task",
        "add",
        "split",
        "--files",
        "a.rs,b/c.rs",
        "--files",
        "./d/../d.rs",
    ])
    .success();
    let task = env.store("t").tasks().get("1").unwrap();
    assert_eq!(
        task.metadata.clone().map(Value::Object),
        Some(json!({"swarmFiles": ["a.rs", "b/c.rs", "d.rs"]})),
        "{task:?}"
    );
    // On files, the task is what Claude Code reads: its keys in Claude Code's order.
    if backend == Backend::Files {
        let raw = std::fs::read_to_string(env.root.join("tasks/t/1.json")).unwrap();
        let task: serde_json::Map<String, Value> = serde_json::from_str(&raw).unwrap();
        let keys: Vec<&str> = task.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "id",
                "subject",
                "description",
                "status",
                "blocks",
                "blockedBy",
                "metadata"
            ],
            "{raw}"
        );
    }
    let shown = env.run(&["task", "show", "1"]).success().stdout;
    assert!(shown.contains("files: a.rs, b/c.rs, d.rs"), "{shown}");
    let listed = env.run(&["--json", "task", "list"]).success().stdout;
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed[0]["metadata"]["swarmFiles"][1], "b/c.rs", "{listed}");
    // A file outside the project is refused, and nothing is created.
    let bad = env
        .run(&["task", "add", "escape", "--files", "../x.rs"])
        .failure(2);
    assert!(
        bad.stderr.contains("relative to the project root"),
        "{}",
        bad.stderr
    );
    assert_eq!(env.store("t").tasks().list().unwrap().len(), 1);
}

fn a_write_to_a_file_another_owner_leases_is_warned_and_still_written(backend: Backend) {
    let Some(env) = TestEnv::with_team_on(backend, "t", &["bob", "alice"]) else {
        return;
    };
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("work")
                    .agent("bob")
                    .user_regex(r"claimed task #(?P<id>\d+)")
                    .no_tool_result(true)
                    .reply(
                        Reply::tool(
                            "Write",
                            json!({"file_path": "shared.rs", "content": "bob was here"}),
                        )
                        .tool_call(
                            "Write",
                            json!({"file_path": "./mine.rs", "content": "mine"}),
                        )
                        .tool_call("Write", json!({"file_path": "old.rs", "content": "old"}))
                        .tool_call(
                            "TaskUpdate",
                            json!({"taskId": "{{id}}", "status": "completed"}),
                        ),
                    ),
            )
            .rule(
                Rule::new("wrap up")
                    .agent("bob")
                    .no_tool_result(false)
                    .reply(Reply::text("done")),
            ),
    );
    for args in [
        &["task", "add", "alice's", "--files", "shared.rs"][..],
        &["task", "add", "finished", "--files", "old.rs"],
        &["task", "add", "bob's", "--files", "mine.rs"],
    ] {
        env.run(args).success();
    }
    env.run(&["task", "claim", "1", "--as", "alice"]).success();
    env.run(&["task", "claim", "2", "--as", "alice"]).success();
    env.run(&["task", "done", "2"]).success();
    let (_bob, output) = env.teammate(
        "t",
        "bob",
        &model.url(),
        &["--permission-mode", "acceptEdits"],
    );
    env.wait_for_lead_message("t", T, |p| matches!(p, Protocol::IdleNotification(_)))
        .unwrap_or_else(|| {
            panic!(
                "no idle notification; bob said:\n{}",
                std::fs::read_to_string(&output).unwrap_or_default()
            )
        });
    let results = model
        .requests()
        .into_iter()
        .filter_map(|r| {
            r.body["messages"].as_array()?.last()?["content"]
                .as_array()
                .cloned()
        })
        .find(|c| c.first().is_some_and(|b| b["type"] == "tool_result"))
        .expect("no request carried the tool results");
    let text = |i: usize| results[i]["content"].as_str().unwrap_or("").to_owned();
    assert_ne!(results[0]["is_error"], true, "{results:?}");
    assert!(
        text(0).contains(
            "note: shared.rs is leased by task #1 (owner alice); coordinate with alice before changing it further"
        ),
        "{results:?}"
    );
    // Its own task's lease and a completed task's warn nobody.
    assert!(!text(1).contains("note:"), "{results:?}");
    assert!(!text(2).contains("note:"), "{results:?}");
    let work = env.dir.path().join("work");
    assert_eq!(
        std::fs::read_to_string(work.join("shared.rs")).unwrap(),
        "bob was here"
    );
    assert!(work.join("mine.rs").exists() && work.join("old.rs").exists());
}

fn status_shows_files_two_open_tasks_name(backend: Backend) {
    let Some(env) = TestEnv::with_team_on(backend, "t", &["bob", "alice"]) else {
        return;
    };
    env.run(&["task", "add", "one", "--files", "src/x.rs,src/y.rs"])
        .success();
    env.run(&["task", "add", "two", "--files", "src/x.rs"])
        .success();
    env.run(&["task", "add", "three", "--files", "src/y.rs"])
        .success();
    env.run(&["task", "claim", "1", "--as", "bob"]).success();
    env.run(&["task", "done", "3"]).success();
    let status = env
        .run(&["--team", "t", "--json", "status"])
        .success()
        .stdout;
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(
        status["overlappingLeases"],
        json!([{"file": "src/x.rs", "tasks": ["1", "2"], "owners": ["bob", null]}]),
        "{status}"
    );
    let text = env.run(&["--team", "t", "status"]).success().stdout;
    assert!(
        text.contains("overlapping lease: src/x.rs: #1 (bob), #2 (unowned)"),
        "{text}"
    );
    assert!(!text.contains("src/y.rs"), "{text}");
}

on_every_backend!(
    task_add_files_round_trip_under_metadata_in_claude_codes_key_order,
    a_write_to_a_file_another_owner_leases_is_warned_and_still_written,
    status_shows_files_two_open_tasks_name,
);
