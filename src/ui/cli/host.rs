//! `swarm host ...`: the hosts teammates may run on (`swarm_hosts`): add one by its ssh
//! target, list them, remove one, and check that one can take teammates.
// The doc comments here are clap's help text, where `[:port]` is not a link.
#![allow(rustdoc::broken_intra_doc_links)]

use clap::{Args, Subcommand};
use serde_json::json;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::output::print_json;
use swarm::error::{Error, Result};
use swarm_hosts::{Host, Hosts, Ssh, check};
use swarm_store::seam::NotForHosts;
use swarm_team::spawn::inherit::{Place, carried};
use swarm_util::error::Base as _;

#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// Record a host reached over ssh with your own keys and ~/.ssh/config
    Add(AddArgs),
    /// List the recorded hosts
    List,
    /// Forget a host
    Remove {
        /// The host's name
        name: String,
    },
    /// Check that a host can take teammates: ssh, tmux >= 3.2, git, the same swarm, the
    /// project directory and the team's database (exit 8 if one fails)
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// Its name in swarm: letters, digits, '-', '_' and '.'
    pub name: String,
    /// user@address[:port], or an alias of your ~/.ssh/config
    pub target: String,
    /// The swarm binary on the host [default: swarm on its PATH]
    #[arg(long, value_name = "FILE")]
    pub swarm_bin: Option<String>,
    /// The project's directory on the host, where its teammates work
    #[arg(long, value_name = "DIR")]
    pub dir: Option<String>,
    /// The database role its teammates connect as, which may change only their own rows
    /// (prints what an administrator runs to make it) [default: the lead's role]
    #[arg(long, value_name = "ROLE")]
    pub db_role: Option<String>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The host's name
    pub name: String,
    /// The database its teammates would use [default: the team's, with --team]
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
}

pub fn run(ctx: &Ctx, cmd: HostCommand) -> Result<()> {
    let hosts = Hosts::at(ctx.teams.root().path(), ctx.teams.root().lock_timeout());
    match cmd {
        HostCommand::Add(args) => add(ctx, &hosts, args),
        HostCommand::List => list(ctx, &hosts),
        HostCommand::Remove { name } => {
            let gone = hosts.remove(&name)?;
            println!("removed host {} ({})", gone.name, gone.target());
            Ok(())
        }
        HostCommand::Check(args) => run_check(ctx, &hosts, args),
    }
}

fn add(ctx: &Ctx, hosts: &Hosts, args: AddArgs) -> Result<()> {
    let mut host = Host::parse(&args.name, &args.target)?;
    host.swarm_bin = args.swarm_bin;
    host.dir = args.dir;
    if let Some(role) = &args.db_role {
        host = host.with_db_role(role)?;
    }
    hosts.add(host.clone())?;
    let sql = host.db_role.as_deref().map(role_sql);
    if ctx.json() {
        let mut shown = serde_json::to_value(&host).unwrap_or_default();
        if let (Some(sql), Some(map)) = (&sql, shown.as_object_mut()) {
            map.insert("sql".into(), json!(sql));
        }
        print_json(&shown);
        return Ok(());
    }
    println!(
        "added host {} ({}); check it with `swarm host check {}`",
        host.name,
        host.target(),
        host.name
    );
    match sql {
        Some(sql) => {
            println!(
                "its teammates connect as database role {}; have an administrator of the server run, once:",
                host.db_role.as_deref().unwrap_or_default()
            );
            for line in sql {
                println!("  {line}");
            }
        }
        None => println!(
            "its teammates connect as your own database role, which may change every row of every team there; give it one of its own with --db-role ROLE"
        ),
    }
    Ok(())
}

/// What an administrator runs to make `role` a host's: the group role `swarm_host` (once
/// per server), the role in it, and its password, which the host keeps in its own
/// `~/.pgpass`. The tables' rights come with the team's database (`swarm store migrate`).
fn role_sql(role: &str) -> Vec<String> {
    vec![
        "CREATE ROLE swarm_host NOLOGIN;   -- once per server; skip if it exists".to_owned(),
        format!("CREATE ROLE {role} LOGIN IN ROLE swarm_host;"),
        format!("\\password {role}   -- in psql; put it in the host's ~/.pgpass"),
        "-- then, as the lead: swarm store migrate URL (gives swarm_host its rights there)"
            .to_owned(),
    ]
}

fn list(ctx: &Ctx, hosts: &Hosts) -> Result<()> {
    let all = hosts.list()?;
    if ctx.json() {
        print_json(&all);
        return Ok(());
    }
    if all.is_empty() {
        println!("no hosts; add one with `swarm host add NAME user@address`");
    }
    for h in all {
        let mut line = format!("{}  {}", h.name, h.target());
        if let Some(bin) = &h.swarm_bin {
            line.push_str(&format!("  swarm {bin}"));
        }
        if let Some(dir) = &h.dir {
            line.push_str(&format!("  dir {dir}"));
        }
        if let Some(role) = &h.db_role {
            line.push_str(&format!("  role {role}"));
        }
        println!("{line}");
    }
    Ok(())
}

fn run_check(ctx: &Ctx, hosts: &Hosts, args: CheckArgs) -> Result<()> {
    let host = hosts.get(&args.name)?;
    // As a spawn gives them to the host: the URL with what this environment fills in, and
    // what the settings table sends there.
    let url = match args.store {
        Some(url) => Some(swarm_store_pg::host_url::for_hosts(&url, ctx.env())?),
        None => ctx.team().ok().map(|store| store.url_for_hosts()),
    };
    let url = match url {
        Some(Err(NotForHosts::Socket(dir))) => {
            return Err(Error::usage(format!(
                "the database is reached through a Unix socket in {dir}, which host '{}' cannot reach: give --store a URL that names the server's address, e.g. postgres://swarm@db.example/swarm",
                host.name
            )));
        }
        Some(Ok(url)) => Some(host.database_url(&url)),
        Some(Err(NotForHosts::Files)) | None => None,
    };
    let (env, _) = carried(ctx.env().vars(), Place::Host);
    let env: Vec<(String, String)> = env.into_iter().collect();
    let store = url.as_deref().map(|url| check::Database { url, env: &env });
    let ssh = Ssh::new(host.clone(), ctx.profile.settings.dirs.ssh_config.clone());
    let version = format!("swarm {}", env!("CARGO_PKG_VERSION"));
    let found = check::check(&ssh, &version, store);
    if ctx.json() {
        print_json(&json!({"host": host.name, "checks": found}));
    } else {
        for f in &found {
            println!(
                "{} {:<9}{}",
                if f.ok { "ok  " } else { "FAIL" },
                f.what,
                f.detail
            );
        }
        if url.is_some() && host.db_role.is_none() {
            println!(
                "note database as your own role, which may change every row of every team there; for a role of its own, remove the host and add it with --db-role ROLE"
            );
        }
    }
    let failed: Vec<&str> = found.iter().filter(|f| !f.ok).map(|f| f.what).collect();
    if failed.is_empty() {
        return Ok(());
    }
    Err(Error::CheckFailed(format!(
        "host '{}' failed the check of {}",
        host.name,
        failed.join(", ")
    )))
}
