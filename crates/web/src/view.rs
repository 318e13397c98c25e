//! What the page shows of one team, taken in one go through the store's seam and the team
//! crate's view of it (`status::observe`, the feed, the board): members, tasks, messages,
//! pending approvals, the merge queue and the spend against the budget. The page gets it
//! in named parts ([`TeamView::parts`]), each sent again only when it changed.
//!
//! Taking a view changes nothing the team sees, except that requests a Claude Code
//! teammate sent the lead are recorded (as `swarm approvals` and the dashboard do), so the
//! page can answer them.

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::Result;
use swarm_store::Store;
use swarm_store::approvals::{Approval, State};
use swarm_store::launch_record::LaunchRecord;
use swarm_store::merge_queue::{Entry, EntryState};
use swarm_store::tasks::Task;
use swarm_team::life::status::{self, MemberStatus};
use swarm_team::life::supervisor;
use swarm_team::views::board::{TaskState, board_order, task_state};
use swarm_team::views::feed::{FeedEntry, FeedReader};
use swarm_tmux::Tmux;
use swarm_util::meter::{Limits, Spend};

/// The newest messages the page gets; the API's `feed` has the same.
pub const FEED_ENTRIES: usize = 300;
/// A message's text is cut to this many bytes in the view (its first line stays whole).
const TEXT_BYTES: usize = 8 * 1024;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamView {
    pub team: String,
    pub description: Option<String>,
    /// False when the team's tmux server could not be asked (pane facts unknown).
    pub tmux_reachable: bool,
    pub members: Vec<MemberView>,
    /// In board order: active, ready, blocked, done.
    pub tasks: Vec<TaskView>,
    /// Oldest first, the newest [`FEED_ENTRIES`].
    pub feed: Vec<FeedEntry>,
    /// Pending requests, oldest first.
    pub approvals: Vec<Approval>,
    pub merge_queue: Vec<Entry>,
    pub budget: Option<BudgetView>,
    /// Parts that could not be read this time.
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    #[serde(flatten)]
    pub status: MemberStatus,
    /// The model provider its launch record names (`anthropic`, `openai`, `scripted`...).
    pub provider: Option<String>,
    /// Where it runs: `tmux %3`, or its backend.
    pub host: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskView {
    #[serde(flatten)]
    pub task: Task,
    /// Where it stands on the board.
    pub board: TaskState,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetView {
    pub limits: Limits,
    pub spent: Spend,
    /// The largest share of a limit spent (0.8 is 80 %).
    pub share: Option<f64>,
    /// "budget: 4200 tokens of 6000 (70 %)".
    pub line: String,
}

impl TeamView {
    /// The view of `store`'s team now; `tmux` is its server, if any. Fails only when the
    /// team itself cannot be read (no roster).
    pub fn take(store: &Store, tmux: Option<&Tmux>, feed: &mut FeedReader) -> Result<TeamView> {
        let seen = status::observe(store, tmux)?;
        let mut problems = Vec::new();
        if let Err(e) = supervisor::record_requests(store, &seen) {
            problems.push(format!("requests: {e}"));
        }
        let tasks = store.tasks().list().unwrap_or_else(|e| {
            problems.push(format!("tasks: {e}"));
            Vec::new()
        });
        let approvals = store.approvals().list().unwrap_or_else(|e| {
            problems.push(format!("approvals: {e}"));
            Vec::new()
        });
        let mut feed = feed.read(store).unwrap_or_else(|e| {
            problems.push(format!("messages: {e}"));
            Vec::new()
        });
        feed.drain(..feed.len().saturating_sub(FEED_ENTRIES));
        for e in &mut feed {
            cut(&mut e.text, TEXT_BYTES);
        }
        let merge_queue = store
            .merge_queue()
            .load()
            .map(|q| q.entries)
            .unwrap_or_else(|e| {
                problems.push(format!("merge queue: {e}"));
                Vec::new()
            })
            .into_iter()
            .filter(|e| e.state != EntryState::Abandoned)
            .collect();
        let budget = seen.budget.as_ref().map(|b| BudgetView {
            share: b.limits.most_spent(&b.spent).map(|(share, _)| share),
            line: b.describe(),
            limits: b.limits,
            spent: b.spent,
        });
        let members = seen
            .members
            .into_iter()
            .map(|m| MemberView {
                provider: store
                    .launches()
                    .read_launch(&m.name)
                    .ok()
                    .flatten()
                    .and_then(|r| provider_of(&r)),
                host: m.pane.as_ref().map(|p| format!("tmux {p}")),
                status: m,
            })
            .collect();
        let tasks = board_order(tasks);
        let tasks = tasks
            .iter()
            .map(|t| TaskView {
                board: task_state(t, |id| tasks.iter().find(|x| x.id == id)),
                task: t.clone(),
            })
            .collect();
        Ok(TeamView {
            team: seen.team,
            description: seen.description,
            tmux_reachable: seen.tmux_reachable,
            members,
            tasks,
            feed,
            approvals: approvals
                .into_iter()
                .filter(|a| a.state == State::Pending)
                .collect(),
            merge_queue,
            budget,
            problems,
        })
    }

    pub fn member(&self, name: &str) -> Option<&MemberView> {
        self.members.iter().find(|m| m.status.name == name)
    }

    /// The view in the parts the page is sent, by name.
    pub fn parts(&self) -> Vec<(&'static str, Value)> {
        vec![
            (
                "team",
                json!({
                    "team": self.team,
                    "description": self.description,
                    "tmuxReachable": self.tmux_reachable,
                    "budget": self.budget,
                    "problems": self.problems,
                }),
            ),
            ("members", value(&self.members)),
            ("tasks", value(&self.tasks)),
            ("feed", value(&self.feed)),
            ("approvals", value(&self.approvals)),
            ("mergeQueue", value(&self.merge_queue)),
        ]
    }
}

/// Plain data as a JSON value (it always serializes).
fn value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("plain data serializes")
}

/// The provider a launch record's argv names (`--provider X` or `--provider=X`); a Claude
/// Code teammate talks to Anthropic.
fn provider_of(record: &LaunchRecord) -> Option<String> {
    let argv = &record.argv;
    let named = argv.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix("--provider=")
            .map(str::to_owned)
            .or_else(|| {
                (a == "--provider")
                    .then(|| argv.get(i + 1).cloned())
                    .flatten()
            })
    });
    named.or_else(|| (record.engine.as_deref() == Some("claude")).then(|| "anthropic".to_owned()))
}

/// Cuts `text` to at most `max` bytes on a character boundary, marking the cut.
fn cut(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let end = text.floor_char_boundary(max);
    text.truncate(end);
    text.push_str(" …");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_provider_comes_from_the_launch_argv() {
        let record = |argv: &[&str], engine: Option<&str>| LaunchRecord {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
            secret_names: Vec::new(),
            cwd: "/".into(),
            engine: engine.map(str::to_owned),
            host: None,
            sig: None,
        };
        assert_eq!(
            provider_of(&record(
                &["swarm", "teammate", "--provider", "scripted"],
                None
            ))
            .as_deref(),
            Some("scripted")
        );
        assert_eq!(
            provider_of(&record(&["swarm", "--provider=openai"], None)).as_deref(),
            Some("openai")
        );
        assert_eq!(
            provider_of(&record(&["claude"], Some("claude"))).as_deref(),
            Some("anthropic")
        );
        assert_eq!(provider_of(&record(&["swarm", "--provider"], None)), None);
    }

    #[test]
    fn long_texts_are_cut_on_a_character_boundary() {
        let mut text = "é".repeat(10);
        cut(&mut text, 5);
        assert_eq!(text, "éé …");
        let mut short = "hello".to_owned();
        cut(&mut short, 5);
        assert_eq!(short, "hello");
    }
}
