//! The task board as people see it (`swarm watch`, `swarm serve`): where each task stands
//! (active, ready, blocked, done) and the order the board shows them in. Pure functions of
//! the task list; nothing here reads or writes.

use serde::Serialize;

use swarm_store::tasks::{Status, Task};

/// Where a task stands on the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Active,
    Ready,
    Blocked,
    Done,
}

impl TaskState {
    pub fn label(self) -> &'static str {
        match self {
            TaskState::Active => "active",
            TaskState::Ready => "ready",
            TaskState::Blocked => "blocked",
            TaskState::Done => "done",
        }
    }
}

/// Where `t` stands, with `find` looking its blockers up (a missing one counts as open).
pub fn task_state<'a>(t: &Task, find: impl Fn(&str) -> Option<&'a Task>) -> TaskState {
    match t.status {
        Status::InProgress => TaskState::Active,
        Status::Completed => TaskState::Done,
        Status::Pending => {
            let blocked = t
                .blocked_by
                .iter()
                .any(|b| find(b).is_none_or(|b| b.status != Status::Completed));
            if blocked {
                TaskState::Blocked
            } else {
                TaskState::Ready
            }
        }
    }
}

/// Active tasks first, then ready, blocked and done; by id within each group. Internal
/// tasks (Claude Code's `metadata._internal`) are left out.
pub fn board_order(tasks: Vec<Task>) -> Vec<Task> {
    let states: Vec<TaskState> = tasks
        .iter()
        .map(|t| task_state(t, |id| tasks.iter().find(|x| x.id == id)))
        .collect();
    let mut keyed: Vec<(TaskState, u64, Task)> = tasks
        .into_iter()
        .zip(states)
        .filter(|(t, _)| !t.is_internal())
        .map(|(t, s)| (s, t.id.parse().unwrap_or(u64::MAX), t))
        .collect();
    keyed.sort_by(|a, b| (a.0, a.1, &a.2.id).cmp(&(b.0, b.1, &b.2.id)));
    keyed.into_iter().map(|(_, _, t)| t).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, status: Status, blocked_by: &[&str]) -> Task {
        serde_json::from_value(serde_json::json!({
            "id": id, "subject": format!("task {id}"), "status": status.as_str(),
            "blockedBy": blocked_by,
        }))
        .unwrap()
    }

    #[test]
    fn board_puts_active_then_ready_then_blocked_then_done() {
        let tasks = vec![
            task("1", Status::Completed, &[]),
            task("2", Status::Pending, &["1"]),
            task("3", Status::Pending, &["2"]),
            task("10", Status::InProgress, &[]),
            task("4", Status::Pending, &[]),
            task("5", Status::Pending, &["99"]),
        ];
        let ids: Vec<String> = board_order(tasks).into_iter().map(|t| t.id).collect();
        assert_eq!(ids, ["10", "2", "4", "3", "5", "1"]);
    }
}
