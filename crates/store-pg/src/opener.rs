//! [`PgOpener`]: how a root opens its teams on PostgreSQL (the store's
//! `swarm_store::backends::Opener`), given to the process's root at the edge
//! (`swarm_store::Root::with_servers`).
//!
//! Invariants:
//! - one [`Database`] (its settings and its pool of connections) per URL per process,
//!   migrated once, shared by every handle the process opens: a command or a loop that
//!   opens its team again and again connects once;
//! - a URL holding a password is refused before anything is made, with a line saying
//!   where passwords go (`~/.pgpass`, `PGPASSWORD`): the URL is recorded in the team's
//!   pointer, and a password must never be in a file of swarm's or on a command line;
//! - a server that cannot be reached is not remembered: the next open tries again;
//! - a URL from a team's pointer ([`UrlSource::Pointer`]) names a server the team was made
//!   on: its [`Database`] is [`Database::expected`], so a server found away there (a
//!   restart) is waited for, by a fresh command as by a process that reached it before; a
//!   URL a person gave ([`UrlSource::Given`]) is not, and one that cannot be reached is
//!   said at once.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use swarm_store::Root;
use swarm_store::backends::{Opener, UrlSource};
use swarm_store::error::{Error, Result};
use swarm_store::roster::TeamConfig;
use swarm_store::seam::Store;
use swarm_util::environment::Environment;
use swarm_util::names::TeamName;

use crate::connect::Database;
use crate::{PgStore, migrate};

/// Opens teams on PostgreSQL servers, keeping one pool of connections per URL.
pub struct PgOpener {
    databases: Mutex<HashMap<String, Arc<Database>>>,
    /// The process's environment, for what a URL leaves out (`PG*`, `~/.pgpass`, TLS).
    env: Environment,
}

impl PgOpener {
    pub fn new(env: Environment) -> PgOpener {
        PgOpener {
            databases: Mutex::default(),
            env,
        }
    }

    /// The database at `url` (from `from`), reached and migrated (once per process); with
    /// `now`, a server found away is waited for if `from` says one runs there; without, one
    /// that cannot be reached yet is a database that will connect at its first use.
    fn database(
        &self,
        url: &str,
        from: UrlSource,
        root: &Root,
        now: bool,
    ) -> Result<Arc<Database>> {
        let mut databases = self.databases.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(db) = databases.get(url) {
            return Ok(db.clone());
        }
        let unreached = || -> Result<Database> {
            let db = Database::lazy(url, &self.env, root.lock_timeout())?
                .waiting_out(root.outage_wait());
            Ok(match from {
                UrlSource::Pointer => db.expected(),
                UrlSource::Given => db,
            })
        };
        let reached = unreached()?.reach(now).and_then(|db| {
            migrate::migrate(&db)?;
            Ok(Arc::new(db))
        });
        match reached {
            Ok(db) => {
                databases.insert(url.to_owned(), db.clone());
                Ok(db)
            }
            Err(Error::Unavailable(why)) if !now => {
                tracing::warn!("{why}; carrying on until it can be reached");
                Ok(Arc::new(unreached()?))
            }
            Err(e) => Err(e),
        }
    }
}

impl Opener for PgOpener {
    fn open(
        &self,
        url: &str,
        from: UrlSource,
        root: &Root,
        team: &TeamName,
        now: bool,
    ) -> Result<Store> {
        let db = self.database(url, from, root, now)?;
        let for_hosts = crate::host_url::for_hosts(url, &self.env)?;
        Ok(Store::new(
            PgStore::on(db, root, team).reached_by_hosts_at(for_hosts),
        ))
    }

    fn create(
        &self,
        url: &str,
        root: &Root,
        team: &TeamName,
        description: Option<String>,
        cwd: &Path,
    ) -> Result<TeamConfig> {
        let db = self.database(url, UrlSource::Given, root, true)?;
        PgStore::on(db, root, team).create_team(description, cwd)
    }
}
