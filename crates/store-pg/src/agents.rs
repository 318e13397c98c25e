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
//! - one lead at a time: a lead holds the team's `lead` hold from its start, and beats
//!   from then on. A server's restart frees the hold with the connection, but not the
//!   place: while the lead's process beats, another lead is refused and
//!   [`Agents::lead_running`] says it runs (it reads the lock table and the beats, and takes
//!   nothing). A lead whose process dies frees its place with its connection;
//! - each registered process is a row of `processes`, keyed by its fencing token; its beat
//!   is the server's clock, so hosts need not agree on the time, and its age counts from
//!   the server's start at the earliest, so a restart of the server (when nobody could
//!   beat) kills nobody: each has a whole timeout to beat again; a row declared dead is
//!   never alive again, and registering a process declares the agent's earlier ones dead,
//!   in the same transaction. Its handle's every transaction checks the row first (see
//!   `Database::fence`).

use serde_json::Value;

use crate::PgStore;
use crate::connect::Retry;
use crate::holds::{Wait, hold, is_held};
use crate::mail::unknown_team;
use crate::roster::load_in;
use crate::watch::{Change, notify};
use swarm_store::error::{Error, Result};
use swarm_store::lead::already_led;
use swarm_store::liveness::{self, Heartbeat};
use swarm_store::seam::{Agents, Hold};
use swarm_store::state::AgentState;
use swarm_util::names::{AgentName, LEAD};

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
            if !self.lead_beats()? {
                return Ok(Hold::new(held));
            }
            // The hold was lost with a server's restart; its lead lives on.
            drop(held);
        }
        let what = format!("read the roster of team '{}'", self.team);
        let config = self
            .db
            .run(Retry::Safe, &what, |c| load_in(self, c, false))
            .ok();
        Err(already_led(&self.team, config.as_ref()))
    }

    fn lead_running(&self) -> bool {
        let running = is_held(self, LEAD_HOLD).and_then(|held| Ok(held || self.lead_beats()?));
        running.unwrap_or_else(|e| {
            tracing::warn!("{e}");
            false
        })
    }

    fn register_process(&self, agent: &AgentName) -> Result<Option<i64>> {
        let what = self.agents_what(&format!("register a process of {agent}"));
        let pid = std::process::id() as i32;
        let ticks = swarm_util::process::start_ticks(pid).map(|t| t as i64);
        let token = self.db.transaction(Retry::BeforeCommit, &what, |tx| {
            tx.execute(
                "UPDATE processes SET dead_at = clock_timestamp()
                  WHERE team = $1 AND agent = $2 AND dead_at IS NULL",
                &[&self.team.as_str(), &agent.as_str()],
            )?;
            let row = tx
                .query_one(
                    "INSERT INTO processes (team, agent, host, pid, start_ticks)
                     VALUES ($1, $2, $3, $4, $5) RETURNING token",
                    &[
                        &self.team.as_str(),
                        &agent.as_str(),
                        &liveness::this_host(),
                        &pid,
                        &ticks,
                    ],
                )
                .map_err(|e| unknown_team(self, e))?;
            Ok(row.get::<_, i64>(0))
        })?;
        self.db.fence(token);
        Ok(Some(token))
    }

    fn heartbeat(&self, token: i64) -> Result<()> {
        let what = self.agents_what("beat");
        let beat = self.db.run(Retry::Safe, &what, |c| {
            Ok(c.execute(
                "UPDATE processes SET beat_at = clock_timestamp()
                  WHERE token = $1 AND dead_at IS NULL",
                &[&token],
            )?)
        })?;
        if beat == 1 {
            return Ok(());
        }
        Err(Error::Fenced(format!(
            "this process was declared dead in team '{}' (its heartbeat stopped, or a newer process of its agent started); it stops",
            self.team
        )))
    }

    fn heartbeats(&self) -> Result<Option<Vec<Heartbeat>>> {
        let what = self.agents_what("read the heartbeats");
        let rows = self.db.run(Retry::Safe, &what, |c| {
            let newest = format!(
                "SELECT DISTINCT ON (agent) {BEAT} FROM processes
                  WHERE team = $1 ORDER BY agent, token DESC"
            );
            Ok(c.query(&newest, &[&self.team.as_str()])?)
        })?;
        Ok(Some(rows.iter().map(heartbeat_of).collect()))
    }

    fn declare_dead(&self, token: i64) -> Result<bool> {
        let what = self.agents_what("declare a process dead");
        self.db.transaction(Retry::Safe, &what, |tx| {
            let made = tx.execute(
                "UPDATE processes SET dead_at = clock_timestamp()
                  WHERE token = $1 AND dead_at IS NULL",
                &[&token],
            )?;
            Ok(made == 1)
        })
    }
}

/// A process's row as a [`Heartbeat`] reads it ([`heartbeat_of`]): its beat's age counted
/// from the server's start at the earliest (see the module's invariants).
const BEAT: &str = "agent, token, host, pid, start_ticks,
    (extract(epoch FROM clock_timestamp()
      - greatest(beat_at, pg_postmaster_start_time())) * 1000)::bigint,
    dead_at IS NOT NULL";

fn heartbeat_of(r: &postgres::Row) -> Heartbeat {
    Heartbeat {
        agent: r.get(0),
        token: r.get(1),
        host: r.get(2),
        pid: r.get(3),
        start_ticks: r.get::<_, Option<i64>>(4).map(|t| t as u64),
        age_ms: r.get(5),
        dead: r.get(6),
    }
}

impl PgStore {
    /// Whether the lead's newest registered process lives (by the root's timeout).
    fn lead_beats(&self) -> Result<bool> {
        let what = self.agents_what("read the lead's heartbeat");
        let row = self.db.run(Retry::Safe, &what, |c| {
            let newest = format!(
                "SELECT {BEAT} FROM processes
                  WHERE team = $1 AND agent = $2 ORDER BY token DESC LIMIT 1"
            );
            Ok(c.query_opt(&newest, &[&self.team.as_str(), &LEAD])?)
        })?;
        let timeout = self.root.heartbeat_timeout();
        Ok(row.is_some_and(|r| heartbeat_of(&r).alive(timeout)))
    }
}
