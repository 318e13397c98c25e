//! `swarm merge`: run the team's merge queue by hand, or list it (`--status`).

use clap::Args;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::options::MergeOpts;
use crate::ui::cli::output::print_json;
use swarm::error::{Error, Result};
use swarm_git::merge;
use swarm_util::error::Base as _;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The team [default: --team, else the only team]
    pub team: Option<String>,
    #[command(flatten)]
    pub merge: MergeOpts,
    /// Only list what would be queued and merged
    #[arg(long)]
    pub dry_run: bool,
    /// Put the held entry of this branch back in the queue, then run the queue
    #[arg(long, value_name = "BRANCH", conflicts_with = "dry_run")]
    pub retry: Option<String>,
    /// List the queue's entries and their states, and change nothing
    #[arg(long, conflicts_with_all = ["check", "into", "dry_run", "retry"])]
    pub status: bool,
}

pub fn run(ctx: &Ctx, args: MergeArgs) -> Result<u8> {
    let store = ctx.team_or(args.team.as_deref())?;
    let team = store.team();
    store.roster().load()?;
    if args.status {
        let queue = store.merge_queue().load()?;
        if ctx.json() {
            print_json(&queue);
        } else if queue.entries.is_empty() {
            println!("the merge queue of {team} is empty");
        } else {
            for e in &queue.entries {
                println!("{}", merge::describe(e));
            }
        }
        return Ok(0);
    }
    let opts = args.merge.options(args.dry_run, &ctx.profile.settings.dirs);
    if let Some(branch) = &args.retry {
        let e = merge::retry(&store, branch)?;
        if !ctx.json() {
            println!("{} is queued again", e.branch);
        }
    }
    let quiet = ctx.json();
    let outcome = merge::run(&store, &opts, &|e| {
        if !quiet {
            println!("{}", merge::describe(e));
        }
    })?;
    if outcome.target.is_empty() && !ctx.json() {
        println!(
            "nothing to merge: team {team} has no teammate worktrees (spawn teammates with --isolation worktree)"
        );
        return Ok(0);
    }
    if ctx.json() {
        print_json(&serde_json::json!({
            "target": outcome.target,
            "targetCommit": outcome.target_commit,
            "leftOnIntegration": outcome.left_on_integration,
            "entries": outcome.entries,
            "removed": outcome.removed,
        }));
    } else {
        if args.dry_run {
            for e in outcome.entries.iter().filter(|e| e.state.pending()) {
                println!("would merge {} ({})", e.branch, e.agent);
            }
        }
        println!("{} is at {}", outcome.target, outcome.target_commit);
        if let Some(why) = &outcome.left_on_integration {
            println!("{why}");
        }
        for line in &outcome.removed {
            println!("{line}");
        }
    }
    match outcome.held() {
        0 => Ok(0),
        n => Err(Error::conflict(format!(
            "{n} branch(es) held (conflict or failed check); see `swarm merge --status`, fix them on their branches and run `swarm merge` again"
        ))),
    }
}
