//! `swarm merge`: run the team's merge queue by hand, or list it (`--status`).

use crate::store::merge_queue::{self, Entry};
use crate::team::merge::{self, Options};
use crate::ui::cli::args::MergeArgs;
use crate::ui::cli::context::Ctx;
use crate::ui::cli::output::print_json;
use crate::util::error::{Error, Result};

fn line(e: &Entry) -> String {
    let mut s = format!("{:<12} {} ({})", e.state.as_str(), e.branch, e.agent);
    if let Some(c) = &e.merged_commit {
        s.push_str(&format!(" as {}", &c[..c.len().min(12)]));
    }
    if !e.conflicts.is_empty() {
        s.push_str(&format!(": conflicts in {}", e.conflicts.join(", ")));
    }
    if let Some(out) = &e.check_output {
        s.push_str(&format!(
            ": check failed: {}",
            out.lines().last().unwrap_or("").trim()
        ));
    }
    match e.handed_back.as_deref() {
        Some(task) if task.starts_with('#') => {
            s.push_str(&format!("; handed back to {} as task {task}", e.agent));
        }
        Some(why) => s.push_str(&format!("; held for you: {why}")),
        None => {}
    }
    s
}

pub fn run(ctx: &Ctx, args: MergeArgs) -> Result<u8> {
    let team = ctx.team_or(args.team.as_deref())?;
    crate::store::roster::load(&ctx.root, &team)?;
    if args.status {
        let queue = merge_queue::load(&ctx.root, &team)?;
        if ctx.json() {
            print_json(&queue);
        } else if queue.entries.is_empty() {
            println!("the merge queue of {team} is empty");
        } else {
            for e in &queue.entries {
                println!("{}", line(e));
            }
        }
        return Ok(0);
    }
    let opts = Options {
        into: args.into,
        check: args.check,
        strategy: args.merge_strategy,
        dry_run: args.dry_run,
    };
    let quiet = ctx.json();
    let outcome = merge::run(&ctx.root, &team, &opts, &|e| {
        if !quiet {
            println!("{}", line(e));
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
