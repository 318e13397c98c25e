//! Claiming tasks: `TaskList::claim` takes a named task, `TaskList::next` the first
//! ready one, with the readiness and refusal rules they share. Both set the owner and
//! status `in_progress`.
//!
//! Invariants:
//! - a claim is a compare-and-set under the lock: the task is read under its per-task lock,
//!   checked, and only then written with its owner, so a task has at most one owner;
//! - `claim` holds the list lock; `next` only its flock, as Claude Code's own claim takes
//!   no list lock, and reads each candidate under Claude Code's per-task lock, giving back
//!   the lock of every candidate it does not claim;
//! - ready means pending, unowned, not internal, and every blocker that still exists is
//!   completed; `next` takes candidates from the claim index but re-checks each from its
//!   file, and answers "nothing is ready" only after a full scan (an unlocked one first,
//!   which takes no lock when it finds nothing);
//! - a claim does not drop the claim index: `next` saves it with the claimed task updated.

use std::collections::HashMap;

use crate::error::Result;
use crate::files;
use crate::tasks::index::{self, Index};
use crate::tasks::list::TaskList;
use crate::tasks::model::{ClaimRefusal, Status, Task};
use swarm_util::lock;

impl TaskList {
    /// Claims task `id` for `agent`: owner set, status `in_progress`. Claiming a task one
    /// already owns succeeds. The outer error is I/O; the inner one a refusal.
    pub fn claim(
        &self,
        id: &str,
        agent: &str,
        busy_check: bool,
    ) -> Result<Result<Task, ClaimRefusal>> {
        let mut guard = self.lock()?;
        // Mended before the task is read: read first, it would be written back unmended.
        let tasks = self.read_repaired(&mut guard)?;
        let Some(mut task) = self.lock_task(&mut guard, id)? else {
            return Ok(Err(ClaimRefusal::NotFound));
        };
        if let Some(refusal) = refusal(&task, agent, &tasks, busy_check) {
            return Ok(Err(refusal));
        }
        task.owner = Some(agent.to_owned());
        if task.status == Status::Pending {
            task.status = Status::InProgress;
        }
        self.write_task(&mut guard, &task)?;
        Ok(Ok(task))
    }

    /// Claims the first ready task (pending, unowned, every blocker completed) for `agent`.
    ///
    /// A cache of every task's state (`.swarm-index`, rebuilt after any other mutation
    /// and every few seconds) saves reading the whole list per claim. It only proposes
    /// candidates: each is re-read and re-checked from its file before it is claimed, and
    /// "nothing is ready" is only answered after a full scan, so a stale cache can change
    /// which ready task is picked but never claims a task twice or misses all of them.
    pub fn next(&self, agent: &str) -> Result<Option<Task>> {
        // An unlocked look first: over a board where nothing is ready (an idle team's usual
        // case) no lock is taken and no index dropped, so the look leaves nothing in the
        // directory for every other watcher of it to wake for. A task that becomes ready
        // just after is found by the look its change notice causes.
        if !any_ready(&self.list()?) {
            return Ok(None);
        }
        // Only the claimed task's file changes, and each candidate is read under Claude
        // Code's per-task lock, as Claude Code's own claim does; the flock keeps swarm
        // claimers apart.
        let mut guard = files::lock_sidecar_only(&self.root, &self.list_anchor()?)?;
        if let Some(index) = index::load(&self.index_path())
            && let Some(task) = self.claim_first_ready(&mut guard, index, agent)?
        {
            return Ok(Some(task));
        }
        let index = Index::build(&self.read_repaired(&mut guard)?);
        let claimed = self.claim_first_ready(&mut guard, index, agent)?;
        if claimed.is_none() {
            // An index saying "nothing is ready" would save the next call nothing (it scans
            // in full whenever no candidate pans out), and idle teammates ask once a second
            // each: rather than rewrite it every time, drop a stale one.
            index::drop_at(&self.index_path());
        }
        Ok(claimed)
    }

    /// Claims the first of `index`'s ready candidates that is still ready once locked.
    fn claim_first_ready(
        &self,
        guard: &mut lock::Locked,
        mut index: Index,
        agent: &str,
    ) -> Result<Option<Task>> {
        let candidates: Vec<u64> = index.ready().collect();
        for id in candidates {
            let id = id.to_string();
            let task = self.lock_task(guard, &id)?;
            match task {
                Some(task) if self.is_ready(&task)? => {
                    return self.claim_ready(guard, task, agent, index).map(Some);
                }
                Some(task) => index.refresh(&task),
                None => index.forget(&id),
            }
            // Not ours to write after all: let Claude Code have it back.
            guard.unlock_dir(&self.task_path(&id))?;
        }
        Ok(None)
    }

    fn claim_ready(
        &self,
        guard: &mut lock::Locked,
        mut task: Task,
        agent: &str,
        mut index: Index,
    ) -> Result<Task> {
        task.owner = Some(agent.to_owned());
        task.status = Status::InProgress;
        self.write_task(guard, &task)?;
        index.refresh(&task);
        index::save(&self.index_path(), &index);
        Ok(task)
    }

    /// Pending, unowned, visible, and every blocker that still exists is completed.
    fn is_ready(&self, task: &Task) -> Result<bool> {
        if task.status != Status::Pending || task.owner.is_some() || task.is_internal() {
            return Ok(false);
        }
        for b in &task.blocked_by {
            if self
                .read_task(b)?
                .is_some_and(|t| t.status != Status::Completed)
            {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Whether any of `tasks` (the whole list) is ready (see [`is_ready`]).
fn any_ready(tasks: &[Task]) -> bool {
    let status: HashMap<&str, Status> = tasks.iter().map(|t| (t.id.as_str(), t.status)).collect();
    tasks.iter().any(|t| is_ready(t, &status))
}

/// Whether `task` is ready to claim, given every task's status by id: pending, unowned,
/// visible, and every blocker that still exists completed. Every backend's `next` takes
/// ready tasks by this rule.
pub fn is_ready(task: &Task, status: &HashMap<&str, Status>) -> bool {
    task.status == Status::Pending
        && task.owner.is_none()
        && !task.is_internal()
        && task.blocked_by.iter().all(|b| {
            status
                .get(b.as_str())
                .is_none_or(|s| *s == Status::Completed)
        })
}

/// Why `agent` may not claim `task` now, given every task of the list (`None`: it may).
/// Every backend refuses by this rule.
pub fn refusal(task: &Task, agent: &str, tasks: &[Task], busy_check: bool) -> Option<ClaimRefusal> {
    if task.status == Status::Completed {
        return Some(ClaimRefusal::AlreadyCompleted);
    }
    if let Some(owner) = &task.owner
        && !task.owned_by(agent)
    {
        return Some(ClaimRefusal::AlreadyClaimed {
            owner: owner.clone(),
        });
    }
    let open_blockers: Vec<String> = task
        .blocked_by
        .iter()
        .filter(|b| tasks.iter().any(|t| &t.id == *b && t.is_open()))
        .cloned()
        .collect();
    if !open_blockers.is_empty() {
        return Some(ClaimRefusal::Blocked {
            blockers: open_blockers,
        });
    }
    if busy_check {
        let busy: Vec<String> = tasks
            .iter()
            .filter(|t| t.id != task.id && t.is_open() && t.owned_by(agent))
            .map(|t| t.id.clone())
            .collect();
        if !busy.is_empty() {
            return Some(ClaimRefusal::Busy { tasks: busy });
        }
    }
    None
}
