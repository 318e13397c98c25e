//! The merge queue in PostgreSQL: the queue's JSON document in `merge_queues`, changed only
//! under its row lock, and the right to run it, the team's `merge-run` hold.
//!
//! Invariants:
//! - every change is a read-modify-write of the whole queue in one transaction under the
//!   row's lock, calling the caller's closure exactly once (never retried);
//! - one run at a time: [`MergeQueue::acquire_run`] waits (in turns of the lock timeout,
//!   so a lost server ends the wait) for a run that may be running a long check, and the
//!   server frees the run's hold if its process dies.

use postgres::types::Json;

use crate::connect::Retry;
use crate::holds::{Wait, hold};
use crate::mail::unknown_team;
use crate::{PgStore, doc};
use swarm_store::error::Result;
use swarm_store::merge_queue::Queue;
use swarm_store::seam::{Hold, MergeQueue};

impl MergeQueue for PgStore {
    fn load(&self) -> Result<Queue> {
        let what = format!("read the merge queue of team '{}'", self.team);
        self.db.run(Retry::Safe, &what, |c| {
            let row = c.query_opt(
                "SELECT queue FROM merge_queues WHERE team = $1",
                &[&self.team.as_str()],
            )?;
            row.map_or(Ok(Queue::default()), |r| doc(&r, "a merge queue"))
        })
    }

    fn update_with(&self, f: &mut (dyn FnMut(&mut Queue) + Send)) -> Result<()> {
        let what = format!("update the merge queue of team '{}'", self.team);
        self.db.transaction(Retry::Once, &what, |tx| {
            let team = self.team.as_str();
            tx.execute(
                "INSERT INTO merge_queues (team, queue) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&team, &Json(Queue::default())],
            )
            .map_err(|e| unknown_team(self, e))?;
            let row = tx.query_one(
                "SELECT queue FROM merge_queues WHERE team = $1 FOR UPDATE",
                &[&team],
            )?;
            let mut queue: Queue = doc(&row, "a merge queue")?;
            f(&mut queue);
            tx.execute(
                "UPDATE merge_queues SET queue = $2 WHERE team = $1",
                &[&team, &Json(&queue)],
            )?;
            Ok(())
        })
    }

    fn acquire_run(&self) -> Result<Hold> {
        let held = hold(self, "merge-run", Wait::Forever)?;
        Ok(Hold::new(held.expect("a wait without end ends held")))
    }
}
