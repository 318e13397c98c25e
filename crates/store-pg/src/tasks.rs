//! The task board in PostgreSQL: each task its JSON document in `tasks`, and the list's row
//! in `task_lists` (its high-water mark), which every mutation locks first, as the file
//! store's mutations hold its list lock.
//!
//! Invariants:
//! - every mutation is one transaction under the list's row lock: a claim is therefore a
//!   compare-and-set (read, checked by `claim::refusal`, written, with no other writer in
//!   between), and both sides of every dependency edge are written together, so `blocks`
//!   and `blockedBy` never disagree and need no mending;
//! - ids are `1 + max(ids, high-water mark)` and never reused: deleting raises the mark;
//! - the rules are the file store's: who may claim (`claim::refusal`), which edges are
//!   allowed (`graph::check_new_edges`), which ids a caller's list names (`graph::dedup`).

use std::collections::HashMap;

use postgres::GenericClient;
use postgres::types::Json;
use serde_json::Map;

use crate::PgStore;
use crate::connect::{Fail, Retry};
use crate::watch::{Change, notify};
use swarm_store::error::{Error, Result};
use swarm_store::seam::TaskBoard;
use swarm_store::tasks::claim::{is_ready, refusal};
use swarm_store::tasks::graph::{check_new_edges, dedup, missing_dependency, push_unique};
use swarm_store::tasks::list::missing;
use swarm_store::tasks::{ClaimRefusal, NewTask, Status, Task, TaskPatch};
use swarm_util::error::Base as _;

type Tx<'a, 'b> = &'a mut postgres::Transaction<'b>;

/// Locks the team's task list for the rest of the transaction; returns its high-water mark.
pub(crate) fn lock_list(store: &PgStore, tx: Tx) -> std::result::Result<i64, Fail> {
    let row = tx.query_opt(
        "SELECT high_water FROM task_lists WHERE team = $1 FOR UPDATE",
        &[&store.team.as_str()],
    )?;
    row.map(|r| r.get(0))
        .ok_or_else(|| Fail::Swarm(store.no_team()))
}

/// Every task, in id order: the ids and row versions first, then only the documents that
/// changed since this handle last read them (a board of thousands where little moves costs
/// a list of numbers, not thousands of documents to parse). A version is the writing
/// transaction's id: two different documents of one row never share it once committed.
fn all_tasks(
    store: &PgStore,
    client: &mut impl GenericClient,
) -> std::result::Result<Vec<Task>, Fail> {
    let team = store.team.as_str();
    let rows = client.query(
        "SELECT id, xmin::text::bigint FROM tasks WHERE team = $1 ORDER BY id",
        &[&team],
    )?;
    let versions: Vec<(i64, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let stale: Vec<i64> = {
        let seen = store.seen_tasks.lock().unwrap_or_else(|p| p.into_inner());
        versions
            .iter()
            .filter(|(id, v)| seen.get(id).is_none_or(|(at, _)| at != v))
            .map(|(id, _)| *id)
            .collect()
    };
    let fresh = if stale.is_empty() {
        Vec::new()
    } else {
        client.query(
            "SELECT id, xmin::text::bigint, doc FROM tasks WHERE team = $1 AND id = ANY($2)",
            &[&team, &stale],
        )?
    };
    let mut seen = store.seen_tasks.lock().unwrap_or_else(|p| p.into_inner());
    for r in &fresh {
        seen.insert(r.get(0), (r.get(1), r.get::<_, Json<Task>>(2).0));
    }
    let listed: std::collections::HashSet<i64> = versions.iter().map(|(id, _)| *id).collect();
    seen.retain(|id, _| listed.contains(id));
    // A row changed between the two reads is listed at its newer version: as read last.
    Ok(versions
        .iter()
        .filter_map(|(id, _)| seen.get(id).map(|(_, t)| t.clone()))
        .collect())
}

/// Only a decimal id names a task, as in the file store.
fn task_number(id: &str) -> Option<i64> {
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id.parse().ok()
}

fn read_task(
    store: &PgStore,
    client: &mut impl GenericClient,
    id: &str,
) -> std::result::Result<Option<Task>, Fail> {
    let Some(n) = task_number(id) else {
        return Ok(None);
    };
    let row = client.query_opt(
        "SELECT doc FROM tasks WHERE team = $1 AND id = $2",
        &[&store.team.as_str(), &n],
    )?;
    Ok(row.map(|r| r.get::<_, Json<Task>>(0).0))
}

fn write_task(store: &PgStore, tx: Tx, task: &Task) -> std::result::Result<(), Fail> {
    let n = task_number(&task.id).ok_or_else(|| missing(&task.id))?;
    tx.execute(
        "INSERT INTO tasks (team, id, doc) VALUES ($1, $2, $3)
         ON CONFLICT (team, id) DO UPDATE SET doc = EXCLUDED.doc",
        &[&store.team.as_str(), &n, &Json(task)],
    )?;
    notify(tx, &store.team, Change::Tasks)?;
    Ok(())
}

/// Returns every open task of `owner` to pending with no owner. Caller holds the list lock.
pub(crate) fn release_in(
    store: &PgStore,
    tx: Tx,
    owner: &str,
) -> std::result::Result<Vec<Task>, Fail> {
    let mut released = Vec::new();
    for mut task in all_tasks(store, tx)?
        .into_iter()
        .filter(|t| t.is_open() && t.owned_by(owner))
    {
        task.owner = None;
        task.status = Status::Pending;
        write_task(store, tx, &task)?;
        released.push(task);
    }
    Ok(released)
}

fn take(task: &mut Task, agent: &str) {
    task.owner = Some(agent.to_owned());
    if task.status == Status::Pending {
        task.status = Status::InProgress;
    }
}

impl PgStore {
    fn what(&self, doing: &str) -> String {
        format!("{doing} in the task list of team '{}'", self.team)
    }
}

impl TaskBoard for PgStore {
    fn list(&self) -> Result<Vec<Task>> {
        self.db.run(Retry::Safe, &self.what("list the tasks"), |c| {
            all_tasks(self, c)
        })
    }

    fn get(&self, id: &str) -> Result<Task> {
        let what = self.what(&format!("read task #{id}"));
        self.db
            .run(Retry::Safe, &what, |c| read_task(self, c, id))?
            .ok_or_else(|| missing(id))
    }

    fn create(&self, new: NewTask) -> Result<Task> {
        if new.subject.trim().is_empty() {
            return Err(Error::usage("a task needs a subject"));
        }
        self.db
            .transaction(Retry::BeforeCommit, &self.what("create a task"), |tx| {
                let high_water = lock_list(self, tx)?;
                let max: i64 = tx
                    .query_one(
                        "SELECT coalesce(max(id), 0) FROM tasks WHERE team = $1",
                        &[&self.team.as_str()],
                    )?
                    .get(0);
                let id = (max.max(high_water) + 1).to_string();
                let mut blockers = Vec::new();
                for b in dedup(&new.blocked_by) {
                    blockers.push(read_task(self, tx, &b)?.ok_or_else(|| missing_dependency(&b))?);
                }
                let task = Task {
                    id: id.clone(),
                    subject: new.subject.clone(),
                    description: new.description.clone(),
                    active_form: new.active_form.clone(),
                    status: Status::Pending,
                    blocks: Vec::new(),
                    blocked_by: blockers.iter().map(|b| b.id.clone()).collect(),
                    metadata: new.metadata.clone(),
                    owner: None,
                    extra: Map::new(),
                };
                write_task(self, tx, &task)?;
                for mut b in blockers {
                    b.blocks.push(id.clone());
                    write_task(self, tx, &b)?;
                }
                Ok(task)
            })
    }

    fn update(&self, id: &str, patch: TaskPatch) -> Result<Task> {
        let what = self.what(&format!("update task #{id}"));
        self.db.transaction(Retry::BeforeCommit, &what, |tx| {
            lock_list(self, tx)?;
            let tasks = all_tasks(self, tx)?;
            patched(self, tx, &tasks, id, patch.clone())
        })
    }

    fn delete(&self, id: &str) -> Result<Task> {
        let what = self.what(&format!("delete task #{id}"));
        self.db.transaction(Retry::BeforeCommit, &what, |tx| {
            let high_water = lock_list(self, tx)?;
            let task = read_task(self, tx, id)?.ok_or_else(|| missing(id))?;
            let n = task_number(id).ok_or_else(|| missing(id))?;
            tx.execute(
                "UPDATE task_lists SET high_water = $2 WHERE team = $1",
                &[&self.team.as_str(), &n.max(high_water)],
            )?;
            tx.execute(
                "DELETE FROM tasks WHERE team = $1 AND id = $2",
                &[&self.team.as_str(), &n],
            )?;
            notify(tx, &self.team, Change::Tasks)?;
            for mut other in all_tasks(self, tx)? {
                let before = (other.blocks.len(), other.blocked_by.len());
                other.blocks.retain(|x| x != id);
                other.blocked_by.retain(|x| x != id);
                if before != (other.blocks.len(), other.blocked_by.len()) {
                    write_task(self, tx, &other)?;
                }
            }
            Ok(task)
        })
    }

    fn release(&self, owner: &str) -> Result<Vec<Task>> {
        let what = self.what(&format!("release the tasks of {owner}"));
        self.db.transaction(Retry::BeforeCommit, &what, |tx| {
            lock_list(self, tx)?;
            release_in(self, tx, owner)
        })
    }

    fn claim(
        &self,
        id: &str,
        agent: &str,
        busy_check: bool,
    ) -> Result<std::result::Result<Task, ClaimRefusal>> {
        // Safe to retry: a claim that went through before the connection dropped is one
        // the agent already holds, and claiming that again succeeds with no change.
        let what = self.what(&format!("claim task #{id} for {agent}"));
        self.db.transaction(Retry::Safe, &what, |tx| {
            lock_list(self, tx)?;
            let tasks = all_tasks(self, tx)?;
            let Some(mut task) = tasks.iter().find(|t| t.id == id).cloned() else {
                return Ok(Err(ClaimRefusal::NotFound));
            };
            if let Some(refused) = refusal(&task, agent, &tasks, busy_check) {
                return Ok(Err(refused));
            }
            take(&mut task, agent);
            write_task(self, tx, &task)?;
            Ok(Ok(task))
        })
    }

    fn next(&self, agent: &str) -> Result<Option<Task>> {
        let what = self.what(&format!("claim the next ready task for {agent}"));
        self.db.transaction(Retry::BeforeCommit, &what, |tx| {
            lock_list(self, tx)?;
            let tasks = all_tasks(self, tx)?;
            let status: HashMap<&str, Status> =
                tasks.iter().map(|t| (t.id.as_str(), t.status)).collect();
            let Some(mut task) = tasks.iter().find(|t| is_ready(t, &status)).cloned() else {
                return Ok(None);
            };
            take(&mut task, agent);
            write_task(self, tx, &task)?;
            Ok(Some(task))
        })
    }
}

/// Task `id` with `patch` applied, and both sides of every new edge, written. Caller holds
/// the list lock; `tasks` is the whole list.
fn patched(
    store: &PgStore,
    tx: Tx,
    tasks: &[Task],
    id: &str,
    patch: TaskPatch,
) -> std::result::Result<Task, Fail> {
    let mut task = tasks
        .iter()
        .find(|t| t.id == id)
        .cloned()
        .ok_or_else(|| missing(id))?;
    check_new_edges(tasks, id, &patch.add_blocked_by, &patch.add_blocks)?;
    apply_fields(&mut task, &patch);
    let mut touched: HashMap<String, Task> = HashMap::new();
    let other = |tid: &str, touched: &mut HashMap<String, Task>| {
        touched
            .remove(tid)
            .or_else(|| tasks.iter().find(|t| t.id == tid).cloned())
            .ok_or_else(|| missing_dependency(tid))
    };
    for b in dedup(&patch.add_blocked_by) {
        push_unique(&mut task.blocked_by, &b);
        let mut blocker = other(&b, &mut touched)?;
        push_unique(&mut blocker.blocks, id);
        touched.insert(b, blocker);
    }
    for c in dedup(&patch.add_blocks) {
        push_unique(&mut task.blocks, &c);
        let mut waiting = other(&c, &mut touched)?;
        push_unique(&mut waiting.blocked_by, id);
        touched.insert(c, waiting);
    }
    write_task(store, tx, &task)?;
    for t in touched.values() {
        write_task(store, tx, t)?;
    }
    Ok(task)
}

/// The patch's own fields (not its edges), as the file store applies them.
fn apply_fields(task: &mut Task, patch: &TaskPatch) {
    if let Some(s) = &patch.subject {
        task.subject = s.clone();
    }
    if let Some(d) = &patch.description {
        task.description = d.clone();
    }
    if let Some(a) = &patch.active_form {
        task.active_form = Some(a.clone());
    }
    if let Some(s) = patch.status {
        task.status = s;
    }
    if let Some(o) = &patch.owner {
        task.owner = o.clone().filter(|o| !o.is_empty());
    }
    if let Some(m) = &patch.metadata {
        let meta = task.metadata.get_or_insert_with(Map::new);
        for (k, v) in m {
            if v.is_null() {
                meta.remove(k);
            } else {
                meta.insert(k.clone(), v.clone());
            }
        }
    }
}
