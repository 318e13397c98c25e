//! `TaskList`, a team's task list on disk: one JSON file per task, `tasks/<team>/<id>.json`,
//! plus `.highwatermark` (the highest id ever used) and `.lock` (the list lock's anchor). Here
//! are its paths, its locking, reading and writing task files, ids and the high-water mark,
//! and the operations list, get, create, update, delete and release. Claiming is in
//! [`super::claim`], the dependency checks in [`super::graph`], the claim cache in
//! [`super::index`].
//!
//! Invariants:
//! - every mutation holds the list lock ([`lock::lock`] on `.lock`: flock on `.lock.flock`
//!   and Claude Code's `.lock.lock/`), and also Claude Code's per-task lock `<id>.json.lock/`
//!   of each task it rewrites, taken before that task is read (`lock_task`), because Claude
//!   Code updates single tasks under that lock only;
//! - ids are `1 + max(file ids, high-water mark)` and are never reused: deleting a task
//!   first raises the mark;
//! - dependencies stay symmetric (`A.blockedBy ∋ B` ⇔ `B.blocks ∋ A`): create and update
//!   write both ends of every new edge under the lock, the `blockedBy` end first, and delete
//!   strips the id from every other task's `blocks` and `blockedBy`; `list` and every
//!   mutation that reads the whole list mend an edge a dead writer left on one side
//!   (`read_repaired`, from [`super::graph`]'s mirror), and `list` returns `blocks` mirrored from `blockedBy` even when
//!   another writer holds the lock and the files wait for it;
//! - only a decimal id names a task file, and only a task file's lock is ever taken;
//! - every mutation here drops the claim index under the lock.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::Map;

use crate::error::{Error, Result};
use crate::files;
use crate::layout::Root;
use crate::tasks::graph::{Mirror, check_new_edges, dedup, missing_dependency, push_unique};
use crate::tasks::model::{NewTask, Status, Task, TaskPatch};
use crate::tasks::{index, seen};
use swarm_util::error::{Base as _, IoContext};
use swarm_util::names::TeamName;
use swarm_util::{fault, json, lock};

/// A team's task list.
#[derive(Debug, Clone)]
pub(crate) struct TaskList {
    pub(super) dir: PathBuf,
    /// Where the list's files are, and how they are written and locked.
    pub(super) root: Root,
    pub(super) team: TeamName,
}

impl TaskList {
    pub fn new(root: &Root, team: &TeamName) -> TaskList {
        TaskList {
            dir: root.tasks_dir(team),
            root: root.clone(),
            team: team.clone(),
        }
    }

    pub(super) fn task_path(&self, id: &str) -> PathBuf {
        self.root.task_path(&self.team, id)
    }

    /// The claim index (see `tasks::index`). Not `*.json`: Claude Code takes every such
    /// file in the task directory for a task.
    pub(super) fn index_path(&self) -> PathBuf {
        self.root.task_index_path(&self.team)
    }

    fn mark_path(&self) -> PathBuf {
        self.root.high_water_mark_path(&self.team)
    }

    pub(super) fn lock(&self) -> Result<lock::Locked> {
        Ok(files::lock(&self.root, &self.list_anchor()?)?)
    }

    pub(super) fn list_anchor(&self) -> Result<PathBuf> {
        files::check(&self.root, &self.dir)?;
        if !self.dir.is_dir() {
            std::fs::create_dir_all(&self.dir).ctx("create directory", &self.dir)?;
        }
        let anchor = self.root.task_list_lock_anchor(&self.team);
        if !anchor.exists() {
            // Claude Code creates it with exclusive create and ignores EEXIST; so do we.
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&anchor);
        }
        Ok(anchor)
    }

    /// Writes a task while holding its per-task lock too (already held if the task was
    /// read with [`TaskList::lock_task`]; a new task's is taken here).
    pub(super) fn write_task(&self, guard: &mut lock::Locked, task: &Task) -> Result<()> {
        let path = self.task_path(&task.id);
        guard.also_lock_dir(&path)?;
        let old = files::read(&self.root, &path)?;
        let bytes = json::to_pretty_keeping_order(task, old.as_deref());
        Ok(files::write(&self.root, &path, &bytes)?)
    }

    /// Takes Claude Code's per-task lock of `id`, then reads the task: Claude Code writes a
    /// task under that lock alone, so a task read before it was taken may already be stale.
    pub(super) fn lock_task(&self, guard: &mut lock::Locked, id: &str) -> Result<Option<Task>> {
        if !is_task_id(id) {
            return Ok(None);
        }
        guard.also_lock_dir(&self.task_path(id))?;
        self.read_task(id)
    }

    pub(super) fn read_task(&self, id: &str) -> Result<Option<Task>> {
        if !is_task_id(id) {
            return Ok(None);
        }
        let path = self.task_path(id);
        match files::read(&self.root, &path)? {
            Some(bytes) => match json::parse::<Task>(&bytes) {
                Ok(t) => Ok(Some(t)),
                Err(e) => {
                    tracing::warn!(path = %path.display(), "skipping a task file that does not parse: {e}");
                    Ok(None)
                }
            },
            None => Ok(None),
        }
    }

    fn ids_on_disk(&self) -> Result<Vec<u64>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io("read directory", &self.dir, e)),
        };
        let mut ids: Vec<u64> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name();
                let stem = name.to_str()?.strip_suffix(".json")?;
                if stem.bytes().all(|b| b.is_ascii_digit()) {
                    stem.parse().ok()
                } else {
                    None
                }
            })
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn high_water_mark(&self) -> u64 {
        std::fs::read_to_string(self.mark_path())
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Every task, in numeric id order (files that do not parse are skipped with a warning),
    /// `blocks` mirrored from `blockedBy`. A dependency found written on one side only (its
    /// writer died between the two) is mended on disk too, for Claude Code's readers, unless
    /// another swarm process holds the list (it mends it itself, but for `create`).
    pub fn list(&self) -> Result<Vec<Task>> {
        let tasks = self.read_all()?;
        let mirror = Mirror::of(&tasks);
        if mirror.agrees(&tasks) {
            return Ok(tasks);
        }
        match files::try_lock(&self.root, &self.list_anchor()?) {
            Ok(Some(mut guard)) => return self.read_repaired(&mut guard),
            Ok(None) => {}
            Err(e) => tracing::warn!("could not lock the task list to mend it: {e}"),
        }
        Ok(mirror.apply(tasks))
    }

    /// Every task as it is on disk, in numeric id order: a file unchanged since this
    /// process last read it is not parsed again, one half written is read again
    /// ([`seen`]).
    pub(super) fn read_all(&self) -> Result<Vec<Task>> {
        let mut tasks = Vec::new();
        let mut listing = seen::Listing::of(&self.dir);
        for id in self.ids_on_disk()? {
            let path = self.task_path(&id.to_string());
            if let Some(t) = listing.task(id, &mut || self.parse_task(&path))? {
                tasks.push(t);
            }
        }
        Ok(tasks)
    }

    /// The task file at `path`, parsed.
    fn parse_task(&self, path: &std::path::Path) -> Result<seen::Parsed> {
        Ok(match files::read(&self.root, path)? {
            Some(bytes) => match json::parse::<Task>(&bytes) {
                Ok(t) => seen::Parsed::Task(Box::new(t)),
                Err(e) => seen::Parsed::Unparsable(e.to_string()),
            },
            None => seen::Parsed::Missing,
        })
    }

    pub fn get(&self, id: &str) -> Result<Task> {
        self.read_task(id)?.ok_or_else(|| missing(id))
    }

    pub fn create(&self, new: NewTask) -> Result<Task> {
        if new.subject.trim().is_empty() {
            return Err(Error::usage("a task needs a subject"));
        }
        let mut guard = self.lock()?;
        index::drop_at(&self.index_path());
        let max_file = self.ids_on_disk()?.last().copied().unwrap_or(0);
        let id = (max_file.max(self.high_water_mark()) + 1).to_string();
        let mut blockers = Vec::new();
        for b in dedup(&new.blocked_by) {
            blockers.push(
                self.lock_task(&mut guard, &b)?
                    .ok_or_else(|| missing_dependency(&b))?,
            );
        }
        let task = Task {
            id: id.clone(),
            subject: new.subject,
            description: new.description,
            active_form: new.active_form,
            status: Status::Pending,
            blocks: Vec::new(),
            blocked_by: blockers.iter().map(|b| b.id.clone()).collect(),
            metadata: new.metadata,
            owner: None,
            extra: Map::new(),
        };
        // The waiting side first (see `graph`): killed here, the task waits, and the next
        // command that reads the list writes the blockers' `blocks`.
        self.write_task(&mut guard, &task)?;
        if !blockers.is_empty() {
            fault::point("tasks.between_edge_writes");
        }
        for mut b in blockers {
            b.blocks.push(id.clone());
            self.write_task(&mut guard, &b)?;
        }
        Ok(task)
    }

    pub fn update(&self, id: &str, patch: TaskPatch) -> Result<Task> {
        let mut guard = self.lock()?;
        index::drop_at(&self.index_path());
        // Mended before the task is read: read first, it would be written back unmended.
        let tasks = self.read_repaired(&mut guard)?;
        let mut task = self.lock_task(&mut guard, id)?.ok_or_else(|| missing(id))?;
        let mut touched: HashMap<String, Task> = HashMap::new();
        check_new_edges(&tasks, id, &patch.add_blocked_by, &patch.add_blocks)?;
        if let Some(s) = patch.subject {
            task.subject = s;
        }
        if let Some(d) = patch.description {
            task.description = d;
        }
        if let Some(a) = patch.active_form {
            task.active_form = Some(a);
        }
        if let Some(s) = patch.status {
            task.status = s;
        }
        if let Some(o) = patch.owner {
            task.owner = o.filter(|o| !o.is_empty());
        }
        if let Some(m) = patch.metadata {
            let meta = task.metadata.get_or_insert_with(Map::new);
            for (k, v) in m {
                if v.is_null() {
                    meta.remove(&k);
                } else {
                    meta.insert(k, v);
                }
            }
        }
        for b in dedup(&patch.add_blocked_by) {
            push_unique(&mut task.blocked_by, &b);
            let mut other = match touched.remove(&b) {
                Some(t) => t,
                None => self
                    .lock_task(&mut guard, &b)?
                    .ok_or_else(|| missing_dependency(&b))?,
            };
            push_unique(&mut other.blocks, id);
            touched.insert(b, other);
        }
        for c in dedup(&patch.add_blocks) {
            push_unique(&mut task.blocks, &c);
            let mut other = match touched.remove(&c) {
                Some(t) => t,
                None => self
                    .lock_task(&mut guard, &c)?
                    .ok_or_else(|| missing_dependency(&c))?,
            };
            push_unique(&mut other.blocked_by, id);
            touched.insert(c, other);
        }
        // The tasks that gain a `blockedBy` first (see `graph`): killed in between, every new
        // edge exists on its waiting side or not at all, and the next command that reads
        // the list completes or drops the `blocks` side to match.
        let mut waiting = dedup(&patch.add_blocks);
        if !patch.add_blocked_by.is_empty() {
            waiting.push(id.to_owned());
        }
        let (first, then): (Vec<&Task>, Vec<&Task>) = std::iter::once(&task)
            .chain(touched.values())
            .partition(|t| waiting.contains(&t.id));
        for t in &first {
            self.write_task(&mut guard, t)?;
        }
        if !first.is_empty() && !then.is_empty() {
            fault::point("tasks.between_edge_writes");
        }
        for t in &then {
            self.write_task(&mut guard, t)?;
        }
        Ok(task)
    }

    /// Deletes a task: raises the high-water mark, removes the file, and strips the id from
    /// every other task's `blocks` and `blockedBy`.
    pub fn delete(&self, id: &str) -> Result<Task> {
        let mut guard = self.lock()?;
        index::drop_at(&self.index_path());
        let task = self.lock_task(&mut guard, id)?.ok_or_else(|| missing(id))?;
        let n = task.numeric_id();
        if n > self.high_water_mark() {
            files::write(&self.root, &self.mark_path(), n.to_string().as_bytes())?;
        }
        let path = self.task_path(id);
        std::fs::remove_file(&path).ctx("remove", &path)?;
        files::sync_dir(&self.root, &self.dir)?;
        let refers = |t: &Task| t.blocks.iter().chain(&t.blocked_by).any(|x| x == id);
        for other in self.read_repaired(&mut guard)?.into_iter().filter(refers) {
            let Some(mut other) = self.lock_task(&mut guard, &other.id)? else {
                continue;
            };
            let before = (other.blocks.len(), other.blocked_by.len());
            other.blocks.retain(|x| x != id);
            other.blocked_by.retain(|x| x != id);
            if before != (other.blocks.len(), other.blocked_by.len()) {
                self.write_task(&mut guard, &other)?;
            }
        }
        Ok(task)
    }

    /// Returns every open task of `owner` to pending with no owner.
    pub fn release(&self, owner: &str) -> Result<Vec<Task>> {
        let mut guard = self.lock()?;
        index::drop_at(&self.index_path());
        let mut released = Vec::new();
        let theirs = |t: &Task| t.is_open() && t.owned_by(owner);
        for task in self.read_repaired(&mut guard)?.into_iter().filter(theirs) {
            let Some(mut task) = self.lock_task(&mut guard, &task.id)? else {
                continue;
            };
            if theirs(&task) {
                task.owner = None;
                task.status = Status::Pending;
                self.write_task(&mut guard, &task)?;
                released.push(task);
            }
        }
        Ok(released)
    }
    /// Every task, read under `guard` (which holds at least the list's flock), with the
    /// files whose `blocks` disagree with the `blockedBy`s naming them mended first. The
    /// mending is best effort (a full disk, a per-task lock Claude Code keeps): what it
    /// cannot write is logged, and the tasks returned are mirrored either way.
    pub(super) fn read_repaired(&self, guard: &mut lock::Locked) -> Result<Vec<Task>> {
        let tasks = self.read_all()?;
        let mirror = Mirror::of(&tasks);
        if mirror.agrees(&tasks) {
            return Ok(tasks);
        }
        if let Err(e) = self.mend(guard, &tasks, &mirror) {
            tracing::warn!("could not mend the dependencies of the task list: {e}");
        }
        Ok(mirror.apply(tasks))
    }

    fn mend(&self, guard: &mut lock::Locked, tasks: &[Task], mirror: &Mirror) -> Result<()> {
        // Claude Code's list lock too: `next` holds only the flock, and this rewrites tasks.
        let anchor = self.list_anchor()?;
        let had_list = guard.holds_dir(&anchor);
        guard.also_lock_dir(&anchor)?;
        for task in tasks.iter().filter(|t| mirror.blocks(t).is_some()) {
            let path = self.task_path(&task.id);
            let had_task = guard.holds_dir(&path);
            if let Some(mut fresh) = self.lock_task(guard, &task.id)?
                && let Some(blocks) = mirror.blocks(&fresh)
            {
                tracing::warn!(
                    task = %fresh.id,
                    "mending a dependency written on one side only (a writer died between the two)"
                );
                fresh.blocks = blocks;
                self.write_task(guard, &fresh)?;
            }
            if !had_task {
                guard.unlock_dir(&path)?;
            }
        }
        if !had_list {
            guard.unlock_dir(&anchor)?;
        }
        Ok(())
    }
}

/// The error for a task that does not exist.
pub fn missing(id: &str) -> Error {
    Error::not_found(format!("task #{id} does not exist; see `swarm task list`"))
}

/// Only a decimal id names a task file, and only a task file's lock is ever taken.
fn is_task_id(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())
}
