//! The backends under contract, each behind the same [`Team`]: a new team with the lead
//! alone, and a way to open it again as another process would (its own handle, and for
//! PostgreSQL its own connections).

use std::sync::Arc;
use swarm_util::meter::RateGate;

use swarm_store::Root;
use swarm_store::file_store::FileStore;
use swarm_store::roster::NewMember;
use swarm_store::seam::{
    Agents, Approvals, Backend, Budget, LaunchRecords, Mailboxes, MergeQueue, Roster, TaskBoard,
    Worktrees,
};
use swarm_util::names::{AgentName, TeamName};

use swarm_store_pg::PgStore;
use swarm_util::environment::Environment;

/// No `PG*` settings: the test server's URL says everything.
pub fn no_env() -> Environment {
    Environment::default()
}

/// One team on one backend.
pub struct Team {
    pub kind: &'static str,
    /// The database's URL, for PostgreSQL.
    pub url: Option<String>,
    open: Box<dyn Fn() -> Arc<dyn Backend> + Send + Sync>,
    open_as_lead: Box<dyn Fn() -> Arc<dyn Backend> + Send + Sync>,
    handle: Arc<dyn Backend>,
    _dir: tempfile::TempDir,
}

impl Team {
    /// The whole backend, as a `Store` holds it.
    pub fn backend(&self) -> &dyn Backend {
        &*self.handle
    }
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
    pub fn open(&self) -> Arc<dyn Backend> {
        (self.open)()
    }
    /// The team opened as the lead's process (or a person's CLI) opens it: under a root that
    /// signs what goes out in the lead's name.
    pub fn open_as_lead(&self) -> Arc<dyn Backend> {
        (self.open_as_lead)()
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
    swarm_store::Teams::new(root.clone())
        .create_team(&team, None, dir.path())
        .unwrap();
    let (lead_root, lead_team) = (root.clone().signing_as_lead(), team.clone());
    let open = move || Arc::new(FileStore::new(&root, &team)) as Arc<dyn Backend>;
    let open_as_lead = move || Arc::new(FileStore::new(&lead_root, &lead_team)) as Arc<dyn Backend>;
    Team {
        kind: "file",
        url: None,
        handle: open(),
        open: Box::new(open),
        open_as_lead: Box::new(open_as_lead),
        _dir: dir,
    }
}

/// `None` where PostgreSQL is missing (said loudly; a failure under `CI=true`).
pub fn postgres() -> Option<Team> {
    let url = swarm_store_pg::testing::database()?;
    let dir = tempfile::tempdir().unwrap();
    let team = team_name();
    let root = Root::new(dir.path());
    let store = PgStore::connect(&url, &no_env(), &root, &team).unwrap();
    store.create_team(None, dir.path()).unwrap();
    let (at, lead_at) = (url.clone(), url.clone());
    let (lead_root, lead_team) = (root.clone().signing_as_lead(), team.clone());
    let open = move || {
        Arc::new(PgStore::connect(&at, &no_env(), &root, &team).unwrap()) as Arc<dyn Backend>
    };
    let open_as_lead = move || {
        Arc::new(PgStore::connect(&lead_at, &no_env(), &lead_root, &lead_team).unwrap())
            as Arc<dyn Backend>
    };
    Some(Team {
        kind: "postgres",
        url: Some(url),
        handle: Arc::new(store),
        open: Box::new(open),
        open_as_lead: Box::new(open_as_lead),
        _dir: dir,
    })
}
