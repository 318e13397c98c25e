//! Launch and worktree records in PostgreSQL: each its JSON document, one row per agent in
//! `launch_records` and `worktrees`, replaced whole by one statement (as the file store
//! replaces a file atomically). A worktree record's lock, held while its fate is decided,
//! is the team's `worktree/<agent>` hold, waited for up to the lock timeout.

use postgres::types::Json;

use crate::connect::Retry;
use crate::holds::{Wait, hold};
use crate::mail::unknown_team;
use crate::{PgStore, doc};
use swarm_store::error::Result;
use swarm_store::launch_record::LaunchRecord;
use swarm_store::seam::{Hold, LaunchRecords, Worktrees};
use swarm_store::worktrees::Record as WorktreeRecord;

impl PgStore {
    fn records_what(&self, doing: &str) -> String {
        format!("{doing} of team '{}'", self.team)
    }
}

impl LaunchRecords for PgStore {
    fn save_launch(&self, agent: &str, record: &LaunchRecord) -> Result<()> {
        let what = self.records_what(&format!("save the launch record of {agent}"));
        self.db.run(Retry::Safe, &what, |c| {
            c.execute(
                "INSERT INTO launch_records (team, agent, record) VALUES ($1, $2, $3)
                 ON CONFLICT (team, agent) DO UPDATE SET record = EXCLUDED.record",
                &[&self.team.as_str(), &agent, &Json(record)],
            )
            .map_err(|e| unknown_team(self, e))?;
            Ok(())
        })
    }

    fn read_launch(&self, agent: &str) -> Result<Option<LaunchRecord>> {
        let what = self.records_what(&format!("read the launch record of {agent}"));
        self.db.run(Retry::Safe, &what, |c| {
            let row = c.query_opt(
                "SELECT record FROM launch_records WHERE team = $1 AND agent = $2",
                &[&self.team.as_str(), &agent],
            )?;
            row.map(|r| doc(&r, "a launch record")).transpose()
        })
    }
}

impl Worktrees for PgStore {
    fn save_worktree(&self, record: &WorktreeRecord) -> Result<()> {
        let what = self.records_what(&format!("save the worktree record of {}", record.agent));
        self.db.run(Retry::Safe, &what, |c| {
            c.execute(
                "INSERT INTO worktrees (team, agent, record) VALUES ($1, $2, $3)
                 ON CONFLICT (team, agent) DO UPDATE SET record = EXCLUDED.record",
                &[&self.team.as_str(), &record.agent, &Json(record)],
            )
            .map_err(|e| unknown_team(self, e))?;
            Ok(())
        })
    }

    fn remove_worktree(&self, agent: &str) -> Result<()> {
        let what = self.records_what(&format!("remove the worktree record of {agent}"));
        self.db.run(Retry::Safe, &what, |c| {
            c.execute(
                "DELETE FROM worktrees WHERE team = $1 AND agent = $2",
                &[&self.team.as_str(), &agent],
            )?;
            Ok(())
        })
    }

    fn worktree(&self, agent: &str) -> Result<Option<WorktreeRecord>> {
        let what = self.records_what(&format!("read the worktree record of {agent}"));
        self.db.run(Retry::Safe, &what, |c| {
            let row = c.query_opt(
                "SELECT record FROM worktrees WHERE team = $1 AND agent = $2",
                &[&self.team.as_str(), &agent],
            )?;
            row.map(|r| doc(&r, "a worktree record")).transpose()
        })
    }

    fn all_worktrees(&self) -> Result<Vec<WorktreeRecord>> {
        let what = self.records_what("read the worktree records");
        let mut all: Vec<WorktreeRecord> = self.db.run(Retry::Safe, &what, |c| {
            let rows = c.query(
                "SELECT record FROM worktrees WHERE team = $1",
                &[&self.team.as_str()],
            )?;
            rows.iter().map(|r| doc(r, "a worktree record")).collect()
        })?;
        // By agent, as Rust orders names (the database's collation may not).
        all.sort_by(|a, b| a.agent.cmp(&b.agent));
        Ok(all)
    }

    fn lock_worktree(&self, agent: &str) -> Result<Hold> {
        let held = hold(self, &format!("worktree/{agent}"), Wait::Bounded)?;
        Ok(Hold::new(
            held.expect("a bounded wait ends held or in an error"),
        ))
    }
}
