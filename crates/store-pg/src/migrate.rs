//! The schema, as numbered migrations, and [`migrate`], which brings a database up to the
//! newest one this swarm knows.
//!
//! Invariants:
//! - a migration is never edited once released: a change is a new, higher-numbered one;
//! - `schema_version` holds one row per migration applied; each migration and its row are
//!   written in one transaction, under a transaction-scoped advisory lock, so two processes
//!   migrating at once apply each migration once;
//! - a database already at a version this swarm does not know is refused (exit code 11),
//!   never migrated down or written.
//!
//! The tables (version 1), one row set per team:
//! - `teams`: the roster (Claude Code's `config.json`, as `jsonb`), locked for every change;
//! - `task_lists` and `tasks`: the list's row (its high-water mark) is locked by every task
//!   mutation, as the file store's list lock is; each task is its JSON document;
//! - `mailboxes` and `messages`: a mailbox's row counts writes to its inbox (its version)
//!   and is locked by every delivery and acknowledgement; a message is unique per recipient
//!   by its origin (the sender's message id) and by its key, and moves from the inbox to
//!   the delivered log by getting `acked`, the number of its acknowledgement.
//!
//! Version 2: `approvals`, each request its JSON document, locked by every decision.
//!
//! Version 3: `agent_states` (each agent's state document), `exit_reports` (one row per
//! exit whose report was claimed) and `holds` (the key of each advisory lock a team holds
//! by name: its lead, its merge run, a worktree record).
//!
//! Version 4: `merge_queues` (the queue's document, locked by every change), `budgets` (the
//! limits), `spend` (each agent's running total), `launch_records`, `worktrees` (each
//! record its document) and `rate_gates` (one row per provider, locked by every close;
//! `spell` null until the first).
//!
//! Version 5: `processes`, one row per registered process of an agent (its host, pid, last
//! beat by the server's clock, and when it was declared dead), keyed by its fencing token
//! from the sequence `fences`: a token is never handed out twice in a database.
//!
//! Version 6: row-level security and the checks that keep a host's role to its own agents'
//! rows (see the crate's `rights` module).

use crate::connect::{Database, Fail, Retry};
use swarm_store::error::{Error, Result};

/// The migrations, in order: version `i + 1` is `MIGRATIONS[i]`.
const MIGRATIONS: &[&str] = &[
    r"
CREATE TABLE teams (
    name text PRIMARY KEY,
    config jsonb NOT NULL
);
CREATE TABLE task_lists (
    team text PRIMARY KEY REFERENCES teams ON DELETE CASCADE,
    high_water bigint NOT NULL DEFAULT 0
);
CREATE TABLE tasks (
    team text NOT NULL REFERENCES task_lists ON DELETE CASCADE,
    id bigint NOT NULL,
    doc jsonb NOT NULL,
    PRIMARY KEY (team, id)
);
CREATE TABLE mailboxes (
    team text NOT NULL REFERENCES teams ON DELETE CASCADE,
    agent text NOT NULL,
    writes bigint,
    written_ns bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (team, agent)
);
CREATE TABLE messages (
    team text NOT NULL,
    agent text NOT NULL,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    origin text NOT NULL,
    key text NOT NULL,
    envelope jsonb NOT NULL,
    acked bigint,
    PRIMARY KEY (team, agent, origin),
    UNIQUE (team, agent, key),
    FOREIGN KEY (team, agent) REFERENCES mailboxes ON DELETE CASCADE
);
CREATE INDEX messages_inbox ON messages (team, agent, seq) WHERE acked IS NULL;
CREATE INDEX messages_delivered ON messages (team, agent, acked, seq) WHERE acked IS NOT NULL;
CREATE SEQUENCE acks;
",
    r"
CREATE TABLE approvals (
    team text NOT NULL REFERENCES teams ON DELETE CASCADE,
    id text NOT NULL,
    doc jsonb NOT NULL,
    PRIMARY KEY (team, id)
);
",
    r"
CREATE TABLE agent_states (
    team text NOT NULL REFERENCES teams ON DELETE CASCADE,
    agent text NOT NULL,
    state jsonb NOT NULL,
    PRIMARY KEY (team, agent)
);
CREATE TABLE exit_reports (
    team text NOT NULL REFERENCES teams ON DELETE CASCADE,
    agent text NOT NULL,
    instance text NOT NULL,
    PRIMARY KEY (team, agent, instance)
);
CREATE TABLE holds (
    team text NOT NULL REFERENCES teams ON DELETE CASCADE,
    name text NOT NULL,
    key integer GENERATED ALWAYS AS IDENTITY UNIQUE,
    PRIMARY KEY (team, name)
);
",
    r"
CREATE TABLE merge_queues (
    team text PRIMARY KEY REFERENCES teams ON DELETE CASCADE,
    queue jsonb NOT NULL
);
CREATE TABLE budgets (
    team text PRIMARY KEY REFERENCES teams ON DELETE CASCADE,
    limits jsonb NOT NULL
);
CREATE TABLE spend (
    team text NOT NULL REFERENCES teams ON DELETE CASCADE,
    agent text NOT NULL,
    total jsonb NOT NULL,
    PRIMARY KEY (team, agent)
);
CREATE TABLE launch_records (
    team text NOT NULL REFERENCES teams ON DELETE CASCADE,
    agent text NOT NULL,
    record jsonb NOT NULL,
    PRIMARY KEY (team, agent)
);
CREATE TABLE worktrees (
    team text NOT NULL REFERENCES teams ON DELETE CASCADE,
    agent text NOT NULL,
    record jsonb NOT NULL,
    PRIMARY KEY (team, agent)
);
CREATE TABLE rate_gates (
    team text NOT NULL REFERENCES teams ON DELETE CASCADE,
    provider text NOT NULL,
    spell jsonb,
    PRIMARY KEY (team, provider)
);
",
    r"
CREATE SEQUENCE fences;
CREATE TABLE processes (
    token bigint PRIMARY KEY DEFAULT nextval('fences'),
    team text NOT NULL REFERENCES teams ON DELETE CASCADE,
    agent text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    start_ticks bigint,
    beat_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    dead_at timestamptz
);
CREATE INDEX processes_newest ON processes (team, agent, token DESC);
",
    crate::rights::HOST_RIGHTS,
];

/// The newest schema version this swarm knows.
pub const LATEST: i32 = MIGRATIONS.len() as i32;

/// Any number, the same in every swarm: the advisory lock migrations take.
const MIGRATION_LOCK: i64 = 0x5357_4152_4d00_0001;

/// Brings the database to [`LATEST`]; returns the version it was at before. Refuses one at
/// a newer version than this swarm knows.
pub fn migrate(db: &Database) -> Result<i32> {
    db.transaction(Retry::Safe, "migrate the schema", |tx| {
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        // Looked for first: `IF NOT EXISTS` would log a notice in every process.
        let fresh: bool = tx
            .query_one("SELECT to_regclass('schema_version') IS NULL", &[])?
            .get(0);
        if fresh {
            tx.batch_execute(
                "CREATE TABLE schema_version (
                    version integer PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )",
            )?;
        }
        let row = tx.query_one("SELECT coalesce(max(version), 0) FROM schema_version", &[])?;
        let before: i32 = row.get(0);
        if before > LATEST {
            return Err(Fail::Swarm(Error::Unavailable(format!(
                "the team's database at {} has schema version {before}, newer than this swarm knows ({LATEST}); upgrade swarm",
                db.at()
            ))));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(before as usize) {
            tx.batch_execute(sql)?;
            let version = i as i32 + 1;
            tx.execute("INSERT INTO schema_version (version) VALUES ($1)", &[&version])?;
        }
        grant_hosts(tx)?;
        Ok(before)
    })
}

/// The schema version the database is at (0: none yet).
pub fn version(db: &Database) -> Result<i32> {
    db.run(Retry::Safe, "read the schema version", |client| {
        let exists: bool = client
            .query_one("SELECT to_regclass('schema_version') IS NOT NULL", &[])?
            .get(0);
        if !exists {
            return Ok(0);
        }
        Ok(client
            .query_one("SELECT coalesce(max(version), 0) FROM schema_version", &[])?
            .get(0))
    })
}

/// Gives `swarm_host` its rights when it exists and lacks them; does nothing for a host's
/// role, or where this role may not grant (it does not own the tables): then a host's
/// role has no rights here, which is safe, and `swarm host check` says so.
fn grant_hosts(tx: &mut postgres::Transaction<'_>) -> std::result::Result<(), Fail> {
    let wanted: bool = tx
        .query_one(
            // CASE, not AND: the checks need the role, and AND may run them first.
            "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'swarm_host')
                           OR swarm_is_host() THEN false
                    ELSE NOT has_table_privilege('swarm_host', 'processes', 'INSERT')
                         AND pg_has_role((SELECT tableowner FROM pg_tables
                                           WHERE schemaname = current_schema()
                                             AND tablename = 'teams'), 'USAGE') END",
            &[],
        )?
        .get(0);
    if wanted {
        tx.execute("SELECT swarm_grant_hosts()", &[])?;
    }
    Ok(())
}
