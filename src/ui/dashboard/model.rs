//! What the dashboard shows, as plain data: a [`Snapshot`] of the team taken in one go
//! (members from [`status::observe`], the task board, the message feed, pending approvals),
//! and the [`Source`] that takes it.
//!
//! The view renders only from a snapshot, never from the filesystem, so a snapshot built by
//! hand renders exactly like one read from disk. Taking a snapshot changes nothing the team
//! sees (like every inbox reader, it may commit a message a dead sender left in a spool, or
//! move a corrupt inbox aside); the dashboard changes the team only when a person resolves
//! an approval.

use jiff::tz::TimeZone;

use swarm::error::Result;
use swarm_store::Store;
use swarm_store::approvals::{self, Approval};
use swarm_store::tasks::{Status, Task};
use swarm_team::life::status::{self, MemberStatus};
use swarm_team::views::board::task_state;
pub use swarm_team::views::board::{TaskState, board_order};
use swarm_team::views::feed::{FeedEntry, FeedReader};
use swarm_tmux::Tmux;
use swarm_util::clock;

/// The team at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub team: String,
    pub description: Option<String>,
    /// When it was taken (epoch ms); every "ago" is relative to this.
    pub now_ms: i64,
    /// Where clock times in the feed are shown.
    pub tz: TimeZone,
    /// False when the team's tmux server could not be asked (pane facts unknown).
    pub tmux_reachable: bool,
    /// In roster order (the lead first).
    pub members: Vec<MemberStatus>,
    /// In board order (see [`board_order`]), internal tasks left out.
    pub tasks: Vec<Task>,
    /// Oldest first, newest last.
    pub feed: Vec<FeedEntry>,
    /// Pending requests only, oldest first.
    pub approvals: Vec<Approval>,
    /// Parts that could not be read this time (shown in the header).
    pub problems: Vec<String>,
    /// The team's spend against its budget, when a run gave it one.
    pub budget: Option<String>,
    /// The merge queue in one line ("merge queue: 2 merged · 1 conflict"), when there is one.
    pub merge_queue: Option<String>,
}

impl Snapshot {
    /// A snapshot with nothing in it yet.
    #[cfg(test)]
    pub fn empty(team: &str) -> Snapshot {
        Snapshot {
            team: team.to_owned(),
            description: None,
            now_ms: clock::now_ms(),
            tz: TimeZone::system(),
            tmux_reachable: false,
            members: Vec::new(),
            tasks: Vec::new(),
            feed: Vec::new(),
            approvals: Vec::new(),
            problems: Vec::new(),
            budget: None,
            merge_queue: None,
        }
    }

    pub fn member(&self, name: &str) -> Option<&MemberStatus> {
        self.members.iter().find(|m| m.name == name)
    }

    /// A member's palette colour (`blue`, `purple`, ...), by name or `<name>@<team>`.
    pub fn colour_of(&self, name: &str) -> Option<&str> {
        let short = name.split('@').next().unwrap_or(name);
        self.member(short).and_then(|m| m.color.as_deref())
    }

    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    pub fn task_state(&self, t: &Task) -> TaskState {
        task_state(t, |id| self.task(id))
    }

    /// The blockers of `t` that are not completed yet (missing ones count as open).
    pub fn open_blockers<'a>(&self, t: &'a Task) -> Vec<&'a str> {
        t.blocked_by
            .iter()
            .filter(|b| self.task(b).is_none_or(|b| b.status != Status::Completed))
            .map(String::as_str)
            .collect()
    }

    pub fn approval(&self, id: &str) -> Option<&Approval> {
        self.approvals.iter().find(|a| a.request_id == id)
    }
}

/// Takes snapshots of one team.
#[derive(Debug)]
pub struct Source {
    store: Store,
    tmux: Option<Tmux>,
    feed: FeedReader,
    tz: TimeZone,
}

impl Source {
    /// `tmux` is the team's server, if it has one (`team::window::server_for`).
    pub fn new(store: Store, tmux: Option<Tmux>) -> Source {
        Source {
            store,
            tmux,
            feed: FeedReader::new(),
            tz: TimeZone::system(),
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn tmux(&self) -> Option<&Tmux> {
        self.tmux.as_ref()
    }

    /// Looks at the team now. Fails only if the team itself cannot be read (no roster);
    /// a part that cannot be read is left empty and named in `problems`.
    pub fn load(&mut self) -> Result<Snapshot> {
        let seen = status::observe(&self.store, self.tmux.as_ref())?;
        let mut problems = Vec::new();
        // A Claude Code teammate records nothing itself: its requests are recorded here
        // too, so the `a`/`r` keys answer them with no `swarm lead` running.
        if let Err(e) = swarm_team::life::supervisor::record_requests(&self.store, &seen) {
            problems.push(format!("requests: {e}"));
        }
        let tasks = self.store.tasks().list().unwrap_or_else(|e| {
            problems.push(format!("tasks: {e}"));
            Vec::new()
        });
        let approvals = self
            .store
            .approvals()
            .list()
            .unwrap_or_else(|e| {
                problems.push(format!("approvals: {e}"));
                Vec::new()
            })
            .into_iter()
            .filter(|a| a.state == approvals::State::Pending)
            .collect();
        let feed = self.feed.read(&self.store).unwrap_or_else(|e| {
            problems.push(format!("messages: {e}"));
            Vec::new()
        });
        let budget = seen.budget.as_ref().map(|b| b.describe());
        let merge_queue = self
            .store
            .merge_queue()
            .load()
            .ok()
            .and_then(|q| merge_queue_line(&q));
        Ok(Snapshot {
            budget,
            merge_queue,
            team: seen.team,
            description: seen.description,
            now_ms: clock::now_ms(),
            tz: self.tz.clone(),
            tmux_reachable: seen.tmux_reachable,
            members: seen.members,
            tasks: board_order(tasks),
            feed,
            approvals,
            problems,
        })
    }
}

/// The queue's entries counted by state, in the order they happen.
fn merge_queue_line(queue: &swarm_store::merge_queue::Queue) -> Option<String> {
    use swarm_store::merge_queue::EntryState::*;
    let counts: Vec<String> = [Queued, Merging, Checking, Merged, Conflict, CheckFailed]
        .into_iter()
        .filter_map(|state| {
            let n = queue.entries.iter().filter(|e| e.state == state).count();
            (n > 0).then(|| format!("{n} {}", state.as_str()))
        })
        .collect();
    (!counts.is_empty()).then(|| format!("merge queue: {}", counts.join(" · ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_merge_queue_is_counted_by_state_in_the_order_things_happen() {
        use swarm_store::merge_queue::{Entry, EntryState, Queue};
        let entry = |state| Entry {
            agent: "a".into(),
            branch: "b".into(),
            task: None,
            base: String::new(),
            head: String::new(),
            state,
            queued_at: 0,
            updated_at: 0,
            conflicts: Vec::new(),
            check_output: None,
            merged_commit: None,
            handed_back: None,
        };
        let mut queue = Queue::default();
        assert_eq!(merge_queue_line(&queue), None);
        queue.entries = vec![
            entry(EntryState::Conflict),
            entry(EntryState::Merged),
            entry(EntryState::Abandoned),
            entry(EntryState::Merged),
            entry(EntryState::Queued),
        ];
        assert_eq!(
            merge_queue_line(&queue).as_deref(),
            Some("merge queue: 1 queued · 2 merged · 1 conflict")
        );
    }
}
