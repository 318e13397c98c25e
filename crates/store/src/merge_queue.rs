//! The team's merge queue, `teams/<team>/merge-queue.json` (swarm's own file): teammates'
//! branches waiting to land on the integration target, first in first out, one entry per
//! branch and task, each with its state and what came of it.
//!
//! Every change is a read-modify-write under the file's lock (`update`), written whole
//! and atomically, so a crash leaves either the old queue or the new one. An entry found
//! `merging` or `checking` was interrupted: `team::merge` redoes it from a clean
//! integration worktree, after checking its head did not land already.

use std::fs::File;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::files;
use crate::layout::Root;
use swarm_util::error::{Base as _, IoContext};
use swarm_util::json;
use swarm_util::names::TeamName;

/// The task metadata key recording the commit a teammate's branch was at when it
/// completed the task in its worktree: what the lead's queue lands for that task.
pub const TASK_COMMIT_KEY: &str = "swarmCommit";

/// How a branch lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// A merge commit naming the agent and task.
    #[default]
    Merge,
    /// The branch's commits replayed on top of the target.
    Rebase,
    /// One commit with the branch's changes.
    Squash,
}

impl std::str::FromStr for Strategy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Strategy> {
        match s {
            "merge" => Ok(Strategy::Merge),
            "rebase" => Ok(Strategy::Rebase),
            "squash" => Ok(Strategy::Squash),
            _ => Err(Error::usage(format!(
                "unknown merge strategy {s:?}; use merge, rebase or squash"
            ))),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryState {
    Queued,
    Merging,
    Checking,
    Merged,
    Conflict,
    CheckFailed,
    /// A held entry superseded by new commits on its branch, queued as a new entry.
    Abandoned,
}

impl EntryState {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryState::Queued => "queued",
            EntryState::Merging => "merging",
            EntryState::Checking => "checking",
            EntryState::Merged => "merged",
            EntryState::Conflict => "conflict",
            EntryState::CheckFailed => "check-failed",
            EntryState::Abandoned => "abandoned",
        }
    }

    /// Still to be merged (or being merged when a crash struck).
    pub fn pending(self) -> bool {
        matches!(
            self,
            EntryState::Queued | EntryState::Merging | EntryState::Checking
        )
    }

    /// Held for the person: the queue will not try it again by itself.
    pub fn held(self) -> bool {
        matches!(self, EntryState::Conflict | EntryState::CheckFailed)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub agent: String,
    pub branch: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The commit the branch started at.
    pub base: String,
    /// The branch's head when it was queued: the commit that lands.
    pub head: String,
    pub state: EntryState,
    pub queued_at: i64,
    pub updated_at: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// The check's last lines, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_output: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_commit: Option<String>,
    /// A held entry's fate: the task it was handed back to its teammate as (`#<id>`), or
    /// why it waits for a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handed_back: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Queue {
    /// The repository's common git directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_dir: Option<PathBuf>,
    /// The branch entries land on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The team's check (`swarm run --check`), when it has its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// The team's strategy (`swarm run --merge-strategy`), when it chose one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
    /// The last integration commit whose check was green: where an interrupted run
    /// starts again, so an unchecked merge is never kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integration_tip: Option<String>,
    #[serde(default)]
    pub entries: Vec<Entry>,
}

/// The team's queue; an empty one if there is none yet.
pub(crate) fn load(root: &Root, team: &TeamName) -> Result<Queue> {
    let path = root.merge_queue_path(team);
    match files::read(root, &path)? {
        Some(bytes) => Ok(
            json::parse(&bytes).map_err(|e| swarm_util::error::Error::Corrupt {
                path,
                reason: e.to_string(),
            })?,
        ),
        None => Ok(Queue::default()),
    }
}

/// Changes the queue under its lock and writes it back.
pub(crate) fn update<T>(
    root: &Root,
    team: &TeamName,
    f: impl FnOnce(&mut Queue) -> T,
) -> Result<T> {
    let path = root.merge_queue_path(team);
    let _guard = files::lock_sidecar_only(root, &path)?;
    let mut queue = load(root, team)?;
    let out = f(&mut queue);
    files::write(root, &path, &json::to_pretty(&queue))?;
    Ok(out)
}

/// The right to run the team's queue: an flock on `teams/<team>/merge.flock`, held while
/// one run merges, so the lead's runs and a person's `swarm merge` take turns in the one
/// integration worktree. The kernel frees it when its holder dies.
pub(crate) struct RunLock {
    _file: File,
}

impl RunLock {
    /// Waits for the lock: a run in progress may be running a long check.
    pub fn acquire(root: &Root, team: &TeamName) -> Result<RunLock> {
        let path = root.team_dir(team).join("merge.flock");
        let file = files::open_lock_file(root, &path)?;
        file.lock().ctx("lock", &path)?;
        Ok(RunLock { _file: file })
    }
}
