//! The backends under contract, each behind the same [`Team`]: a new team with the lead
//! alone, and a way to open it again as another process would (its own handle, and for
//! PostgreSQL its own connections).

use std::sync::Arc;

use swarm_store::Root;
use swarm_store::file_store::FileStore;
use swarm_store::names::{AgentName, TeamName};
use swarm_store::roster::NewMember;
use swarm_store::seam::{
    Agents, Approvals, Backend, Budget, LaunchRecords, Mailboxes, MergeQueue, RateGate, Roster,
    TaskBoard, Worktrees,
};
use swarm_store_pg::PgStore;

/// The parts of one backend under contract (accessors, as `Backend` has, since the parts'
/// methods share names).
pub trait Parts: Send + Sync {
    fn roster(&self) -> &dyn Roster;
    fn mail(&self) -> &dyn Mailboxes;
    fn tasks(&self) -> &dyn TaskBoard;
    fn approvals(&self) -> &dyn Approvals;
    fn agents(&self) -> &dyn Agents;
    fn merge_queue(&self) -> &dyn MergeQueue;
    fn budget(&self) -> &dyn Budget;
    fn launches(&self) -> &dyn LaunchRecords;
    fn worktrees(&self) -> &dyn Worktrees;
    fn rate_gate(&self) -> Arc<dyn RateGate>;
}

impl Parts for FileStore {
    fn roster(&self) -> &dyn Roster {
        Backend::roster(self)
    }
    fn mail(&self) -> &dyn Mailboxes {
        Backend::mail(self)
    }
    fn tasks(&self) -> &dyn TaskBoard {
        Backend::tasks(self)
    }
    fn approvals(&self) -> &dyn Approvals {
        Backend::approvals(self)
    }
    fn agents(&self) -> &dyn Agents {
        Backend::agents(self)
    }
    fn merge_queue(&self) -> &dyn MergeQueue {
        Backend::merge_queue(self)
    }
    fn budget(&self) -> &dyn Budget {
        Backend::budget(self)
    }
    fn launches(&self) -> &dyn LaunchRecords {
        Backend::launches(self)
    }
    fn worktrees(&self) -> &dyn Worktrees {
        Backend::worktrees(self)
    }
    fn rate_gate(&self) -> Arc<dyn RateGate> {
        Backend::rate_gate(self)
    }
}

impl Parts for PgStore {
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
    fn rate_gate(&self) -> Arc<dyn RateGate> {
        Arc::new(self.clone())
    }
}

/// One team on one backend.
pub struct Team {
    pub kind: &'static str,
    /// The database's URL, for PostgreSQL.
    pub url: Option<String>,
    open: Box<dyn Fn() -> Arc<dyn Parts> + Send + Sync>,
    handle: Arc<dyn Parts>,
    _dir: tempfile::TempDir,
}

impl Team {
    pub fn roster(&self) -> &dyn Roster {
        self.handle.roster()
    }
    pub fn mail(&self) -> &dyn Mailboxes {
        self.handle.mail()
    }
    pub fn tasks(&self) -> &dyn TaskBoard {
        self.handle.tasks()
    }
    pub fn approvals(&self) -> &dyn Approvals {
        self.handle.approvals()
    }
    pub fn agents(&self) -> &dyn Agents {
        self.handle.agents()
    }
    pub fn merge_queue(&self) -> &dyn MergeQueue {
        self.handle.merge_queue()
    }
    pub fn budget(&self) -> &dyn Budget {
        self.handle.budget()
    }
    pub fn launches(&self) -> &dyn LaunchRecords {
        self.handle.launches()
    }
    pub fn worktrees(&self) -> &dyn Worktrees {
        self.handle.worktrees()
    }
    pub fn rate_gate(&self) -> Arc<dyn RateGate> {
        self.handle.rate_gate()
    }
    /// The team opened again, as another process would.
    pub fn open(&self) -> Arc<dyn Parts> {
        (self.open)()
    }
    /// Adds teammates by name.
    pub fn add(&self, names: &[&str]) {
        for name in names {
            self.roster().add_member(member(name)).unwrap();
        }
    }
}

pub fn member(name: &str) -> NewMember {
    NewMember {
        name: AgentName::new(name).unwrap(),
        color: None,
        agent_type: None,
        model: None,
        prompt: None,
        plan_mode_required: false,
        cwd: "/work".into(),
    }
}

pub fn agent(name: &str) -> AgentName {
    AgentName::parse_any(name).unwrap()
}

fn team_name() -> TeamName {
    TeamName::new("contract").unwrap()
}

pub fn file() -> Team {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(dir.path());
    let team = team_name();
    root.create_team(&team, None, dir.path()).unwrap();
    let open = move || Arc::new(FileStore::new(&root, &team)) as Arc<dyn Parts>;
    Team {
        kind: "file",
        url: None,
        handle: open(),
        open: Box::new(open),
        _dir: dir,
    }
}

/// `None` where PostgreSQL is missing (said loudly; a failure under `CI=true`).
pub fn postgres() -> Option<Team> {
    let url = crate::server::database()?;
    let dir = tempfile::tempdir().unwrap();
    let team = team_name();
    let store = PgStore::connect(&url, &team).unwrap();
    store.create_team(None, dir.path()).unwrap();
    let at = url.clone();
    let open = move || Arc::new(PgStore::connect(&at, &team).unwrap()) as Arc<dyn Parts>;
    Some(Team {
        kind: "postgres",
        url: Some(url),
        handle: Arc::new(store),
        open: Box::new(open),
        _dir: dir,
    })
}
