//! The task events that run the user's hooks (see [`swarm_config::hooks`]), in one place
//! for every way a task changes: the task tools an agent calls, and `swarm task add` /
//! `swarm task done` by hand.
//!
//! `TaskCreated` runs after the task is written, and a hook that exits 2 deletes it again;
//! `TaskCompleted` runs before the task is marked completed, and a hook that exits 2
//! refuses it. Either way the hook's stderr is the feedback, and nothing else changes.

use crate::error::{Error, Result};
use swarm_config::hooks::{Event, Runner};
use swarm_config::permissions::PermissionMode;
use swarm_store::TaskBoard;
use swarm_store::tasks::{NewTask, Status, Task};

/// Whose hooks run, and in which permission mode (the hooks' payload carries it).
#[derive(Clone, Copy)]
pub struct Hooks<'a> {
    pub runner: Option<&'a Runner>,
    pub mode: PermissionMode,
}

/// What became of a new task.
pub enum Created {
    Kept(Task),
    /// A `TaskCreated` hook refused it, and it was deleted again.
    Refused {
        task: Task,
        feedback: String,
    },
}

impl Hooks<'_> {
    /// Runs `event`'s hooks for `task`; the feedback of a hook that blocked.
    fn fire(&self, event: Event, task: &Task) -> Option<String> {
        self.runner?
            .fire(
                event,
                self.mode,
                Runner::task_fields(&task.id, &task.subject, &task.description),
            )
            .blocked
    }

    /// Creates a task, then runs `TaskCreated`; a hook that blocks deletes it again.
    pub fn create(&self, list: &dyn TaskBoard, new: NewTask) -> Result<Created> {
        let task = list.create(new)?;
        let Some(feedback) = self.fire(Event::TaskCreated, &task) else {
            return Ok(Created::Kept(task));
        };
        if let Err(e) = list.delete(&task.id) {
            return Err(Error::Hook(format!(
                "a TaskCreated hook refused task #{} ({}), and deleting it failed: {e}",
                task.id,
                one_line(&feedback)
            )));
        }
        Ok(Created::Refused { task, feedback })
    }

    /// Runs `TaskCompleted` before `task` is marked completed (unless it already is); the
    /// feedback of a hook that refuses it.
    pub fn refuse_completion(&self, task: &Task) -> Option<String> {
        if task.status == Status::Completed {
            return None;
        }
        self.fire(Event::TaskCompleted, task)
    }
}

/// A hook's feedback on one line, for an error message.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
