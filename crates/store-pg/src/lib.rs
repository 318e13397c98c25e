//! A team's shared state in PostgreSQL: every part of the store seam ([`Roster`],
//! [`Mailboxes`], [`TaskBoard`], [`Approvals`], [`Agents`], [`MergeQueue`], [`Budget`],
//! [`LaunchRecords`], [`Worktrees`], [`RateGate`]) on a database server, for a team that
//! outgrows one machine (the design decisions, item 9). The file store stays the default
//! and the one Claude Code reads; this one keeps the same guarantees in a database's own
//! way:
//!
//! - every mutation is one transaction, committed before it returns `Ok`;
//! - a message is unique per recipient by the sender's message id, so a send retried after
//!   a dropped connection makes no second copy; it stays in the inbox until acknowledged
//!   by its key, which moves it to the delivered log in the same statement;
//! - a claim is a compare-and-set under the task list's row lock; both sides of a
//!   dependency edge are written in one transaction, so they never disagree;
//! - an approval is decided under its row's lock, and its answer delivered in the same
//!   transaction: resolved exactly once, answered exactly once;
//! - what is held until dropped (the lead's place, the merge queue's run, a worktree
//!   record's lock) is a session advisory lock on a connection of its own (the `holds`
//!   module), freed by the server when its process dies; an exit report is claimed by
//!   inserting its row, so exactly once;
//! - the merge queue and a rate gate are read-modify-writes under their row's lock, the
//!   gate merged by the seam's one rule (`RateLimit::merged`);
//! - the decisions (who may claim, which name is taken, which edge closes a cycle, whether
//!   a request may still be decided) are the file store's own functions
//!   (`swarm_store::tasks::claim::refusal`, `graph`, `roster::add_to`,
//!   `approvals::decide`), so the two backends cannot decide differently.
//!
//! Not yet here: liveness by heartbeats (an agent's state still names its pid), fencing a
//! hold lost with its connection, and `watch`; so [`PgStore`] is not yet a
//! [`swarm_store::Backend`] and no command uses it.
//!
//! The driver is the `postgres` crate (tokio-postgres behind a blocking API with its own
//! small runtime): the seam is synchronous, and it is the most used, best kept client of
//! the Rust ecosystem, with `LISTEN/NOTIFY` for wake-ups. Connections are plain (TLS through
//! rustls is for later); [`connect`] owns them, [`migrate`] the schema.
//!
//! [`Roster`]: swarm_store::Roster
//! [`Mailboxes`]: swarm_store::Mailboxes
//! [`TaskBoard`]: swarm_store::TaskBoard
//! [`Approvals`]: swarm_store::Approvals
//! [`Agents`]: swarm_store::Agents
//! [`MergeQueue`]: swarm_store::MergeQueue
//! [`Budget`]: swarm_store::Budget
//! [`LaunchRecords`]: swarm_store::LaunchRecords
//! [`Worktrees`]: swarm_store::Worktrees
//! [`RateGate`]: swarm_store::seam::RateGate

mod agents;
mod approvals;
mod budget;
pub mod connect;
mod holds;
mod mail;
mod merge_queue;
pub mod migrate;
mod rate_gate;
mod records;
mod roster;
mod tasks;

use std::path::Path;
use std::sync::Arc;

use postgres::Row;
use postgres::types::Json;
use serde::de::DeserializeOwned;

use swarm_store::names::TeamName;
use swarm_store::roster::TeamConfig;
use swarm_util::error::{Error, Result};

use crate::connect::Fail;

pub use connect::{Database, redact};

/// One team's state in one database.
#[derive(Debug, Clone)]
pub struct PgStore {
    db: Arc<Database>,
    team: TeamName,
}

impl PgStore {
    /// Connects to the database at `url`, migrates it to the newest schema if needed (the
    /// first use of a database), and opens `team` there (which may not exist yet: see
    /// [`PgStore::create_team`]).
    pub fn connect(url: &str, team: &TeamName) -> Result<PgStore> {
        let db = Arc::new(Database::open(url)?);
        migrate::migrate(&db)?;
        Ok(PgStore::on(db, team))
    }

    /// `team` in a database already opened and migrated.
    pub fn on(db: Arc<Database>, team: &TeamName) -> PgStore {
        PgStore {
            db,
            team: team.clone(),
        }
    }

    pub fn team(&self) -> &TeamName {
        &self.team
    }

    /// Creates the team: its roster with the lead alone, an empty task list. Refuses a team
    /// that exists.
    pub fn create_team(&self, description: Option<String>, cwd: &Path) -> Result<TeamConfig> {
        roster::create(self, description, cwd)
    }

    /// Deletes the team and everything it holds. A team that does not exist is not an error.
    pub fn delete_team(&self) -> Result<()> {
        roster::delete(self)
    }
}

/// Column 0 of `row`, a JSON document of `what` ("a merge queue"); one that does not parse
/// (written by a newer swarm, or by hand) is an error saying so, never a panic.
pub(crate) fn doc<T: DeserializeOwned>(row: &Row, what: &str) -> std::result::Result<T, Fail> {
    row.try_get::<_, Json<T>>(0).map(|j| j.0).map_err(|e| {
        Fail::Swarm(Error::Other(format!(
            "failed to read {what} from the team's database: {e}; was it written by a newer swarm?"
        )))
    })
}
