//! A team's budget on disk: its limits, `teams/<team>/budget.json`, written once by the run
//! that made the team, and each agent's spend, `teams/<team>/spend/<agent>.json`, the
//! ledger the model client keeps (`swarm_llm::budget::BudgetedClient`), through [`Ledger`].
//!
//! swarm's own files. Each ledger has one writer, its agent, which replaces it whole and
//! atomically after every response, so it needs no lock, and does not fsync it (a power
//! cut may forget the last seconds' spend, but never leaves half a file: not worth an
//! fsync on every model call); the team's spend is the sum over
//! the ledgers, read before each model call (a few small files). A ledger that cannot be
//! read counts as nothing spent and is warned about: a budget is a brake, and a brake that
//! fails must not stop a team on its own.

use std::sync::Arc;

use crate::error::Result;
use crate::files;
use crate::layout::Root;
use swarm_util::error::IoContext;
use swarm_util::json;
use swarm_util::meter::{Ledger, Limits, Spend};
use swarm_util::names::{AgentName, TeamName};

/// Records the team's limits (nothing when there are none).
pub(crate) fn write_limits(root: &Root, team: &TeamName, limits: &Limits) -> Result<()> {
    if limits.is_none() {
        return Ok(());
    }
    Ok(files::write(
        root,
        &root.budget_path(team),
        &json::to_pretty(limits),
    )?)
}

/// The team's limits; none when no run set them.
pub(crate) fn limits(root: &Root, team: &TeamName) -> Limits {
    read_json(root, &root.budget_path(team)).unwrap_or_default()
}

/// What `agent` has spent, by its ledger.
pub(crate) fn spent(root: &Root, team: &TeamName, agent: &AgentName) -> Spend {
    read_json(root, &root.spend_path(team, agent)).unwrap_or_default()
}

/// Replaces `agent`'s ledger with `total`.
pub(crate) fn record(root: &Root, team: &TeamName, agent: &AgentName, total: &Spend) -> Result<()> {
    let dir = root.spend_dir(team);
    if !dir.is_dir() {
        std::fs::create_dir_all(&dir).ctx("create directory", &dir)?;
    }
    Ok(files::write_unsynced(
        root,
        &root.spend_path(team, agent),
        &json::to_pretty(total),
    )?)
}

/// What the whole team has spent: the sum of every ledger.
pub(crate) fn team_spent(root: &Root, team: &TeamName) -> Spend {
    let mut total = Spend::default();
    let Ok(entries) = std::fs::read_dir(root.spend_dir(team)) else {
        return total;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(agent) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        if let Ok(agent) = AgentName::parse_any(agent) {
            total.add(&spent(root, team, &agent));
        }
    }
    total
}

fn read_json<T: serde::de::DeserializeOwned>(root: &Root, path: &std::path::Path) -> Option<T> {
    let bytes = match files::read(root, path) {
        Ok(b) => b?,
        Err(e) => {
            tracing::warn!("failed to read {}: {e}", path.display());
            return None;
        }
    };
    json::parse(&bytes)
        .map_err(|e| tracing::warn!("ignoring {}: {e}", path.display()))
        .ok()
}

/// One agent's ledger in its team's directory.
pub(crate) struct FileLedger {
    root: Root,
    team: TeamName,
    agent: AgentName,
}

impl FileLedger {
    pub fn new(root: &Root, team: &TeamName, agent: &AgentName) -> Arc<FileLedger> {
        Arc::new(FileLedger {
            root: root.clone(),
            team: team.clone(),
            agent: agent.clone(),
        })
    }
}

impl Ledger for FileLedger {
    fn own(&self) -> Spend {
        spent(&self.root, &self.team, &self.agent)
    }

    /// Without limits, nothing to add up: the lead asks twice a second.
    fn team(&self) -> (Limits, Spend) {
        let limits = limits(&self.root, &self.team);
        if limits.is_none() {
            return (limits, Spend::default());
        }
        (limits, team_spent(&self.root, &self.team))
    }

    fn record(&self, total: &Spend) {
        if let Err(e) = record(&self.root, &self.team, &self.agent, total) {
            tracing::warn!("failed to record this agent's spend: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_team_spends_the_sum_of_its_ledgers_and_limits_round_trip() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        let team = TeamName::new("t").unwrap();
        assert_eq!(limits(&root, &team), Limits::default());
        assert_eq!(team_spent(&root, &team), Spend::default());
        write_limits(&root, &team, &Limits::default()).unwrap();
        assert!(!root.budget_path(&team).exists(), "no limits, no file");
        let l = Limits {
            usd: Some(1.5),
            tokens: Some(9000),
        };
        std::fs::create_dir_all(root.team_dir(&team)).unwrap();
        write_limits(&root, &team, &l).unwrap();
        assert_eq!(limits(&root, &team), l);
        let bob = AgentName::new("bob").unwrap();
        let spend = |tokens, usd| Spend {
            tokens,
            usd,
            unpriced_tokens: 1,
            calls: 2,
        };
        record(&root, &team, &bob, &spend(100, 0.5)).unwrap();
        // A rewrite replaces: the ledger holds a running total, not increments.
        record(&root, &team, &bob, &spend(300, 0.75)).unwrap();
        record(&root, &team, &AgentName::lead(), &spend(50, 0.25)).unwrap();
        assert_eq!(spent(&root, &team, &bob), spend(300, 0.75));
        let total = team_spent(&root, &team);
        assert_eq!(
            (total.tokens, total.unpriced_tokens, total.calls),
            (350, 2, 4)
        );
        assert!((total.usd - 1.0).abs() < 1e-12);
        // A ledger that cannot be read counts as nothing, and stops nobody.
        std::fs::write(root.spend_dir(&team).join("carol.json"), "{not json").unwrap();
        assert_eq!(team_spent(&root, &team).tokens, 350);
        let ledger = FileLedger::new(&root, &team, &bob);
        assert_eq!(ledger.own(), spend(300, 0.75));
        assert_eq!(ledger.team().0, l);
    }
}
