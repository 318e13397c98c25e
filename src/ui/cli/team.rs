//! `swarm team ...`: the roster by hand, and team definitions (`init`, `check`; the
//! format is `swarm_config::teams`'s).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::json;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::options::{StoreOpts, colour};
use crate::ui::cli::output::print_json;
use swarm::error::{Error, Result};
use swarm_config::agents::{Catalog, Isolation};
use swarm_config::teams::{self, MemberDef, TeamDef};
use swarm_store::Store;
use swarm_store::roster::{self, NewMember, TeamConfig};
use swarm_team::life::shutdown::LadderOptions;
use swarm_team::life::teardown;
use swarm_team::spawn::window::TeamWindowOptions;
use swarm_util::error::Base as _;
use swarm_util::names::{AgentName, TeamName};

#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Create a team with the lead as its first member
    Create {
        /// The new team's name: 1-64 characters of a-z, 0-9 and '-'
        team: String,
        /// What the team is for, recorded in its roster
        #[arg(long, short)]
        description: Option<String>,
        #[command(flatten)]
        store: StoreOpts,
    },
    /// List teams
    List,
    /// Show a team's members
    Show {
        /// The team [default: --team, else the only team]
        team: Option<String>,
    },
    /// Add a member to the roster (without starting it)
    Add(AddMemberArgs),
    /// Remove a member from the roster, returning its open tasks to pending
    Remove {
        /// The member to remove
        agent: String,
    },
    /// Delete a team's roster, inboxes and task list, and its teammates' worktrees
    Delete {
        /// The team to delete
        team: String,
        /// Delete even if teammates are still running, or worktrees hold unmerged work
        #[arg(long)]
        force: bool,
    },
    /// Delete every finished team (its lead exited); never one still running, nor one
    /// whose worktrees hold unmerged work
    Prune,
    /// Point this machine's root at a team on a PostgreSQL database made elsewhere (what
    /// `swarm spawn --host` runs on a host before starting a teammate there)
    Link {
        /// The team's name
        team: String,
        /// The team's database (a URL without a password)
        #[arg(long, value_name = "URL")]
        store: String,
    },
    /// Forget a team on a database here: this root's pointer and the logs and transcripts
    /// kept here go, the team stays (what `swarm team delete` runs on the team's hosts)
    Unlink {
        /// The team's name
        team: String,
    },
    /// Write a commented example team definition, .swarm/teams/NAME.toml in the project,
    /// for `swarm run --team-def NAME`; never over an existing file
    Init {
        /// The definition's name: 1-64 characters of a-z, 0-9 and '-'
        #[arg(default_value = "team")]
        name: String,
    },
    /// Check a team definition (every one in the project's .swarm/teams/ without NAME)
    /// and say each member on one line; exit 2 naming the line at fault
    Check {
        /// A definition's name, or the path of a .toml file
        #[arg(value_name = "NAME|PATH")]
        def: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct AddMemberArgs {
    /// The member's name (unique within the team)
    pub agent: String,
    /// One of red, blue, green, yellow, purple, orange, pink, cyan [default: next in turn]
    #[arg(long, value_parser = colour)]
    pub color: Option<String>,
    /// The member's agent type, recorded in the roster
    #[arg(long, value_name = "TYPE")]
    pub agent_type: Option<String>,
    /// The member's model, recorded in the roster
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The member's working directory [default: the current one]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

pub fn run(ctx: &Ctx, cmd: TeamCommand) -> Result<()> {
    match cmd {
        TeamCommand::Create {
            team,
            description,
            store,
        } => create(ctx, &team, description, &store),
        TeamCommand::List => list(ctx),
        TeamCommand::Show { team } => show(ctx, team.as_deref()),
        TeamCommand::Add(args) => add_member(ctx, args),
        TeamCommand::Remove { agent } => remove_member(ctx, &agent),
        TeamCommand::Prune => prune(ctx),
        TeamCommand::Link { team, store } => link(ctx, &team, &store),
        TeamCommand::Unlink { team } => {
            ctx.teams.unlink_team(&TeamName::new(&team)?)?;
            if !ctx.json() {
                println!(
                    "forgot team {team} under {}",
                    ctx.teams.root().path().display()
                );
            }
            Ok(())
        }
        TeamCommand::Delete { team, force } => delete_team(ctx, &team, force),
        TeamCommand::Init { name } => init_def(ctx, &name),
        TeamCommand::Check { def } => check_defs(ctx, def.as_deref()),
    }
}

/// `swarm team link`: this root pointed at a team on a database.
fn link(ctx: &Ctx, team: &str, url: &str) -> Result<()> {
    let team = TeamName::new(team)?;
    swarm_store_pg::check_url(url)?;
    let config = ctx.teams.link_team(&team, url)?;
    if ctx.json() {
        print_json(&json!({"team": config.name, "root": ctx.teams.root().path()}));
    } else {
        println!(
            "linked team {} under {} to its database",
            config.name,
            ctx.teams.root().path().display()
        );
    }
    Ok(())
}

/// `swarm team init`: the example, written in this project.
fn init_def(ctx: &Ctx, name: &str) -> Result<()> {
    let project = ctx
        .profile
        .settings
        .dirs
        .project_dir(&ctx.working_dir(None)?);
    let path = teams::init(&project, name)?;
    if ctx.json() {
        print_json(&json!({"written": path}));
    } else {
        println!("wrote team definition {}", path.display());
        println!(
            "edit it, check it with `swarm team check {name}`, start it with `swarm run --team-def {name} \"<goal>\"`"
        );
    }
    Ok(())
}

/// `swarm team check`: one definition, or every one in this project; stops at the first
/// that is wrong.
fn check_defs(ctx: &Ctx, given: Option<&str>) -> Result<()> {
    let here = ctx.working_dir(None)?;
    let project = ctx.profile.settings.dirs.project_dir(&here);
    let paths = match given {
        Some(g) => vec![teams::locate(g, &project)?],
        None => project_defs(&teams::dir(&project))?,
    };
    let catalog = Catalog::load(&here, &ctx.profile.settings.dirs);
    let mut checked = Vec::new();
    for path in paths {
        let def = teams::load(&path)?;
        def.check_agent_types(&catalog)?;
        checked.push(def);
    }
    if ctx.json() {
        let defs: Vec<_> = checked.iter().map(def_json).collect();
        print_json(&defs);
        return Ok(());
    }
    for def in &checked {
        println!(
            "{}: ok, {} member(s){}",
            def.path.display(),
            def.members.len(),
            if def.lead.goal.is_some() {
                ", with a goal template"
            } else {
                ""
            }
        );
        for m in &def.members {
            println!("  {}", member_line(m));
        }
    }
    Ok(())
}

/// The `.toml` files of a project's definitions directory, by name; none is an error.
fn project_defs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(Error::io("read", dir, e)),
    };
    if paths.is_empty() {
        return Err(Error::not_found(format!(
            "no team definitions in {}; write one with `swarm team init`",
            dir.display()
        )));
    }
    paths.sort();
    Ok(paths)
}

/// One member as `swarm team check` says it.
fn member_line(m: &MemberDef) -> String {
    let model = match (&m.provider, &m.model) {
        (None, None) => "the lead's model".to_owned(),
        (p, model) => format!(
            "{}/{}",
            p.map_or("the lead's provider".to_owned(), |p| p.to_string()),
            model.as_deref().unwrap_or("its default model")
        ),
    };
    let mut parts = vec![
        format!("type {}", m.agent_type.as_deref().unwrap_or("-")),
        model,
    ];
    if m.plan_mode {
        parts.push("plan mode".to_owned());
    }
    if let Some(mode) = m.permission_mode {
        parts.push(format!("permission mode {mode}"));
    }
    if let Some(Isolation::Worktree) = m.isolation {
        parts.push("in a worktree".to_owned());
    }
    format!("{:<16} {}", m.name, parts.join(", "))
}

fn def_json(def: &TeamDef) -> serde_json::Value {
    let members: Vec<_> = def
        .members
        .iter()
        .map(|m| {
            json!({
                "name": m.name.as_str(),
                "agentType": m.agent_type,
                "provider": m.provider.map(|p| p.to_string()),
                "baseUrl": m.base_url,
                "model": m.model,
                "permissionMode": m.permission_mode.map(|p| p.to_string()),
                "planMode": m.plan_mode,
                "isolation": m.isolation.map(|i| match i {
                    Isolation::Worktree => "worktree",
                    Isolation::None => "none",
                }),
                "color": m.color,
            })
        })
        .collect();
    json!({
        "path": def.path,
        "goalTemplate": def.lead.goal,
        "members": members,
    })
}

fn create(ctx: &Ctx, team: &str, description: Option<String>, store: &StoreOpts) -> Result<()> {
    let team = TeamName::new(team)?;
    ctx.actor.check_team(&team)?;
    let cwd = ctx.working_dir(None)?;
    let teams = store.teams(&ctx.teams)?;
    let made = teams.create_team(&team, description, &cwd)?;
    if ctx.json() {
        print_json(&made.roster().load()?);
    } else if let Some(url) = teams.new_teams_at() {
        println!(
            "created team {team} in {} (its pointer: {})",
            swarm_store_pg::redact(url),
            teams.root().store_pointer_path(&team).display()
        );
    } else {
        // Only shown, never opened: where the person finds the new team's files.
        println!(
            "created team {team} at {}",
            ctx.teams.root().team_dir(&team).display()
        );
    }
    Ok(())
}

fn list(ctx: &Ctx) -> Result<()> {
    let teams = ctx.teams.list()?;
    let half = teardown::half_made(ctx.teams.root());
    if ctx.json() {
        print_json(&teams);
    } else if teams.is_empty() && half.is_empty() {
        println!("no teams under {}", ctx.teams.root().path().display());
    } else {
        for t in teams {
            println!(
                "{}  {} member(s){}",
                t.name,
                t.members.len(),
                t.description.map(|d| format!("  {d}")).unwrap_or_default()
            );
        }
        for t in half {
            println!("{t}  half-made (no config.json): remove it with `swarm team delete {t}`");
        }
    }
    Ok(())
}

fn show(ctx: &Ctx, team: Option<&str>) -> Result<()> {
    let store = ctx.team_or(team)?;
    let config = store.roster().load()?;
    if ctx.json() {
        print_json(&config);
    } else {
        print_roster(&config);
    }
    Ok(())
}

fn add_member(ctx: &Ctx, args: AddMemberArgs) -> Result<()> {
    let store = ctx.team()?;
    let team = store.team();
    let name = AgentName::new(&args.agent)?;
    let cwd = ctx.working_dir(args.cwd.as_deref())?;
    let member = store.roster().add_member(NewMember {
        name,
        color: args.color,
        agent_type: args.agent_type,
        model: args.model,
        prompt: None,
        plan_mode_required: false,
        cwd: cwd.display().to_string(),
    })?;
    if ctx.json() {
        print_json(&member);
    } else {
        println!("added {} to team {team}", member.name);
    }
    Ok(())
}

fn remove_member(ctx: &Ctx, agent: &str) -> Result<()> {
    let store = ctx.team()?;
    let team = store.team();
    let roster::Removed { member, released } = store.roster().remove_member(agent)?;
    let ids: Vec<&str> = released.iter().map(|t| t.id.as_str()).collect();
    if ctx.json() {
        print_json(&json!({"removed": member.name, "releasedTasks": ids}));
    } else {
        println!("removed {} from team {team}", member.name);
        if !ids.is_empty() {
            println!("returned task(s) #{} to pending", ids.join(", #"));
        }
    }
    Ok(())
}

/// `swarm team delete`: one team (a half-made one too), through [`delete`].
fn delete_team(ctx: &Ctx, team: &str, force: bool) -> Result<()> {
    let team = TeamName::new(team)?;
    ctx.actor.check_team(&team)?;
    let store = ctx.teams.open(&team)?;
    if !teardown::is_half_made(&store) {
        store.roster().load()?;
    }
    let deleted = delete(ctx, &store, force)?;
    for line in &deleted.left {
        eprintln!("swarm: warning: {line}");
    }
    if ctx.json() {
        let removed: Vec<&str> = deleted.removed.iter().map(|r| r.branch.as_str()).collect();
        print_json(&json!({"deleted": team.as_str(), "removedWorktrees": removed}));
        return Ok(());
    }
    for r in &deleted.removed {
        println!(
            "removed worktree {} and branch {}{}",
            r.path.display(),
            r.branch,
            r.discarded
                .as_ref()
                .map(|l| format!(", discarding {l}"))
                .unwrap_or_default()
        );
    }
    println!("deleted team {team}");
    Ok(())
}

/// Deletes `team` through the shutdown ladder (see `team::teardown`), saying its steps.
fn delete(ctx: &Ctx, store: &Store, force: bool) -> Result<teardown::Deleted> {
    let tmux = ctx.team_tmux(store)?;
    let window = TeamWindowOptions::for_team(store, ctx.profile.settings.panes_per_window);
    let ladder = LadderOptions {
        timeout: std::time::Duration::from_secs(10),
        ..LadderOptions::new(ctx.profile.settings.dirs.clone())
    };
    // The ladder may take a while: if stdout went away meanwhile, go on quietly.
    let say = |line: &str| {
        let _ = writeln!(std::io::stdout(), "{line}");
    };
    Ok(teardown::delete(
        store, &tmux, window, &ladder, force, &say,
    )?)
}

/// `swarm team prune`: deletes the finished teams; a team that refuses (running teammates,
/// unmerged work) is kept and said why.
fn prune(ctx: &Ctx) -> Result<()> {
    let mut pruned = Vec::new();
    let mut kept = Vec::new();
    for config in ctx.teams.list()? {
        let team = TeamName::new(&config.name)?;
        if ctx.actor.check_team(&team).is_err() {
            continue;
        }
        let store = ctx.teams.open(&team)?;
        if !teardown::is_finished(&store) {
            continue;
        }
        match delete(ctx, &store, false) {
            Ok(_) => pruned.push(team.to_string()),
            Err(e) => kept.push((team.to_string(), e.to_string())),
        }
    }
    if ctx.json() {
        let kept: Vec<_> = kept
            .iter()
            .map(|(t, why)| json!({"team": t, "reason": why}))
            .collect();
        print_json(&json!({"pruned": pruned, "kept": kept}));
        return Ok(());
    }
    for t in &pruned {
        println!("deleted finished team {t}");
    }
    for (t, why) in &kept {
        println!("kept finished team {t}: {why}");
    }
    if pruned.is_empty() && kept.is_empty() {
        println!(
            "no finished teams under {}",
            ctx.teams.root().path().display()
        );
    }
    Ok(())
}

fn print_roster(config: &TeamConfig) {
    println!(
        "team {}{}",
        config.name,
        config
            .description
            .as_deref()
            .map(|d| format!(": {d}"))
            .unwrap_or_default()
    );
    println!(
        "  {:<20} {:<18} {:<8} {:<6} {:<8} CWD",
        "NAME", "TYPE", "COLOR", "PANE", "PID"
    );
    for m in &config.members {
        let dash = || "-".to_owned();
        println!(
            "  {:<20} {:<18} {:<8} {:<6} {:<8} {}",
            m.name,
            m.agent_type.clone().unwrap_or_else(dash),
            m.color.clone().unwrap_or_else(dash),
            if m.tmux_pane_id.is_empty() {
                dash()
            } else {
                m.tmux_pane_id.clone()
            },
            m.pid.map(|p| p.to_string()).unwrap_or_else(dash),
            m.cwd
        );
    }
}
