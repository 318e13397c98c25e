//! The lead's MergeQueue tool: the team's merge queue ([`swarm_git::merge`]) as the lead
//! agent sees and drives it: list it, run it now, or retry a held branch.

use serde_json::Value;

use swarm_agent::tools::ToolOutcome;
use swarm_config::project::UserDirs;
use swarm_git::merge::{self, Options};
use swarm_store::Store;
use swarm_store::merge_queue;

/// `dirs` reaches teammates' worktrees on other hosts.
pub fn run(store: &Store, input: &Value, dirs: UserDirs) -> ToolOutcome {
    let opts = Options {
        dirs,
        ..Options::default()
    };
    let action = input.get("action").and_then(Value::as_str).unwrap_or("");
    let result: crate::error::Result<String> = match action {
        "status" => store.merge_queue().load().map_err(Into::into).map(|q| {
            if q.entries.is_empty() {
                "The merge queue is empty.".to_owned()
            } else {
                lines(&q.entries)
            }
        }),
        "run" => run_queue(store, &opts),
        "retry" => match input.get("branch").and_then(Value::as_str) {
            Some(branch) => merge::retry(store, branch)
                .map_err(Into::into)
                .and_then(|_| run_queue(store, &opts)),
            None => return ToolOutcome::err("retry needs the branch to retry"),
        },
        other => {
            return ToolOutcome::err(format!(
                "unknown action {other:?}; use status, run or retry"
            ));
        }
    };
    match result {
        Ok(text) => ToolOutcome::ok(text),
        Err(e) => ToolOutcome::err(e.to_string()),
    }
}

fn lines(entries: &[merge_queue::Entry]) -> String {
    entries
        .iter()
        .map(merge::describe)
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_queue(store: &Store, opts: &Options) -> crate::error::Result<String> {
    let outcome = merge::run(store, opts, &|_| {})?;
    if outcome.target.is_empty() {
        return Ok("Nothing to merge: no teammate works in a worktree.".to_owned());
    }
    let mut text = vec![lines(&outcome.entries)];
    text.extend(outcome.target_lines());
    Ok(text.join("\n"))
}
