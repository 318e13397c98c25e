//! The documents a team keeps for people, beside its roster: the goal it was given
//! (`goal.md`), the final report (`report.md`), the plans teammates submitted for
//! approval (`plans/<agent>-<ms>.md`), and each agent's log (`logs/<agent>.log`).
//!
//! swarm's own files, written whole and atomically by one writer each: the goal by the
//! run that made the team, the report by its lead, a plan by the teammate that wrote it.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::files;
use crate::layout::Root;
use crate::seam::Store;
use swarm_util::clock;
use swarm_util::error::Base as _;
use swarm_util::error::IoContext;
use swarm_util::names::{AgentName, TeamName};

/// Writes the goal a run gives the team; returns its path (the lead reads it from there).
pub fn write_goal(store: &Store, goal: &str) -> Result<PathBuf> {
    let (root, team) = (store.root(), store.team());
    let path = root.goal_path(team);
    files::write(root, &path, goal.as_bytes())?;
    Ok(path)
}

/// Writes the final report; returns its path.
pub fn write_report(store: &Store, text: &str) -> Result<PathBuf> {
    let (root, team) = (store.root(), store.team());
    let path = root.report_path(team);
    files::write(root, &path, text.as_bytes())?;
    Ok(path)
}

/// The final report, if the lead wrote one.
pub fn read_report(store: &Store) -> Option<String> {
    let (root, team) = (store.root(), store.team());
    String::from_utf8(files::read(root, &root.report_path(team)).ok()??).ok()
}

/// Removes the report of an earlier lead, which a resumed run replaces.
pub fn remove_report(store: &Store) -> Result<()> {
    let (root, team) = (store.root(), store.team());
    let path = root.report_path(team);
    files::check(root, &path)?;
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", &path, e)),
        _ => Ok(()),
    }
}

/// Where a plan `agent` submits now is kept (see [`write_plan`]).
pub fn new_plan_path(store: &Store, agent: &AgentName) -> PathBuf {
    let (root, team) = (store.root(), store.team());
    root.plan_path(team, agent, clock::now_ms())
}

/// Keeps a copy of a plan at `path` (from [`new_plan_path`]).
pub fn write_plan(store: &Store, path: &Path, plan: &str) -> Result<()> {
    let (root, team) = (store.root(), store.team());
    let dir = root.plans_dir(team);
    std::fs::create_dir_all(&dir).ctx("create directory", &dir)?;
    Ok(files::write(root, path, plan.as_bytes())?)
}

/// Opens `agent`'s log for appending (a teammate's pane is for people; its log goes here).
pub fn open_log(root: &Root, team: &TeamName, agent: &AgentName) -> Result<std::fs::File> {
    if !root.team_dir(team).is_dir() {
        return Err(Error::not_found(format!("no team named '{team}'")));
    }
    let dir = root.logs_dir(team);
    files::check(root, &dir)?;
    std::fs::create_dir_all(&dir).ctx("create directory", &dir)?;
    let path = root.log_path(team, agent);
    files::check(root, &path)?;
    Ok(swarm_util::no_symlinks::open(
        std::fs::OpenOptions::new().create(true).append(true),
        "open",
        &path,
    )?)
}

/// The last error `agent`'s log holds, without its time and level: what a pane process
/// said as it died. Only the log's tail is read.
pub fn last_log_error(store: &Store, agent: &AgentName) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    const TAIL: u64 = 16 * 1024;
    let (root, team) = (store.root(), store.team());
    let path = root.log_path(team, agent);
    files::check(root, &path).ok()?;
    let mut file =
        swarm_util::no_symlinks::open(std::fs::OpenOptions::new().read(true), "open", &path)
            .ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL))).ok()?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).ok()?;
    String::from_utf8_lossy(&tail)
        .lines()
        .rev()
        .find_map(|l| l.split_once(" ERROR ").map(|(_, m)| m.trim().to_owned()))
        .filter(|m| !m.is_empty())
}
