//! The shared task list: one JSON file per task, `tasks/<team>/<id>.json`, in Claude Code's
//! schema, plus `.highwatermark` (the highest id ever used) and `.lock` (the list lock's
//! anchor).
//!
//! Invariants:
//! - every mutation holds the list lock ([`lock::lock`] on `.lock`: flock on `.lock.flock`
//!   and Claude Code's `.lock.lock/`; `next` only the flock, as Claude Code's own claim takes
//!   no list lock), and also Claude Code's per-task lock `<id>.json.lock/` of each task it
//!   rewrites, taken before that task is read, because Claude Code updates single tasks
//!   under that lock only;
//! - ids are `1 + max(file ids, high-water mark)` and are never reused: deleting a task
//!   first raises the mark;
//! - dependencies are symmetric (`A.blockedBy ∋ B` ⇔ `B.blocks ∋ A`), refer to existing
//!   tasks, and never form a cycle;
//! - a claim is a compare-and-set under the lock, so a task has at most one owner.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::store::layout::Root;
use crate::store::names::TeamName;
use crate::util::error::{Error, IoContext, Result};
use crate::util::{atomic, json, lock};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
        }
    }

    pub fn parse(s: &str) -> Result<Status> {
        match s {
            "pending" => Ok(Status::Pending),
            "in_progress" | "in-progress" => Ok(Status::InProgress),
            "completed" | "done" => Ok(Status::Completed),
            other => Err(Error::usage(format!(
                "unknown task status '{other}'; use pending, in_progress or completed"
            ))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    pub subject: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
    pub status: Status,
    #[serde(default)]
    pub blocks: Vec<String>,
    #[serde(default)]
    pub blocked_by: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Task {
    /// Hidden from listings, as Claude Code hides `metadata._internal` tasks.
    pub fn is_internal(&self) -> bool {
        self.metadata
            .as_ref()
            .and_then(|m| m.get("_internal"))
            .is_some_and(|v| !matches!(v, Value::Null | Value::Bool(false)))
    }

    pub fn is_open(&self) -> bool {
        self.status != Status::Completed
    }

    /// Owned by `agent`, given as a name or as `<name>@<team>`.
    pub fn owned_by(&self, agent: &str) -> bool {
        self.owner
            .as_deref()
            .is_some_and(|o| o == agent || o.split('@').next() == Some(agent))
    }

    fn numeric_id(&self) -> u64 {
        self.id.parse().unwrap_or(u64::MAX)
    }
}

#[derive(Debug, Default, Clone)]
pub struct NewTask {
    pub subject: String,
    pub description: String,
    pub active_form: Option<String>,
    pub blocked_by: Vec<String>,
    pub metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Default, Clone)]
pub struct TaskPatch {
    pub subject: Option<String>,
    pub description: Option<String>,
    pub active_form: Option<String>,
    pub status: Option<Status>,
    /// `Some(None)` clears the owner.
    pub owner: Option<Option<String>>,
    pub add_blocked_by: Vec<String>,
    pub add_blocks: Vec<String>,
    /// Merged into `metadata`; a `null` value removes the key.
    pub metadata: Option<Map<String, Value>>,
}

/// Why a claim was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimRefusal {
    NotFound,
    AlreadyClaimed { owner: String },
    AlreadyCompleted,
    Blocked { blockers: Vec<String> },
    Busy { tasks: Vec<String> },
}

impl ClaimRefusal {
    pub fn into_error(self, id: &str, agent: &str) -> Error {
        let another = format!("pick another with `swarm task next --as {agent}`");
        match self {
            ClaimRefusal::NotFound => {
                Error::not_found(format!("task #{id} does not exist; see `swarm task list`"))
            }
            ClaimRefusal::AlreadyClaimed { owner } => Error::conflict(format!(
                "task #{id} is already claimed by {owner}; {another}"
            )),
            ClaimRefusal::AlreadyCompleted => {
                Error::conflict(format!("task #{id} is already completed; {another}"))
            }
            ClaimRefusal::Blocked { blockers } => Error::conflict(format!(
                "task #{id} is blocked by open task(s) {}; wait for them or {another}",
                blockers
                    .iter()
                    .map(|b| format!("#{b}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            ClaimRefusal::Busy { tasks } => Error::conflict(format!(
                "{agent} is busy with open task(s) {}; finish or release them first",
                tasks
                    .iter()
                    .map(|b| format!("#{b}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

/// A team's task list.
#[derive(Debug, Clone)]
pub struct TaskList {
    dir: PathBuf,
}

impl TaskList {
    pub fn new(root: &Root, team: &TeamName) -> TaskList {
        TaskList {
            dir: root.tasks_dir(team),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn task_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn mark_path(&self) -> PathBuf {
        self.dir.join(".highwatermark")
    }

    fn lock(&self) -> Result<lock::Locked> {
        lock::lock(&self.list_anchor()?)
    }

    fn list_anchor(&self) -> Result<PathBuf> {
        if !self.dir.is_dir() {
            std::fs::create_dir_all(&self.dir).ctx("create directory", &self.dir)?;
        }
        let anchor = self.dir.join(".lock");
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
    fn write_task(&self, guard: &mut lock::Locked, task: &Task) -> Result<()> {
        let path = self.task_path(&task.id);
        guard.also_lock_dir(&path)?;
        atomic::write(&path, &json::to_pretty(task))
    }

    /// Takes Claude Code's per-task lock of `id`, then reads the task: Claude Code writes a
    /// task under that lock alone, so a task read before it was taken may already be stale.
    fn lock_task(&self, guard: &mut lock::Locked, id: &str) -> Result<Option<Task>> {
        if !is_task_id(id) {
            return Ok(None);
        }
        guard.also_lock_dir(&self.task_path(id))?;
        self.read_task(id)
    }

    fn read_task(&self, id: &str) -> Result<Option<Task>> {
        if !is_task_id(id) {
            return Ok(None);
        }
        let path = self.task_path(id);
        match std::fs::read(&path) {
            Ok(bytes) => match json::parse::<Task>(&bytes) {
                Ok(t) => Ok(Some(t)),
                Err(e) => {
                    tracing::warn!(path = %path.display(), "skipping a task file that does not parse: {e}");
                    Ok(None)
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("read", &path, e)),
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

    /// Every task, in numeric id order (files that do not parse are skipped with a warning).
    pub fn list(&self) -> Result<Vec<Task>> {
        let mut tasks = Vec::new();
        for id in self.ids_on_disk()? {
            if let Some(t) = self.read_task(&id.to_string())? {
                tasks.push(t);
            }
        }
        Ok(tasks)
    }

    pub fn get(&self, id: &str) -> Result<Task> {
        self.read_task(id)?.ok_or_else(|| missing(id))
    }

    pub fn create(&self, new: NewTask) -> Result<Task> {
        if new.subject.trim().is_empty() {
            return Err(Error::usage("a task needs a subject"));
        }
        let mut guard = self.lock()?;
        self.drop_index();
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
        self.write_task(&mut guard, &task)?;
        for mut b in blockers {
            b.blocks.push(id.clone());
            self.write_task(&mut guard, &b)?;
        }
        Ok(task)
    }

    pub fn update(&self, id: &str, patch: TaskPatch) -> Result<Task> {
        let mut guard = self.lock()?;
        self.drop_index();
        let mut task = self.lock_task(&mut guard, id)?.ok_or_else(|| missing(id))?;
        let mut touched: HashMap<String, Task> = HashMap::new();
        // Each accepted edge joins the graph before the next is checked: two edges that are
        // each harmless alone may close a cycle together.
        let mut graph = self.graph()?;
        for b in dedup(&patch.add_blocked_by) {
            self.check_edge(&graph, id, &b)?;
            graph.entry(id.to_owned()).or_default().push(b);
        }
        for c in dedup(&patch.add_blocks) {
            self.check_edge(&graph, &c, id)?;
            graph.entry(c).or_default().push(id.to_owned());
        }
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
        self.write_task(&mut guard, &task)?;
        for other in touched.values() {
            self.write_task(&mut guard, other)?;
        }
        Ok(task)
    }

    /// Refuses `task blockedBy blocker` if it is a self-dependency, names a missing task,
    /// or closes a cycle.
    fn check_edge(
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
    fn graph(&self) -> Result<HashMap<String, Vec<String>>> {
        Ok(self
            .list()?
            .into_iter()
            .map(|t| (t.id, t.blocked_by))
            .collect())
    }

    /// Deletes a task: raises the high-water mark, removes the file, and strips the id from
    /// every other task's `blocks` and `blockedBy`.
    pub fn delete(&self, id: &str) -> Result<Task> {
        let mut guard = self.lock()?;
        self.drop_index();
        let task = self.lock_task(&mut guard, id)?.ok_or_else(|| missing(id))?;
        let n = task.numeric_id();
        if n > self.high_water_mark() {
            atomic::write(&self.mark_path(), n.to_string().as_bytes())?;
        }
        let path = self.task_path(id);
        std::fs::remove_file(&path).ctx("remove", &path)?;
        atomic::sync_dir(&self.dir)?;
        let refers = |t: &Task| t.blocks.iter().chain(&t.blocked_by).any(|x| x == id);
        for other in self.list()?.into_iter().filter(refers) {
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

    /// Claims task `id` for `agent`: owner set, status `in_progress`. Claiming a task one
    /// already owns succeeds. The outer error is I/O; the inner one a refusal.
    pub fn claim(
        &self,
        id: &str,
        agent: &str,
        busy_check: bool,
    ) -> Result<Result<Task, ClaimRefusal>> {
        let mut guard = self.lock()?;
        let Some(mut task) = self.lock_task(&mut guard, id)? else {
            return Ok(Err(ClaimRefusal::NotFound));
        };
        let tasks = self.list()?;
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
        // Only the claimed task's file changes, and each candidate is read under Claude
        // Code's per-task lock, as Claude Code's own claim does; the flock keeps swarm
        // claimers apart.
        let mut guard = lock::lock_sidecar_only(&self.list_anchor()?)?;
        if let Some(index) = self.load_index()
            && let Some(task) = self.claim_first_ready(&mut guard, index, agent)?
        {
            return Ok(Some(task));
        }
        let index = Index::build(&self.list()?);
        let claimed = self.claim_first_ready(&mut guard, index, agent)?;
        if claimed.is_none() {
            // An index saying "nothing is ready" would save the next call nothing (it scans
            // in full whenever no candidate pans out), and idle teammates ask once a second
            // each: rather than rewrite it every time, drop a stale one.
            self.drop_index();
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
        self.save_index(&index);
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

    /// Not `*.json`: Claude Code takes every such file in the task directory for a task.
    fn index_path(&self) -> PathBuf {
        self.dir.join(".swarm-index")
    }

    fn load_index(&self) -> Option<Index> {
        let index = Index::parse(&std::fs::read_to_string(self.index_path()).ok()?)?;
        let age = crate::util::clock::now_ms() - index.built_ms;
        (0..INDEX_MAX_AGE_MS).contains(&age).then_some(index)
    }

    /// Written in place, not by rename: it is a cache whose torn copy fails to parse (it
    /// ends with a trailer line) and is rebuilt, and rewriting in place spares the
    /// filesystem a new inode on every claim. Nor is it opened with `O_TRUNC`: ext4 flushes
    /// a file truncated to zero when it is closed.
    fn save_index(&self, index: &Index) {
        use std::os::unix::fs::FileExt;
        let text = index.render();
        let Ok(file) = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.index_path())
        else {
            return;
        };
        if file.write_all_at(text.as_bytes(), 0).is_err()
            || file.set_len(text.len() as u64).is_err()
        {
            self.drop_index();
        }
    }

    /// Called under the lock by every mutation other than a claim, and by `next` when
    /// nothing is ready.
    fn drop_index(&self) {
        if let Ok(f) = std::fs::OpenOptions::new()
            .write(true)
            .open(self.index_path())
        {
            let _ = f.set_len(0);
        }
    }

    /// Returns every open task of `owner` to pending with no owner.
    pub fn release(&self, owner: &str) -> Result<Vec<Task>> {
        let mut guard = self.lock()?;
        self.drop_index();
        let mut released = Vec::new();
        let theirs = |t: &Task| t.is_open() && t.owned_by(owner);
        for task in self.list()?.into_iter().filter(theirs) {
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
}

const INDEX_MAX_AGE_MS: i64 = 5_000;

/// What `next` needs to know of each task, cached between claims. One line per task
/// (`<id> <status p|i|c><owned o|-><internal x|-> <blockers,comma,separated|->`) between a
/// header with the build time and a trailer.
#[derive(Debug)]
struct Index {
    built_ms: i64,
    tasks: Vec<IndexEntry>,
}

#[derive(Debug)]
struct IndexEntry {
    id: u64,
    status: Status,
    owned: bool,
    internal: bool,
    blocked_by: Vec<u64>,
}

const INDEX_HEADER: &str = "swarm-task-index 1";

impl IndexEntry {
    fn of(t: &Task) -> IndexEntry {
        IndexEntry {
            id: t.numeric_id(),
            status: t.status,
            owned: t.owner.is_some(),
            internal: t.is_internal(),
            blocked_by: t.blocked_by.iter().filter_map(|b| b.parse().ok()).collect(),
        }
    }
}

impl Index {
    fn build(tasks: &[Task]) -> Index {
        Index {
            built_ms: crate::util::clock::now_ms(),
            tasks: tasks.iter().map(IndexEntry::of).collect(),
        }
    }

    fn render(&self) -> String {
        let mut out = format!("{INDEX_HEADER} {}\n", self.built_ms);
        for t in &self.tasks {
            let status = match t.status {
                Status::Pending => 'p',
                Status::InProgress => 'i',
                Status::Completed => 'c',
            };
            let blockers = if t.blocked_by.is_empty() {
                "-".to_owned()
            } else {
                t.blocked_by
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            };
            out.push_str(&format!(
                "{} {status}{}{} {blockers}\n",
                t.id,
                if t.owned { 'o' } else { '-' },
                if t.internal { 'x' } else { '-' },
            ));
        }
        out.push_str("end\n");
        out
    }

    fn parse(text: &str) -> Option<Index> {
        let mut lines = text.lines();
        let built_ms = lines
            .next()?
            .strip_prefix(INDEX_HEADER)?
            .trim()
            .parse()
            .ok()?;
        let mut tasks = Vec::new();
        for line in lines {
            if line == "end" {
                return Some(Index { built_ms, tasks });
            }
            let mut parts = line.split(' ');
            let id = parts.next()?.parse().ok()?;
            let flags = parts.next()?.as_bytes();
            let status = match flags.first()? {
                b'p' => Status::Pending,
                b'i' => Status::InProgress,
                b'c' => Status::Completed,
                _ => return None,
            };
            let blockers = parts.next()?;
            let blocked_by = if blockers == "-" {
                Vec::new()
            } else {
                blockers
                    .split(',')
                    .map(|b| b.parse().ok())
                    .collect::<Option<Vec<u64>>>()?
            };
            tasks.push(IndexEntry {
                id,
                status,
                owned: *flags.get(1)? == b'o',
                internal: *flags.get(2)? == b'x',
                blocked_by,
            });
        }
        None // no trailer: torn
    }

    /// Ids that look ready, lowest first.
    fn ready(&self) -> impl Iterator<Item = u64> + '_ {
        let open: std::collections::HashSet<u64> = self
            .tasks
            .iter()
            .filter(|t| t.status != Status::Completed)
            .map(|t| t.id)
            .collect();
        self.tasks
            .iter()
            .filter(move |t| {
                t.status == Status::Pending
                    && !t.owned
                    && !t.internal
                    && t.blocked_by.iter().all(|b| !open.contains(b))
            })
            .map(|t| t.id)
    }

    fn refresh(&mut self, task: &Task) {
        let entry = IndexEntry::of(task);
        match self.tasks.iter_mut().find(|t| t.id == entry.id) {
            Some(slot) => *slot = entry,
            None => self.tasks.push(entry),
        }
    }

    fn forget(&mut self, id: &str) {
        self.tasks.retain(|t| t.id.to_string() != id);
    }
}

fn refusal(task: &Task, agent: &str, tasks: &[Task], busy_check: bool) -> Option<ClaimRefusal> {
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

fn missing(id: &str) -> Error {
    Error::not_found(format!("task #{id} does not exist; see `swarm task list`"))
}

fn missing_dependency(id: &str) -> Error {
    Error::not_found(format!(
        "dependency task #{id} does not exist; see `swarm task list`"
    ))
}

/// Only a decimal id names a task file, and only a task file's lock is ever taken.
fn is_task_id(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())
}

fn dedup(ids: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in ids {
        let id = id.trim_start_matches('#').to_owned();
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

fn push_unique(v: &mut Vec<String>, id: &str) {
    if !v.iter().any(|x| x == id) {
        v.push(id.to_owned());
    }
}

#[cfg(test)]
mod index_tests {
    use super::*;

    #[test]
    fn index_round_trips_and_a_torn_one_is_refused() {
        let index = Index {
            built_ms: 1_700_000_000_000,
            tasks: vec![
                IndexEntry {
                    id: 1,
                    status: Status::Completed,
                    owned: true,
                    internal: false,
                    blocked_by: vec![],
                },
                IndexEntry {
                    id: 2,
                    status: Status::Pending,
                    owned: false,
                    internal: true,
                    blocked_by: vec![1, 3],
                },
            ],
        };
        let text = index.render();
        let back = Index::parse(&text).unwrap();
        assert_eq!(back.render(), text);
        assert!(Index::parse(&text[..text.len() - 4]).is_none());
        assert!(Index::parse("").is_none());
    }
}
