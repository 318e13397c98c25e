//! `swarm lead`: the process in a team window's first pane, supervising, and with a goal,
//! leading.

use std::io::IsTerminal;

use std::path::PathBuf;

use clap::Args;

use crate::ui::cli::context::{Ctx, lead_dir};
use crate::ui::cli::input::{Limit, Source, read_text};
use crate::ui::cli::options::{EngineOpts, ModelOpts, PermissionOpts};
use swarm::error::Result;
use swarm::exit::exit_code;
use swarm_config::permissions::Approver;
use swarm_roles::lead;
use swarm_roles::lead::start::{LeadFlags, LeadPlace};
use swarm_store::mailbox;

#[derive(Debug, Args)]
pub struct LeadArgs {
    /// Restore the lead's conversation and restart its unfinished teammates (`swarm resume`)
    #[arg(long, hide = true)]
    pub resume: bool,
    /// Leave the teammates running when the lead stops
    #[arg(long)]
    pub keep_team: bool,
    /// Run a lead agent on the goal in this file (without it, the lead only supervises)
    #[arg(long, value_name = "FILE")]
    pub goal_file: Option<PathBuf>,
    /// Who approves plans and permissions: lead (its model) or human (swarm approve)
    #[arg(long, default_value = "lead", value_name = "WHO")]
    pub approver: Approver,
    /// The most teammates the lead agent may spawn
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub teammates: usize,
    /// The hosts new teammates go on, each on the one with the fewest (`swarm run --hosts`)
    #[arg(long, value_name = "HOST,...", value_delimiter = ',', hide = true)]
    pub hosts: Vec<String>,
    /// Where the team works [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelOpts,
    #[command(flatten)]
    pub permissions: PermissionOpts,
    #[command(flatten)]
    pub engine: EngineOpts,
}

pub fn run(ctx: &Ctx, args: LeadArgs) -> Result<u8> {
    let store = ctx.team()?;
    let goal = match &args.goal_file {
        None => None,
        Some(f) => Some(read_text(
            Source::File(f),
            Limit {
                what: "the goal",
                bytes: mailbox::envelope::MAX_MESSAGE_BYTES,
                fix: "shorten it: the lead reads it as its first message",
            },
        )?),
    };
    let flags = LeadFlags {
        resume: args.resume,
        keep_team: args.keep_team,
        goal,
        approver: args.approver,
        teammates: args.teammates,
        hosts: args.hosts,
        cwd: args.cwd,
        model: args.model.flags(),
        permissions: args
            .permissions
            .flags(ctx.global.permission_mode_given, true),
        engine: args.engine.engine,
        claude_bin: args.engine.claude_bin,
    };
    let place = LeadPlace {
        launch: ctx.launch_settings(ctx.lead_settings()?, lead_dir()),
        draw: std::io::stdout().is_terminal(),
        pane: ctx.own_pane(),
        exit_code,
    };
    Ok(lead::start::start(flags, store, place, &ctx.profile)?)
}

/// The settings a lead passes on to its teammates, from its model and permission flags.
pub fn inherited(
    ctx: &Ctx,
    model: &ModelOpts,
    permissions: &PermissionOpts,
) -> Result<swarm_team::spawn::inherit::LeadSettings> {
    let permissions = permissions.flags(ctx.global.permission_mode_given, true);
    Ok(ctx
        .lead_settings()?
        .inherited(&ctx.profile, &model.flags(), &permissions))
}
