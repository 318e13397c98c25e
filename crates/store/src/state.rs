//! Each agent's live state, `teams/<team>/state/<agent>.json`: pid, what it is doing, its
//! current task, when it last did something, and its token usage and cost.
//!
//! swarm's own file (Claude Code has no such thing), written only by the agent it
//! describes, so it needs no lock: every write replaces it atomically, and readers (`swarm
//! status`, the lead's supervisor, the dashboard) see a whole file. It is not fsynced: it
//! describes the present, and after a power loss the present is gone anyway.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::files;

use crate::error::{Error, Result};
use crate::layout::Root;
use crate::liveness::Heartbeat;
use swarm_util::error::{Base as _, IoContext};
use swarm_util::meter::Usage;
use swarm_util::names::{AgentName, TeamName};
use swarm_util::{clock, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Activity {
    Starting,
    Idle,
    Working,
    AwaitingApproval,
    ShuttingDown,
    Exited,
}

impl Activity {
    pub fn as_str(self) -> &'static str {
        match self {
            Activity::Starting => "starting",
            Activity::Idle => "idle",
            Activity::Working => "working",
            Activity::AwaitingApproval => "awaiting-approval",
            Activity::ShuttingDown => "shutting-down",
            Activity::Exited => "exited",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentState {
    pub pid: i32,
    /// With the pid, identifies the process even after the pid is reused.
    #[serde(default)]
    pub start_ticks: Option<u64>,
    pub activity: Activity,
    #[serde(default)]
    pub current_task: Option<String>,
    /// Epoch milliseconds of the last thing the agent did.
    pub last_activity_ms: i64,
    #[serde(default)]
    pub detail: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// The provider its model runs on (`anthropic`, `openai`, `scripted`), as the agent
    /// resolved it: in a mixed team each member's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub usage: Usage,
    #[serde(default)]
    pub cost_usd: f64,
    #[serde(default)]
    pub model_calls: u64,
    #[serde(default)]
    pub exit: Option<ExitInfo>,
    /// Epoch milliseconds until which the agent waits for its provider's rate limit; a
    /// moment in the past means it no longer does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limited_until_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_reason: Option<String>,
    /// Its fencing token, on a backend where processes register and beat (see
    /// [`crate::liveness`]): its heartbeat is found by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<i64>,
    /// The host it runs on, where that is not simply this one (with `token`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitInfo {
    pub code: i32,
    pub reason: String,
    #[serde(default)]
    pub released_tasks: Vec<String>,
    /// The agent stopped itself in an orderly way (approved shutdown, a signal it
    /// handled); false when someone else recorded its death.
    #[serde(default)]
    pub clean: bool,
}

impl AgentState {
    pub fn new(activity: Activity) -> AgentState {
        let pid = std::process::id() as i32;
        AgentState {
            pid,
            start_ticks: swarm_util::process::start_ticks(pid),
            activity,
            current_task: None,
            last_activity_ms: clock::now_ms(),
            detail: None,
            model: None,
            provider: None,
            mode: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            model_calls: 0,
            exit: None,
            rate_limited_until_ms: None,
            rate_limit_reason: None,
            token: None,
            host: None,
        }
    }

    /// Records a wait for the rate limit (`Some`), or its end (`None`).
    pub fn set_rate_limited(&mut self, wait: Option<(i64, &str)>) {
        self.rate_limited_until_ms = wait.map(|(until, _)| until);
        self.rate_limit_reason = wait.map(|(_, reason)| reason.to_owned());
    }

    /// The moment the agent waits for, while it still lies ahead of `now_ms`.
    pub fn rate_limited_until(&self, now_ms: i64) -> Option<i64> {
        self.rate_limited_until_ms.filter(|u| *u > now_ms)
    }

    /// True if the process this state describes is still running.
    pub fn process_alive(&self) -> bool {
        swarm_util::process::is_alive_since(self.pid, self.start_ticks)
    }

    /// Whether the agent this state describes lives: by its heartbeat when it registered
    /// one (`beat`, found by [`AgentState::token`]), else by its process on this host.
    pub fn alive(&self, beat: Option<&Heartbeat>, timeout: Duration) -> bool {
        match beat {
            Some(b) => b.alive(timeout),
            None => self.process_alive(),
        }
    }
}

pub(crate) fn write(
    root: &Root,
    team: &TeamName,
    agent: &AgentName,
    state: &AgentState,
) -> Result<()> {
    let dir = root.state_dir(team);
    if !dir.is_dir() {
        std::fs::create_dir_all(&dir).ctx("create directory", &dir)?;
    }
    // Never fsynced: it describes the present, which a power loss ends anyway.
    Ok(files::write_unsynced(
        root,
        &root.state_path(team, agent),
        &json::to_pretty(state),
    )?)
}

/// Claims the right to report that one process of `agent` (`instance`: its pid, or its
/// pane before it had one) ended: true for exactly one caller, whichever process asks
/// first, however many observers noticed (an exclusive create of
/// `state/<agent>.<instance>.reported`), so a death is reported once, and a restarted
/// lead never reports it again.
pub(crate) fn claim_exit_report(
    root: &Root,
    team: &TeamName,
    agent: &AgentName,
    instance: &str,
) -> Result<bool> {
    let dir = root.state_dir(team);
    std::fs::create_dir_all(&dir).ctx("create directory", &dir)?;
    let marker = root.exit_report_marker(team, agent, instance);
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&marker)
    {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io("create", &marker, e)),
    }
}

/// Forgets `agent`'s state, so a restarted process is not judged by the one before it.
pub(crate) fn remove(root: &Root, team: &TeamName, agent: &AgentName) -> Result<()> {
    let path = root.state_path(team, agent);
    files::check(root, &path)?;
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", &path, e)),
        _ => Ok(()),
    }
}

pub(crate) fn read(root: &Root, team: &TeamName, agent: &AgentName) -> Option<AgentState> {
    json::parse(&files::read(root, &root.state_path(team, agent)).ok()??).ok()
}

/// Every agent that has a state file, by name (teammates that left the roster included).
pub(crate) fn all(root: &Root, team: &TeamName) -> Vec<(String, AgentState)> {
    let Ok(entries) = std::fs::read_dir(root.state_dir(team)) else {
        return Vec::new();
    };
    let mut out: Vec<(String, AgentState)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e
                .file_name()
                .to_string_lossy()
                .strip_suffix(".json")?
                .to_owned();
            let agent = AgentName::parse_any(&name).ok()?;
            Some((name, read(root, team, &agent)?))
        })
        .collect();
    // The lead first, then by name.
    out.sort_by(|a, b| {
        (a.0 != swarm_util::names::LEAD, &a.0).cmp(&(b.0 != swarm_util::names::LEAD, &b.0))
    });
    out
}
