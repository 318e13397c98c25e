//! Where a swarm's files live, and the path of every file in the layout.
//!
//! The root is `--root`, else `$SWARM_ROOT`, else `$CLAUDE_CONFIG_DIR`, else `~/.claude`,
//! which is Claude Code's own layout (`claude-code-format.md` §2). Every path is built here
//! from validated names, so no caller can reach outside the root. One team name serves the
//! roster, the inboxes and the task list alike.

use std::path::{Path, PathBuf};

use crate::store::names::{AgentName, TeamName};
use crate::util::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct Root {
    path: PathBuf,
}

impl Root {
    pub fn new(path: impl Into<PathBuf>) -> Root {
        Root { path: path.into() }
    }

    /// Resolves the root from an explicit flag and the environment.
    pub fn resolve(flag: Option<&Path>) -> Result<Root> {
        if let Some(p) = flag {
            return Ok(Root::new(absolute(p)?));
        }
        for var in ["SWARM_ROOT", "CLAUDE_CONFIG_DIR"] {
            if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
                return Ok(Root::new(absolute(Path::new(&v))?));
            }
        }
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .ok_or_else(|| Error::usage("HOME is not set: pass --root DIR or set SWARM_ROOT"))?;
        Ok(Root::new(PathBuf::from(home).join(".claude")))
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

    /// swarm's own queue of messages on their way into `agent`'s inbox (see `mailbox`).
    pub fn spool_dir(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.team_dir(team).join("spool").join(agent.as_str())
    }

    /// swarm's own per-agent live state (pid, activity, usage), written by that agent.
    pub fn state_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("state")
    }

    pub fn state_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.state_dir(team).join(format!("{agent}.json"))
    }

    pub fn approvals_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("approvals")
    }

    /// The team's lead lock (see `store::lead`).
    pub fn lead_lock_path(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("lead.flock")
    }

    pub fn logs_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("logs")
    }

    pub fn tasks_dir(&self, team: &TeamName) -> PathBuf {
        self.path.join("tasks").join(team.as_str())
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::io("resolve", p, e))
}
