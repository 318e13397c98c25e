//! Each teammate worktree's record, `teams/<team>/worktrees/<agent>.json` (swarm's own
//! file): the repository, the worktree's path, its branch and starting commit, and whether
//! it is still in use (`active`) or was kept after its teammate stopped (`kept`).
//!
//! A record is written whole and atomically. Deciding a worktree's fate (see
//! `team::worktree::finalize`) happens under the record's lock (`lock`), so it happens
//! once however many observers notice the teammate stop.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::files;
use crate::layout::Root;
use swarm_util::error::{Base as _, IoContext};
use swarm_util::json;
use swarm_util::lock::Locked;
use swarm_util::names::TeamName;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordState {
    Active,
    Kept,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub agent: String,
    /// The repository's common git directory (`<repo>/.git`).
    pub git_dir: PathBuf,
    /// The worktree's root.
    pub path: PathBuf,
    pub branch: String,
    /// libgit2's name for the worktree (`.git/worktrees/<name>`).
    pub name: String,
    /// The commit the branch started at.
    pub base: String,
    pub state: RecordState,
    pub created_at: i64,
    /// The host the worktree is on, when it is not the lead's (`swarm host add`): then
    /// `git_dir` and `path` are the host's, and the lead has the branch by fetching it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Writes `record` (making the records' directory if need be).
pub(crate) fn save(root: &Root, team: &TeamName, record: &Record) -> Result<()> {
    let dir = root.worktrees_dir(team);
    std::fs::create_dir_all(&dir).ctx("create directory", &dir)?;
    Ok(files::write(
        root,
        &root.worktree_record_path(team, &record.agent),
        &json::to_pretty(record),
    )?)
}

/// Removes `agent`'s record; one that is not there is fine.
pub(crate) fn remove(root: &Root, team: &TeamName, agent: &str) -> Result<()> {
    let path = root.worktree_record_path(team, agent);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("remove", &path, e)),
    }
}

/// Holds `agent`'s record while its fate is decided.
pub(crate) fn lock(root: &Root, team: &TeamName, agent: &str) -> Result<Locked> {
    Ok(files::lock_sidecar_only(
        root,
        &root.worktree_record_path(team, agent),
    )?)
}

/// Reads one record, if there is one.
pub(crate) fn read(root: &Root, team: &TeamName, agent: &str) -> Result<Option<Record>> {
    let path = root.worktree_record_path(team, agent);
    match files::read(root, &path)? {
        Some(bytes) => {
            Ok(json::parse(&bytes)
                .map(Some)
                .map_err(|e| swarm_util::error::Error::Corrupt {
                    path,
                    reason: e.to_string(),
                })?)
        }
        None => Ok(None),
    }
}

/// Every worktree record of the team.
pub(crate) fn all(root: &Root, team: &TeamName) -> Result<Vec<Record>> {
    let dir = root.worktrees_dir(team);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read directory", &dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(agent) = name.strip_suffix(".json")
            && let Some(r) = read(root, team, agent)?
        {
            out.push(r);
        }
    }
    out.sort_by(|a, b| a.agent.cmp(&b.agent));
    Ok(out)
}
