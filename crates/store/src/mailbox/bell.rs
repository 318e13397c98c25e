//! The doorbell of an inbox: `teams/<team>/bells/<agent>`, an empty file of swarm's own
//! that every commit into `agent`'s inbox touches once the messages are in it (see
//! `send::commit_spool`).
//!
//! Why: inotify filters by directory, not by name, so a reader watching `inboxes/` is woken
//! by every write to every inbox of its team (temp files, renames, lock directories) and an
//! idle team's cost grows with the square of its size. The bell is never replaced, only
//! touched in place, so a watch on the file itself ([`swarm_util::watcher::DirWatcher::touched`])
//! hears its own agent's mail and nothing else.
//!
//! Invariants:
//! - the bell is a hint, never the truth: it is rung after the inbox write, ringing fails
//!   quietly, and a reader also rescans on a timer ([`swarm_util::watcher::RESCAN_EVERY`]),
//!   which finds what no bell announced (a writer that died between its write and the ring,
//!   a Claude Code client, which writes the inbox and rings nothing);
//! - only a reader makes the bell ([`install`]); a commit rings a bell that is there and
//!   creates nothing, so an agent nobody reads costs no file;
//! - like every path below the root, it is never reached through a symlink.

use std::path::PathBuf;

use nix::sys::stat::{UtimensatFlags, utimensat};
use nix::sys::time::TimeSpec;

use crate::error::Result;
use crate::files;
use crate::layout::Root;
use swarm_util::error::IoContext;
use swarm_util::names::{AgentName, TeamName};
use swarm_util::no_symlinks;

/// Makes `agent`'s bell if it is missing (an existing one is kept as it is: a watch on it
/// stays good) and returns its path, for the reader to watch.
pub fn install(root: &Root, team: &TeamName, agent: &AgentName) -> Result<PathBuf> {
    let path = root.bell_path(team, agent);
    files::check(root, &path)?;
    if let Some(dir) = path.parent()
        && !dir.is_dir()
    {
        std::fs::create_dir_all(dir).ctx("create directory", dir)?;
    }
    no_symlinks::open(
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false),
        "create",
        &path,
    )?;
    Ok(path)
}

/// Touches `agent`'s bell, if it has one: its reader wakes. Never fails the caller; the
/// reader's rescan covers a bell that did not ring.
pub(super) fn ring(root: &Root, team: &TeamName, agent: &AgentName) {
    let path = root.bell_path(team, agent);
    if files::check(root, &path).is_err() {
        return;
    }
    let now = TimeSpec::UTIME_NOW;
    match utimensat(
        nix::fcntl::AT_FDCWD,
        &path,
        &now,
        &now,
        UtimensatFlags::NoFollowSymlink,
    ) {
        Ok(()) | Err(nix::errno::Errno::ENOENT) => {}
        Err(e) => tracing::debug!(path = %path.display(), "failed to ring the bell: {e}"),
    }
}
