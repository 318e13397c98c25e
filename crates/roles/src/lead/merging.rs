//! The lead's side of the merge queue ([`swarm_git::merge`]): it runs the queue in the
//! background whenever a teammate's work may have become mergeable (one more task
//! completed, a teammate stopped), so the lead keeps reading its mail while a long check
//! runs, and turns each run's outcome into notes for the lead's model.
//!
//! A branch handed back to a teammate that is no longer running restarts that teammate,
//! with its conversation and in its worktree, to do the task (see
//! [`swarm_team::life::resume::respawn_for_merge`]).
//!
//! Invariant: one run at a time per team (the queue's own run lock also keeps the lead's
//! MergeQueue tool and a person's `swarm merge` out of each other's way). The run is
//! "settled" only when no run is going and none is due, which the lead waits for before
//! it calls the goal done.

use std::collections::HashSet;

use tokio::task::JoinHandle;

use crate::error::Result;
use swarm_git::merge::{self, Options, Outcome};
use swarm_store::TaskBoard;
use swarm_store::merge_queue::Entry;
use swarm_store::state::Activity;
use swarm_store::tasks::Status;
use swarm_team::life::resume;
use swarm_team::spawn::launch::Launcher;
use swarm_util::names::AgentName;

/// What one run came to, for the lead.
#[derive(Debug, Default)]
pub struct News {
    /// Lines for the lead's next turn.
    pub lines: Vec<String>,
    /// Something the lead should act on now: work handed back, held, or a failed run.
    pub urgent: bool,
}

/// A run's outcome, and what it said of the teammates it restarted.
type Ran = (Outcome, Vec<String>);

pub struct Merging {
    launcher: Launcher,
    completed: usize,
    due: bool,
    job: Option<JoinHandle<Result<Ran>>>,
    /// Entries already told, by branch, head and state.
    told: HashSet<(String, String, &'static str)>,
}

impl Merging {
    pub fn new(launcher: Launcher) -> Merging {
        Merging {
            launcher,
            completed: 0,
            due: false,
            job: None,
            told: HashSet::new(),
        }
    }

    /// Marks a run due when more tasks are completed than at the last look.
    pub fn watch(&mut self, tasks: &dyn TaskBoard) {
        let completed = tasks.list().map_or(0, |t| {
            t.iter().filter(|t| t.status == Status::Completed).count()
        });
        if completed > self.completed {
            self.due = true;
        }
        self.completed = completed;
    }

    /// A teammate stopped: whatever it committed may now be merged.
    pub fn poke(&mut self) {
        self.due = true;
    }

    /// No run is going and none is due.
    pub fn settled(&self) -> bool {
        self.job.is_none() && !self.due
    }

    /// Collects a finished run's news, and starts a run when one is due and none is going.
    pub async fn step(&mut self) -> Option<News> {
        let mut news = None;
        if self.job.as_ref().is_some_and(JoinHandle::is_finished)
            && let Some(job) = self.job.take()
        {
            news = Some(match job.await {
                Ok(Ok((outcome, restarted))) => self.news(&outcome, restarted),
                Ok(Err(e)) => News {
                    lines: vec![format!("The merge queue failed: {e}")],
                    urgent: true,
                },
                Err(e) => News {
                    lines: vec![format!("The merge queue's run panicked: {e}")],
                    urgent: true,
                },
            });
        }
        if self.due && self.job.is_none() {
            self.due = false;
            let launcher = self.launcher.clone();
            self.job = Some(tokio::task::spawn_blocking(move || run_once(&launcher)));
        }
        news
    }

    fn news(&mut self, outcome: &Outcome, restarted: Vec<String>) -> News {
        let mut news = News::default();
        for e in &outcome.entries {
            if !(e.state.held() || e.state == swarm_store::merge_queue::EntryState::Merged) {
                continue;
            }
            if self
                .told
                .insert((e.branch.clone(), e.head.clone(), e.state.as_str()))
            {
                news.urgent |= e.state.held();
                news.lines
                    .push(format!("Merge queue: {}", merge::describe(e)));
            }
        }
        news.lines.extend(restarted);
        if !news.lines.is_empty() {
            news.lines.extend(outcome.target_lines());
        }
        news
    }
}

/// One run of the queue, then a restart for each teammate handed a task that is not
/// running to do it.
fn run_once(launcher: &Launcher) -> Result<Ran> {
    let store = &launcher.store;
    let before: HashSet<(String, String)> = store
        .merge_queue()
        .load()?
        .entries
        .iter()
        .filter(|e| handed_back(e))
        .map(|e| (e.branch.clone(), e.head.clone()))
        .collect();
    let only_completed = Options {
        completed_work_only: true,
        restarts_owners: true,
        dirs: launcher.dirs.clone(),
        ..Options::default()
    };
    let outcome = merge::run(store, &only_completed, &|_| {})?;
    let mut restarted = Vec::new();
    let now = outcome
        .entries
        .iter()
        .filter(|e| handed_back(e) && !before.contains(&(e.branch.clone(), e.head.clone())));
    for e in now {
        if running(launcher, &e.agent) {
            continue;
        }
        let how = resume::respawn_for_merge(launcher, &e.agent)
            .unwrap_or_else(|err| format!("not restarted: {err}"));
        restarted.push(format!(
            "{} was not running, for the task its branch was handed back as: {how}",
            e.agent
        ));
    }
    Ok((outcome, restarted))
}

fn handed_back(e: &Entry) -> bool {
    e.state.held() && e.handed_back.as_deref().is_some_and(|t| t.starts_with('#'))
}

fn running(launcher: &Launcher, agent: &str) -> bool {
    let Ok(name) = AgentName::parse_any(agent) else {
        return false;
    };
    let store = &launcher.store;
    store
        .agents()
        .read_state(&name)
        .is_some_and(|s| s.activity != Activity::Exited && store.still_runs(&s))
}
