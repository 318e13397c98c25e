//! A run: a team made for a goal, its lead agent started in the first pane of the team
//! window, and the wait for its end.
//!
//! The team's files are made before any pane (the roster, the budget, then the goal, which
//! the lead reads from `goal.md`). The lead is the one who finishes: it writes the report and
//! then marks itself exited, so a waiter that sees `Exited` finds the report there. It
//! records its end on every way out; its lock, held until its process ends, is the sign of
//! life: once the lock is free, one fresh read of its state is its last word. A lead that
//! never writes its state, or is gone without an end, is a failed run with the tail of its
//! log and pane said, never a wait without end.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::error::{Error, Result};
use crate::runs::progress::{self, Event, Snapshot};
use crate::spawn::inherit::TeammateCommand;
use crate::spawn::launch::{Launcher, SpawnRequest};
use crate::spawn::window::TeamWindow;
use swarm_config::permissions::Approver;
use swarm_store::Store;
use swarm_store::Teams;
use swarm_store::documents;
use swarm_store::state::{self, Activity};
use swarm_store::{Hold, Topic};
use swarm_util::error::exit;
use swarm_util::meter::Limits;
use swarm_util::names::{AgentName, TeamName};
use swarm_util::process;
use swarm_util::watcher::RESCAN_EVERY;

/// How long a lead may take to write its first state before the run gives up on it.
const LEAD_START_TIMEOUT: Duration = Duration::from_secs(30);
/// How many lines of a dead lead's log and pane a failed run shows.
const EVIDENCE_LINES: usize = 15;

/// What a run starts with. Its launcher's `cwd` is where the team works.
pub struct Goal<'a> {
    pub text: &'a str,
    pub approver: Approver,
    /// The most teammates the lead may spawn.
    pub teammates: usize,
    /// What the whole team may spend (every agent keeps to it; see `llm::budget`).
    pub budget: Limits,
    /// How teammates' worktree branches land (the team's merge queue settings).
    pub merge: swarm_git::merge::Options,
    /// The teammates that start with the lead (a team definition's): in the roster before
    /// the lead's first turn, which names them.
    pub members: &'a [SpawnRequest],
    /// The hosts the lead places its new teammates on (`--hosts`); none: this machine.
    pub hosts: &'a [String],
}

/// Makes the team a run works in, among `teams`: its roster (the lead's permission mode
/// recorded, for a teammate whose plan is approved before the lead has seen it), its
/// budget, its merge settings and its goal; returns it opened, for the launcher that
/// starts its lead ([`launch`]).
pub fn make_team(
    teams: &Teams,
    team: &TeamName,
    cwd: &std::path::Path,
    goal: &Goal,
    lead_mode: swarm_config::permissions::PermissionMode,
) -> Result<Store> {
    let description: String = goal
        .text
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(120)
        .collect();
    let store = teams.create_team(team, Some(description), cwd)?;
    let mode = lead_mode.to_string();
    store
        .roster()
        .update_member(swarm_util::names::LEAD, |lead| lead.mode = Some(mode))?;
    store.budget().write_limits(&goal.budget)?;
    swarm_git::merge::configure(&store, &goal.merge)?;
    documents::write_goal(&store, goal.text)?;
    Ok(store)
}

/// Opens the window of a team [`make_team`] made, with the lead agent in its first pane
/// (and the definition's members beside it).
pub fn launch(launcher: &Launcher, goal: &Goal) -> Result<TeamWindow> {
    let store = &launcher.store;
    let goal_file = store.root().goal_path(store.team());
    let lead = launcher.lead_command(&lead_extra(&goal_file, goal, &launcher.cwd));
    if !goal.members.is_empty() {
        start_members(launcher, goal.members, &lead)?;
    }
    let (window, _) = launcher.ensure_window(&lead)?;
    Ok(window)
}

/// What a run's lead is told besides its settings: where its goal is, who approves, how
/// many teammates it may have, where the team works, the hosts its teammates go on.
pub fn lead_extra(goal_file: &std::path::Path, goal: &Goal, cwd: &std::path::Path) -> Vec<String> {
    let mut extra = vec![
        format!("--goal-file={}", goal_file.display()),
        format!("--approver={}", goal.approver.as_str()),
        format!("--teammates={}", goal.teammates),
        format!("--cwd={}", cwd.display()),
    ];
    if !goal.hosts.is_empty() {
        extra.push(format!("--hosts={}", goal.hosts.join(",")));
    }
    extra
}

/// Spawns `members` all or none, opening the team window with `lead` in its first pane:
/// every check comes before anything starts, and the lead, started with the window, finds
/// them in the roster.
fn start_members(
    launcher: &Launcher,
    members: &[SpawnRequest],
    lead: &TeammateCommand,
) -> Result<()> {
    launcher.check_many(members)?;
    // Past the checks, a failure is tmux's or the disk's: said as it is (its exit code
    // kept), the ones that started go on with the lead.
    launcher
        .spawn_many_with_lead(members, lead)
        .into_iter()
        .try_for_each(|r| r.map(drop))?;
    Ok(())
}

/// A new team's name, from the first words of its goal and a random suffix.
pub fn team_from_goal(goal: &str) -> Result<TeamName> {
    let words: Vec<String> = goal
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(3)
        .map(|w| w.to_ascii_lowercase())
        .collect();
    let stem = if words.is_empty() {
        "run".to_owned()
    } else {
        words.join("-")
    };
    let stem: String = stem.chars().take(40).collect();
    Ok(TeamName::new(&format!("{stem}-{:04x}", fastrand::u16(..)))?)
}

/// Whether the lead is still at work (it started and has not exited).
pub fn lead_is_working(store: &Store) -> bool {
    store
        .agents()
        .read_state(&AgentName::lead())
        .is_some_and(|s| s.activity != Activity::Exited)
}

/// Waits until the team's lead has finished; returns its exit code. Ctrl-C asks the lead
/// to stop (it shuts the team down first) and says so through `note`; a second one stops
/// waiting.
pub fn wait_for_lead(store: &Store, window: &TeamWindow, note: &dyn Fn(&str)) -> Result<u8> {
    follow_lead(store, window, note, None)
}

/// [`wait_for_lead`], telling `progress` of every change to the team as it sees it (see
/// [`crate::runs::progress`]): woken by the files that change, and looking again at least
/// every [`RESCAN_EVERY`].
pub fn follow_lead(
    store: &Store,
    window: &TeamWindow,
    note: &dyn Fn(&str),
    progress: Option<&dyn Fn(&Event)>,
) -> Result<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Runtime(format!("failed to start the async runtime: {e}")))?;
    runtime.block_on(async {
        let started = Instant::now();
        let mut interrupts = 0;
        // Listening from the start: a Ctrl-C before the first wait below would otherwise
        // kill this process and leave the team running without anyone waiting for it.
        let mut ctrl_c = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
            .map_err(|e| Error::Runtime(format!("failed to listen for Ctrl-C: {e}")))?;
        // Woken when the lead writes its state (with progress to tell, when anyone writes
        // theirs, or the roster or a task changes); the rescan notices a lead that died.
        let changed = std::sync::Arc::new(tokio::sync::Notify::new());
        let wake = |changed: &std::sync::Arc<tokio::sync::Notify>| {
            let notify = changed.clone();
            move || notify.notify_one()
        };
        let topics = match progress {
            None => vec![Topic::State(AgentName::lead())],
            Some(_) => vec![Topic::States, Topic::Tasks, Topic::Roster],
        };
        let _watches: Vec<Hold> = topics
            .into_iter()
            .map(|topic| store.watch(topic, Box::new(wake(&changed))))
            .collect();
        let mut seen: Option<Snapshot> = None;
        let tell = |seen: &mut Option<Snapshot>| {
            let Some(progress) = progress else { return };
            if let Some(now) = progress::look(store, Some(window.tmux())) {
                for event in progress::changes(seen.as_ref(), &now) {
                    progress(&event);
                }
                *seen = Some(now);
            }
        };
        // The lead's state as last read: a read that fails (its database away a moment)
        // leaves it as it was, never "not started".
        let mut lead_state = None;
        loop {
            if let Some(now) = store.agents().read_state(&AgentName::lead()) {
                lead_state = Some(now);
            }
            // After reading the lead's state: a lead seen finished is told with the team
            // as it left it.
            tell(&mut seen);
            if let Some(code) = lead_state.as_ref().and_then(exit_code) {
                return Ok(code);
            }
            // Registered (it holds the lock before it writes a state) and now without its
            // lock: its process is past closing its files, so one fresh read is its last
            // word. It started here, so its process says it lives where its place cannot
            // (a database that is away).
            if lead_state.as_ref().is_some_and(|s| !s.process_alive())
                && !store.agents().lead_running()
            {
                return match store
                    .agents()
                    .read_state(&AgentName::lead())
                    .as_ref()
                    .and_then(exit_code)
                {
                    Some(code) => Ok(code),
                    None => Err(lead_gone(store, window, "stopped without finishing")),
                };
            }
            if lead_state.is_none() && started.elapsed() > LEAD_START_TIMEOUT {
                return Err(lead_gone(store, window, "did not start"));
            }
            tokio::select! {
                _ = changed.notified() => {}
                _ = tokio::time::sleep(RESCAN_EVERY) => {}
                _ = ctrl_c.recv() => {
                    interrupts += 1;
                    if interrupts > 1 {
                        return Ok(exit::INTERRUPTED);
                    }
                    note("\nstopping: the lead shuts the team down (Ctrl-C again to stop waiting)");
                    if let Some(s) = lead_state.as_ref().filter(|s| s.process_alive()) {
                        process::signal(s.pid, Signal::SIGTERM);
                    }
                }
            }
        }
    })
}

/// The exit code a lead recorded, once it has exited.
fn exit_code(s: &state::AgentState) -> Option<u8> {
    (s.activity == Activity::Exited).then(|| {
        s.exit
            .as_ref()
            .map(|e| u8::try_from(e.code).unwrap_or(1))
            .unwrap_or(0)
    })
}

/// A failed run (exit 7, as the README's table has it) whose lead `what` ("did not
/// start"), with what it left to say why: the end of its log and of its pane.
fn lead_gone(store: &Store, window: &TeamWindow, what: &str) -> Error {
    let log = store.root().log_path(store.team(), &AgentName::lead());
    let mut text = format!(
        "the lead of team '{}' {what}; see {}",
        store.team(),
        log.display()
    );
    let log_tail = std::fs::read_to_string(&log).unwrap_or_default();
    let pane = window
        .lead_pane()
        .ok()
        .flatten()
        .and_then(|p| window.tmux().capture_pane(p, None).ok())
        .unwrap_or_default();
    for (title, body) in [("its log ends", log_tail), ("its pane shows", pane)] {
        let lines = last_lines(&body, EVIDENCE_LINES);
        if !lines.is_empty() {
            text.push_str(&format!("\n{title}:\n{lines}"));
        }
    }
    Error::LeadGone(text)
}

/// The last `n` lines of `text` that are not blank, made safe for a terminal.
fn last_lines(text: &str, n: usize) -> String {
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.drain(..lines.len().saturating_sub(n));
    lines
        .iter()
        .map(|l| format!("  {}", swarm_util::text::printable(l)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Why the lead stopped, as it recorded it.
pub fn lead_exit_reason(store: &Store) -> Option<String> {
    store
        .agents()
        .read_state(&AgentName::lead())
        .and_then(|s| s.exit)
        .map(|e| swarm_util::text::printable(&e.reason).into_owned())
}

/// The run's report, or a line saying why there is none.
pub fn report(store: &Store) -> String {
    documents::read_report(store)
        .unwrap_or_else(|| "(no report: the lead did not finish its work)".to_owned())
}
