//! [`PgStore`] as a whole [`Backend`]: each part is the store itself, the rate gates a
//! handle on it, and `watch` the handle's listener ([`crate::watch`]).

use std::sync::Arc;

use crate::PgStore;
use swarm_store::Root;
use swarm_store::seam::{
    Agents, Approvals, Backend, Budget, Hold, LaunchRecords, Mailboxes, MergeQueue, NotForHosts,
    Roster, TaskBoard, Topic, Worktrees,
};
use swarm_util::meter::RateGate;
use swarm_util::names::TeamName;

impl Backend for PgStore {
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
    fn rate_gate(&self) -> Arc<dyn RateGate> {
        Arc::new(self.clone())
    }
    fn watch(&self, topic: Topic, wake: Box<dyn Fn() + Send + Sync>) -> Hold {
        self.watchers.watch(topic, wake)
    }
    /// This host's own files (see [`PgStore`]): never the team's shared state.
    fn root(&self) -> &Root {
        &self.root
    }
    fn url_for_hosts(&self) -> Result<String, NotForHosts> {
        self.for_hosts.clone()
    }
    fn delete_team(&self) -> swarm_store::error::Result<()> {
        self.delete_on_server()?;
        swarm_store::roster::delete_files(&self.root, &self.team)
    }
}
