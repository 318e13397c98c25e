//! Things held until dropped (the lead's place, the merge queue's run, a worktree record's
//! lock) as PostgreSQL session advisory locks, each on a connection of its own.
//!
//! Invariants:
//! - a hold is the two-key advisory lock `(HOLD_CLASS, key)`, where `key` is the row of
//!   `holds` naming the team and the thing held, made on first use and never reused, so
//!   two teams in one database never share a lock;
//! - it lasts while its connection does: dropping the [`Held`] unlocks it at once, and
//!   when its process dies (or its connection is lost) the server frees it, so a holder
//!   that crashed never blocks the next. A hold lost with its connection is not noticed by
//!   its holder: fencing its later writes is for a later step;
//! - looking whether something is held ([`is_held`]) reads `pg_locks` and takes nothing,
//!   so it never makes a holder that starts at that moment refuse;
//! - every wait is bounded by the lock timeout; [`Wait::Forever`] waits in such bounded
//!   turns, so a lost server still ends the wait with an error.

use std::sync::Arc;

use postgres::Client;
use postgres::error::SqlState;

use crate::PgStore;
use crate::connect::{Database, Retry, off_runtime};
use crate::mail::unknown_team;
use swarm_store::error::Result;

/// The first key of swarm's two-key advisory locks (the migrations' lock is a one-key
/// lock, which never meets these).
const HOLD_CLASS: i32 = 0x5357_4801;

/// How long to wait for something another holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Not at all: `None` when it is held.
    No,
    /// Up to the lock timeout, then an error (exit code 5).
    Bounded,
    /// Until it is free, in turns of the lock timeout.
    Forever,
}

/// A held advisory lock and the connection that holds it.
pub(crate) struct Held {
    db: Arc<Database>,
    client: Option<Client>,
    key: i32,
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(mut client) = self.client.take() else {
            return;
        };
        let (db, key) = (&self.db, self.key);
        off_runtime(move || {
            match client.execute("SELECT pg_advisory_unlock($1, $2)", &[&HOLD_CLASS, &key]) {
                Ok(_) => db.give_back(client),
                // The connection is gone, and the lock with it.
                Err(e) => tracing::debug!("failed to unlock a hold: {e}"),
            }
        });
    }
}

/// The key of `name` in `store`'s team, made on first use.
fn key(store: &PgStore, name: &str) -> Result<i32> {
    let what = format!("find the lock '{name}' of team '{}'", store.team);
    store.db.transaction(Retry::Safe, &what, |tx| {
        tx.execute(
            "INSERT INTO holds (team, name) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&store.team.as_str(), &name],
        )
        .map_err(|e| unknown_team(store, e))?;
        let row = tx.query_one(
            "SELECT key FROM holds WHERE team = $1 AND name = $2",
            &[&store.team.as_str(), &name],
        )?;
        Ok(row.get(0))
    })
}

/// Holds `name` for the team, waiting as `wait` says; `None` only with [`Wait::No`], when
/// another holds it.
pub(crate) fn hold(store: &PgStore, name: &str, wait: Wait) -> Result<Option<Held>> {
    off_runtime(|| hold_here(store, name, wait))
}

fn hold_here(store: &PgStore, name: &str, wait: Wait) -> Result<Option<Held>> {
    let key = key(store, name)?;
    let what = format!("take the lock '{name}' of team '{}'", store.team);
    let mut client = store.db.take()?;
    let got = loop {
        let outcome = if wait == Wait::No {
            client
                .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&HOLD_CLASS, &key])
                .map(|r| r.get::<_, bool>(0))
        } else {
            client
                .execute("SELECT pg_advisory_lock($1, $2)", &[&HOLD_CLASS, &key])
                .map(|_| true)
        };
        match outcome {
            Ok(got) => break got,
            Err(e) if wait == Wait::Forever && e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
                tracing::debug!("still waiting for the lock '{name}'");
            }
            Err(e) => {
                // A lock not had in time leaves the connection fit for the pool.
                store.db.give_back(client);
                return Err(store.db.failed(&what, &e));
            }
        }
    };
    if !got {
        store.db.give_back(client);
        return Ok(None);
    }
    Ok(Some(Held {
        db: store.db.clone(),
        client: Some(client),
        key,
    }))
}

/// Whether some connection holds `name` for the team now. Takes nothing.
pub(crate) fn is_held(store: &PgStore, name: &str) -> Result<bool> {
    let what = format!("look at the lock '{name}' of team '{}'", store.team);
    store.db.run(Retry::Safe, &what, |client| {
        let row = client.query_one(
            "SELECT EXISTS (
                SELECT 1 FROM holds h JOIN pg_locks l
                  ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND l.classid::bigint = $3 AND l.objid::bigint = h.key
                WHERE h.team = $1 AND h.name = $2)",
            &[&store.team.as_str(), &name, &i64::from(HOLD_CLASS)],
        )?;
        Ok(row.get(0))
    })
}
