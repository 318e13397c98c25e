//! The store's seam: what the layers above need from a team's shared state, as one set of
//! traits, and [`Store`], the handle on one team that hands them out.
//!
//! A team is opened once ([`crate::teams::Teams::open`], [`crate::teams::Teams::create_team`])
//! and its handle passed down; which backend holds the team is chosen there and nowhere
//! else. The file backend ([`crate::file_store::FileStore`]) keeps Claude Code's own
//! layout and formats; another backend keeps the same guarantees in its own way:
//!
//! - every mutation is atomic (all of it or none of it is seen) and durable before it
//!   returns `Ok`;
//! - a message is delivered once: it stays in its recipient's inbox until acknowledged by
//!   its key, and a send that returned `Ok` is never lost;
//! - a claim is a compare-and-set: two claimers never both own a task;
//! - an approval is resolved exactly once; a second decision fails and names the first;
//! - both sides of a dependency edge change together.
//!
//! Every method is synchronous: the store is called from threads and from async code
//! alike (through `spawn_blocking` where a wait may be long), and a blocking call keeps the
//! guarantees above simple to state and to test.

use std::sync::Arc;

use crate::approvals::{Approval, Decision};
use crate::error::Result;
use crate::launch_record::LaunchRecord;
use crate::layout::Root;
use crate::liveness::Heartbeat;
use crate::mailbox::delivered::{Appended, Cursor};
use crate::mailbox::{Delivery, Envelope, Sent, Version};
use crate::merge_queue::Queue;
use crate::roster::{Member, NewMember, Removed, TeamConfig};
use crate::state::AgentState;
use crate::tasks::{ClaimRefusal, NewTask, Task, TaskPatch};
use crate::worktrees::Record as WorktreeRecord;
use swarm_util::meter::{Ledger, Limits, RateGate, Spend};
use swarm_util::names::{AgentName, TeamName};

/// A team's roster (Claude Code's `config.json`): its members and their settings.
pub trait Roster: Send + Sync {
    fn load(&self) -> Result<TeamConfig>;
    /// Read-modify-write under the roster's lock, calling `f` exactly once; an `Err` from
    /// `f` writes nothing.
    fn update_with(&self, f: &mut (dyn FnMut(&mut TeamConfig) -> Result<()> + Send)) -> Result<()>;
    /// Adds a teammate; refuses a name already taken (in any letter case).
    fn add_member(&self, new: NewMember) -> Result<Member>;
    /// Adds several teammates in one write, each on its own (one refused name refuses only
    /// it); the outer error is the write's, and then none was added.
    fn add_members(&self, new: Vec<NewMember>) -> Result<Vec<Result<Member>>>;
    /// Takes a teammate off the roster and returns its open tasks to pending.
    fn remove_member(&self, name: &str) -> Result<Removed>;
}

impl dyn Roster + '_ {
    /// [`Roster::update_with`], returning what `f` returns.
    pub fn update<T: Send>(
        &self,
        f: impl FnOnce(&mut TeamConfig) -> Result<T> + Send,
    ) -> Result<T> {
        let (mut f, mut out) = (Some(f), None);
        self.update_with(&mut |config| {
            let f = f.take().expect("update_with calls f once");
            out = Some(f(config)?);
            Ok(())
        })?;
        Ok(out.expect("update_with calls f before it returns Ok"))
    }

    /// Patches one member in place; an unknown member is an error naming the roster.
    pub fn update_member<T: Send>(
        &self,
        name: &str,
        f: impl FnOnce(&mut Member) -> T + Send,
    ) -> Result<T> {
        self.update(|config| {
            let unknown = config.unknown_member(name);
            let member = config.member_mut(name).ok_or(unknown)?;
            Ok(f(member))
        })
    }
}

/// One inbox per agent, and each agent's delivered log.
pub trait Mailboxes: Send + Sync {
    /// Sends to one member, or to every teammate but the sender with `to == "*"`; an
    /// unknown recipient is an error, never a new inbox.
    fn send(&self, to: &str, envelope: Envelope) -> Result<Vec<Sent>>;
    /// Puts `envelope` in `to`'s inbox (no roster check: for system notes); returns its key.
    fn deliver(&self, to: &AgentName, envelope: Envelope) -> Result<String>;
    /// The messages in `agent`'s inbox not yet acknowledged.
    fn read_unread(&self, agent: &AgentName) -> Result<Vec<Delivery>>;
    /// Everything in `agent`'s inbox, read or not.
    fn read_all(&self, agent: &AgentName) -> Result<Vec<Delivery>>;
    /// Moves the messages with these keys to the delivered log; returns how many moved.
    fn ack(&self, agent: &AgentName, keys: &[String]) -> Result<usize>;
    fn remove_inbox(&self, agent: &AgentName) -> Result<()>;
    /// Everything `agent` was ever delivered, oldest first.
    fn read_delivered(&self, agent: &AgentName) -> Result<Vec<Envelope>>;
    /// What `agent`'s delivered log gained since `cursor`, which moves past it.
    fn read_delivered_since(&self, agent: &AgentName, cursor: &mut Cursor) -> Result<Appended>;
    /// The agents with an inbox or a delivered log, by name.
    fn agents_with_mail(&self) -> Result<Vec<AgentName>>;
    /// A token that changes whenever `agent`'s inbox is written (`None`: no inbox yet), so
    /// a reader can skip an inbox it has read to the end.
    fn inbox_version(&self, agent: &AgentName) -> Option<Version>;
}

/// The shared task list.
pub trait TaskBoard: Send + Sync {
    fn list(&self) -> Result<Vec<Task>>;
    fn get(&self, id: &str) -> Result<Task>;
    fn create(&self, new: NewTask) -> Result<Task>;
    fn update(&self, id: &str, patch: TaskPatch) -> Result<Task>;
    fn delete(&self, id: &str) -> Result<Task>;
    /// Returns every open task `owner` holds to pending, without an owner.
    fn release(&self, owner: &str) -> Result<Vec<Task>>;
    /// Claims task `id` for `agent` (a compare-and-set); the inner error is a refusal.
    fn claim(
        &self,
        id: &str,
        agent: &str,
        busy_check: bool,
    ) -> Result<std::result::Result<Task, ClaimRefusal>>;
    /// Claims the first ready task for `agent`, if any.
    fn next(&self, agent: &str) -> Result<Option<Task>>;
}

/// Plan and permission requests, each resolved exactly once.
pub trait Approvals: Send + Sync {
    /// Records a request; recording one already there returns the stored one.
    fn record(&self, approval: &Approval) -> Result<Approval>;
    fn get(&self, id: &str) -> Result<Approval>;
    fn list(&self) -> Result<Vec<Approval>>;
    /// Decides a pending request; a request already decided is a conflict naming who did.
    fn resolve(&self, id: &str, decision: Decision) -> Result<Approval>;
    /// Records an answer that reached the teammate by mail from a lead that keeps no
    /// records (Claude Code's): a pending request becomes decided as the answer says, and
    /// nothing is sent. `None` when it was decided or expired already.
    fn answered(&self, id: &str, decision: Decision) -> Result<Option<Approval>>;
    fn expire(&self, id: &str, why: &str) -> Result<Option<Approval>>;
    /// Expires every pending request of `agent`.
    fn expire_all(&self, agent: &str, why: &str) -> Result<Vec<Approval>>;
}

/// Each agent's live state, its liveness, and who leads.
pub trait Agents: Send + Sync {
    /// Replaces `agent`'s state; only the agent itself (or whoever records its death)
    /// writes it.
    fn write_state(&self, agent: &AgentName, state: &AgentState) -> Result<()>;
    fn read_state(&self, agent: &AgentName) -> Option<AgentState>;
    /// Every agent with a state, the lead first, then by name.
    fn all_states(&self) -> Vec<(String, AgentState)>;
    fn remove_state(&self, agent: &AgentName) -> Result<()>;
    /// True for exactly one caller per `(agent, instance)`: the one that reports its end.
    fn claim_exit_report(&self, agent: &AgentName, instance: &str) -> Result<bool>;
    /// Becomes the team's lead for as long as the returned hold lives; refuses while
    /// another lead holds it.
    fn acquire_lead(&self) -> Result<Hold>;
    /// Whether some process leads the team now. Takes nothing.
    fn lead_running(&self) -> bool;
    /// Registers the calling process as `agent`'s newest and returns its fencing token,
    /// or `None` on a backend whose liveness is the pid (files: every member is on this
    /// host). Any earlier process of `agent` is declared dead. From then on the store
    /// refuses every write of this process (`Error::Fenced`) once it is declared dead.
    fn register_process(&self, agent: &AgentName) -> Result<Option<i64>>;
    /// Says that the process holding `token` lives; `Error::Fenced` once it was declared
    /// dead.
    fn heartbeat(&self, token: i64) -> Result<()>;
    /// The newest registered process of each agent, or `None` on a backend whose liveness
    /// is the pid.
    fn heartbeats(&self) -> Result<Option<Vec<Heartbeat>>>;
    /// Declares the process holding `token` dead: true for the first caller. Its writes
    /// in flight finish first; every later one is refused.
    fn declare_dead(&self, token: i64) -> Result<bool>;
}

/// Something held until dropped: the lead's place, the merge queue's run, a record's lock.
pub struct Hold(#[allow(dead_code)] Box<dyn Send>);

impl Hold {
    pub fn new(held: impl Send + 'static) -> Hold {
        Hold(Box::new(held))
    }
}

/// The merge queue's entries and its settings, and the right to run it.
pub trait MergeQueue: Send + Sync {
    fn load(&self) -> Result<Queue>;
    /// Read-modify-write under the queue's lock, calling `f` exactly once.
    fn update_with(&self, f: &mut (dyn FnMut(&mut Queue) + Send)) -> Result<()>;
    /// Waits for the right to run the queue (one run at a time).
    fn acquire_run(&self) -> Result<Hold>;
}

impl dyn MergeQueue + '_ {
    /// [`MergeQueue::update_with`], returning what `f` returns.
    pub fn update<T: Send>(&self, f: impl FnOnce(&mut Queue) -> T + Send) -> Result<T> {
        let (mut f, mut out) = (Some(f), None);
        self.update_with(&mut |queue| {
            let f = f.take().expect("update_with calls f once");
            out = Some(f(queue));
        })?;
        Ok(out.expect("update_with calls f before it returns Ok"))
    }
}

/// The team's budget: its limits and each agent's running spend.
pub trait Budget: Send + Sync {
    fn write_limits(&self, limits: &Limits) -> Result<()>;
    fn limits(&self) -> Limits;
    fn spent(&self, agent: &AgentName) -> Spend;
    fn record_spend(&self, agent: &AgentName, total: &Spend) -> Result<()>;
    /// What the whole team has spent.
    fn team_spent(&self) -> Spend;
    /// The ledger an agent's model client keeps.
    fn ledger(&self, agent: &AgentName) -> Arc<dyn Ledger>;
}

/// How each pane was started, so a resume can start it again.
pub trait LaunchRecords: Send + Sync {
    fn save_launch(&self, agent: &str, record: &LaunchRecord) -> Result<()>;
    fn read_launch(&self, agent: &str) -> Result<Option<LaunchRecord>>;
}

/// Records of the teammates' git worktrees.
pub trait Worktrees: Send + Sync {
    fn save_worktree(&self, record: &WorktreeRecord) -> Result<()>;
    fn remove_worktree(&self, agent: &str) -> Result<()>;
    fn worktree(&self, agent: &str) -> Result<Option<WorktreeRecord>>;
    fn all_worktrees(&self) -> Result<Vec<WorktreeRecord>>;
    /// Holds `agent`'s record while its fate is decided.
    fn lock_worktree(&self, agent: &str) -> Result<Hold>;
}

/// What a change concerns, for [`Backend::watch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topic {
    /// One agent's inbox.
    Inbox(AgentName),
    /// Any inbox or delivered log.
    Mail,
    /// One agent's state.
    State(AgentName),
    /// Any agent's state.
    States,
    Tasks,
    Roster,
    Approvals,
}

/// Everything one backend holds for one team.
pub trait Backend: Send + Sync {
    fn team(&self) -> &TeamName;
    fn roster(&self) -> &dyn Roster;
    fn mail(&self) -> &dyn Mailboxes;
    fn tasks(&self) -> &dyn TaskBoard;
    fn approvals(&self) -> &dyn Approvals;
    fn agents(&self) -> &dyn Agents;
    fn merge_queue(&self) -> &dyn MergeQueue;
    fn budget(&self) -> &dyn Budget;
    fn launches(&self) -> &dyn LaunchRecords;
    fn worktrees(&self) -> &dyn Worktrees;
    /// The team's rate-limit gates, for a model client to keep.
    fn rate_gate(&self) -> Arc<dyn RateGate>;
    /// Calls `wake` soon after a change that concerns `topic`, until the hold is dropped.
    /// A wake-up is a hint: it may be late, spurious or (rarely) lost, so whoever waits also
    /// looks again on a timer (`swarm_util::watcher::RESCAN_EVERY`).
    fn watch(&self, topic: Topic, wake: Box<dyn Fn() + Send + Sync>) -> Hold;
    /// The root the team was opened under (its local files: logs, transcripts, plans).
    fn root(&self) -> &Root;
    /// Deletes the team: all it holds in this backend, then its files under the root (its
    /// roster or pointer, logs, transcripts). Whether its members still run is the
    /// caller's to settle first; a team that does not exist is not an error.
    fn delete_team(&self) -> Result<()>;
    /// Where a teammate on another host finds the team's shared state (a database URL
    /// with what this process's settings fill in, never a password), or why no host can.
    fn url_for_hosts(&self) -> std::result::Result<String, NotForHosts> {
        Err(NotForHosts::Files)
    }
}

/// Why a team's shared state cannot be reached from another host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotForHosts {
    /// The team is this machine's files.
    Files,
    /// Its database is reached through a Unix socket in this directory: this machine's.
    Socket(String),
}

/// One team's shared state: a cheap handle, cloned to wherever it is needed.
#[derive(Clone)]
pub struct Store(Arc<dyn Backend>);

impl Store {
    pub fn new(backend: impl Backend + 'static) -> Store {
        Store(Arc::new(backend))
    }

    /// Whether the process `s` describes still runs: by its pid on this host, by its
    /// heartbeat on another (a pid there means nothing here). The one rule for it.
    pub fn still_runs(&self, s: &AgentState) -> bool {
        if crate::liveness::is_here(s.host.as_deref()) {
            return s.process_alive();
        }
        let beats = self.agents().heartbeats().ok().flatten();
        beats
            .into_iter()
            .flatten()
            .any(|b| Some(b.token) == s.token && b.alive(self.root().heartbeat_timeout()))
    }
}

impl std::ops::Deref for Store {
    type Target = dyn Backend;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.0.team())
    }
}
