//! A team's shared state in PostgreSQL: the store seam's [`Roster`], [`Mailboxes`],
//! [`TaskBoard`], [`Approvals`] and [`Agents`] on a database server, for a team that
//! outgrows one machine (the design decisions, item 9). The file store stays the default and the
//! one Claude Code reads; this one keeps the same guarantees in a database's own way:
//!
//! - every mutation is one transaction, committed before it returns `Ok`;
//! - a message is unique per recipient by the sender's message id, so a send retried after
//!   a dropped connection makes no second copy; it stays in the inbox until acknowledged
//!   by its key, which moves it to the delivered log in the same statement;
//! - a claim is a compare-and-set under the task list's row lock; both sides of a
//!   dependency edge are written in one transaction, so they never disagree;
//! - an approval is decided under its row's lock, and its answer delivered in the same
//!   transaction: resolved exactly once, answered exactly once;
//! - the lead's place is a session advisory lock on a connection of its own
//!   (the `holds` module), freed by the server when its process dies; an exit report
//!   is claimed by inserting its row, so exactly once;
//! - the decisions (who may claim, which name is taken, which edge closes a cycle, whether
//!   a request may still be decided) are the file store's own functions
//!   (`swarm_store::tasks::claim::refusal`, `graph`, `roster::add_to`,
//!   `approvals::decide`), so the two backends cannot decide differently.
//!
//! Not yet here: liveness by heartbeats (an agent's state still names its pid), the merge
//! queue, budgets, launch and worktree records, the rate gate and `watch`; so [`PgStore`] is not yet a
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

mod agents;
mod approvals;
pub mod connect;
mod holds;
mod mail;
pub mod migrate;
mod roster;
mod tasks;

use std::path::Path;
use std::sync::Arc;

use swarm_store::names::TeamName;
use swarm_store::roster::TeamConfig;
use swarm_util::error::Result;

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
