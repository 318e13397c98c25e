//! A team's shared state in PostgreSQL: [`PgStore`], a whole [`Backend`] of the store seam
//! ([`Roster`], [`Mailboxes`], [`TaskBoard`], [`Approvals`], [`Agents`], [`MergeQueue`],
//! [`Budget`], [`LaunchRecords`], [`Worktrees`], [`RateGate`] and `watch`) on a database
//! server, for a team that outgrows one machine (the design decisions, item 9). The file store stays the default
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
//! - wake-ups are pushed: every write notifies what it changed (`NOTIFY`, in its own
//!   transaction), and a listening connection per handle wakes the watches it concerns
//!   (the `watch` module);
//! - mail in the lead's name is sealed with the lead's key where the root signs as the lead,
//!   by the store's one rule (`mailbox::lead_key::seal`), in the one step that puts
//!   envelopes in inboxes (`mail::deliver_all`), as the file store's delivery does;
//! - every call may come from inside a tokio runtime (an agent's loop): the driver, which
//!   blocks on a runtime of its own, then runs on a thread of its own (`connect`);
//! - the decisions (who may claim, which name is taken, which edge closes a cycle, whether
//!   a request may still be decided) are the file store's own functions
//!   (`swarm_store::tasks::claim::refusal`, `graph`, `roster::add_to`,
//!   `approvals::decide`), so the two backends cannot decide differently;
//! - liveness is a heartbeat, not a pid: each agent process registers a row of
//!   `processes` with a fencing token and beats (the `agents` module); one declared dead is
//!   fenced, every transaction of its process checking its row first
//!   (`Database::fence`), so it cannot write over its successor.
//!
//! A team on PostgreSQL keeps only what is the host's own under its local [`Root`]
//! (`Backend::root`): each agent's logs, transcripts and plans, files on the host the
//! agent runs on. Everything shared is in the database.
//!
//! A team is made here by `swarm team create --store URL` (or `swarm run`/`swarm demo`
//! with `--store`, or `SWARM_STORE_URL`): the team's local pointer names the URL, and
//! `swarm_store::Teams::open` follows it through [`PgOpener`], given to `Teams` at the edge.
//!
//! Not yet here: the transcripts' index (local files).
//!
//! The driver is the `postgres` crate (tokio-postgres behind a blocking API with its own
//! small runtime): the seam is synchronous, and it is the most used, best kept client of
//! the Rust ecosystem, with `LISTEN/NOTIFY` for wake-ups. [`connect`] owns the
//! connections, [`libpq`] fills in what a URL leaves out as `psql` would (`PG*`
//! variables, `~/.pgpass`), [`tls`] encrypts and checks as `sslmode` asks (rustls),
//! [`migrate`] owns the schema.
//!
//! [`Backend`]: swarm_store::Backend
//! [`Root`]: swarm_store::Root
//! [`Roster`]: swarm_store::Roster
//! [`Mailboxes`]: swarm_store::Mailboxes
//! [`TaskBoard`]: swarm_store::TaskBoard
//! [`Approvals`]: swarm_store::Approvals
//! [`Agents`]: swarm_store::Agents
//! [`MergeQueue`]: swarm_store::MergeQueue
//! [`Budget`]: swarm_store::Budget
//! [`LaunchRecords`]: swarm_store::LaunchRecords
//! [`Worktrees`]: swarm_store::Worktrees
//! [`RateGate`]: swarm_util::meter::RateGate

mod agents;
mod approvals;
mod backend;
mod budget;
pub mod connect;
mod holds;
pub mod host_url;
pub mod libpq;
mod mail;
mod merge_queue;
pub mod migrate;
mod opener;
mod rate_gate;
mod records;
mod rights;
mod roster;
mod tasks;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
pub mod tls;
mod watch;

use std::sync::Arc;

use postgres::Row;
use postgres::types::Json;
use serde::de::DeserializeOwned;

use swarm_store::Root;
use swarm_store::error::{Error, Result};
use swarm_store::seam::NotForHosts;
use swarm_util::environment::Environment;
use swarm_util::error::Base as _;
use swarm_util::names::TeamName;

use crate::connect::Fail;
use crate::watch::Watchers;

pub use connect::{Database, check_url, redact};
pub use opener::PgOpener;

/// One team's state in one database, and the local root of the process that opened it.
///
/// The root (`Backend::root`) holds what stays on the agent's own host: its logs, its
/// transcripts and plans, under the same layout as a file team's. Nothing under it is
/// shared state: a teammate on another host has a root of its own.
#[derive(Debug, Clone)]
pub struct PgStore {
    db: Arc<Database>,
    team: TeamName,
    root: Root,
    watchers: Arc<Watchers>,
    /// What another host is given for this database (see `Backend::url_for_hosts`).
    for_hosts: std::result::Result<String, NotForHosts>,
    /// The tasks this handle last read, by id: the row's version (`xmin`, the transaction
    /// that wrote it) and its document (see `tasks`).
    seen_tasks:
        Arc<std::sync::Mutex<std::collections::HashMap<i64, (i64, swarm_store::tasks::Task)>>>,
}

impl PgStore {
    /// Connects to the database at `url`, migrates it to the newest schema if needed (the
    /// first use of a database), and opens `team` there (which may not exist yet: see
    /// [`PgStore::create_team`]), with `root` for this host's own files; what the URL
    /// leaves out comes from `env` as `psql` would take it ([`libpq`]).
    pub fn connect(url: &str, env: &Environment, root: &Root, team: &TeamName) -> Result<PgStore> {
        let db = Arc::new(Database::open(url, env)?);
        migrate::migrate(&db)?;
        Ok(PgStore::on(db, root, team))
    }

    /// `team` in a database already opened and migrated.
    pub fn on(db: Arc<Database>, root: &Root, team: &TeamName) -> PgStore {
        PgStore {
            watchers: Watchers::new(db.clone(), team),
            db,
            team: team.clone(),
            root: root.clone(),
            for_hosts: Err(NotForHosts::Files),
            seen_tasks: Arc::default(),
        }
    }

    /// This store, telling hosts to reach its database at `url` (see
    /// [`host_url::for_hosts`]).
    pub fn reached_by_hosts_at(self, url: std::result::Result<String, NotForHosts>) -> PgStore {
        PgStore {
            for_hosts: url,
            ..self
        }
    }

    pub fn team(&self) -> &TeamName {
        &self.team
    }

    /// The error for a team that is not in the database.
    pub(crate) fn no_team(&self) -> Error {
        let team = &self.team;
        Error::not_found(format!(
            "no team named '{team}' in the database at {}; create it with `swarm team create {team} --store …`",
            self.db.at()
        ))
    }
}

/// Column 0 of `row`, a JSON document of `what` ("a merge queue"); one that does not parse
/// (written by a newer swarm, or by hand) is an error saying so, never a panic.
pub(crate) fn doc<T: DeserializeOwned>(row: &Row, what: &str) -> std::result::Result<T, Fail> {
    row.try_get::<_, Json<T>>(0).map(|j| j.0).map_err(|e| {
        Fail::Swarm(Error::Database(format!(
            "failed to read {what} from the team's database: {e}; was it written by a newer swarm?"
        )))
    })
}
