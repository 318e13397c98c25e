//! The rate-limit gates in PostgreSQL: one row per provider in `rate_gates`, made on the
//! first close and locked by every close after, which merges by the seam's one rule
//! ([`RateLimit::merged`]: the later moment wins, a running spell keeps its start) and
//! writes only when the spell in force changed. Readers take no lock. A close is safe to
//! retry: merging the same spell twice leaves what merging it once does.

use postgres::types::Json;

use crate::connect::Retry;
use crate::mail::unknown_team;
use crate::{PgStore, doc};
use swarm_store::error::Result;
use swarm_util::clock;
use swarm_util::meter::{GateError, RateGate, RateLimit};

impl RateGate for PgStore {
    fn read(&self, provider: &str) -> Result<Option<RateLimit>, GateError> {
        let what = format!("read the rate gate of {provider} in team '{}'", self.team);
        let read: Result<_> = self.db.run(Retry::Safe, &what, |c| {
            let row = c.query_opt(
                "SELECT spell FROM rate_gates WHERE team = $1 AND provider = $2 AND spell IS NOT NULL",
                &[&self.team.as_str(), &provider],
            )?;
            row.map(|r| doc(&r, "a rate-limit spell")).transpose()
        });
        Ok(read?)
    }

    fn close(&self, provider: &str, spell: RateLimit) -> Result<RateLimit, GateError> {
        let what = format!("close the rate gate of {provider} in team '{}'", self.team);
        let closed: Result<_> = self.db.transaction(Retry::Safe, &what, |tx| {
            let team = self.team.as_str();
            tx.execute(
                "INSERT INTO rate_gates (team, provider) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&team, &provider],
            )
            .map_err(|e| unknown_team(self, e))?;
            let row = tx.query_one(
                "SELECT spell FROM rate_gates WHERE team = $1 AND provider = $2 FOR UPDATE",
                &[&team, &provider],
            )?;
            let current: Option<RateLimit> = match row.get::<_, Option<serde_json::Value>>(0) {
                Some(_) => Some(doc(&row, "a rate-limit spell")?),
                None => None,
            };
            let merged = RateLimit::merged(current.as_ref(), spell.clone(), clock::now_ms());
            if current.as_ref() != Some(&merged) {
                tx.execute(
                    "UPDATE rate_gates SET spell = $3 WHERE team = $1 AND provider = $2",
                    &[&team, &provider, &Json(&merged)],
                )?;
            }
            Ok(merged)
        });
        Ok(closed?)
    }
}
