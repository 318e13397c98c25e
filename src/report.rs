//! The final report of a run: what was asked, what each task came to and who did it, which
//! files changed, and what every agent spent. Written to `teams/<team>/report.md`.

use std::path::Path;
use std::process::Command;

use crate::names::TeamName;
use crate::root::Root;
use crate::state;
use crate::status;
use crate::tasks::{Status, TaskList};

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

/// Files changed in `cwd` since `base` (committed or not), as `git status --short` lines.
fn changed_files(cwd: &Path) -> Option<Vec<String>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(["status", "--porcelain=v1", "--untracked-files=all"])
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

pub fn render(root: &Root, team: &TeamName, goal: &str, outcome: &str, cwd: &Path) -> String {
    let mut out = format!(
        "# swarm report: team {team}\n\nGoal: {}\n\nResult: {outcome}\n\n## Tasks\n\n",
        goal.trim()
    );
    let tasks = TaskList::new(root, team).list().unwrap_or_default();
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
    out.push_str("\n## Who did what\n\n");
    let mut total_in = 0u64;
    let mut total_out = 0u64;
    let mut total_cost = 0f64;
    for (name, m) in state::all(root, team) {
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
        out.push_str(&format!(
            "- {}: {} · {} model calls, {} tokens in, {} out{}\n",
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
    out.push_str(&format!("\n## Files changed in {}\n\n", cwd.display()));
    match changed_files(cwd) {
        Some(files) if files.is_empty() => out.push_str("(none)\n"),
        Some(files) => {
            for f in files {
                out.push_str(&format!("    {f}\n"));
            }
        }
        None => out.push_str("(not a git repository)\n"),
    }
    out
}

/// Writes the report next to the roster and returns its path.
pub fn write(root: &Root, team: &TeamName, text: &str) -> std::path::PathBuf {
    let path = root.team_dir(team).join("report.md");
    if let Err(e) = crate::atomic::write(&path, text.as_bytes()) {
        tracing::warn!("failed to write {}: {e}", path.display());
    }
    path
}
