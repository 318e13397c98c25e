//! The task list's data: a [`Task`] as stored in `tasks/<team>/<id>.json` (Claude Code's
//! schema), its [`Status`], the inputs [`NewTask`] and [`TaskPatch`], and [`ClaimRefusal`],
//! why a claim was refused. No I/O here.
//!
//! Invariants:
//! - a task serializes in Claude Code's schema and key order (`id, subject, description,
//!   [activeForm], owner, status, blocks, blockedBy`, then the rest): camelCase fields, statuses
//!   `pending`, `in_progress` and `completed`; fields swarm does not know are kept in `extra`, so a
//!   rewrite loses nothing Claude Code wrote;
//! - a task with a truthy `metadata._internal` is hidden, as Claude Code hides it;
//! - an id that is not a number sorts after every numeric one (`numeric_id`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use swarm_util::error::Base as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
        }
    }

    pub fn parse(s: &str) -> Result<Status> {
        match s {
            "pending" => Ok(Status::Pending),
            "in_progress" | "in-progress" => Ok(Status::InProgress),
            "completed" | "done" => Ok(Status::Completed),
            other => Err(Error::usage(format!(
                "unknown task status '{other}'; use pending, in_progress or completed"
            ))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    pub subject: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    pub status: Status,
    #[serde(default)]
    pub blocks: Vec<String>,
    #[serde(default)]
    pub blocked_by: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Task {
    /// Hidden from listings, as Claude Code hides `metadata._internal` tasks.
    pub fn is_internal(&self) -> bool {
        self.metadata
            .as_ref()
            .and_then(|m| m.get("_internal"))
            .is_some_and(|v| !matches!(v, Value::Null | Value::Bool(false)))
    }

    pub fn is_open(&self) -> bool {
        self.status != Status::Completed
    }

    /// Owned by `agent`, given as a name or as `<name>@<team>`.
    pub fn owned_by(&self, agent: &str) -> bool {
        self.owner
            .as_deref()
            .is_some_and(|o| o == agent || o.split('@').next() == Some(agent))
    }

    pub(super) fn numeric_id(&self) -> u64 {
        self.id.parse().unwrap_or(u64::MAX)
    }
}

#[derive(Debug, Default, Clone)]
pub struct NewTask {
    pub subject: String,
    pub description: String,
    pub active_form: Option<String>,
    pub blocked_by: Vec<String>,
    pub metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Default, Clone)]
pub struct TaskPatch {
    pub subject: Option<String>,
    pub description: Option<String>,
    pub active_form: Option<String>,
    pub status: Option<Status>,
    /// `Some(None)` clears the owner.
    pub owner: Option<Option<String>>,
    pub add_blocked_by: Vec<String>,
    pub add_blocks: Vec<String>,
    /// Merged into `metadata`; a `null` value removes the key.
    pub metadata: Option<Map<String, Value>>,
}

/// Why a claim was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimRefusal {
    NotFound,
    AlreadyClaimed { owner: String },
    AlreadyCompleted,
    Blocked { blockers: Vec<String> },
    Busy { tasks: Vec<String> },
}

impl ClaimRefusal {
    pub fn into_error(self, id: &str, agent: &str) -> Error {
        let another = format!("pick another with `swarm task next --as {agent}`");
        match self {
            ClaimRefusal::NotFound => {
                Error::not_found(format!("task #{id} does not exist; see `swarm task list`"))
            }
            ClaimRefusal::AlreadyClaimed { owner } => Error::conflict(format!(
                "task #{id} is already claimed by {owner}; {another}"
            )),
            ClaimRefusal::AlreadyCompleted => {
                Error::conflict(format!("task #{id} is already completed; {another}"))
            }
            ClaimRefusal::Blocked { blockers } => Error::conflict(format!(
                "task #{id} is blocked by open task(s) {}; wait for them or {another}",
                blockers
                    .iter()
                    .map(|b| format!("#{b}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            ClaimRefusal::Busy { tasks } => Error::conflict(format!(
                "{agent} is busy with open task(s) {}; finish or release them first",
                tasks
                    .iter()
                    .map(|b| format!("#{b}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}
