//! The final report of a run: what was asked, what each task came to and who did it, which
//! files changed, and what every agent spent. Written to `teams/<team>/report.md`.
//!
//! Who did what comes from the task list, not from messages: Claude Code teammates never
//! send `completedTaskId`, and keep no state file of swarm's, yet their finished tasks count.

use std::path::Path;
use std::process::Command;

use crate::life::status;
use swarm_git::worktree;
use swarm_store::Store;
use swarm_store::state::AgentState;
use swarm_store::tasks::{Status, Task};
use swarm_store::worktrees::RecordState;

/// `git rev-parse HEAD` in `cwd`, if it is a repository with a commit.
pub fn git_head(cwd: &Path) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn git_lines(cwd: &Path, args: &[&str]) -> Option<Vec<String>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(args)
        .output()
        .ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim_end().to_owned())
            .filter(|l| !l.is_empty())
            .collect()
    })
}

/// Files changed in `cwd`: committed since `base` (`git diff --name-status` lines), then
/// what is not committed (`git status --short` lines).
fn changed_files(cwd: &Path, base: Option<&str>) -> Option<Vec<String>> {
    let mut lines = Vec::new();
    if let Some(base) = base {
        let committed = git_lines(cwd, &["diff", "--name-status", base, "HEAD", "--"])?;
        lines.extend(committed.into_iter().map(|l| {
            let (status, path) = l.split_once('\t').unwrap_or(("?", &l));
            format!("{status:>2} {path} (committed)")
        }));
    }
    lines.extend(git_lines(
        cwd,
        &["status", "--porcelain=v1", "--untracked-files=all"],
    )?);
    Some(lines)
}

/// The report. `base` is the commit `cwd` was at when the run began.
pub fn render(store: &Store, goal: &str, outcome: &str, cwd: &Path, base: Option<&str>) -> String {
    let team = store.team();
    let mut out = format!(
        "# swarm report: team {team}\n\nGoal: {}\n\nResult: {outcome}\n\n## Tasks\n\n",
        goal.trim()
    );
    let tasks = store.tasks().list().unwrap_or_default();
    for t in &tasks {
        let mark = match t.status {
            Status::Completed => "x",
            Status::InProgress => "~",
            Status::Pending => " ",
        };
        out.push_str(&format!(
            "- [{mark}] #{} {}{}{}\n",
            t.id,
            t.subject,
            t.owner
                .as_ref()
                .map(|o| format!(" ({o})"))
                .unwrap_or_default(),
            if t.blocked_by.is_empty() {
                String::new()
            } else {
                format!(" after #{}", t.blocked_by.join(", #"))
            }
        ));
    }
    if tasks.is_empty() {
        out.push_str("(no tasks)\n");
    }
    out.push_str(&who_did_what(&tasks, store.agents().all_states()));
    out.push_str(&format!("\n## Files changed in {}\n\n", cwd.display()));
    match changed_files(cwd, base) {
        Some(files) if files.is_empty() => out.push_str("(none)\n"),
        Some(files) => {
            for f in files {
                out.push_str(&format!("    {f}\n"));
            }
        }
        None => out.push_str("(not a git repository)\n"),
    }
    out.push_str(&kept_worktrees(store));
    out.push_str(&merge_queue(store));
    out
}

/// Each agent's completed tasks and spend, then the task owners swarm keeps no usage for
/// (Claude Code teammates), then the team's total.
fn who_did_what(tasks: &[Task], states: Vec<(String, AgentState)>) -> String {
    let mut out = "\n## Who did what\n\n".to_owned();
    let mut total_in = 0u64;
    let mut total_out = 0u64;
    let mut total_cost = 0f64;
    // Task owners swarm keeps no usage for (Claude Code teammates), after those it does.
    let mut unmetered: Vec<&str> = tasks
        .iter()
        .filter(|t| t.status == Status::Completed)
        .filter_map(|t| t.owner.as_deref()?.split('@').next())
        .filter(|o| !states.iter().any(|(n, _)| n == o))
        .collect();
    unmetered.sort_unstable();
    unmetered.dedup();
    for (name, m) in states {
        let done: Vec<String> = tasks
            .iter()
            .filter(|t| t.status == Status::Completed && t.owned_by(&name))
            .map(|t| format!("#{}", t.id))
            .collect();
        let tokens_in = m.usage.input_tokens
            + m.usage.cache_read_input_tokens
            + m.usage.cache_creation_input_tokens;
        total_in += tokens_in;
        total_out += m.usage.output_tokens;
        total_cost += m.cost_usd;
        let mut on = status::provider_model(m.provider.as_deref(), m.model.as_deref())
            .map(|pm| format!(" ({pm})"))
            .unwrap_or_default();
        if let Some(host) = m
            .host
            .as_deref()
            .filter(|h| !swarm_store::liveness::is_here(Some(h)))
        {
            on.push_str(&format!(" on {host}"));
        }
        out.push_str(&format!(
            "- {}{on}: {} · {} model calls, {} tokens in, {} out{}\n",
            name,
            if done.is_empty() {
                "no tasks completed".to_owned()
            } else {
                format!("completed {}", done.join(", "))
            },
            m.model_calls,
            status::tokens(tokens_in),
            status::tokens(m.usage.output_tokens),
            if m.cost_usd > 0.0 {
                format!(", ~${:.4}", m.cost_usd)
            } else {
                String::new()
            }
        ));
    }
    for name in unmetered {
        let done: Vec<String> = tasks
            .iter()
            .filter(|t| t.status == Status::Completed && t.owned_by(name))
            .map(|t| format!("#{}", t.id))
            .collect();
        out.push_str(&format!(
            "- {name}: completed {} · usage not recorded by swarm\n",
            done.join(", ")
        ));
    }
    out.push_str(&format!(
        "- total: {} tokens in, {} out{}\n",
        status::tokens(total_in),
        status::tokens(total_out),
        if total_cost > 0.0 {
            format!(", ~${total_cost:.4}")
        } else {
            String::new()
        }
    ));
    out
}

/// The teammates' worktrees kept because they hold work, when there are any.
fn kept_worktrees(store: &Store) -> String {
    let kept: Vec<_> = store
        .worktrees()
        .all_worktrees()
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.state == RecordState::Kept)
        .collect();
    let mut out = String::new();
    if !kept.is_empty() {
        out.push_str("\n## Work kept in worktrees\n\n");
        for r in kept {
            let changes = match &r.host {
                // The report goes over no network: the merge queue fetches it.
                Some(host) => format!("on host {host}"),
                None => worktree::changes(&r)
                    .map(|c| c.describe())
                    .unwrap_or_else(|e| e.to_string()),
            };
            out.push_str(&format!(
                "- {}: branch {} at {} ({changes})\n",
                r.agent,
                r.branch,
                r.path.display()
            ));
        }
    }
    out
}

/// What the merge queue landed and what it holds for a person, when there is a queue.
fn merge_queue(store: &Store) -> String {
    let Ok(queue) = store.merge_queue().load() else {
        return String::new();
    };
    if queue.entries.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\n## Merge queue (onto {})\n\n",
        queue
            .target
            .as_deref()
            .unwrap_or("the team's starting branch")
    );
    for e in &queue.entries {
        let task = e
            .task
            .as_ref()
            .map(|t| format!(", task #{t}"))
            .unwrap_or_default();
        let why = match (&e.merged_commit, e.conflicts.is_empty(), &e.check_output) {
            (Some(c), _, _) => format!(" as {}", &c[..c.len().min(12)]),
            (None, false, _) => format!(": conflicts in {}", e.conflicts.join(", ")),
            (None, true, Some(_)) => {
                ": its check failed (`swarm merge --status` shows the output)".to_owned()
            }
            _ => String::new(),
        };
        let fate = match e.handed_back.as_deref() {
            Some(t) if t.starts_with('#') => format!("; handed back as task {t}"),
            Some(why) => format!("; held for you: {why}"),
            None => String::new(),
        };
        out.push_str(&format!(
            "- {} ({}{task}): {}{why}{fate}\n",
            e.branch,
            e.agent,
            e.state.as_str()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn tasks_finished_by_a_member_without_swarm_state_are_credited() {
        use swarm_store::tasks::{NewTask, TaskPatch};
        let t = tempfile::tempdir().unwrap();
        let root = swarm_store::Root::new(t.path());
        let team = swarm_util::names::TeamName::new("t").unwrap();
        let store = swarm_store::Teams::new(root.clone())
            .create_team(&team, None, t.path())
            .unwrap();
        let list = store.tasks();
        let task = list
            .create(NewTask {
                subject: "Review".into(),
                ..NewTask::default()
            })
            .unwrap();
        // As a Claude Code teammate leaves it: owner and status set, no completedTaskId sent,
        // no state file.
        let patch = TaskPatch {
            owner: Some(Some("reviewer".into())),
            status: Some(Status::Completed),
            ..TaskPatch::default()
        };
        list.update(&task.id, patch).unwrap();
        let report = render(&store, "goal", "done", t.path(), None);
        assert!(
            report.contains("- reviewer: completed #1 · usage not recorded by swarm\n"),
            "{report}"
        );
    }

    #[test]
    fn the_merge_queue_says_what_landed_and_what_is_held() {
        use swarm_store::merge_queue::{Entry, EntryState};
        let t = tempfile::tempdir().unwrap();
        let root = swarm_store::Root::new(t.path());
        let team = swarm_util::names::TeamName::new("t").unwrap();
        let store = swarm_store::Teams::new(root.clone())
            .create_team(&team, None, t.path())
            .unwrap();
        assert!(!render(&store, "goal", "done", t.path(), None).contains("Merge queue"));
        let entry = |agent: &str, state, merged: Option<&str>, conflicts: &[&str]| Entry {
            agent: agent.into(),
            branch: format!("swarm/t/{agent}"),
            task: Some("3".into()),
            base: "b".into(),
            head: "h".into(),
            state,
            queued_at: 0,
            updated_at: 0,
            conflicts: conflicts.iter().map(|c| c.to_string()).collect(),
            check_output: None,
            merged_commit: merged.map(str::to_owned),
            handed_back: None,
        };
        store
            .merge_queue()
            .update(|q| {
                q.target = Some("main".into());
                q.entries.push(entry(
                    "alice",
                    EntryState::Merged,
                    Some("0123456789abcdef"),
                    &[],
                ));
                q.entries
                    .push(entry("bob", EntryState::Conflict, None, &["README.md"]));
            })
            .unwrap();
        let report = render(&store, "goal", "done", t.path(), None);
        assert!(report.contains("## Merge queue (onto main)"), "{report}");
        assert!(
            report.contains("- swarm/t/alice (alice, task #3): merged as 0123456789ab\n"),
            "{report}"
        );
        assert!(
            report.contains("- swarm/t/bob (bob, task #3): conflict: conflicts in README.md\n"),
            "{report}"
        );
    }

    #[test]
    fn files_changed_counts_commits_since_the_start_and_what_is_not_committed() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path();
        git(repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("old.txt"), "old\n").unwrap();
        git(repo, &["add", "."]);
        git(repo, &["commit", "-q", "-m", "first"]);
        let base = git_head(repo).unwrap();
        std::fs::write(repo.join("new.txt"), "new\n").unwrap();
        std::fs::write(repo.join("old.txt"), "changed\n").unwrap();
        git(repo, &["add", "."]);
        git(repo, &["commit", "-q", "-m", "work"]);
        std::fs::write(repo.join("loose.txt"), "loose\n").unwrap();
        assert_eq!(
            changed_files(repo, Some(&base)).unwrap(),
            [
                " A new.txt (committed)",
                " M old.txt (committed)",
                "?? loose.txt"
            ]
        );
        assert_eq!(changed_files(repo, None).unwrap(), ["?? loose.txt"]);
        assert_eq!(changed_files(&repo.join("nope"), None), None);
    }
}
