//! `swarm resume`: a team whose lead stopped before the end, brought back (see
//! [`swarm_team::life::resume`]), and `swarm run`'s offer to do that instead of starting anew.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use clap::Args;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::follow::{Speak, follow};
use swarm::error::{Error, Result};
use swarm_store::Store;
use swarm_team::life::resume;
use swarm_util::error::Base as _;
use swarm_util::names::TeamName;

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The team [default: the unfinished team whose lead worked in this directory]
    pub team: Option<String>,
    /// Do not attach to the team window: wait for the end and print the report
    #[arg(long)]
    pub no_attach: bool,
}

pub fn run(ctx: &Ctx, args: ResumeArgs) -> Result<u8> {
    let team = match args.team.as_deref().or(ctx.global.team.as_deref()) {
        Some(t) => TeamName::new(t)?,
        None => only_unfinished(ctx, &ctx.working_dir(None)?)?,
    };
    resume_team(ctx, &ctx.teams.connect(&team)?, args.no_attach)
}

fn resume_team(ctx: &Ctx, store: &Store, no_attach: bool) -> Result<u8> {
    let team = store.team();
    resume::check_resumable(store)?;
    let config = store.roster().load()?;
    let cwd = config
        .member(swarm_util::names::LEAD)
        .map(|l| std::path::PathBuf::from(&l.cwd))
        .filter(|d| d.is_dir())
        .map_or_else(|| ctx.working_dir(None), Ok)?;
    let launcher = ctx.launcher(store, ctx.lead_settings()?, cwd)?;
    let window = resume::resume_lead(&launcher)?;
    println!(
        "team {team} resumed: its lead restarts its unfinished teammates; its window: `swarm attach {team}`; live view: `swarm watch {team}`"
    );
    if !resume::has_goal(store) {
        // A lead without a goal supervises until it is stopped: nothing to wait for.
        return Ok(0);
    }
    // As a finished `swarm run` does: the lead's dead pane (and a crashed teammate's) would
    // otherwise keep the window, its session and the tmux server alive after the team ended.
    follow(ctx, store, &window, no_attach, Speak::Text)
        .inspect(|_| swarm_team::life::teardown::close_finished(store, &window, false))
}

/// The one unfinished team of `project`.
fn only_unfinished(ctx: &Ctx, project: &Path) -> Result<TeamName> {
    let teams = resume::unfinished_in(&ctx.teams, project);
    match teams.as_slice() {
        [one] => Ok(TeamName::new(one)?),
        [] => Err(Error::not_found(format!(
            "no unfinished team worked in {}; name one: swarm resume TEAM",
            project.display()
        ))),
        many => Err(Error::usage(format!(
            "several unfinished teams worked in {} ({}); name one: swarm resume TEAM",
            project.display(),
            many.join(", ")
        ))),
    }
}

/// Before `swarm run` starts a team in `project`: an unfinished team there is said, and on
/// a terminal offered (y/N) to resume instead. Returns the resumed run's exit code when the
/// person took the offer.
pub fn offer(ctx: &Ctx, project: &Path) -> Result<Option<u8>> {
    let teams = resume::unfinished_in(&ctx.teams, project);
    let Some(first) = teams.first() else {
        return Ok(None);
    };
    let names = teams.join(", ");
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        eprintln!(
            "swarm: note: team {names} in this project did not finish; `swarm resume {first}` brings it back"
        );
        return Ok(None);
    }
    print!("team {names} in this project did not finish. Resume {first} instead? [y/N] ");
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Error::io("read", "the answer", e))?;
    if !answer.trim().eq_ignore_ascii_case("y") {
        return Ok(None);
    }
    resume_team(ctx, &ctx.teams.connect(&TeamName::new(first)?)?, false).map(Some)
}
