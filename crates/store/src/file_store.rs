//! The file backend of the store's seam: a team as files under the root, in Claude Code's
//! own layout and formats (`docs/design/formats.md`), through the modules of this crate.
//! Every trait method is the module function of the same name for this root and team;
//! the rate-limit gates' file is kept by `rate_gate`.

mod rate_gate;

use std::sync::Arc;

use crate::approvals::{self, Approval, Decision};
use crate::budget::{self, FileLedger};
use crate::error::Result;
use crate::launch_record::{self, LaunchRecord};
use crate::layout::Root;
use crate::lead::{self, LeadLock};
use crate::liveness::Heartbeat;
use crate::mailbox::delivered::{Appended, Cursor};
use crate::mailbox::{self, Delivery, Envelope, Sent, Version};
use crate::merge_queue::{self, Queue, RunLock};
use crate::roster::{self, Member, NewMember, Removed, TeamConfig};
use crate::seam::{
    Agents, Approvals, Backend, Budget, Hold, LaunchRecords, Mailboxes, MergeQueue, Roster,
    TaskBoard, Topic, Worktrees,
};
use crate::state::{self, AgentState};
use crate::tasks::{ClaimRefusal, NewTask, Task, TaskList, TaskPatch};
use crate::worktrees::{self, Record as WorktreeRecord};
use swarm_util::meter::{Ledger, Limits, RateGate, Spend};
use swarm_util::names::{AgentName, TeamName};
use swarm_util::watcher::DirWatcher;

/// One team's files under one root.
pub struct FileStore {
    root: Root,
    team: TeamName,
    tasks: TaskList,
}

impl FileStore {
    pub fn new(root: &Root, team: &TeamName) -> FileStore {
        FileStore {
            root: root.clone(),
            team: team.clone(),
            tasks: TaskList::new(root, team),
        }
    }
}

impl Backend for FileStore {
    fn team(&self) -> &TeamName {
        &self.team
    }
    fn roster(&self) -> &dyn Roster {
        self
    }
    fn mail(&self) -> &dyn Mailboxes {
        self
    }
    fn tasks(&self) -> &dyn TaskBoard {
        self
    }
    fn approvals(&self) -> &dyn Approvals {
        self
    }
    fn agents(&self) -> &dyn Agents {
        self
    }
    fn merge_queue(&self) -> &dyn MergeQueue {
        self
    }
    fn budget(&self) -> &dyn Budget {
        self
    }
    fn launches(&self) -> &dyn LaunchRecords {
        self
    }
    fn worktrees(&self) -> &dyn Worktrees {
        self
    }
    fn root(&self) -> &Root {
        &self.root
    }
    fn delete_team(&self) -> Result<()> {
        roster::delete_files(&self.root, &self.team)
    }
    fn rate_gate(&self) -> Arc<dyn RateGate> {
        Arc::new(rate_gate::FileRateGate::new(&self.root, &self.team))
    }

    fn watch(&self, topic: Topic, wake: Box<dyn Fn() + Send + Sync>) -> Hold {
        let (root, team) = (&self.root, &self.team);
        let watcher = match topic {
            Topic::Inbox(agent) => DirWatcher::file(&root.inbox_path(team, &agent), wake),
            Topic::Mail => DirWatcher::new(&root.inbox_dir(team), |_| true, wake),
            Topic::State(agent) => DirWatcher::file(&root.state_path(team, &agent), wake),
            Topic::States => DirWatcher::new(&root.state_dir(team), |_| true, wake),
            // Task files only: a claim's index and lock files change on every idle look.
            Topic::Tasks => DirWatcher::new(
                &root.tasks_dir(team),
                |p| p.extension().is_some_and(|e| e == "json"),
                wake,
            ),
            Topic::Roster => DirWatcher::file(&root.roster_path(team), wake),
            Topic::Approvals => DirWatcher::new(&root.approvals_dir(team), |_| true, wake),
        };
        Hold::new(watcher)
    }
}

impl Roster for FileStore {
    fn load(&self) -> Result<TeamConfig> {
        roster::load(&self.root, &self.team)
    }
    fn update_with(&self, f: &mut (dyn FnMut(&mut TeamConfig) -> Result<()> + Send)) -> Result<()> {
        roster::update(&self.root, &self.team, f)
    }
    fn add_member(&self, new: NewMember) -> Result<Member> {
        roster::add_member(&self.root, &self.team, new)
    }
    fn add_members(&self, new: Vec<NewMember>) -> Result<Vec<Result<Member>>> {
        roster::add_members(&self.root, &self.team, new)
    }
    fn remove_member(&self, name: &str) -> Result<Removed> {
        roster::remove_member(&self.root, &self.team, name)
    }
}

impl Mailboxes for FileStore {
    fn send(&self, to: &str, envelope: Envelope) -> Result<Vec<Sent>> {
        mailbox::send(&self.root, &self.team, to, envelope)
    }
    fn deliver(&self, to: &AgentName, envelope: Envelope) -> Result<String> {
        mailbox::deliver(&self.root, &self.team, to, envelope)
    }
    fn read_unread(&self, agent: &AgentName) -> Result<Vec<Delivery>> {
        mailbox::read_unread(&self.root, &self.team, agent)
    }
    fn read_all(&self, agent: &AgentName) -> Result<Vec<Delivery>> {
        mailbox::read_all(&self.root, &self.team, agent)
    }
    fn ack(&self, agent: &AgentName, keys: &[String]) -> Result<usize> {
        mailbox::ack(&self.root, &self.team, agent, keys)
    }
    fn remove_inbox(&self, agent: &AgentName) -> Result<()> {
        mailbox::remove_inbox(&self.root, &self.team, agent)
    }
    fn read_delivered(&self, agent: &AgentName) -> Result<Vec<Envelope>> {
        mailbox::read_delivered(&self.root, &self.team, agent)
    }
    fn read_delivered_since(&self, agent: &AgentName, cursor: &mut Cursor) -> Result<Appended> {
        mailbox::read_delivered_since(&self.root, &self.team, agent, cursor)
    }
    fn agents_with_mail(&self) -> Result<Vec<AgentName>> {
        mailbox::agents_with_mail(&self.root, &self.team)
    }
    fn inbox_version(&self, agent: &AgentName) -> Option<Version> {
        mailbox::version(&self.root, &self.team, agent)
    }
}

impl TaskBoard for FileStore {
    fn list(&self) -> Result<Vec<Task>> {
        self.tasks.list()
    }
    fn get(&self, id: &str) -> Result<Task> {
        self.tasks.get(id)
    }
    fn create(&self, new: NewTask) -> Result<Task> {
        self.tasks.create(new)
    }
    fn update(&self, id: &str, patch: TaskPatch) -> Result<Task> {
        self.tasks.update(id, patch)
    }
    fn delete(&self, id: &str) -> Result<Task> {
        self.tasks.delete(id)
    }
    fn release(&self, owner: &str) -> Result<Vec<Task>> {
        self.tasks.release(owner)
    }
    fn claim(
        &self,
        id: &str,
        agent: &str,
        busy_check: bool,
    ) -> Result<std::result::Result<Task, ClaimRefusal>> {
        self.tasks.claim(id, agent, busy_check)
    }
    fn next(&self, agent: &str) -> Result<Option<Task>> {
        self.tasks.next(agent)
    }
}

impl Approvals for FileStore {
    fn record(&self, approval: &Approval) -> Result<Approval> {
        approvals::record(&self.root, &self.team, approval)
    }
    fn get(&self, id: &str) -> Result<Approval> {
        approvals::get(&self.root, &self.team, id)
    }
    fn list(&self) -> Result<Vec<Approval>> {
        approvals::list(&self.root, &self.team)
    }
    fn resolve(&self, id: &str, decision: Decision) -> Result<Approval> {
        approvals::resolve(&self.root, &self.team, id, decision)
    }
    fn answered(&self, id: &str, decision: Decision) -> Result<Option<Approval>> {
        approvals::answered(&self.root, &self.team, id, decision)
    }
    fn expire(&self, id: &str, why: &str) -> Result<Option<Approval>> {
        approvals::expire(&self.root, &self.team, id, why)
    }
    fn expire_all(&self, agent: &str, why: &str) -> Result<Vec<Approval>> {
        approvals::expire_all(&self.root, &self.team, agent, why)
    }
}

impl Agents for FileStore {
    fn write_state(&self, agent: &AgentName, state: &AgentState) -> Result<()> {
        state::write(&self.root, &self.team, agent, state)
    }
    fn read_state(&self, agent: &AgentName) -> Option<AgentState> {
        state::read(&self.root, &self.team, agent)
    }
    fn all_states(&self) -> Vec<(String, AgentState)> {
        state::all(&self.root, &self.team)
    }
    fn remove_state(&self, agent: &AgentName) -> Result<()> {
        state::remove(&self.root, &self.team, agent)
    }
    fn claim_exit_report(&self, agent: &AgentName, instance: &str) -> Result<bool> {
        state::claim_exit_report(&self.root, &self.team, agent, instance)
    }
    fn acquire_lead(&self) -> Result<Hold> {
        LeadLock::acquire(&self.root, &self.team).map(Hold::new)
    }
    fn lead_running(&self) -> bool {
        lead::is_running(&self.root, &self.team)
    }
    // Every member of a file team runs on this host: its pid is its liveness, and a
    // process that is gone cannot write.
    fn register_process(&self, _agent: &AgentName) -> Result<Option<i64>> {
        Ok(None)
    }
    fn heartbeat(&self, _token: i64) -> Result<()> {
        Ok(())
    }
    fn heartbeats(&self) -> Result<Option<Vec<Heartbeat>>> {
        Ok(None)
    }
    fn declare_dead(&self, _token: i64) -> Result<bool> {
        Ok(false)
    }
}

impl MergeQueue for FileStore {
    fn load(&self) -> Result<Queue> {
        merge_queue::load(&self.root, &self.team)
    }
    fn update_with(&self, f: &mut (dyn FnMut(&mut Queue) + Send)) -> Result<()> {
        merge_queue::update(&self.root, &self.team, f)
    }
    fn acquire_run(&self) -> Result<Hold> {
        RunLock::acquire(&self.root, &self.team).map(Hold::new)
    }
}

impl Budget for FileStore {
    fn write_limits(&self, limits: &Limits) -> Result<()> {
        budget::write_limits(&self.root, &self.team, limits)
    }
    fn limits(&self) -> Limits {
        budget::limits(&self.root, &self.team)
    }
    fn spent(&self, agent: &AgentName) -> Spend {
        budget::spent(&self.root, &self.team, agent)
    }
    fn record_spend(&self, agent: &AgentName, total: &Spend) -> Result<()> {
        budget::record(&self.root, &self.team, agent, total)
    }
    fn team_spent(&self) -> Spend {
        budget::team_spent(&self.root, &self.team)
    }
    fn ledger(&self, agent: &AgentName) -> Arc<dyn Ledger> {
        FileLedger::new(&self.root, &self.team, agent)
    }
}

impl LaunchRecords for FileStore {
    fn save_launch(&self, agent: &str, record: &LaunchRecord) -> Result<()> {
        launch_record::save(&self.root, &self.team, agent, record)
    }
    fn read_launch(&self, agent: &str) -> Result<Option<LaunchRecord>> {
        launch_record::read(&self.root, &self.team, agent)
    }
}

impl Worktrees for FileStore {
    fn save_worktree(&self, record: &WorktreeRecord) -> Result<()> {
        worktrees::save(&self.root, &self.team, record)
    }
    fn remove_worktree(&self, agent: &str) -> Result<()> {
        worktrees::remove(&self.root, &self.team, agent)
    }
    fn worktree(&self, agent: &str) -> Result<Option<WorktreeRecord>> {
        worktrees::read(&self.root, &self.team, agent)
    }
    fn all_worktrees(&self) -> Result<Vec<WorktreeRecord>> {
        worktrees::all(&self.root, &self.team)
    }
    fn lock_worktree(&self, agent: &str) -> Result<Hold> {
        worktrees::lock(&self.root, &self.team, agent).map(Hold::new)
    }
}
