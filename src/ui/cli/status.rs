//! `swarm status` and `swarm attach`: the team as it is, in a table (coloured and fitted
//! to a terminal, plain into a pipe) or in its window.

use std::io::IsTerminal;

use clap::Args;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::output::print_json;
use crate::ui::cli::style;
use swarm::error::{Error, Result};
use swarm_store::Store;
use swarm_team::life::status;
use swarm_team::life::supervisor;
use swarm_team::spawn::window::{TeamWindow, TeamWindowOptions};
use swarm_util::clock;
use swarm_util::error::Base as _;

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// The team, or a teammate of the team (--team, else the only team) on another host,
    /// whose pane there opens over ssh [default: --team, else the only team]
    #[arg(value_name = "TEAM|NAME")]
    pub target: Option<String>,
}

/// The team `given` names, or the team (--team, else the only one) and its member `given`
/// names; a team that does not exist is said to be missing, not to have no window.
fn attach_target(
    ctx: &Ctx,
    given: Option<&str>,
) -> Result<(Store, Option<swarm_store::roster::Member>)> {
    let as_team = given.is_none_or(|g| {
        swarm_util::names::TeamName::new(g).is_ok_and(|t| ctx.teams.root().has_team(&t))
    });
    if as_team {
        let store = ctx.team_or(given)?;
        store.roster().load()?;
        return Ok((store, None));
    }
    let name = given.unwrap_or_default();
    let store = ctx.team()?;
    let config = store.roster().load()?;
    match config
        .members
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name))
    {
        Some(m) => Ok((store, Some(m.clone()))),
        None => Err(Error::not_found(format!(
            "no team named '{name}', and team '{}' has no member named '{name}'; see `swarm team list` and `swarm status`",
            store.team()
        ))),
    }
}

pub fn status(ctx: &Ctx) -> Result<()> {
    let store = ctx.team()?;
    let tmux = ctx.team_tmux(&store)?;
    // Nobody else may be watching: whoever looks first reports what ended.
    let (seen, reported) = supervisor::reconcile(&store, Some(&tmux), &ctx.profile.settings.dirs)?;
    let seen = if reported.is_empty() {
        seen
    } else {
        status::observe(&store, Some(&tmux))?
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
    let (store, member) = attach_target(ctx, args.target.as_deref())?;
    let team = store.team();
    if let Some(m) = &member
        && let Some(host) = swarm_team::spawn::remote::host_of(m)
    {
        if !std::io::stdin().is_terminal() {
            return Err(Error::usage("`swarm attach NAME` needs a terminal"));
        }
        return Ok(swarm_team::spawn::remote::attach(
            &store,
            &m.name,
            host,
            &ctx.profile.settings.dirs,
        )?);
    }
    let tmux = ctx.team_tmux(&store)?;
    let options = TeamWindowOptions::for_team(&store, ctx.profile.settings.panes_per_window);
    let window = TeamWindow::find(&tmux, team, options)?.ok_or_else(|| {
        Error::not_found(format!(
            "team '{team}' has no tmux window; start one with `swarm spawn` or `swarm run`"
        ))
    })?;
    if !std::io::stdout().is_terminal() && !ctx.caller.inside() {
        return Err(Error::usage("`swarm attach` needs a terminal"));
    }
    Ok(window.attach(ctx.caller.inside())?)
}
