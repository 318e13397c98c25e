//! `swarm run --dry-run`: what a run would start, made nowhere. The team is made in a
//! scratch root (removed after), so every check and rule is the run's own: the lead's
//! command as the run would give it, each member of a team definition as the run would
//! spawn it, and a teammate as the lead would start one, its settings read back from the
//! lead's command line by the parser and the rule the lead itself uses.
//!
//! Secrets are shown by name only.

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use serde_json::json;

use crate::ui::cli::context::{Ctx, GlobalOpts};
use crate::ui::cli::lead::LeadArgs;
use crate::ui::cli::output::print_json;
use swarm::error::{Error, Result};
use swarm_store::{Root, Store, Teams};
use swarm_team::runs::run::{self as team_run, Goal};
use swarm_team::spawn::inherit::{LeadSettings, TeammateCommand};
use swarm_team::spawn::launch::SpawnRequest;
use swarm_util::error::{Base as _, exit};
use swarm_util::names::{AgentName, TeamName};

/// The name of the teammate shown as the lead would start one.
const SAMPLE: &str = "worker";

/// Prints what a run of `goal` by team `team`, led with `lead`'s settings in `here`, would
/// start.
pub fn show(
    ctx: &Ctx,
    lead: LeadSettings,
    team: &TeamName,
    here: &Path,
    goal: &Goal,
) -> Result<u8> {
    let scratch = Scratch::new()?;
    let store = team_run::make_team(
        &Teams::new(Root::new(&scratch.0)),
        team,
        here,
        goal,
        lead.permission_mode,
    )?;
    let launcher = ctx.launcher(&store, lead, here.to_path_buf())?;
    let goal_file = ctx.teams.root().goal_path(team);
    let lead_cmd = launcher.lead_command(&team_run::lead_extra(&goal_file, goal, here));
    let mut members = Vec::new();
    for member in goal.members {
        members.push((member.name.to_string(), launcher.dry_run(member)?.command));
    }
    let teammate = as_the_lead_would(ctx, &lead_cmd, &store, here)?;
    if ctx.json() {
        print_json(&json!({
            "team": team.as_str(),
            "lead": shown(&lead_cmd),
            "members": members
                .iter()
                .map(|(name, cmd)| json!({"name": name, "command": shown(cmd)}))
                .collect::<Vec<_>>(),
            "teammate": shown(&teammate),
        }));
    } else {
        println!("lead: {}", lead_cmd.argv.join(" "));
        for (name, cmd) in &members {
            println!("{name}: {}", cmd.argv.join(" "));
        }
        println!("a teammate the lead starts: {}", teammate.argv.join(" "));
    }
    Ok(exit::SUCCESS)
}

/// The lead's command line as the binary reads it: the same global options and the same
/// `swarm lead` arguments (kept apart from the whole [`Cli`](crate::ui::cli::command::Cli),
/// which names this module's caller).
#[derive(Debug, Parser)]
#[command(name = "swarm")]
struct LeadLine {
    #[command(flatten)]
    _global: GlobalOpts,
    #[command(subcommand)]
    command: LeadOnly,
}

#[derive(Debug, Subcommand)]
enum LeadOnly {
    Lead(LeadArgs),
}

/// A teammate's command as the lead started by `lead_cmd` would make it: the lead's flags
/// parsed back as the lead parses them, resolved by the rule the lead applies.
fn as_the_lead_would(
    ctx: &Ctx,
    lead_cmd: &TeammateCommand,
    store: &Store,
    here: &Path,
) -> Result<TeammateCommand> {
    let parsed = LeadLine::try_parse_from(&lead_cmd.argv)
        .map_err(|e| Error::Runtime(format!("failed to read back the lead's command line: {e}")))?;
    let LeadOnly::Lead(args) = parsed.command;
    // Its command line always gives the permission mode.
    let permissions = args.permissions.flags(true, true);
    let settings = ctx
        .lead_settings()?
        .inherited(&ctx.profile, &args.model.flags(), &permissions);
    let settings = ctx.with_engine(settings, &args.engine)?;
    let launcher = ctx.launcher(store, settings, here.to_path_buf())?;
    let sample = SpawnRequest::plain(AgentName::new(SAMPLE)?, here.to_path_buf());
    Ok(launcher.dry_run(&sample)?.command)
}

/// A command as the dry run shows it: its argv, and its environment with secrets by name.
fn shown(cmd: &TeammateCommand) -> serde_json::Value {
    json!({"argv": cmd.argv, "env": cmd.shown_env(), "cwd": cmd.cwd})
}

/// A directory of its own under the system's temporary directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch> {
        let dir = std::env::temp_dir().join(format!(
            "swarm-dry-run-{}-{:08x}",
            std::process::id(),
            random_u32()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A random number for a scratch directory's name.
fn random_u32() -> u32 {
    uuid::Uuid::new_v4().as_u128() as u32
}
