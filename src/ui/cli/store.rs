//! `swarm store migrate URL`: brings a PostgreSQL store's schema up to the newest version
//! this swarm knows, and says where it stands. Every command that opens such a store does
//! the same at first use; this is for the person who runs the database and wants the
//! schema changed at a time of their choosing (and to see that it was). A database newer
//! than this swarm is refused (exit 11), never migrated down.
//!
//! The URL is shown only as the server, database and user; what it leaves out comes from
//! the `PG*` variables and `~/.pgpass`, as `psql` takes them.

use clap::{Args, Subcommand};
use serde_json::json;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::output::print_json;
use swarm::error::{Error, Result};
use swarm_store_pg::{Database, migrate};

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Bring a PostgreSQL store's schema up to this swarm's (every command does so at first use)
    Migrate(MigrateArgs),
    /// Check that a PostgreSQL store can be reached from here and its schema used, changing
    /// nothing (`swarm host check` runs it on a host)
    Check(MigrateArgs),
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The database: postgres://user@host:port/database; what it leaves out comes from PG* and ~/.pgpass, as for psql
    #[arg(value_name = "URL")]
    pub url: String,
}

pub fn run(ctx: &Ctx, cmd: StoreCommand) -> Result<()> {
    match cmd {
        StoreCommand::Migrate(args) => run_migrate(ctx, &args.url),
        StoreCommand::Check(args) => run_check(ctx, &args.url),
    }
}

fn run_check(ctx: &Ctx, url: &str) -> Result<()> {
    let db = Database::open(url, ctx.env())?;
    let at = migrate::version(&db)?;
    let latest = migrate::LATEST;
    if at > latest {
        return Err(Error::Unreachable(format!(
            "the database at {} has schema version {at}, newer than this swarm knows ({latest}); upgrade swarm",
            db.at()
        )));
    }
    if ctx.json() {
        print_json(&json!({"database": db.at(), "version": at, "latest": latest}));
    } else {
        println!(
            "reached the database at {}: schema version {at} of {latest}",
            db.at()
        );
    }
    Ok(())
}

fn run_migrate(ctx: &Ctx, url: &str) -> Result<()> {
    let db = Database::open(url, ctx.env())?;
    // `migrate` says the version it found, under the migrations' lock: not raced.
    let before = migrate::migrate(&db)?;
    let after = migrate::LATEST;
    if ctx.json() {
        print_json(&json!({
            "database": db.at(),
            "from": before,
            "to": after,
        }));
        return Ok(());
    }
    if before == after {
        println!(
            "the database at {} is at schema version {after}, the newest this swarm knows",
            db.at()
        );
    } else {
        println!(
            "migrated the database at {} from schema version {before} to {after}",
            db.at()
        );
    }
    Ok(())
}
