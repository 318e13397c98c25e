//! Where a swarm's files live, and the path of every file in the layout.
//!
//! The root is `--root`, else `$SWARM_ROOT`, else `$CLAUDE_CONFIG_DIR`, else `~/.claude`,
//! which is Claude Code's own layout (`docs/design/formats.md` §2). Every path is built here
//! from validated names, so no caller can reach outside the root. One team name serves the
//! roster, the inboxes and the task list alike.
//!
//! A root also carries how its shared files are written: how long a lock is waited for,
//! and whether writes are fsynced. Every store operation takes the root, so these settings,
//! resolved once at the edge, reach every write without being read anywhere else. Which
//! backend holds a team, and opening it, are [`crate::teams::Teams`]'.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};
use swarm_util::environment::Environment;
use swarm_util::error::Base as _;
use swarm_util::lock;
use swarm_util::names::{AgentName, TeamName};
use swarm_util::vars;

/// How long a call on a team's database waits for its server by default: long enough for a
/// restart, short enough that a person is told soon.
pub const DEFAULT_OUTAGE_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct Root {
    path: PathBuf,
    lock_timeout: Duration,
    durable: bool,
    /// How long a registered process may go without a heartbeat (see `store::liveness`).
    heartbeat_timeout: Duration,
    /// How long a call on a team's database waits for a server that is away (a restart).
    outage_wait: Duration,
    /// Set when this process signs as the team's lead (see `store::lead_key`).
    signs_as_lead: bool,
}

impl Root {
    /// The root at `path`, with durable writes and the default lock timeout.
    pub fn new(path: impl Into<PathBuf>) -> Root {
        Root {
            path: path.into(),
            lock_timeout: lock::DEFAULT_TIMEOUT,
            durable: true,
            heartbeat_timeout: crate::liveness::DEFAULT_TIMEOUT,
            outage_wait: DEFAULT_OUTAGE_WAIT,
            signs_as_lead: false,
        }
    }

    /// The root from an explicit flag, else the environment.
    pub fn resolve(flag: Option<&Path>, env: &Environment) -> Result<Root> {
        if let Some(p) = flag {
            return Ok(Root::new(absolute(p)?));
        }
        for var in [vars::SWARM_ROOT, vars::CLAUDE_CONFIG_DIR] {
            if let Some(v) = env.get(var) {
                return Ok(Root::new(absolute(Path::new(v))?));
            }
        }
        let home = env
            .get(vars::HOME)
            .ok_or_else(|| Error::usage("HOME is not set: pass --root DIR or set SWARM_ROOT"))?;
        Ok(Root::new(PathBuf::from(home).join(".claude")))
    }

    /// This root with how its shared files are written: the lock timeout, and whether
    /// writes are fsynced (atomicity never depends on it).
    pub fn with_store_settings(mut self, lock_timeout: Duration, durable: bool) -> Root {
        self.lock_timeout = lock_timeout;
        self.durable = durable;
        self
    }

    /// This root signing what it delivers in the lead's name with the team's lead key (see
    /// `store::lead_key`): for the lead's own process and a person's CLI, never a teammate's.
    pub fn signing_as_lead(mut self) -> Root {
        self.signs_as_lead = true;
        self
    }

    pub fn signs_as_lead(&self) -> bool {
        self.signs_as_lead
    }

    /// This root judging registered processes with `timeout` (see `store::liveness`; at
    /// least its `MIN_TIMEOUT`).
    pub fn with_heartbeat_timeout(mut self, timeout: Duration) -> Root {
        self.heartbeat_timeout = timeout.max(crate::liveness::MIN_TIMEOUT);
        self
    }

    /// This root's calls on a team's database waiting up to `wait` for a server that is
    /// away (`SWARM_OUTAGE_WAIT_MS`).
    pub fn with_outage_wait(mut self, wait: Duration) -> Root {
        self.outage_wait = wait;
        self
    }

    pub fn outage_wait(&self) -> Duration {
        self.outage_wait
    }

    pub fn heartbeat_timeout(&self) -> Duration {
        self.heartbeat_timeout
    }

    pub fn lock_timeout(&self) -> Duration {
        self.lock_timeout
    }

    pub fn durable(&self) -> bool {
        self.durable
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn teams_dir(&self) -> PathBuf {
        self.path.join("teams")
    }

    pub fn team_dir(&self, team: &TeamName) -> PathBuf {
        self.teams_dir().join(team.as_str())
    }

    /// The pointer of a team stored on a database server: its URL, without a password (see
    /// `store::backends`). A file team has none.
    pub fn store_pointer_path(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("store.json")
    }

    /// The team's rate-limit gate, shared by its agents (see `llm::rate_gate`).
    pub fn rate_limit_path(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("rate-limit.json")
    }

    pub fn roster_path(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("config.json")
    }

    pub fn inbox_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("inboxes")
    }

    pub fn inbox_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.inbox_dir(team).join(format!("{agent}.json"))
    }

    /// swarm's own record of messages already put in front of their reader.
    pub fn delivered_log_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.inbox_dir(team)
            .join(format!("{agent}.delivered.jsonl"))
    }

    /// What `agent` believed from its lead, kept across its restarts (see
    /// `store::mailbox::lead_seen`): this host's own.
    pub fn lead_seen_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.team_dir(team)
            .join("lead_seen")
            .join(format!("{agent}.json"))
    }

    /// swarm's own queue of messages on their way into `agent`'s inbox (see `mailbox`).
    pub fn spool_dir(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.team_dir(team).join("spool").join(agent.as_str())
    }

    /// swarm's own doorbell of `agent`'s inbox, touched after every commit into it (see
    /// `store::mailbox::bell`).
    pub fn bell_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.team_dir(team).join("bells").join(agent.as_str())
    }

    /// swarm's own per-agent live state (pid, activity, usage), written by that agent.
    pub fn state_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("state")
    }

    pub fn state_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.state_dir(team).join(format!("{agent}.json"))
    }

    /// Made once when the end of one process of `agent` was reported (see `store::state`).
    pub fn exit_report_marker(
        &self,
        team: &TeamName,
        agent: &AgentName,
        instance: &str,
    ) -> PathBuf {
        self.state_dir(team)
            .join(format!("{agent}.{instance}.reported"))
    }

    pub fn approvals_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("approvals")
    }

    /// One request's record. `id` is a request id, checked by the caller.
    pub fn approval_path(&self, team: &TeamName, id: &str) -> PathBuf {
        self.approvals_dir(team).join(format!("{id}.json"))
    }

    /// The team's lead lock (see `store::lead`).
    pub fn lead_lock_path(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("lead.flock")
    }

    /// The team's lead key, mode 0600 (see `store::lead_key`).
    pub fn lead_key_path(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("lead.key")
    }

    /// The team's merge queue (see `store::merge_queue`).
    pub fn merge_queue_path(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("merge-queue.json")
    }

    /// The records of teammates' git worktrees (see `store::worktrees`).
    pub fn worktrees_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("worktrees")
    }

    /// `agent`'s worktree record. `agent` is a roster name, checked when it was added.
    pub fn worktree_record_path(&self, team: &TeamName, agent: &str) -> PathBuf {
        self.worktrees_dir(team).join(format!("{agent}.json"))
    }

    /// How each agent's pane was started, so `swarm resume` can start it again (see
    /// `store::launch_record`).
    pub fn launch_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("launch")
    }

    /// `agent`'s launch record. `agent` is a roster name, checked when it was added.
    pub fn launch_record_path(&self, team: &TeamName, agent: &str) -> PathBuf {
        self.launch_dir(team).join(format!("{agent}.json"))
    }

    /// The team window's lock (see `team::window`): its flock is on `tmux.flock`.
    pub fn window_lock_anchor(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("tmux")
    }

    /// The team's budget, written by the run that made it (see `store::budget`).
    pub fn budget_path(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("budget.json")
    }

    /// Each agent's spend, `spend/<agent>.json`, written by that agent (see `store::budget`).
    pub fn spend_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("spend")
    }

    pub fn spend_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.spend_dir(team).join(format!("{agent}.json"))
    }

    /// The goal a run gave the team (see `store::documents`).
    pub fn goal_path(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("goal.md")
    }

    /// The final report of a run.
    pub fn report_path(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("report.md")
    }

    /// Copies of the plans teammates submitted for approval.
    pub fn plans_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("plans")
    }

    /// The copy of a plan `agent` submitted at `ms`.
    pub fn plan_path(&self, team: &TeamName, agent: &AgentName, ms: i64) -> PathBuf {
        self.plans_dir(team).join(format!("{agent}-{ms}.md"))
    }

    pub fn logs_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("logs")
    }

    /// Where `swarm watch` logs while its screen is up.
    pub fn watch_log_path(&self, team: &TeamName) -> PathBuf {
        self.logs_dir(team).join("watch.log")
    }

    /// Where a lead or teammate process logs (its pane is for people).
    pub fn log_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.logs_dir(team).join(format!("{agent}.log"))
    }

    pub fn transcripts_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("transcripts")
    }

    /// Where a swarm-engine agent records its conversation (see `agent::transcript`).
    pub fn transcript_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.transcripts_dir(team).join(format!("{agent}.jsonl"))
    }

    pub fn tasks_dir(&self, team: &TeamName) -> PathBuf {
        self.path.join("tasks").join(team.as_str())
    }

    /// One task, `<id>.json`. `id` is a task id, checked by the caller.
    pub fn task_path(&self, team: &TeamName, id: &str) -> PathBuf {
        self.tasks_dir(team).join(format!("{id}.json"))
    }

    /// The highest task id ever used, so ids are never reused.
    pub fn high_water_mark_path(&self, team: &TeamName) -> PathBuf {
        self.tasks_dir(team).join(".highwatermark")
    }

    /// The task list's lock anchor, as Claude Code names it.
    pub fn task_list_lock_anchor(&self, team: &TeamName) -> PathBuf {
        self.tasks_dir(team).join(".lock")
    }

    /// swarm's cache of which tasks may be ready (see `store::tasks::index`).
    pub fn task_index_path(&self, team: &TeamName) -> PathBuf {
        self.tasks_dir(team).join(".swarm-index")
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::io("resolve", p, e))
}
