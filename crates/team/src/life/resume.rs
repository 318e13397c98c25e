//! Bringing a team back after its lead crashed, its tmux server died or the machine
//! rebooted (`swarm resume`).
//!
//! Every pane swarm starts leaves a launch record (see [`crate::spawn::launch_record`]).
//! `swarm resume` starts the lead again from its record with `--resume`, in a new team
//! window or in the lead's dead pane ([`resume_lead`]); the resumed lead, before it
//! supervises anything, starts again every teammate of the roster that had not finished
//! ([`respawn_teammates`]): its own record with `--resume`, so it restores its
//! conversation, in the permission mode it had last (an approved plan's mode stays
//! approved), in its worktree if that is still there, else in the project (said so). A
//! request it was waiting on when it stopped was expired then; resumed, it asks again if it
//! still needs the answer.
//! A teammate on another host starts again there, from its record (the host's command), in
//! a session of its own.
//! A teammate still alive is adopted: left as it is (by its heartbeat on another host). One that finished (its approved
//! shutdown, a clean exit) stays finished.
//!
//! Work in flight stays with its owner: the tasks a respawned teammate held (in progress,
//! or returned to pending when it or a lead noticed its death) are claimed for it again
//! before it starts, if nobody took them meanwhile, and its old process is marked as
//! reported, so the resumed lead's supervisor does not report it dead and hand its tasks
//! out. Mail it had not acknowledged stays in its inbox and is read once, except a
//! shutdown request from the lead that stopped, which is acknowledged here: the team
//! resumes, nobody asked it to stop now.
//!
//! A team is unfinished when its lead has a launch record and did not end cleanly (it
//! never wrote its end, or ended by a signal or a failure), and its lead is not running.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::spawn::inherit::{Engine, TeammateCommand};
use crate::spawn::launch::{Launcher, pane_spec};
use crate::spawn::launch_record::{RESUME_FLAG, command_from, read_signed};
use crate::spawn::window::{self as team_window, Placement, TeamWindow};
use swarm_config::permissions::PermissionMode;
use swarm_store::Store;
use swarm_store::Teams;
use swarm_store::documents;
use swarm_store::protocol::Protocol;
use swarm_store::roster;
use swarm_store::state::{Activity, AgentState};
use swarm_store::tasks::Status;
use swarm_util::error::Base as _;
use swarm_util::names::{AgentName, LEAD, TeamName};

/// Where a team stands, for `swarm resume` and `swarm run`'s offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Its lead runs now.
    Running,
    /// Its lead ended cleanly, or it was never started as a team with a lead.
    Finished,
    /// Its lead stopped before the end: it can be resumed.
    Unfinished,
}

pub fn standing(store: &Store) -> Standing {
    if store.agents().lead_running() {
        return Standing::Running;
    }
    if !matches!(store.launches().read_launch(LEAD), Ok(Some(_))) {
        return Standing::Finished;
    }
    match store.agents().read_state(&AgentName::lead()) {
        Some(s) if s.activity == Activity::Exited => {
            if s.exit.is_some_and(|e| e.clean && e.code == 0) {
                Standing::Finished
            } else {
                Standing::Unfinished
            }
        }
        // It never wrote its end: it was killed, or the machine went down.
        _ => Standing::Unfinished,
    }
}

/// The unfinished teams whose lead worked in `project`, by name.
pub fn unfinished_in(teams: &Teams, project: &Path) -> Vec<String> {
    let same = |dir: &str| {
        let dir = PathBuf::from(dir);
        dir == project || dir.canonicalize().is_ok_and(|d| d == project)
    };
    teams
        .list()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.member(LEAD).is_some_and(|l| same(&l.cwd)))
        .filter_map(|c| TeamName::new(&c.name).ok())
        .filter(|t| {
            teams
                .open(t)
                .is_ok_and(|s| standing(&s) == Standing::Unfinished)
        })
        .map(|t| t.to_string())
        .collect()
}

/// Whether the team's lead works on a goal (`swarm run`), rather than only supervising
/// the teammates `swarm spawn` started.
pub fn has_goal(store: &Store) -> bool {
    matches!(store.launches().read_launch(LEAD), Ok(Some(r)) if r.argv.iter().any(|a| a.starts_with("--goal-file=")))
}

/// Refuses a team that cannot be resumed, saying why and what to do instead.
pub fn check_resumable(store: &Store) -> Result<()> {
    let team = store.team();
    if !store.root().has_team(store.team()) {
        return Err(Error::not_found(format!(
            "no team '{team}' under {}; `swarm status` lists teams",
            store.root().path().display()
        )));
    }
    match standing(store) {
        Standing::Running => Err(Error::conflict(format!(
            "team '{team}' is running: its lead is alive; attach to it with `swarm attach {team}`"
        ))),
        Standing::Finished => Err(Error::conflict(format!(
            "team '{team}' has nothing to resume: its lead finished (or it was never started by `swarm run` or `swarm spawn`); start new work with `swarm run`"
        ))),
        Standing::Unfinished => Ok(()),
    }
}

/// Starts the team's lead again from its launch record with `--resume`: in its own pane if
/// the team window is still there with the lead's pane dead, else in a new team window.
/// The lead's old state and report go first, so whoever waits for the new lead does not
/// take the old one's end for its.
pub fn resume_lead(launcher: &Launcher) -> Result<TeamWindow> {
    let store = &launcher.store;
    let team = store.team();
    check_resumable(store)?;
    let record = read_signed(store, LEAD)?
        .ok_or_else(|| Error::not_found(format!("team '{team}' has no launch record")))?;
    let mut cmd = command_from(record, &launcher.env);
    cmd.argv.push(RESUME_FLAG.to_owned());
    if !cmd.cwd.is_dir() {
        return Err(Error::not_found(format!(
            "team '{team}' worked in {}, which is gone; restore that directory to resume it",
            cmd.cwd.display()
        )));
    }
    store.agents().remove_state(&AgentName::lead())?;
    documents::remove_report(store)?;
    let spec = pane_spec(&cmd);
    if let Some(window) = TeamWindow::find(&launcher.tmux, store.team(), launcher.window_options())?
    {
        let lead_pane = window
            .panes()?
            .into_iter()
            .find(|p| p.agent.as_deref() == Some(LEAD));
        return match lead_pane {
            Some(p) if p.dead => {
                window.restart_pane(p.pane, &spec)?;
                Ok(window)
            }
            Some(_) => Err(Error::conflict(format!(
                "team '{team}''s lead pane is still running; attach to it with `swarm attach {team}`"
            ))),
            None => Err(Error::conflict(format!(
                "team '{team}''s window has no lead pane any more; shut its teammates down with `swarm --team {team} shutdown --all`, then resume it"
            ))),
        };
    }
    let placement = Placement::for_caller(&launcher.tmux, &launcher.caller)?;
    let window = TeamWindow::open(
        &launcher.tmux,
        store.team(),
        &spec,
        placement,
        launcher.window_options(),
    )?;
    team_window::record_server(store, &window)?;
    let pane = window
        .lead_pane()?
        .map(|p| p.to_string())
        .unwrap_or_default();
    store.roster().update_member(LEAD, |m| {
        m.tmux_pane_id = pane;
        m.backend_type = Some("tmux".to_owned());
    })?;
    Ok(window)
}

/// What became of one teammate when its lead resumed.
#[derive(Debug, Clone, PartialEq)]
pub struct Resumed {
    pub name: String,
    /// In words: adopted, respawned (and how), finished, or why it was not started.
    pub how: String,
}

/// Called by a resumed lead before it supervises: respawns every teammate that had not
/// finished and is not alive, adopts the living (see the module comment).
pub fn respawn_teammates(launcher: &Launcher) -> Result<Vec<Resumed>> {
    let config = launcher.store.roster().load()?;
    let mut window = None;
    Ok(config
        .members
        .iter()
        .filter(|m| m.name != LEAD)
        .map(|m| Resumed {
            name: m.name.clone(),
            // One that fails to start must not keep the others stopped.
            how: respawn_one(launcher, m, &mut window, false)
                .unwrap_or_else(|e| format!("not restarted: {e}")),
        })
        .collect())
}

/// Restarts `name`, stopped, with its conversation and in its worktree, to work on a task
/// the merge queue handed back to it (see `team::merge_handback`); a finished teammate
/// too. Says what it did; a living one is left alone.
pub fn respawn_for_merge(launcher: &Launcher, name: &str) -> Result<String> {
    let store = &launcher.store;
    let config = store.roster().load()?;
    let m = config
        .member(name)
        .ok_or_else(|| Error::usage(format!("{name} is not in team '{}'", store.team())))?;
    // Its worktree was settled (kept) when it stopped; in use again, it is settled again
    // when it stops again.
    if let Ok(Some(mut record)) = store.worktrees().worktree(name)
        && record.state == swarm_store::worktrees::RecordState::Kept
    {
        record.state = swarm_store::worktrees::RecordState::Active;
        store.worktrees().save_worktree(&record)?;
    }
    respawn_one(launcher, m, &mut None, true)
}

/// Decides about one teammate and restarts it if it needs it (a finished one only when
/// `even_finished`); says what it did.
fn respawn_one(
    launcher: &Launcher,
    m: &roster::Member,
    window: &mut Option<TeamWindow>,
    even_finished: bool,
) -> Result<String> {
    let store = &launcher.store;
    let agent = AgentName::parse_any(&m.name)?;
    let st = store.agents().read_state(&agent);
    if let Some(s) = &st {
        if !even_finished
            && s.activity == Activity::Exited
            && s.exit.as_ref().is_some_and(|e| e.clean)
        {
            return Ok("finished: not restarted".to_owned());
        }
        if s.activity != Activity::Exited && store.still_runs(s) {
            return Ok(format!("adopted: still running (pid {})", s.pid));
        }
    } else if let Some(pid) = m.pid.filter(|p| swarm_util::process::is_alive(*p)) {
        return Ok(format!("adopted: still running (pid {pid})"));
    }
    let Some(record) = read_signed(store, &m.name)? else {
        return Ok("not restarted: swarm did not start it (no launch record)".to_owned());
    };
    let engine = record
        .engine
        .as_deref()
        .and_then(|e| e.parse::<Engine>().ok())
        .unwrap_or_default();
    let host = record.host.clone();
    let mut cmd = command_from(record, &launcher.env);
    let mut how = Vec::new();
    // A directory on another host is that host's to have.
    if host.is_none() && !cmd.cwd.is_dir() {
        how.push(format!(
            "its directory {} is gone, so it works in {} instead",
            cmd.cwd.display(),
            launcher.cwd.display()
        ));
        for a in cmd.argv.iter_mut().filter(|a| a.starts_with("--cwd=")) {
            *a = format!("--cwd={}", launcher.cwd.display());
        }
        cmd.cwd = launcher.cwd.clone();
    }
    with_current_lead_key(store, &mut cmd)?;
    let granted = granted_mode(store, &cmd);
    how.insert(0, carry_on(engine, &mut cmd, m, st.as_ref(), granted));
    // Its old process must not be reported dead by the lead's supervisor, which
    // would hand out the tasks it is about to continue.
    if let Some(pid) = st.as_ref().map(|s| s.pid).or(m.pid) {
        let token = st.as_ref().and_then(|s| s.token);
        store
            .agents()
            .claim_exit_report(&agent, &swarm_store::liveness::instance(token, pid))?;
    }
    let released = st
        .as_ref()
        .and_then(|s| s.exit.as_ref())
        .map(|e| e.released_tasks.clone())
        .unwrap_or_default();
    let kept = reclaim(store, &m.name, &released);
    if !kept.is_empty() {
        how.push(format!("keeps task(s) #{}", kept.join(", #")));
    }
    drop_stale_requests(store, &agent);
    store.agents().remove_state(&agent)?;
    if let Some(host) = host {
        let ssh = crate::spawn::remote::ssh_to(store.root(), &host, &launcher.dirs)?;
        launcher.start_command_on_host(&ssh, &m.name, &cmd)?;
        store.roster().update_member(&m.name, |member| {
            member.is_active = None;
            member.extra.remove(crate::life::status::SHUTDOWN_STEP);
        })?;
        how.push(format!("on host {host}"));
        return Ok(how.join("; "));
    }
    if window.is_none() {
        *window = TeamWindow::find(&launcher.tmux, store.team(), launcher.window_options())?;
    }
    let w = window.as_mut().ok_or_else(|| {
        Error::Pane(format!(
            "team '{}' has no window to restart it in",
            store.team()
        ))
    })?;
    // A teammate that crashed left its pane open and dead (`remain-on-exit`, to show how it
    // ended); its new pane would be refused beside it.
    for p in w.panes()? {
        if p.dead && p.agent.as_deref() == Some(m.name.as_str()) {
            w.kill_pane(p.pane)?;
        }
    }
    let color = m.color.clone().unwrap_or_else(|| "blue".to_owned());
    let pane = w.add_teammate(&agent, &color, &pane_spec(&cmd))?;
    let pid = match engine {
        Engine::Swarm => None,
        Engine::Claude => w
            .tmux()
            .display(&pane, "#{pane_pid}")?
            .trim()
            .parse::<i32>()
            .ok(),
    };
    store.roster().update_member(&m.name, |member| {
        member.tmux_pane_id = pane.to_string();
        member.backend_type = Some("tmux".to_owned());
        member.pid = pid;
        member.is_active = None;
        member.extra.remove(crate::life::status::SHUTDOWN_STEP);
    })?;
    Ok(how.join("; "))
}

/// Gives `cmd` the team's lead key as it is now, in place of whatever its record had: a
/// teammate started before its team had a key gets one, and every restart gets the key
/// the (resumed) lead signs with.
fn with_current_lead_key(store: &Store, cmd: &mut TeammateCommand) -> Result<()> {
    let Some(key) = swarm_store::mailbox::lead_key::verify_key(store.root(), store.team())? else {
        return Ok(());
    };
    let mut argv = Vec::with_capacity(cmd.argv.len() + 1);
    let mut old = std::mem::take(&mut cmd.argv).into_iter();
    while let Some(a) = old.next() {
        if a == "--lead-verify-key" {
            old.next();
        } else if !a.starts_with("--lead-verify-key=") {
            argv.push(a);
        }
    }
    argv.push(format!("--lead-verify-key={}", key.to_arg()));
    cmd.argv = argv;
    Ok(())
}

/// Makes `cmd` carry on where the teammate stopped: its own conversation (`--resume`, in
/// the permission mode it had last) or its Claude Code session when the roster knows it.
/// Returns how, as said in `swarm resume`'s report.
fn carry_on(
    engine: Engine,
    cmd: &mut TeammateCommand,
    m: &roster::Member,
    st: Option<&AgentState>,
    granted: Option<PermissionMode>,
) -> String {
    match engine {
        Engine::Swarm => {
            // The mode it had last, which an approved plan may have changed, but never
            // more than the lead granted: its state and roster entry are the teammate's
            // (or its host's) to write.
            let mode = st
                .and_then(|s| s.mode.clone())
                .or(m.mode.clone())
                .filter(|mode| within(mode, granted));
            if let Some(mode) = mode {
                for a in cmd
                    .argv
                    .iter_mut()
                    .filter(|a| a.starts_with("--permission-mode="))
                {
                    *a = format!("--permission-mode={mode}");
                }
            }
            cmd.argv.push(RESUME_FLAG.to_owned());
            "respawned with its conversation".to_owned()
        }
        Engine::Claude => match claude_session(m) {
            Some(sid) => {
                cmd.argv.push(RESUME_FLAG.to_owned());
                cmd.argv.push(sid.clone());
                format!("respawned with `claude --resume {sid}`")
            }
            None => "respawned fresh: its Claude Code session id is not known".to_owned(),
        },
    }
}

/// The most the lead granted `cmd`'s teammate: the mode of its signed record or of the
/// lead's own (a teammate inherits the lead's; an approved plan gives no more than that).
fn granted_mode(store: &Store, cmd: &TeammateCommand) -> Option<PermissionMode> {
    let mode_of = |argv: &[String]| {
        argv.iter()
            .find_map(|a| a.strip_prefix("--permission-mode="))
            .and_then(|m| m.parse::<PermissionMode>().ok())
    };
    let lead = read_signed(store, LEAD)
        .ok()
        .flatten()
        .and_then(|r| mode_of(&r.argv));
    [mode_of(&cmd.argv), lead]
        .into_iter()
        .flatten()
        .max_by_key(|m| m.latitude())
}

/// Whether `mode` is no more than `granted` (nothing is, when nothing was granted).
fn within(mode: &str, granted: Option<PermissionMode>) -> bool {
    match (mode.parse::<PermissionMode>(), granted) {
        (Ok(mode), Some(granted)) => mode.latitude() <= granted.latitude(),
        _ => false,
    }
}

/// A Claude Code teammate's own session id, when the roster has it.
fn claude_session(m: &roster::Member) -> Option<String> {
    m.extra
        .get("sessionId")
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Gives `name` back the tasks it held: those still in progress under its name, and those
/// returned to pending when it stopped that nobody has taken since. Returns their ids.
fn reclaim(store: &Store, name: &str, released: &[String]) -> Vec<String> {
    let list = store.tasks();
    let mut ids: Vec<String> = list
        .list()
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.status == Status::InProgress && t.owned_by(name))
        .map(|t| t.id)
        .collect();
    for id in released {
        let free = list.get(id).is_ok_and(|t| {
            t.status == Status::Pending && t.owner.as_deref().is_none_or(str::is_empty)
        });
        if free && matches!(list.claim(id, name, false), Ok(Ok(_))) {
            ids.push(id.clone());
        }
    }
    ids.sort_by_key(|id| id.parse::<u64>().unwrap_or(u64::MAX));
    ids.dedup();
    ids
}

/// Acknowledges the shutdown requests a stopped lead left in `agent`'s inbox, and the
/// lead's own notes that `agent` was terminated: the team resumes, so neither holds.
fn drop_stale_requests(store: &Store, agent: &AgentName) {
    let stale = |agent_inbox: &AgentName, pred: &dyn Fn(&Protocol) -> bool| {
        let keys: Vec<String> = store
            .mail()
            .read_unread(agent_inbox)
            .unwrap_or_default()
            .into_iter()
            .filter(|d| d.envelope.protocol().is_some_and(|p| pred(&p)))
            .map(|d| d.key)
            .collect();
        if let Err(e) = store.mail().ack(agent_inbox, &keys) {
            tracing::warn!("failed to drop stale mail of {agent_inbox}: {e}");
        }
    };
    stale(agent, &|p| {
        matches!(p, Protocol::ShutdownRequest(_)) && p.signed_by(LEAD)
    });
    stale(
        &AgentName::lead(),
        &|p| matches!(p, Protocol::TeammateTerminated(t) if t.agent.as_deref() == Some(agent.as_str())),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restart_never_gives_more_latitude_than_the_lead_granted() {
        let granted = Some(PermissionMode::AcceptEdits);
        assert!(within("plan", granted));
        assert!(within("default", granted));
        assert!(within("acceptEdits", granted));
        // A state (the teammate's, or its host's, to write) asking for more: refused.
        assert!(!within("bypassPermissions", granted));
        assert!(!within("anything", granted));
        assert!(!within("default", None));
    }
}
