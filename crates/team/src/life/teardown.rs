//! Deleting a team. Refused while teammates run, while a member runs where swarm cannot
//! see it (another tmux server or host), or while a worktree of the team holds work that
//! deleting it would lose, unless forced; then the teammates are stopped through
//! the shutdown ladder, the window is closed, the lead is given time to go with its pane,
//! the worktrees are removed (saying what a forced delete discarded) and the team's files
//! go last. A half-made team (a folder without its roster, left by a run that failed while
//! it was being made) goes with its tagged panes. A finished team (its lead exited) can go
//! by itself, and a finished run's window with it.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::life::shutdown::{self, LadderOptions};
use crate::life::status;
use crate::spawn::window::{TeamWindow, TeamWindowOptions};
use swarm_config::project::UserDirs;
use swarm_store::Store;
use swarm_store::layout::Root;
use swarm_store::state::Activity;
use swarm_tmux::Tmux;
use swarm_util::error::Base as _;
use swarm_util::names::{LEAD, TeamName};
use swarm_util::process;

/// How long the lead is given to end with its pane before its files go.
const LEAD_GONE_WITHIN: Duration = Duration::from_secs(10);

/// A worktree the delete took with it.
#[derive(Debug, Clone)]
pub struct RemovedWorktree {
    pub path: std::path::PathBuf,
    pub branch: String,
    /// What unmerged work a forced delete discarded.
    pub discarded: Option<String>,
}

/// What a delete did.
#[derive(Debug, Clone, Default)]
pub struct Deleted {
    pub removed: Vec<RemovedWorktree>,
    /// What it could not clean up (worktrees, a host's link to the team), one line each:
    /// the user's to tidy.
    pub left: Vec<String>,
}

/// Deletes `team` (see the module comment). `say` hears the ladder's steps.
pub fn delete(
    store: &Store,
    tmux: &Tmux,
    window: TeamWindowOptions,
    ladder: &LadderOptions,
    force: bool,
    say: &(dyn Fn(&str) + Sync),
) -> Result<Deleted> {
    let team = store.team();
    if is_half_made(store) {
        if let Some(window) = TeamWindow::find(tmux, store.team(), window)? {
            window.close()?;
        }
        store.delete_team()?;
        return Ok(Deleted::default());
    }
    store.roster().load()?;
    let seen = status::observe(store, Some(tmux))?;
    let alive: Vec<String> = seen
        .members
        .iter()
        .filter(|m| m.name != LEAD && (m.alive || m.pane_alive == Some(true)))
        .map(|m| {
            format!(
                "{} ({}{})",
                m.name,
                m.state,
                m.pid.map(|p| format!(", pid {p}")).unwrap_or_default()
            )
        })
        .collect();
    if !alive.is_empty() && !force {
        return Err(Error::conflict(format!(
            "team '{team}' still has running teammates: {}; shut them down with `swarm shutdown --all`, or pass --force",
            alive.join(", ")
        )));
    }
    // Members on another tmux server or host: deleting the team's files under them would
    // leave them working for a team that is gone.
    let unseen: Vec<String> = seen
        .members
        .iter()
        .filter(|m| m.state == "unseen")
        .map(|m| format!("{} (pane {})", m.name, m.pane.as_deref().unwrap_or("?")))
        .collect();
    if !unseen.is_empty() && !force {
        return Err(Error::conflict(format!(
            "team '{team}' has member(s) swarm cannot see, on another tmux server or host: {}; stop them where they run (`swarm shutdown NAME` asks them), or pass --force",
            unseen.join(", ")
        )));
    }
    if !force {
        refuse_unmerged(store, &ladder.dirs)?;
    }
    for result in shutdown::stop_team(store, Some(tmux), ladder, say) {
        result?;
    }
    if let Some(window) = TeamWindow::find(tmux, store.team(), window)? {
        window.close()?;
    }
    // The lead goes with its pane; let it finish before its files go.
    if let Some(lead) = seen.member(LEAD).filter(|m| m.alive).and_then(|m| m.pid) {
        let deadline = Instant::now() + LEAD_GONE_WITHIN;
        while process::is_alive(lead) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    // Settled by the ladder above; what is left is kept work (or a teammate that died
    // unseen). Check again: the ladder may just have kept some.
    if !force {
        refuse_unmerged(store, &ladder.dirs)?;
    }
    let mut deleted = Deleted::default();
    for record in store.worktrees().all_worktrees()? {
        // Only a forced delete gets here with unmerged work: say what it throws away.
        let discarded = swarm_git::settle::inspect(store, &record, &ladder.dirs)
            .ok()
            .filter(|c| c.unmerged())
            .map(|c| c.describe());
        match swarm_git::settle::discard(store, &record, &ladder.dirs) {
            Ok(()) => deleted.removed.push(RemovedWorktree {
                path: record.path,
                branch: record.branch,
                discarded,
            }),
            // The team goes anyway.
            Err(e) => deleted.left.push(format!(
                "{e}; remove worktree {} and branch {} by hand",
                record.path.display(),
                record.branch
            )),
        }
    }
    if let Some(line) = swarm_git::merge::remove_integration(store) {
        deleted.left.push(line);
    }
    let hosts = crate::spawn::remote::linked_hosts(&store.roster().load()?);
    store.delete_team()?;
    // Its hosts forget it last: a host that cannot be reached is told to the user.
    for host in hosts {
        if let Err(e) = crate::spawn::remote::unlink(store, &host, &ladder.dirs) {
            deleted.left.push(e.to_string());
        }
    }
    Ok(deleted)
}

/// Whether `team` has a folder but no roster (see [`Root::is_half_made`]).
pub fn is_half_made(store: &Store) -> bool {
    store.root().is_half_made(store.team())
}

/// The half-made teams under `root`, by name.
pub fn half_made(root: &Root) -> Vec<TeamName> {
    root.half_made_teams()
}

/// Whether `team`'s lead has finished (it recorded its exit). A lead that died without
/// saying so is not finished: its team is there to be resumed.
pub fn is_finished(store: &Store) -> bool {
    store
        .agents()
        .read_state(&swarm_util::names::AgentName::lead())
        .is_some_and(|s| s.activity == Activity::Exited)
}

/// Closes a finished run's window (its lead's dead pane, and whatever else of the team is
/// left), so that runs do not leave a session each behind; `keep` leaves it to look at.
/// Quiet: the run's outcome is already decided and said.
pub fn close_finished(store: &Store, window: &TeamWindow, keep: bool) {
    if keep || !is_finished(store) {
        return;
    }
    if let Err(e) = window.close() {
        tracing::warn!(
            "failed to close the window of team '{}': {e}",
            window.team()
        );
    }
}

/// Refuses when a worktree of the team holds work that deleting it would lose.
fn refuse_unmerged(store: &Store, dirs: &UserDirs) -> Result<()> {
    let team = store.team();
    let mut held = Vec::new();
    for record in store.worktrees().all_worktrees()? {
        match swarm_git::settle::inspect(store, &record, dirs) {
            Ok(c) if c.unmerged() => held.push(format!(
                "{} at {} ({})",
                record.branch,
                record.path.display(),
                c.describe()
            )),
            Ok(_) => {}
            // Its repository is gone: nothing is left to lose.
            Err(_) if !record.git_dir.exists() => {}
            Err(e) => held.push(format!(
                "{} at {} ({e})",
                record.branch,
                record.path.display()
            )),
        }
    }
    if held.is_empty() {
        return Ok(());
    }
    Err(Error::conflict(format!(
        "team '{team}' has worktree(s) with unmerged work: {}; merge or keep that work (git merge <branch>), or pass --force to delete it with the team",
        held.join("; ")
    )))
}
