//! The budget in PostgreSQL: the team's limits, one row in `budgets`, and each agent's
//! running spend, one row per agent in `spend`, which [`PgLedger`] keeps for an agent's
//! model client.
//!
//! Invariants, as the file store's:
//! - each agent's total has one writer, its agent, which replaces it whole;
//! - the team's spend is the sum of the totals, added up by the server's rows here;
//! - a budget is a brake, and a brake that fails must not stop a team on its own: a read
//!   that fails or a total that does not parse counts as nothing spent, and is warned
//!   about; limits that cannot be read are none.

use std::sync::Arc;

use postgres::types::Json;
use serde_json::Value;

use crate::PgStore;
use crate::connect::Retry;
use crate::mail::unknown_team;
use swarm_store::error::Result;
use swarm_store::seam::Budget;
use swarm_util::meter::{Ledger, Limits, Spend};
use swarm_util::names::AgentName;

impl PgStore {
    fn budget_what(&self, doing: &str) -> String {
        format!("{doing} of team '{}'", self.team)
    }

    /// Each agent's total as stored (read failures warned about, and none).
    fn totals(&self, agent: Option<&AgentName>) -> Vec<(String, Value)> {
        let what = self.budget_what("read the spend");
        let rows = self.db.run(Retry::Safe, &what, |c| {
            Ok(c.query(
                "SELECT agent, total FROM spend WHERE team = $1 AND ($2::text IS NULL OR agent = $2)",
                &[&self.team.as_str(), &agent.map(AgentName::as_str)],
            )?)
        });
        match rows {
            Ok(rows) => rows.iter().map(|r| (r.get(0), r.get(1))).collect(),
            Err(e) => {
                tracing::warn!("{e}");
                Vec::new()
            }
        }
    }
}

fn parse_spend(agent: &str, total: Value) -> Spend {
    serde_json::from_value(total).unwrap_or_else(|e| {
        tracing::warn!(agent, "ignoring a spend that does not parse: {e}");
        Spend::default()
    })
}

impl Budget for PgStore {
    /// Nothing when there are no limits, as the file store writes no file.
    fn write_limits(&self, limits: &Limits) -> Result<()> {
        if limits.is_none() {
            return Ok(());
        }
        let what = self.budget_what("write the budget");
        self.db.run(Retry::Safe, &what, |c| {
            c.execute(
                "INSERT INTO budgets (team, limits) VALUES ($1, $2)
                 ON CONFLICT (team) DO UPDATE SET limits = EXCLUDED.limits",
                &[&self.team.as_str(), &Json(limits)],
            )
            .map_err(|e| unknown_team(self, e))?;
            Ok(())
        })
    }

    fn limits(&self) -> Limits {
        let what = self.budget_what("read the budget");
        let row = self.db.run(Retry::Safe, &what, |c| {
            Ok(c.query_opt(
                "SELECT limits FROM budgets WHERE team = $1",
                &[&self.team.as_str()],
            )?)
        });
        match row {
            Ok(Some(r)) => serde_json::from_value(r.get(0)).unwrap_or_else(|e| {
                tracing::warn!("ignoring the budget of team '{}': {e}", self.team);
                Limits::default()
            }),
            Ok(None) => Limits::default(),
            Err(e) => {
                tracing::warn!("{e}");
                Limits::default()
            }
        }
    }

    fn spent(&self, agent: &AgentName) -> Spend {
        self.totals(Some(agent))
            .pop()
            .map(|(a, total)| parse_spend(&a, total))
            .unwrap_or_default()
    }

    fn record_spend(&self, agent: &AgentName, total: &Spend) -> Result<()> {
        let what = self.budget_what(&format!("record the spend of {agent}"));
        self.db.run(Retry::Safe, &what, |c| {
            c.execute(
                "INSERT INTO spend (team, agent, total) VALUES ($1, $2, $3)
                 ON CONFLICT (team, agent) DO UPDATE SET total = EXCLUDED.total",
                &[&self.team.as_str(), &agent.as_str(), &Json(total)],
            )
            .map_err(|e| unknown_team(self, e))?;
            Ok(())
        })
    }

    fn team_spent(&self) -> Spend {
        let mut sum = Spend::default();
        for (agent, total) in self.totals(None) {
            sum.add(&parse_spend(&agent, total));
        }
        sum
    }

    fn ledger(&self, agent: &AgentName) -> Arc<dyn Ledger> {
        Arc::new(PgLedger {
            store: self.clone(),
            agent: agent.clone(),
        })
    }
}

/// One agent's ledger in its team's database.
pub(crate) struct PgLedger {
    store: PgStore,
    agent: AgentName,
}

impl Ledger for PgLedger {
    fn own(&self) -> Spend {
        self.store.spent(&self.agent)
    }

    /// Without limits, nothing to add up: the lead asks twice a second.
    fn team(&self) -> (Limits, Spend) {
        let limits = self.store.limits();
        if limits.is_none() {
            return (limits, Spend::default());
        }
        (limits, self.store.team_spent())
    }

    fn record(&self, total: &Spend) {
        if let Err(e) = self.store.record_spend(&self.agent, total) {
            tracing::warn!("failed to record this agent's spend: {e}");
        }
    }
}
