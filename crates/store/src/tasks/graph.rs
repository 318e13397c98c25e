//! The dependency graph between tasks: `blockedBy` edges (`A.blockedBy ∋ B`: A waits for B)
//! and their mirror, `blocks`. `graph` reads it from the list, `check_edge` vets an edge
//! before `update` adds it, `Mirror` derives `blocks` from `blockedBy` (the list's
//! `read_repaired` mends the files whose `blocks` disagree with it), and `dedup` and
//! `push_unique` keep id lists free of repeats. Pure functions of tasks: nothing here
//! reads or writes.
//!
//! Invariants:
//! - dependencies refer to existing tasks, never to the task itself, and never form a
//!   cycle: `update` checks each new edge against the graph plus the edges it accepted
//!   before it (`create` only needs its blockers to exist: nothing depends on a new task);
//! - `blockedBy` is the truth and `blocks` its mirror: it is the side every claimer reads
//!   (swarm's and Claude Code's), and a writer writes it first, so a writer killed between
//!   the two sides of an edge leaves either nothing or a `blockedBy` whose mirror is
//!   missing, never a task that should wait but may start;
//! - the two sides agree on disk after the next swarm command that reads the whole list:
//!   `list`, and every mutation but `create` (`read_repaired` in `list`, under the list lock), rewrite
//!   each task whose `blocks` disagrees with the `blockedBy`s naming it; an entry naming a
//!   task that is not there (deleted, or unreadable) is left alone;
//! - an edge is added once: `dedup` drops repeats and a leading `#` from the ids a caller
//!   gives, and `push_unique` never adds an id a list already holds.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::error::{Error, Result};
use crate::tasks::model::Task;
use swarm_util::error::Base as _;

/// Refuses `task blockedBy blocker` if it is a self-dependency, names a missing task,
/// or closes a cycle.
pub fn check_edge(graph: &HashMap<String, Vec<String>>, task: &str, blocker: &str) -> Result<()> {
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

/// Checks the edges a patch adds to task `id` (`add_blocked_by`: `id` waits on each;
/// `add_blocks`: each waits on `id`) against `tasks`, each accepted edge joining the graph
/// before the next is checked: two edges that are each harmless alone may close a cycle
/// together. Every backend checks a patch's edges by this one rule.
pub fn check_new_edges(
    tasks: &[Task],
    id: &str,
    add_blocked_by: &[String],
    add_blocks: &[String],
) -> Result<()> {
    let mut graph = graph(tasks);
    for b in dedup(add_blocked_by) {
        check_edge(&graph, id, &b)?;
        graph.entry(id.to_owned()).or_default().push(b);
    }
    for c in dedup(add_blocks) {
        check_edge(&graph, &c, id)?;
        graph.entry(c).or_default().push(id.to_owned());
    }
    Ok(())
}

/// id → blockedBy, for every task.
pub fn graph(tasks: &[Task]) -> HashMap<String, Vec<String>> {
    tasks
        .iter()
        .map(|t| (t.id.clone(), t.blocked_by.clone()))
        .collect()
}

/// `blocks` as the `blockedBy` of every task says it should be.
pub(super) struct Mirror {
    /// blocker → the tasks waiting for it, in list order.
    waiting: HashMap<String, Vec<String>>,
    known: HashSet<String>,
}

impl Mirror {
    /// Linear in the edges: a board where one task blocks thousands is read every pass.
    pub(super) fn of(tasks: &[Task]) -> Mirror {
        let mut waiting: HashMap<String, Vec<String>> = HashMap::new();
        let mut edges: HashSet<(&str, &str)> = HashSet::new();
        for t in tasks {
            for b in &t.blocked_by {
                if edges.insert((b, &t.id)) {
                    waiting.entry(b.clone()).or_default().push(t.id.clone());
                }
            }
        }
        Mirror {
            waiting,
            known: tasks.iter().map(|t| t.id.clone()).collect(),
        }
    }

    /// The `blocks` `task` should have, if it has others: the entries it has that a
    /// `blockedBy` confirms (or that name a task not in the list), then the missing ones.
    pub(super) fn blocks(&self, task: &Task) -> Option<Vec<String>> {
        let should = self.waiting.get(&task.id).map(Vec::as_slice).unwrap_or(&[]);
        let confirmed: HashSet<&str> = should.iter().map(String::as_str).collect();
        let mut taken: HashSet<&str> = HashSet::with_capacity(should.len());
        let mut blocks = Vec::with_capacity(should.len());
        for b in &task.blocks {
            if (!self.known.contains(b) || confirmed.contains(b.as_str())) && taken.insert(b) {
                blocks.push(b.clone());
            }
        }
        for w in should {
            if taken.insert(w) {
                blocks.push(w.clone());
            }
        }
        (blocks != task.blocks).then_some(blocks)
    }

    pub(super) fn agrees(&self, tasks: &[Task]) -> bool {
        tasks.iter().all(|t| self.blocks(t).is_none())
    }

    pub(super) fn apply(&self, mut tasks: Vec<Task>) -> Vec<Task> {
        for t in &mut tasks {
            if let Some(blocks) = self.blocks(t) {
                t.blocks = blocks;
            }
        }
        tasks
    }
}

pub fn missing_dependency(id: &str) -> Error {
    Error::not_found(format!(
        "dependency task #{id} does not exist; see `swarm task list`"
    ))
}

pub fn dedup(ids: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in ids {
        let id = id.trim_start_matches('#').to_owned();
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

pub fn push_unique(v: &mut Vec<String>, id: &str) {
    if !v.iter().any(|x| x == id) {
        v.push(id.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::model::Status;

    fn task(id: &str, blocks: &[&str], blocked_by: &[&str]) -> Task {
        Task {
            id: id.into(),
            subject: id.into(),
            description: String::new(),
            active_form: None,
            status: Status::Pending,
            blocks: blocks.iter().map(|s| s.to_string()).collect(),
            blocked_by: blocked_by.iter().map(|s| s.to_string()).collect(),
            metadata: None,
            owner: None,
            extra: Default::default(),
        }
    }

    #[test]
    fn blocks_follow_blocked_by_and_keep_entries_naming_missing_tasks() {
        // 1 lacks its mirror of 2's blockedBy, claims to block 3 (not so) and 9 (gone).
        let tasks = vec![
            task("1", &["3", "9"], &[]),
            task("2", &[], &["1"]),
            task("3", &[], &[]),
        ];
        let mirror = Mirror::of(&tasks);
        assert!(!mirror.agrees(&tasks));
        assert_eq!(mirror.blocks(&tasks[0]), Some(vec!["9".into(), "2".into()]));
        assert_eq!(mirror.blocks(&tasks[1]), None);
        let mended = mirror.apply(tasks);
        assert!(Mirror::of(&mended).agrees(&mended));
    }
}
