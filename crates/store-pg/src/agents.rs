//! Agents in PostgreSQL: each agent's live state, its JSON document in `agent_states`; the
//! exit reports claimed, one row each in `exit_reports`; and who leads, the holder of the
//! team's `lead` hold (a session advisory lock, see [`crate::holds`]).
//!
//! Invariants:
//! - a state is replaced whole by one statement (its only writer is its agent, or whoever
//!   records its death, as in the file store); a state that does not parse reads as none;
//! - an exit report is claimed by inserting its `(agent, instance)` row: exactly one caller
//!   inserts it, however many observers race; the claim is not retried after a dropped
//!   connection (a retry of a claim that went through would say "not yours", and nobody
//!   would report the exit);
//! - one lead at a time, for as long as its connection lives: a lead whose process dies
//!   frees its place with its connection. [`Agents::lead_running`] reads the server's lock
//!   table and takes nothing.

use serde_json::Value;

use crate::PgStore;
use crate::connect::Retry;
use crate::holds::{Wait, hold, is_held};
use crate::mail::unknown_team;
use crate::roster::load_in;
use crate::watch::{Change, notify};
use swarm_store::lead::already_led;
use swarm_store::names::{AgentName, LEAD};
use swarm_store::seam::{Agents, Hold};
use swarm_store::state::AgentState;
use swarm_util::error::Result;

/// The name of the lead's hold.
const LEAD_HOLD: &str = "lead";

fn parse(agent: &str, state: Value) -> Option<AgentState> {
    serde_json::from_value(state)
        .map_err(|e| tracing::warn!(agent, "ignoring a state that does not parse: {e}"))
        .ok()
}

impl PgStore {
    fn agents_what(&self, doing: &str) -> String {
        format!("{doing} in team '{}'", self.team)
    }
}

impl Agents for PgStore {
    fn write_state(&self, agent: &AgentName, state: &AgentState) -> Result<()> {
        let what = self.agents_what(&format!("write the state of {agent}"));
        let state = serde_json::to_value(state).expect("a state serialises");
        self.db.transaction(Retry::Safe, &what, |tx| {
            tx.execute(
                "INSERT INTO agent_states (team, agent, state) VALUES ($1, $2, $3)
                 ON CONFLICT (team, agent) DO UPDATE SET state = EXCLUDED.state",
                &[&self.team.as_str(), &agent.as_str(), &state],
            )
            .map_err(|e| unknown_team(self, e))?;
            notify(tx, &self.team, Change::State(agent.as_str()))?;
            Ok(())
        })
    }

    fn read_state(&self, agent: &AgentName) -> Option<AgentState> {
        let what = self.agents_what(&format!("read the state of {agent}"));
        let row = self.db.run(Retry::Safe, &what, |c| {
            Ok(c.query_opt(
                "SELECT state FROM agent_states WHERE team = $1 AND agent = $2",
                &[&self.team.as_str(), &agent.as_str()],
            )?)
        });
        match row {
            Ok(row) => parse(agent.as_str(), row?.get(0)),
            Err(e) => {
                tracing::warn!("{e}");
                None
            }
        }
    }

    fn all_states(&self) -> Vec<(String, AgentState)> {
        let what = self.agents_what("read the agents' states");
        let rows = self.db.run(Retry::Safe, &what, |c| {
            Ok(c.query(
                "SELECT agent, state FROM agent_states WHERE team = $1",
                &[&self.team.as_str()],
            )?)
        });
        let rows = rows.unwrap_or_else(|e| {
            tracing::warn!("{e}");
            Vec::new()
        });
        let mut out: Vec<(String, AgentState)> = rows
            .into_iter()
            .filter_map(|r| {
                let agent: String = r.get(0);
                let state = parse(&agent, r.get(1))?;
                Some((agent, state))
            })
            .collect();
        // The lead first, then by name (sorted here, as Rust orders names).
        out.sort_by(|a, b| (a.0 != LEAD, &a.0).cmp(&(b.0 != LEAD, &b.0)));
        out
    }

    fn remove_state(&self, agent: &AgentName) -> Result<()> {
        let what = self.agents_what(&format!("remove the state of {agent}"));
        self.db.transaction(Retry::Safe, &what, |tx| {
            tx.execute(
                "DELETE FROM agent_states WHERE team = $1 AND agent = $2",
                &[&self.team.as_str(), &agent.as_str()],
            )?;
            notify(tx, &self.team, Change::State(agent.as_str()))?;
            Ok(())
        })
    }

    fn claim_exit_report(&self, agent: &AgentName, instance: &str) -> Result<bool> {
        let what = self.agents_what(&format!("claim the report of {agent}'s exit"));
        self.db.run(Retry::Once, &what, |c| {
            let made = c
                .execute(
                    "INSERT INTO exit_reports (team, agent, instance) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING",
                    &[&self.team.as_str(), &agent.as_str(), &instance],
                )
                .map_err(|e| unknown_team(self, e))?;
            Ok(made == 1)
        })
    }

    fn acquire_lead(&self) -> Result<Hold> {
        if let Some(held) = hold(self, LEAD_HOLD, Wait::No)? {
            return Ok(Hold::new(held));
        }
        let what = format!("read the roster of team '{}'", self.team);
        let config = self
            .db
            .run(Retry::Safe, &what, |c| load_in(self, c, false))
            .ok();
        Err(already_led(&self.team, config.as_ref()))
    }

    fn lead_running(&self) -> bool {
        is_held(self, LEAD_HOLD).unwrap_or_else(|e| {
            tracing::warn!("{e}");
            false
        })
    }
}
