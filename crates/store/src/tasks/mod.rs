//! The shared task list: one JSON file per task, `tasks/<team>/<id>.json`, in Claude Code's
//! schema, plus `.highwatermark` (the highest id ever used), `.lock` (the list lock's
//! anchor) and `.swarm-index` (swarm's claim cache).
//!
//! - [`model`]: the data types: a task, its status, a new task, a patch, a claim refusal;
//! - [`list`]: `TaskList`: paths, locking, task files, ids and the high-water mark, and
//!   list, get, create, update, delete and release;
//! - [`claim`]: claiming a named task, or the next ready one;
//! - [`graph`]: the dependency graph: edge and cycle checks, id lists without repeats;
//! - [`index`]: the claim index, `.swarm-index`;
//! - `seen`: what this process last read of each task file, so a whole-list read parses
//!   only what changed (and reads a half-written file again);
//! - [`leases`]: advisory file leases, the files a task names under `metadata.swarmFiles`.
//!
//! Invariants (each module's doc says where and how they hold):
//! - every mutation holds the list lock (both locks of `.lock`, through `store::files`: flock on
//!   `.lock.flock` and Claude Code's `.lock.lock/`; `next` only the flock, as Claude Code's
//!   own claim takes no list lock), and also Claude Code's per-task lock `<id>.json.lock/`
//!   of each task it rewrites, taken before that task is read, because Claude Code updates
//!   single tasks under that lock only;
//! - ids are `1 + max(file ids, high-water mark)` and are never reused: deleting a task
//!   first raises the mark;
//! - dependencies are symmetric (`A.blockedBy ∋ B` ⇔ `B.blocks ∋ A`), refer to existing
//!   tasks, and never form a cycle; `blockedBy` is the truth, written first, and an edge a
//!   dead writer left on one side is mended by the next command that reads the whole list;
//! - a claim is a compare-and-set under the lock, so a task has at most one owner;
//! - the claim index only proposes candidates, each re-checked from its file; every
//!   mutation other than a claim drops it.

pub mod claim;
pub mod graph;
pub mod index;
pub mod leases;
pub mod list;
pub mod model;
mod seen;

pub(crate) use list::TaskList;
pub use model::{ClaimRefusal, NewTask, Status, Task, TaskPatch};
