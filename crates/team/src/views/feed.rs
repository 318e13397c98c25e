//! The message feed: every message of the team, from every inbox, as one time-ordered list
//! of one-line entries, newest last, as `swarm watch` and `swarm serve` show it.
//!
//! Sources are each agent's live inbox (`<agent>.json`, messages not yet put in front of
//! their reader, shown as unread) and delivered log (`<agent>.delivered.jsonl`). Live
//! inboxes stay small by design and are read whole; delivered logs only grow, so they are
//! tailed: [`FeedReader`] keeps the store's cursor on each one and takes in only what was
//! appended since (a torn last line is left for the next read). A message seen in both
//! places (between the log append and the inbox rewrite of an acknowledgement) appears once.
//! Claude Code keeps no delivered log: it deletes what it takes from its inbox. So an entry
//! seen in a live inbox that is gone at the next read without reaching the log is kept, as
//! read; only what was taken before the reader first looked is lost.
//!
//! Idle notifications are folded: a run of plain idle notifications from one teammate, with
//! nothing else from it in between, shows as one entry (the latest, with a count), so a
//! chatty teammate cannot flood the feed. Idle notifications that report a finished or
//! failed task are kept, since they say something.

use std::collections::{HashMap, HashSet, VecDeque};

use serde::Serialize;

use crate::error::Result;
use swarm_store::Store;
use swarm_store::mailbox::{self, Envelope};
use swarm_store::protocol::Protocol;
use swarm_util::clock;
use swarm_util::names::AgentName;

/// At most this many entries are kept per delivered log, and shown in the feed.
pub const MAX_ENTRIES: usize = 1000;

/// What kind of message an entry is; the view styles each differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Text from one agent to another.
    Plain,
    /// A plain idle notification (dimmed, folded per teammate).
    Idle,
    /// An idle notification reporting a task done.
    Completed,
    /// Shutdown requested, approved or rejected.
    Shutdown,
    /// Plan approval and permission requests and answers.
    Approval,
    /// A task assigned.
    Task,
    /// A teammate terminated, or a task that failed.
    Alert,
}

/// One line of the feed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedEntry {
    /// When it was sent (epoch ms; 0 if its timestamp does not parse).
    pub at_ms: i64,
    pub from: String,
    pub to: String,
    pub class: Class,
    /// One line: the text's first non-empty line, or the protocol message described.
    pub line: String,
    /// The whole text, for the detail view.
    pub text: String,
    /// Still in the recipient's live inbox: not yet put in front of it.
    pub unread: bool,
    /// How many idle notifications this entry stands for (1 unless folded).
    pub count: usize,
    /// The mailbox key (`msg_id` or digest), unique per recipient.
    pub key: String,
}

impl FeedEntry {
    /// The entry for `envelope`, sent to `to`.
    pub fn new(to: &str, envelope: &Envelope, unread: bool) -> FeedEntry {
        let (class, line) = match envelope.protocol() {
            Some(p) => (class_of(&p), p.describe()),
            None => (Class::Plain, first_line(&envelope.text)),
        };
        FeedEntry {
            at_ms: clock::parse_iso_ms(&envelope.timestamp).unwrap_or(0),
            from: envelope.from.clone(),
            to: to.to_owned(),
            class,
            line,
            text: envelope.text.clone(),
            unread,
            count: 1,
            key: envelope.key(),
        }
    }

    /// True for protocol messages (anything but plain text).
    pub fn is_protocol(&self) -> bool {
        self.class != Class::Plain
    }
}

fn class_of(p: &Protocol) -> Class {
    match p {
        Protocol::IdleNotification(m) => {
            let failed = m.idle_reason.as_deref() == Some("failed")
                || m.failure_reason.is_some()
                || matches!(m.completed_status.as_deref(), Some("failed" | "blocked"));
            if failed {
                Class::Alert
            } else if m.completed_task_id.is_some() {
                Class::Completed
            } else {
                Class::Idle
            }
        }
        Protocol::ShutdownRequest(_)
        | Protocol::ShutdownApproved(_)
        | Protocol::ShutdownRejected(_) => Class::Shutdown,
        Protocol::PlanApprovalRequest(_)
        | Protocol::PlanApprovalResponse(_)
        | Protocol::PermissionRequest(_)
        | Protocol::PermissionResponse(_) => Class::Approval,
        Protocol::TaskAssignment(_) => Class::Task,
        Protocol::TeammateTerminated(_) => Class::Alert,
    }
}

/// The first non-empty line of `text`, trimmed, with a mark if more follows.
fn first_line(text: &str) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("").to_owned();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}

/// The feed from entries in any order: duplicates (same recipient and key) dropped, sorted
/// by time (ties keep their order), idle notifications folded, the newest
/// [`MAX_ENTRIES`] kept.
pub fn build(entries: Vec<FeedEntry>) -> Vec<FeedEntry> {
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut entries: Vec<FeedEntry> = entries
        .into_iter()
        .filter(|e| seen.insert((e.to.clone(), e.key.clone())))
        .collect();
    entries.sort_by_key(|e| e.at_ms);
    let mut out: Vec<Option<FeedEntry>> = Vec::with_capacity(entries.len());
    // Per sender: the index of its latest idle entry, while nothing else came from it since.
    let mut open_idle: HashMap<String, usize> = HashMap::new();
    for mut e in entries {
        if e.class == Class::Idle {
            if let Some(i) = open_idle.get(&e.from).copied()
                && let Some(prev) = out[i].take()
            {
                e.count += prev.count;
                e.unread |= prev.unread;
            }
            open_idle.insert(e.from.clone(), out.len());
        } else {
            open_idle.remove(&e.from);
        }
        out.push(Some(e));
    }
    let mut out: Vec<FeedEntry> = out.into_iter().flatten().collect();
    if out.len() > MAX_ENTRIES {
        out.drain(..out.len() - MAX_ENTRIES);
    }
    out
}

/// Reads a team's messages, remembering how far each delivered log was read.
#[derive(Debug, Default)]
pub struct FeedReader {
    tails: HashMap<String, Tail>,
}

#[derive(Debug, Default)]
struct Tail {
    cursor: mailbox::Cursor,
    entries: VecDeque<FeedEntry>,
    /// The live inbox as last read, to notice entries taken without being logged.
    live: Vec<FeedEntry>,
    /// Entries taken without being logged; kept apart, since a log restart clears `entries`.
    taken: VecDeque<FeedEntry>,
}

impl FeedReader {
    pub fn new() -> FeedReader {
        FeedReader::default()
    }

    /// Every message of the team as feed entries (see [`build`]).
    pub fn read(&mut self, store: &Store) -> Result<Vec<FeedEntry>> {
        let agents = store.mail().agents_with_mail()?;
        let mut all = Vec::new();
        for agent in &agents {
            let tail = self.tails.entry(agent.to_string()).or_default();
            tail.advance(store, agent)?;
            let live: Vec<FeedEntry> = store
                .mail()
                .read_all(agent)?
                .iter()
                .map(|d| FeedEntry::new(agent.as_str(), &d.envelope, !d.envelope.is_read()))
                .collect();
            tail.keep_taken(&live);
            all.extend(tail.entries.iter().cloned());
            all.extend(tail.taken.iter().cloned());
            all.extend(live);
        }
        self.tails
            .retain(|name, _| agents.iter().any(|a| a.as_str() == name));
        Ok(build(all))
    }
}

impl Tail {
    /// Takes in whatever whole lines were appended to `agent`'s delivered log since the
    /// last call.
    fn advance(&mut self, store: &Store, agent: &AgentName) -> Result<()> {
        let appended = store.mail().read_delivered_since(agent, &mut self.cursor)?;
        if appended.restarted {
            self.entries.clear();
        }
        for envelope in &appended.envelopes {
            self.entries
                .push_back(FeedEntry::new(agent.as_str(), envelope, false));
        }
        self.trim();
        Ok(())
    }

    /// Keeps, as read, what left the live inbox since the last read without reaching the
    /// delivered log (taken by Claude Code, which deletes instead of marking read).
    fn keep_taken(&mut self, live: &[FeedEntry]) {
        for mut gone in std::mem::replace(&mut self.live, live.to_vec()) {
            let kept = live
                .iter()
                .chain(&self.entries)
                .chain(&self.taken)
                .any(|e| e.key == gone.key);
            if !kept {
                gone.unread = false;
                self.taken.push_back(gone);
            }
        }
        self.trim();
    }

    fn trim(&mut self) {
        for q in [&mut self.entries, &mut self.taken] {
            while q.len() > MAX_ENTRIES {
                q.pop_front();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use swarm_store::protocol::{IdleNotification, ShutdownRequest};

    fn env_at(from: &str, text: &str, ms: i64) -> Envelope {
        let mut e = Envelope::new(from, text);
        e.timestamp = clock::iso_from_ms(ms);
        e
    }

    fn idle(from: &str, ms: i64, task: Option<&str>) -> Envelope {
        let p = Protocol::IdleNotification(IdleNotification {
            from: from.into(),
            timestamp: clock::iso_from_ms(ms),
            idle_reason: Some("available".into()),
            summary: None,
            completed_task_id: task.map(str::to_owned),
            completed_status: task.map(|_| "resolved".to_owned()),
            failure_reason: None,
            result: None,
        });
        env_at(from, &p.to_text(), ms)
    }

    #[test]
    fn plain_text_shows_its_first_line() {
        let e = FeedEntry::new("bob", &env_at("alice", "\n  hello there \nmore", 5), true);
        assert_eq!(e.line, "hello there …");
        assert_eq!(e.class, Class::Plain);
        assert!(e.unread);
        assert_eq!(e.at_ms, 5);
        let p = Protocol::ShutdownRequest(ShutdownRequest {
            request_id: "shutdown-1@bob".into(),
            from: "team-lead".into(),
            reason: None,
            timestamp: clock::iso_from_ms(1),
        });
        let e = FeedEntry::new("bob", &env_at("team-lead", &p.to_text(), 1), false);
        assert_eq!(e.class, Class::Shutdown);
        assert_eq!(e.line, "shutdown requested by team-lead [shutdown-1@bob]");
    }

    #[test]
    fn idle_runs_fold_per_teammate_and_task_reports_stay() {
        let lead = "team-lead";
        let entries = vec![
            FeedEntry::new(lead, &idle("alice", 10, None), false),
            FeedEntry::new(lead, &idle("bob", 11, None), false),
            FeedEntry::new(lead, &idle("alice", 12, None), false),
            FeedEntry::new(lead, &idle("alice", 13, None), true),
            FeedEntry::new("bob", &env_at("alice", "question", 14), false),
            FeedEntry::new(lead, &idle("alice", 15, None), false),
            FeedEntry::new(lead, &idle("alice", 16, Some("3")), false),
            FeedEntry::new(lead, &idle("alice", 17, None), false),
        ];
        let feed = build(entries);
        let shown: Vec<(i64, &str, usize, Class)> = feed
            .iter()
            .map(|e| (e.at_ms, e.from.as_str(), e.count, e.class))
            .collect();
        assert_eq!(
            shown,
            [
                (11, "bob", 1, Class::Idle),
                (13, "alice", 3, Class::Idle),
                (14, "alice", 1, Class::Plain),
                (15, "alice", 1, Class::Idle),
                (16, "alice", 1, Class::Completed),
                (17, "alice", 1, Class::Idle),
            ]
        );
        // A folded run is unread if any of it is.
        assert!(feed[1].unread);
    }

    #[test]
    fn entries_claude_code_deletes_stay_in_the_feed_as_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = swarm_store::Root::new(dir.path());
        let team = swarm_util::names::TeamName::new("t").unwrap();
        let store = swarm_store::Teams::new(root.clone())
            .create_team(&team, None, dir.path())
            .unwrap();
        let worker = AgentName::parse_any("worker").unwrap();
        store
            .mail()
            .deliver(&worker, env_at("team-lead", "hello", 5))
            .unwrap();
        let mut reader = FeedReader::new();
        let feed = reader.read(&store).unwrap();
        assert_eq!((feed.len(), feed[0].unread), (1, true));
        // What Claude Code does when it takes the message: the inbox becomes `[]`.
        std::fs::write(root.inbox_path(&team, &worker), "[]").unwrap();
        let feed = reader.read(&store).unwrap();
        let shown: Vec<(&str, &str, bool)> = feed
            .iter()
            .map(|e| (e.to.as_str(), e.line.as_str(), e.unread))
            .collect();
        assert_eq!(shown, [("worker", "hello", false)]);
        assert_eq!(reader.read(&store).unwrap(), feed);
    }

    #[test]
    fn duplicates_appear_once_and_order_is_by_time() {
        let a = env_at("alice", "one", 20);
        let b = env_at("bob", "two", 10);
        let feed = build(vec![
            FeedEntry::new("team-lead", &a, false),
            FeedEntry::new("team-lead", &b, false),
            FeedEntry::new("team-lead", &a, true),
        ]);
        let lines: Vec<&str> = feed.iter().map(|e| e.line.as_str()).collect();
        assert_eq!(lines, ["two", "one"]);
        assert!(!feed[1].unread, "the delivered copy came first and wins");
    }
}
