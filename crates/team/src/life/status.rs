//! The team as it is right now: every member's process, pane, activity, task and usage,
//! from one read of the roster, each agent's state file, one batched tmux query and a pid
//! check per agent.
//!
//! Liveness is decided in this order of trust: the process (on a team whose processes beat,
//! its heartbeat, by `swarm_store::liveness`; else its pid, and its start time so a reused
//! pid is not mistaken for the agent), then the pane, then what the agent last wrote about
//! itself. Nothing here writes; [`crate::life::supervisor`] acts on what it shows.
//!
//! A member swarm did not start (a Claude Code teammate) has no state file: its process is
//! the first process of the pane its roster entry names, its activity Claude Code's
//! `isActive`, and its pane is read for a first-run dialog (see [`crate::life::dialogs`]).
//!
//! "Its pane is gone, so it ended" is concluded only for a pane known to be on the team's
//! own tmux server (swarm made it there, or saw it there); a member whose pane is not on
//! that server may run on another one, or another host, and is `unseen`, never `dead`.

use std::collections::HashMap;

use serde::Serialize;

use crate::error::Result;
use crate::life::dialogs;
use swarm_store::Store;
use swarm_store::liveness::Heartbeat;
use swarm_store::roster::Member;
use swarm_store::state::{Activity, AgentState};
use swarm_store::tasks::Status;
use swarm_store::tasks::leases::{self, Overlap};
use swarm_tmux::{PaneRecord, Tmux};
use swarm_util::meter::{Limits, Spend, Usage};
use swarm_util::names::{AgentName, LEAD};
use swarm_util::table::{self, Align, Cell, Look, Table};
use swarm_util::text::printable;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberStatus {
    pub name: String,
    pub agent_id: String,
    pub color: Option<String>,
    pub agent_type: Option<String>,
    pub model: Option<String>,
    /// The provider its model runs on, as a swarm agent resolved it (`None` for a member
    /// that never started, or one swarm did not start).
    pub provider: Option<String>,
    /// What runs it: `swarm`, `claude`, or `unknown` for a member that joined by itself
    /// and has no state file of swarm's.
    pub engine: String,
    pub pid: Option<i32>,
    /// The host its process runs on, on a team whose processes beat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Its process's fencing token, on a team whose processes beat: which process a
    /// report of its end is about.
    #[serde(skip)]
    pub token: Option<i64>,
    pub pane: Option<String>,
    /// The agent's process is running.
    pub alive: bool,
    /// The pane exists and its process has not exited; `None` when tmux could not be asked.
    pub pane_alive: Option<bool>,
    /// starting, idle, working, awaiting-approval, shutting-down, exited, dead, not-started,
    /// blocked (a Claude Code teammate at a first-run dialog, named in `detail`), or
    /// unseen (one that joined by itself, whose pane is not on the team's tmux server).
    pub state: String,
    /// Why a member is dead or exited, or what it waits for.
    pub detail: Option<String>,
    pub current_task: Option<String>,
    pub last_activity_ms: Option<i64>,
    pub mode: Option<String>,
    pub usage: Usage,
    pub cost_usd: f64,
    pub model_calls: u64,
    pub exit_code: Option<i32>,
    /// Its conversation (`agent::transcript`), when a swarm-engine agent has recorded one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript: Option<std::path::PathBuf>,
    /// Epoch milliseconds until which a live agent waits for its provider's rate limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limited_until: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit_reason: Option<String>,
    /// A dead member's last error: the last one its log holds, else why it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The dead pane's exit status or signal, as tmux saw it.
    #[serde(skip)]
    pub pane_record: Option<PaneRecord>,
    #[serde(skip)]
    pub state_file: Option<AgentState>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskCounts {
    pub pending: usize,
    pub in_progress: usize,
    pub completed: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamStatus {
    pub team: String,
    pub description: Option<String>,
    /// False when tmux could not be asked (no server); pane facts are then unknown.
    pub tmux_reachable: bool,
    pub members: Vec<MemberStatus>,
    pub tasks: TaskCounts,
    /// Files two or more open tasks name (advisory leases that overlap); left out when
    /// none, as `budget` is.
    #[serde(rename = "overlappingLeases", skip_serializing_if = "Vec::is_empty")]
    pub leases: Vec<Overlap>,
    /// The team's budget and what it has spent, when a run gave it one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetStatus>,
    /// Who owns an open task, as read with the counts (the supervisor's look for owners
    /// that left, without reading the board again).
    #[serde(skip)]
    pub open_owners: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetStatus {
    pub limits: Limits,
    pub spent: Spend,
}

impl BudgetStatus {
    /// "budget: 4200 tokens of 6000 (70 %)", for people.
    pub fn describe(&self) -> String {
        match self.limits.most_spent(&self.spent) {
            Some((share, what)) => format!("budget: {what} ({:.0} %)", share * 100.0),
            None => "budget: none".to_owned(),
        }
    }
}

impl TeamStatus {
    pub fn member(&self, name: &str) -> Option<&MemberStatus> {
        self.members.iter().find(|m| m.name == name)
    }
}

/// Looks at the team. `tmux` is the server the team's panes live on, if any.
pub fn observe(store: &Store, tmux: Option<&Tmux>) -> Result<TeamStatus> {
    observe_on(store, tmux, None)
}

/// [`observe`], the tasks read through `board` when one is given (a watcher's passes: read
/// again only when they changed).
pub fn observe_on(
    store: &Store,
    tmux: Option<&Tmux>,
    board: Option<&swarm_store::board::Board>,
) -> Result<TeamStatus> {
    let config = store.roster().load()?;
    let panes = match tmux.map(|t| t.list_panes()) {
        Some(Ok(panes)) => Some(panes),
        Some(Err(e)) if e.is_absent() => None,
        Some(Err(e)) => return Err(e.into()),
        None => None,
    };
    let by_agent: HashMap<&str, &PaneRecord> = panes
        .iter()
        .flatten()
        .filter(|p| p.belongs_to(store.team().as_str()))
        .filter_map(|p| p.agent.as_deref().map(|a| (a, p)))
        .collect();
    let by_id: HashMap<String, &PaneRecord> = panes
        .iter()
        .flatten()
        .map(|p| (p.pane.to_string(), p))
        .collect();
    let tasks = match board {
        Some(board) => board.tasks(store).unwrap_or_default(),
        None => std::sync::Arc::new(store.tasks().list().unwrap_or_default()),
    };
    let beats = Beats::read(store);
    let mut counts = TaskCounts::default();
    for t in tasks.iter() {
        match t.status {
            Status::Pending => counts.pending += 1,
            Status::InProgress => counts.in_progress += 1,
            Status::Completed => counts.completed += 1,
        }
    }
    let members = config
        .members
        .iter()
        .map(|m| {
            let state = AgentName::parse_any(&m.name)
                .ok()
                .and_then(|a| store.agents().read_state(&a));
            // A pane Claude Code (or its lead) made is found by the id the roster gives,
            // unless swarm tagged it for someone else.
            let pane = by_agent
                .get(m.name.as_str())
                .or_else(|| {
                    watched_pane(m)
                        .and_then(|id| by_id.get(id))
                        .filter(|p| p.agent.is_none() || p.agent.as_deref() == Some(&m.name))
                })
                .copied()
                .cloned();
            let current = state
                .as_ref()
                .and_then(|s| s.current_task.clone())
                .or_else(|| {
                    tasks
                        .iter()
                        .find(|t| t.status == Status::InProgress && t.owned_by(&m.name))
                        .map(|t| t.id.clone())
                });
            // A teammate on another host has its pane on that host's server, not this one.
            let here = crate::spawn::remote::host_of(m).is_none();
            let mut st = member_status(
                m,
                state,
                pane.filter(|_| here),
                panes.is_some() && tmux.is_some() && here,
                current,
                &beats,
            );
            if let Some(placed) = crate::spawn::remote::host_of(m)
                && swarm_store::liveness::is_here(st.host.as_deref())
            {
                // A host's own word that its teammate runs here would have this machine
                // signal one of its own pids: the lead placed it there, and it stays there.
                st.host = Some(placed.to_owned());
            }
            st.transcript = AgentName::parse_any(&m.name)
                .ok()
                .map(|a| store.root().transcript_path(store.team(), &a))
                .filter(|p| p.is_file());
            st.last_error = last_error(store, &st);
            if let Some(t) = tmux {
                read_claude_pane(t, m, &mut st);
            }
            st
        })
        .collect();
    Ok(TeamStatus {
        team: config.name.clone(),
        description: config.description.clone(),
        tmux_reachable: panes.is_some(),
        members,
        tasks: counts,
        leases: leases::overlaps(&tasks),
        open_owners: open_owners(&tasks),
        budget: Some(store.budget().limits())
            .filter(|l| !l.is_none())
            .map(|limits| BudgetStatus {
                limits,
                spent: store.budget().team_spent(),
            }),
    })
}

/// The roster field where the shutdown ladder records its last step, so a teammate that
/// ignores the request still shows as being shut down, and how far that got.
pub const SHUTDOWN_STEP: &str = "swarmShutdownStep";

/// Whether `s`'s pid may stand for its liveness: a process of this host that never
/// registered a heartbeat.
fn judged_here(s: &AgentState) -> bool {
    s.token.is_none()
        && s.host
            .as_deref()
            .is_none_or(|h| h == swarm_store::liveness::this_host())
}

/// The owners of open tasks, each once, sorted.
fn open_owners(tasks: &[swarm_store::tasks::Task]) -> Vec<String> {
    let mut owners: Vec<String> = tasks
        .iter()
        .filter(|t| t.is_open())
        .filter_map(|t| t.owner.clone())
        .filter(|o| !o.is_empty())
        .collect();
    owners.sort();
    owners.dedup();
    owners
}

/// The team's heartbeats, by fencing token, and the timeout they are judged by; none on a
/// backend whose liveness is the pid.
struct Beats {
    by_token: HashMap<i64, Heartbeat>,
    timeout: std::time::Duration,
    /// Whether the backend keeps heartbeats at all (else liveness is the pid).
    kept: bool,
}

impl Beats {
    fn read(store: &Store) -> Beats {
        let beats = store.agents().heartbeats().unwrap_or_else(|e| {
            tracing::warn!("{e}");
            None
        });
        Beats {
            kept: beats.is_some(),
            by_token: beats.into_iter().flatten().map(|b| (b.token, b)).collect(),
            timeout: store.root().heartbeat_timeout(),
        }
    }

    /// The heartbeat of the process `state` describes, if it registered one.
    fn of(&self, state: Option<&AgentState>) -> Option<&Heartbeat> {
        self.by_token.get(&state?.token?)
    }
}

fn member_status(
    m: &Member,
    state: Option<AgentState>,
    pane: Option<PaneRecord>,
    tmux_known: bool,
    current_task: Option<String>,
    beats: &Beats,
) -> MemberStatus {
    let facts = Facts {
        m,
        state: state.as_ref(),
        pane: pane.as_ref(),
        tmux_known,
        beats,
    };
    let pid = facts.pid();
    let alive = facts.alive(pid);
    let ladder_step = m.extra.get(SHUTDOWN_STEP).and_then(|v| v.as_str());
    let (label, detail) = facts.label(alive, pid, ladder_step);
    let rate_limited_until = state
        .as_ref()
        .filter(|_| alive)
        .and_then(|s| s.rate_limited_until(swarm_util::clock::now_ms()));
    let detail = match rate_limited_until {
        Some(until) if ladder_step.is_none() => Some(waiting_for_rate_limit(until)),
        _ => detail,
    };
    let s = state.as_ref();
    MemberStatus {
        name: m.name.clone(),
        agent_id: m.agent_id.clone(),
        color: m.color.clone(),
        agent_type: m.agent_type.clone(),
        model: s.and_then(|s| s.model.clone()).or_else(|| m.model.clone()),
        provider: s.and_then(|s| s.provider.clone()),
        engine: facts.engine(),
        pid,
        host: s.and_then(|s| s.host.clone()),
        token: s.and_then(|s| s.token),
        pane: pane
            .as_ref()
            .map(|p| p.pane.to_string())
            .or_else(|| Some(m.tmux_pane_id.clone()).filter(|p| p.starts_with('%'))),
        alive,
        pane_alive: tmux_known.then(|| pane.as_ref().is_some_and(|p| !p.dead)),
        state: label,
        detail,
        current_task: if alive { current_task } else { None },
        last_activity_ms: s.map(|s| s.last_activity_ms),
        mode: s.and_then(|s| s.mode.clone()).or_else(|| m.mode.clone()),
        usage: s.map(|s| s.usage).unwrap_or_default(),
        cost_usd: s.map(|s| s.cost_usd).unwrap_or(0.0),
        model_calls: s.map(|s| s.model_calls).unwrap_or(0),
        exit_code: facts.exit_code(),
        transcript: None,
        rate_limited_until,
        rate_limit_reason: rate_limited_until
            .and(s)
            .and_then(|s| s.rate_limit_reason.clone()),
        last_error: None,
        pane_record: pane,
        state_file: state,
    }
}

/// What is known of one member: its roster entry, its state file, its pane, its beat.
struct Facts<'a> {
    m: &'a Member,
    state: Option<&'a AgentState>,
    pane: Option<&'a PaneRecord>,
    /// Whether tmux could be asked (else nothing is known of panes).
    tmux_known: bool,
    beats: &'a Beats,
}

impl Facts<'_> {
    /// Its process: the state's, else the roster's, else, without a state file or a
    /// recorded pid, the pane's own (Claude Code runs as the pane's first process; a dead
    /// pane's pid may be reused, so not then).
    fn pid(&self) -> Option<i32> {
        let pane_pid = self
            .pane
            .filter(|p| {
                !p.dead
                    && p.agent.is_none()
                    && self.state.is_none()
                    && watched_pane(self.m).is_some()
            })
            .map(|p| p.pid);
        self.state.map(|s| s.pid).or(self.m.pid).or(pane_pid)
    }

    fn alive(&self, pid: Option<i32>) -> bool {
        // Placed on another host by the lead: no pid it writes is this host's, whatever its
        // state says yet (it writes its state before it registers).
        let elsewhere = crate::spawn::remote::host_of(self.m).is_some();
        match self.state {
            // No beat to judge it by, on a backend that keeps them: it registered after the
            // heartbeats were read, or it runs on another host and has not registered yet.
            // Either way its pid is no evidence here (it may be another host's).
            Some(s)
                if self.beats.of(Some(s)).is_none()
                    && self.beats.kept
                    && (elsewhere || !judged_here(s)) =>
            {
                s.activity != Activity::Exited
            }
            Some(s) => {
                s.alive(self.beats.of(Some(s)), self.beats.timeout)
                    && s.activity != Activity::Exited
            }
            // Starting there: its first state and beat are still to come.
            None if elsewhere => true,
            None => pid.is_some_and(swarm_util::process::is_alive),
        }
    }

    fn engine(&self) -> String {
        self.m
            .engine
            .clone()
            .or_else(|| self.state.map(|_| "swarm".to_owned()))
            .unwrap_or_else(|| "unknown".to_owned())
    }

    /// What it is doing, in a word, and why.
    fn label(
        &self,
        alive: bool,
        pid: Option<i32>,
        ladder_step: Option<&str>,
    ) -> (String, Option<String>) {
        let (m, state) = (self.m, self.state);
        if let (true, Some(step)) = (alive, ladder_step) {
            return ("shutting-down".to_owned(), Some(step.to_owned()));
        }
        if alive {
            // Claude Code keeps no state file; it says whether it is in a turn.
            let claimed = match m.is_active {
                Some(true) => "working",
                Some(false) => "idle",
                None => "running",
            };
            return (
                state
                    .map(|s| s.activity.as_str())
                    .unwrap_or(claimed)
                    .to_owned(),
                state.and_then(|s| s.detail.clone()),
            );
        }
        if let Some(s) = state.filter(|s| s.activity == Activity::Exited) {
            let clean = s.exit.as_ref().is_none_or(|e| e.clean);
            let why = s.exit.as_ref().map(|e| e.reason.clone());
            return (
                if clean { "exited" } else { "dead" }.to_owned(),
                why.or_else(|| s.detail.clone()),
            );
        }
        if pid.is_none() {
            return without_a_process(m, self.pane, self.tmux_known);
        }
        if let Some(b) = self.beats.of(state) {
            return ("dead".to_owned(), Some(b.why_dead(self.beats.timeout)));
        }
        let why = match (self.pane, self.tmux_known) {
            (_, false) => "process gone; tmux server unreachable".to_owned(),
            (None, true) => "process gone; its pane was closed".to_owned(),
            (Some(p), true) if p.dead => pane_death(p),
            (Some(_), true) => "process gone".to_owned(),
        };
        ("dead".to_owned(), Some(why))
    }

    /// Its exit code: the one it recorded, else its dead pane's.
    fn exit_code(&self) -> Option<i32> {
        let recorded = self.state.and_then(|s| s.exit.as_ref().map(|e| e.code));
        recorded.or_else(|| {
            self.pane
                .filter(|p| p.dead)
                .and_then(|p| p.dead_status.or(p.dead_signal.map(|s| 128 + s)))
        })
    }
}

/// The state of a member that has no process swarm knows of, by its pane.
fn without_a_process(
    m: &Member,
    pane: Option<&PaneRecord>,
    tmux_known: bool,
) -> (String, Option<String>) {
    match pane {
        Some(p) if !p.dead => ("starting".to_owned(), None),
        // Started on another host: it is starting until it registers (or is ended there).
        None if let Some(host) = crate::spawn::remote::host_of(m) => (
            "starting".to_owned(),
            Some(format!("on host {host}; not registered yet")),
        ),
        Some(p) => ("dead".to_owned(), Some(pane_death(p))),
        // swarm made its pane on this server, or saw it here: gone from a server that
        // answers, it ended, and before it registered when it left no pid.
        None if tmux_known && m.name != LEAD && pane_known_here(m) => (
            "dead".to_owned(),
            Some(format!(
                "its pane {} was closed before it registered",
                m.tmux_pane_id
            )),
        ),
        // It joined by itself, in a pane of some tmux server (another, or another host's):
        // not seeing it here says nothing about whether it runs.
        None if m.name != LEAD && joined_itself(m) => (
            "unseen".to_owned(),
            Some(format!(
                "its pane {} is not on the team's tmux server{}; swarm cannot see whether it runs",
                m.tmux_pane_id,
                if tmux_known { "" } else { " (no server)" }
            )),
        ),
        None => ("not-started".to_owned(), None),
    }
}

/// A dead member's last error, in its own words when its log has them.
fn last_error(store: &Store, m: &MemberStatus) -> Option<String> {
    if m.state != "dead" {
        return None;
    }
    AgentName::parse_any(&m.name)
        .ok()
        .and_then(|a| swarm_store::documents::last_log_error(store, &a))
        .or_else(|| {
            let exit = m.state_file.as_ref()?.exit.as_ref()?;
            (!exit.clean).then(|| exit.reason.clone())
        })
}

/// The tmux pane the roster names for a member swarm did not start itself (a Claude Code
/// teammate): liveness comes from that pane when there is no state file to trust.
pub fn watched_pane(m: &Member) -> Option<&str> {
    let tmux_backend = m.backend_type.as_deref().is_none_or(|b| b == "tmux");
    Some(m.tmux_pane_id.as_str()).filter(|p| {
        tmux_backend
            && m.engine.as_deref() != Some("swarm")
            && p.len() > 1
            && p.starts_with('%')
            && p[1..].bytes().all(|b| b.is_ascii_digit())
    })
}

/// What a Claude Code member's pane says: a first-run dialog it waits at (at any time of
/// its run: `blocked`), or for one whose process exited, its last lines and the fix of the
/// dialog it stopped at. Read at most every [`SCREEN_TTL`] per pane.
fn read_claude_pane(tmux: &Tmux, m: &Member, st: &mut MemberStatus) {
    let claude = m.engine.as_deref() == Some("claude") || watched_pane(m).is_some();
    let Some(pane) = st
        .pane_record
        .as_ref()
        .filter(|_| claude && st.state_file.is_none())
    else {
        return;
    };
    if st.alive && !pane.dead {
        if let Some(d) = screen(tmux, pane).and_then(|s| dialogs::recognise(&s)) {
            st.state = "blocked".to_owned();
            st.detail = Some(d.describe());
        }
    } else if pane.dead && st.state == "dead" {
        let Some(text) = screen(tmux, pane) else {
            return;
        };
        if let Some(d) = dialogs::recognise(&text) {
            let exit = st.detail.take().unwrap_or_else(|| pane_death(pane));
            st.detail = Some(format!("{exit} · {}", d.describe_exit()));
        }
        st.last_error = dialogs::last_lines(&text, 4).or(st.last_error.take());
    }
}

/// How long a pane's screen, once read, stands for it: a long-lived watcher (the lead's
/// reconcile, twice a second) reads each Claude Code pane at most this often.
const SCREEN_TTL: std::time::Duration = std::time::Duration::from_secs(2);

/// The visible text of `pane`, read at most every [`SCREEN_TTL`] (and again once it died).
fn screen(tmux: &Tmux, pane: &PaneRecord) -> Option<String> {
    use std::sync::Mutex;
    use std::time::Instant;
    type Screens = HashMap<String, (Instant, Option<String>)>;
    static SCREENS: Mutex<Option<Screens>> = Mutex::new(None);
    let key = format!("{:?} {} {}", tmux.server(), pane.pane, pane.dead);
    let mut screens = SCREENS.lock().unwrap_or_else(|p| p.into_inner());
    let screens = screens.get_or_insert_with(HashMap::new);
    screens.retain(|_, (at, _)| at.elapsed() < SCREEN_TTL);
    screens
        .entry(key)
        // A dead pane's last words may have scrolled just above its screen.
        .or_insert_with(|| {
            let start = pane.dead.then_some(-50);
            (Instant::now(), tmux.capture_pane(pane.pane, start).ok())
        })
        .1
        .clone()
}

/// A member Claude Code runs, by swarm's record or by the `isActive` only Claude Code
/// writes before it registers, in a pane the roster names.
fn joined_itself(m: &Member) -> bool {
    watched_pane(m).is_some() && (m.engine.as_deref() == Some("claude") || m.is_active.is_some())
}

/// The roster field where swarm records the pane it saw a member that joined by itself
/// in, on the team's own tmux server: that pane gone from that server means the member
/// ended, as for a pane swarm made.
pub const PANE_SEEN: &str = "swarmPaneSeen";

/// Whether the member's pane is known to be on the team's tmux server: swarm made it there
/// (it started the member: `engine`), or saw it there (`swarmPaneSeen`).
fn pane_known_here(m: &Member) -> bool {
    let id = m.tmux_pane_id.as_str();
    id.len() > 1
        && id.starts_with('%')
        && (m.engine.is_some() || m.extra.get(PANE_SEEN).and_then(|v| v.as_str()) == Some(id))
}

/// Whether `st`'s pane was seen on the team's server but not recorded yet: a pane the
/// roster names for a member that joined by itself, open, and tagged for nobody else.
pub fn pane_seen_unrecorded(m: &Member, st: &MemberStatus) -> bool {
    watched_pane(m).is_some()
        && !pane_known_here(m)
        && st
            .pane_record
            .as_ref()
            .is_some_and(|p| !p.dead && p.agent.is_none() && p.pane.to_string() == m.tmux_pane_id)
}

fn pane_death(p: &PaneRecord) -> String {
    match (p.dead_signal, p.dead_status) {
        (Some(sig), _) => format!("killed by signal {sig}"),
        (None, Some(code)) => format!("exited with status {code}"),
        _ => "its process exited".to_owned(),
    }
}

/// What a member waiting for the rate limit shows.
pub fn waiting_for_rate_limit(until_ms: i64) -> String {
    format!(
        "waiting for rate limit until {}",
        swarm_util::clock::local_hms(until_ms)
    )
}

/// The member waits for its provider's rate limit (and is not being shut down): what a
/// person should see before what it was doing.
fn waits_for_rate_limit(m: &MemberStatus) -> Option<i64> {
    m.rate_limited_until.filter(|_| m.state != "shutting-down")
}

/// The state column.
fn state_cell(m: &MemberStatus) -> String {
    match waits_for_rate_limit(m) {
        Some(_) => "waiting for rate limit".to_owned(),
        None => m.state.clone(),
    }
}

/// The detail column: why a member is dead, exited or blocked, what it waits for, or until
/// when the provider limits it and why.
fn detail_cell(m: &MemberStatus) -> String {
    let detail = match waits_for_rate_limit(m) {
        Some(until) => match &m.rate_limit_reason {
            Some(why) => format!("until {} · {why}", swarm_util::clock::local_hms(until)),
            None => format!("until {}", swarm_util::clock::local_hms(until)),
        },
        None => m.detail.clone().unwrap_or_default(),
    };
    // A dead member's last error, unless its detail says it already.
    let detail = match m
        .last_error
        .as_ref()
        .filter(|e| !detail.contains(e.as_str()))
    {
        Some(e) if detail.is_empty() => format!("last error: {e}"),
        Some(e) => format!("{detail} · last error: {e}"),
        None => detail,
    };
    printable(&detail).into_owned()
}

/// The colour of a state: busy green, waiting yellow, gone wrong red, at rest dim.
fn state_colour(m: &MemberStatus) -> Option<table::Sgr> {
    if m.rate_limited_until.is_some() {
        return Some(table::YELLOW);
    }
    Some(match m.state.as_str() {
        "working" | "running" => table::GREEN,
        "awaiting-approval" | "shutting-down" | "blocked" | "unseen" => table::YELLOW,
        "starting" => table::CYAN,
        "dead" => table::BOLD_RED,
        "idle" | "exited" | "not-started" => table::DIM,
        _ => return None,
    })
}

/// "3s ago", "2m ago": for people.
pub fn ago(ms: i64, now_ms: i64) -> String {
    let secs = ((now_ms - ms).max(0) / 1000) as u64;
    match secs {
        0 => "now".to_owned(),
        s if s < 60 => format!("{s}s ago"),
        s if s < 3600 => format!("{}m ago", s / 60),
        s => format!("{}h ago", s / 3600),
    }
}

/// Tokens as people read them: 950, 12.3k, 4.1M.
pub fn tokens(n: u64) -> String {
    match n {
        n if n < 1000 => n.to_string(),
        n if n < 1_000_000 => format!("{:.1}k", n as f64 / 1000.0),
        n => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// A text table of the team for a terminal `width` columns wide, without colour (the
/// lead's pane and the lead's model read it): see [`render`].
pub fn render_for_width(status: &TeamStatus, now_ms: i64, width: usize) -> String {
    render(
        status,
        now_ms,
        Look {
            colour: false,
            width: Some(width),
        },
    )
}

/// A text table of the team, for `swarm status` and the lead's pane. Columns are as wide as
/// their content; on a terminal too narrow for all of them the less telling ones are left
/// out (model, engine, pane, cost, pid, tokens, then activity and task) and the detail is cut to
/// fit.
pub fn render(status: &TeamStatus, now_ms: i64, look: Look) -> String {
    let wide = look.width.is_none_or(|w| w >= 100);
    let mut out = if wide {
        format!(
            "team {}  ·  tasks: {} pending, {} in progress, {} completed{}\n",
            status.team,
            status.tasks.pending,
            status.tasks.in_progress,
            status.tasks.completed,
            if status.tmux_reachable {
                ""
            } else {
                "  ·  tmux: no server"
            }
        )
    } else {
        let line = format!(
            "team {} · tasks {}/{}/{} (pending/active/done){}",
            status.team,
            status.tasks.pending,
            status.tasks.in_progress,
            status.tasks.completed,
            if status.tmux_reachable {
                ""
            } else {
                " · no tmux"
            }
        );
        format!("{}\n", table::fit(&line, look.width.unwrap_or(usize::MAX)))
    };
    if let Some(b) = &status.budget {
        out.push_str(&format!("  {}\n", b.describe()));
    }
    for o in &status.leases {
        out.push_str(&format!("  overlapping lease: {}\n", o.describe()));
    }
    let dash = || "-".to_owned();
    let columns: &[(&str, Align)] = &[
        ("MEMBER", Align::Left),
        ("ENGINE", Align::Left),
        ("MODEL", Align::Left),
        ("STATE", Align::Left),
        ("PID", Align::Left),
        ("PANE", Align::Left),
        ("TASK", Align::Left),
        ("ACTIVE", Align::Left),
        ("TOKENS in/out", Align::Right),
        ("COST", Align::Right),
        ("DETAIL", Align::Left),
    ];
    // What a narrow terminal (the lead's pane) can do without goes first.
    let mut t = Table::new(columns)
        .free(10)
        .droppable(&[2, 1, 5, 9, 4, 8, 7, 6]);
    for m in &status.members {
        let name = Cell::painted(m.name.clone(), table::palette(m.color.as_deref()));
        let state = Cell::painted(state_cell(m), state_colour(m));
        let task = Cell::new(
            m.current_task
                .as_ref()
                .map(|t| format!("#{t}"))
                .unwrap_or_else(dash),
        );
        let active = Cell::new(
            m.last_activity_ms
                .map(|ms| ago(ms, now_ms))
                .unwrap_or_else(dash),
        );
        let detail = Cell::painted(detail_cell(m), Some(table::DIM));
        let tokens_used = if m.model_calls > 0 {
            format!(
                "{}/{}",
                tokens(
                    m.usage.input_tokens
                        + m.usage.cache_read_input_tokens
                        + m.usage.cache_creation_input_tokens
                ),
                tokens(m.usage.output_tokens)
            )
        } else {
            dash()
        };
        t.row(vec![
            name,
            Cell::new(m.engine.clone()),
            Cell::new(model_cell(m)),
            state,
            Cell::new(m.pid.map(|p| p.to_string()).unwrap_or_else(dash)),
            Cell::new(m.pane.clone().unwrap_or_else(dash)),
            task,
            active,
            Cell::new(tokens_used),
            Cell::new(if m.cost_usd > 0.0 {
                format!("${:.3}", m.cost_usd)
            } else {
                dash()
            }),
            detail,
        ]);
    }
    out.push_str(&t.render(look));
    out
}

/// `provider/model`, or what of it is known.
pub fn provider_model(provider: Option<&str>, model: Option<&str>) -> Option<String> {
    match (provider, model) {
        (Some(p), Some(model)) => Some(format!("{p}/{model}")),
        (p, model) => p.or(model).map(str::to_owned),
    }
}

fn model_cell(m: &MemberStatus) -> String {
    provider_model(m.provider.as_deref(), m.model.as_deref()).unwrap_or_else(|| "-".to_owned())
}

/// The lead's member is named like this everywhere.
pub fn is_lead(m: &MemberStatus) -> bool {
    m.name == LEAD
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_with_no_beat_in_the_snapshot_is_never_judged_by_a_pid_here() {
        let m = Member {
            name: "alice".into(),
            ..Member::default()
        };
        // A pid that is no process of this host.
        let mut s = AgentState::new(Activity::Working);
        s.pid = i32::MAX - 7;
        s.start_ticks = None;
        let beats = |kept: bool| Beats {
            by_token: HashMap::new(),
            timeout: std::time::Duration::from_secs(10),
            kept,
        };
        let alive = |s: &AgentState, beats: &Beats| {
            Facts {
                m: &m,
                state: Some(s),
                pane: None,
                tmux_known: false,
                beats,
            }
            .alive(Some(s.pid))
        };
        // Registered after the beats were read (a token, no beat yet): alive.
        s.token = Some(42);
        assert!(alive(&s, &beats(true)));
        // On another host, not registered yet: alive (starting), whatever its pid here.
        s.token = None;
        s.host = Some("another-host".into());
        assert!(alive(&s, &beats(true)));
        // A process of this host that never beat: its pid decides.
        s.host = None;
        assert!(!alive(&s, &beats(true)));
        // On files, the pid is the liveness.
        s.token = Some(42);
        assert!(!alive(&s, &beats(false)));
    }

    /// A teammate the lead placed on another host writes its first state (no token, no
    /// host yet) and its roster pid before it registers: neither pid is this host's.
    #[test]
    fn a_member_placed_on_a_host_is_never_judged_by_a_pid_here() {
        let mut m = Member {
            name: "alice".into(),
            pid: Some(i32::MAX - 7),
            ..Member::default()
        };
        m.extra
            .insert(crate::spawn::remote::HOST_FIELD.into(), "h1".into());
        let mut s = AgentState::new(Activity::Working);
        s.pid = i32::MAX - 7;
        s.start_ticks = None;
        let beats = Beats {
            by_token: HashMap::new(),
            timeout: std::time::Duration::from_secs(10),
            kept: true,
        };
        let alive = |state: Option<&AgentState>| {
            Facts {
                m: &m,
                state,
                pane: None,
                tmux_known: false,
                beats: &beats,
            }
            .alive(Some(i32::MAX - 7))
        };
        assert!(alive(Some(&s)), "its first state, before it registers");
        assert!(alive(None), "no state yet: starting");
        s.activity = Activity::Exited;
        assert!(!alive(Some(&s)), "it said it ended");
    }

    fn member(name: &str, state: &str, detail: Option<&str>) -> MemberStatus {
        MemberStatus {
            name: name.to_owned(),
            agent_id: format!("{name}@t"),
            color: Some("blue".to_owned()),
            agent_type: None,
            model: None,
            provider: None,
            engine: "swarm".to_owned(),
            pid: Some(4242),
            host: None,
            token: None,
            pane: Some("%3".to_owned()),
            alive: true,
            pane_alive: Some(true),
            state: state.to_owned(),
            detail: detail.map(str::to_owned),
            current_task: Some("12".to_owned()),
            last_activity_ms: Some(0),
            mode: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            model_calls: 0,
            exit_code: None,
            transcript: None,
            rate_limited_until: None,
            rate_limit_reason: None,
            last_error: None,
            pane_record: None,
            state_file: None,
        }
    }

    fn team() -> TeamStatus {
        TeamStatus {
            open_owners: Vec::new(),
            team: "t".to_owned(),
            description: None,
            tmux_reachable: true,
            members: vec![
                member(LEAD, "working", None),
                member(
                    "a-teammate-with-a-long-name",
                    "shutting-down",
                    Some("asked to shut down"),
                ),
                member(
                    "dave",
                    "dead",
                    Some("killed by signal 9 while it was writing a file"),
                ),
            ],
            tasks: TaskCounts::default(),
            leases: Vec::new(),
            budget: None,
        }
    }

    /// The lead's pane is about a third of a window: the table keeps the member, its
    /// state and the start of why, and never runs past the pane.
    #[test]
    fn a_narrow_pane_keeps_name_state_and_detail_within_its_width() {
        let out = render_for_width(&team(), 7_200_000, 60);
        assert!(out.lines().all(|l| l.chars().count() <= 60), "{out}");
        assert!(!out.contains('\x1b'), "{out:?}");
        assert_eq!(
            out,
            "team t · tasks 0/0/0 (pending/active/done)\n  \
             MEMBER                       STATE          DETAIL\n  \
             team-lead                    working\n  \
             a-teammate-with-a-long-name  shutting-down  asked to shut…\n  \
             dave                         dead           killed by sig…\n"
        );
    }

    #[test]
    fn colour_follows_the_look() {
        let coloured = render(
            &team(),
            0,
            Look {
                colour: true,
                width: None,
            },
        );
        assert!(coloured.contains("\x1b[34mdave\x1b[0m"), "{coloured:?}");
        assert!(coloured.contains("\x1b[1;31mdead\x1b[0m"), "{coloured:?}");
        assert!(!render(&team(), 0, Look::PLAIN).contains('\x1b'));
    }
}
