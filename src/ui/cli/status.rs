//! `swarm status` and `swarm attach`: the team as it is, in a table (coloured and fitted
//! to a terminal, plain into a pipe) or in its window.

use std::io::IsTerminal;

use clap::Args;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::output::print_json;
use crate::ui::cli::style;
use swarm_team::status;
use swarm_team::supervisor;
use swarm_team::window::{TeamWindow, TeamWindowOptions};
use swarm_util::clock;
use swarm_util::error::{Error, Result};

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// The team [default: --team, else the only team]
    pub team: Option<String>,
}

pub fn status(ctx: &Ctx) -> Result<()> {
    let team = ctx.team()?;
    let tmux = ctx.team_tmux(&team)?;
    // Nobody else may be watching: whoever looks first reports what ended.
    let (seen, reported) =
        supervisor::reconcile(&ctx.root, &team, Some(&tmux), &ctx.settings.dirs)?;
    let seen = if reported.is_empty() {
        seen
    } else {
        status::observe(&ctx.root, &team, Some(&tmux))?
    };
    if ctx.json() {
        print_json(&seen);
    } else {
        print!(
            "{}",
            status::render(&seen, clock::now_ms(), style::stdout())
        );
    }
    Ok(())
}

pub fn attach(ctx: &Ctx, args: AttachArgs) -> Result<()> {
    let team = ctx.team_or(args.team.as_deref())?;
    // A team that does not exist is said to be missing, not to have no window.
    ctx.root.open(&team).roster().load()?;
    let tmux = ctx.team_tmux(&team)?;
    let options = TeamWindowOptions::for_team(&ctx.root, &team, ctx.settings.panes_per_window);
    let window = TeamWindow::find(&tmux, &team, options)?.ok_or_else(|| {
        Error::not_found(format!(
            "team '{team}' has no tmux window; start one with `swarm spawn` or `swarm run`"
        ))
    })?;
    if !std::io::stdout().is_terminal() && !ctx.caller.inside() {
        return Err(Error::usage("`swarm attach` needs a terminal"));
    }
    window.attach(ctx.caller.inside())
}
