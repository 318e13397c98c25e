//! What wakes a lead agent's model: news, once. A finished task its teammate already
//! reported in a message of its own is not read a second time as a turn of its own.

use std::time::Duration;

use crate::harness::{ScriptedModel, TestEnv, wait_until};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn an_idle_notification_after_a_report_waits_for_the_next_news() {
    let env = TestEnv::new();
    let model = ScriptedModel::lead_with_one_task("build");
    let _run = env.run_team("build it", &model);
    let has = |needle: &str| {
        model
            .requests()
            .iter()
            .any(|r| r.body.to_string().contains(needle))
    };
    assert!(
        wait_until(WAIT, || env.root.join("tasks/t/1.json").is_file()),
        "the lead made no task"
    );
    env.run(&["--team", "t", "team", "add", "bob"]).success();
    env.deliver("t", "bob", "team-lead", "REPORT-1: task #1 is built".into());
    assert!(
        wait_until(WAIT, || has("REPORT-1")),
        "the report never woke the lead"
    );
    let idle = serde_json::json!({
        "type": "idle_notification", "from": "bob", "timestamp": "2026-11-25T12:00:00.000Z",
        "idleReason": "available", "completedTaskId": "1", "completedStatus": "resolved"
    });
    env.deliver("t", "bob", "team-lead", idle.to_string());
    // The lead has taken it in when it is in its delivered log.
    assert!(
        wait_until(WAIT, || {
            std::fs::read_to_string(env.root.join("teams/t/inboxes/team-lead.delivered.jsonl"))
                .unwrap_or_default()
                .contains("idle_notification")
        }),
        "the lead never read the idle notification"
    );
    env.deliver("t", "bob", "team-lead", "QUESTION-2: what next?".into());
    assert!(
        wait_until(WAIT, || has("QUESTION-2")),
        "the question never woke the lead"
    );
    assert!(
        !has("bob is idle after task #1"),
        "the idle notification woke the lead for a task bob had reported"
    );
    let asked = model
        .requests()
        .into_iter()
        .find(|r| r.body.to_string().contains("QUESTION-2"))
        .unwrap();
    assert!(
        asked
            .body
            .to_string()
            .contains("idle and waiting for work: bob"),
        "the lead was not told bob is idle: {}",
        asked.body
    );
}
