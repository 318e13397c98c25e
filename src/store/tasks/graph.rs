//! The dependency graph between tasks: `blockedBy` edges (`A.blockedBy ∋ B`: A waits for B)
//! and their mirror, `blocks`. `graph` reads it from the list, `check_edge` vets an edge
//! before `update` adds it, and `dedup` and `push_unique` keep id lists free of repeats.
//!
//! Invariants:
//! - dependencies refer to existing tasks, never to the task itself, and never form a
//!   cycle: `update` checks each new edge against the graph plus the edges it accepted
//!   before it (`create` only needs its blockers to exist: nothing depends on a new task);
//! - they are symmetric (`A.blockedBy ∋ B` ⇔ `B.blocks ∋ A`), kept by the writers in
//!   [`super::list`];
//! - an edge is added once: `dedup` drops repeats and a leading `#` from the ids a caller
//!   gives, and `push_unique` never adds an id a list already holds.

use std::collections::{BTreeSet, HashMap};

use crate::store::tasks::list::TaskList;
use crate::util::error::{Error, Result};

impl TaskList {
    /// Refuses `task blockedBy blocker` if it is a self-dependency, names a missing task,
    /// or closes a cycle.
    pub(super) fn check_edge(
        &self,
        graph: &HashMap<String, Vec<String>>,
        task: &str,
        blocker: &str,
    ) -> Result<()> {
        if task == blocker {
            return Err(Error::usage(format!(
                "task #{task} cannot depend on itself"
            )));
        }
        if !graph.contains_key(blocker) {
            return Err(missing_dependency(blocker));
        }
        if !graph.contains_key(task) {
            return Err(missing_dependency(task));
        }
        // A cycle exists if `task` is already (transitively) a blocker of `blocker`.
        let mut stack = vec![blocker.to_owned()];
        let mut seen = BTreeSet::new();
        while let Some(t) = stack.pop() {
            if t == task {
                return Err(Error::usage(format!(
                    "making task #{task} depend on #{blocker} would create a dependency cycle"
                )));
            }
            if seen.insert(t.clone()) {
                stack.extend(graph.get(&t).cloned().unwrap_or_default());
            }
        }
        Ok(())
    }

    /// id → blockedBy, for every task.
    pub(super) fn graph(&self) -> Result<HashMap<String, Vec<String>>> {
        Ok(self
            .list()?
            .into_iter()
            .map(|t| (t.id, t.blocked_by))
            .collect())
    }
}

pub(super) fn missing_dependency(id: &str) -> Error {
    Error::not_found(format!(
        "dependency task #{id} does not exist; see `swarm task list`"
    ))
}

pub(super) fn dedup(ids: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in ids {
        let id = id.trim_start_matches('#').to_owned();
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

pub(super) fn push_unique(v: &mut Vec<String>, id: &str) {
    if !v.iter().any(|x| x == id) {
        v.push(id.to_owned());
    }
}
