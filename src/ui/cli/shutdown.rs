//! `swarm shutdown`: the shutdown ladder, for one teammate or all of them.

use std::time::Duration;

use clap::Args;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::output::print_json;
use swarm::error::{Error, Result};
use swarm_team::life::shutdown::{self, LadderOptions, Outcome};
use swarm_util::error::Base as _;
use swarm_util::names::LEAD;

#[derive(Debug, Args)]
pub struct ShutdownArgs {
    /// The teammate to stop
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub name: Option<String>,
    /// Every teammate
    #[arg(long)]
    pub all: bool,
    /// How long to wait for a teammate to agree and exit before terminating it
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub timeout: humantime::Duration,
    /// Do not ask: terminate at once
    #[arg(long)]
    pub force: bool,
}

pub fn run(ctx: &Ctx, args: ShutdownArgs) -> Result<()> {
    let store = ctx.team()?;
    let tmux = ctx.team_tmux(&store)?;
    let opts = LadderOptions {
        timeout: args.timeout.into(),
        force: args.force,
        grace: Duration::from_secs(5),
        dirs: ctx.profile.settings.dirs.clone(),
    };
    let config = store.roster().load()?;
    let names: Vec<String> = match &args.name {
        Some(n) => {
            config.require(n)?;
            if n == LEAD {
                return Err(Error::usage(
                    "the lead is not shut down this way; stop it in its pane (Ctrl-C) or delete the team",
                ));
            }
            vec![n.clone()]
        }
        None => config.teammates().map(|m| m.name.clone()).collect(),
    };
    let quiet = ctx.json();
    let results = shutdown::shut_down_all(&store, Some(&tmux), &names, &opts, &|line| {
        if !quiet {
            println!("{line}");
        }
    });
    let mut rejected = Vec::new();
    let mut reports = Vec::new();
    for r in results {
        let r = r?;
        if let Outcome::Rejected(reason) = &r.outcome {
            rejected.push(format!("{} ({reason})", r.name));
        }
        reports.push(serde_json::json!({"name": r.name, "outcome": format!("{:?}", r.outcome), "steps": r.steps}));
    }
    if ctx.json() {
        print_json(&reports);
    }
    if rejected.is_empty() {
        Ok(())
    } else {
        Err(Error::conflict(format!(
            "refused to shut down: {}; pass --force to terminate anyway",
            rejected.join(", ")
        )))
    }
}
