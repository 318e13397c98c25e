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

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::files;
use crate::layout::Root;
use crate::names::{AgentName, TeamName};
use swarm_util::error::IoContext;
use swarm_util::json;

/// What may be spent; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

/// What was spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spend {
    #[serde(default)]
    pub tokens: u64,
    #[serde(default)]
    pub usd: f64,
    /// Tokens of models without a known price: in `tokens`, not in `usd`.
    #[serde(default)]
    pub unpriced_tokens: u64,
    /// Model calls that got a response.
    #[serde(default)]
    pub calls: u64,
}

impl Spend {
    pub fn add(&mut self, other: &Spend) {
        self.tokens += other.tokens;
        self.usd += other.usd;
        self.unpriced_tokens += other.unpriced_tokens;
        self.calls += other.calls;
    }
}

impl Limits {
    pub fn is_none(&self) -> bool {
        self.usd.is_none() && self.tokens.is_none()
    }

    /// Which limit `spend` has reached ("6000 tokens of 6000"), if it has.
    pub fn reached(&self, spend: &Spend) -> Option<String> {
        if let Some(max) = self.tokens
            && spend.tokens >= max
        {
            return Some(format!("{} tokens of {max}", spend.tokens));
        }
        if let Some(max) = self.usd
            && spend.usd >= max
        {
            return Some(format!("${:.4} of ${max:.2}", spend.usd));
        }
        None
    }

    /// The largest share of a limit `spend` used, with what it is ("8000 tokens of
    /// 10000"); `None` without limits.
    pub fn most_spent(&self, spend: &Spend) -> Option<(f64, String)> {
        let by_tokens = self.tokens.map(|max| {
            (
                spend.tokens as f64 / max.max(1) as f64,
                format!("{} tokens of {max}", spend.tokens),
            )
        });
        let by_usd = self
            .usd
            .map(|max| (spend.usd / max, format!("${:.4} of ${max:.2}", spend.usd)));
        [by_tokens, by_usd]
            .into_iter()
            .flatten()
            .max_by(|a, b| a.0.total_cmp(&b.0))
    }

    /// "$5.00 and 100000 tokens", for people.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = [
            self.usd.map(|u| format!("${u:.2}")),
            self.tokens.map(|t| format!("{t} tokens")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            "no limit".to_owned()
        } else {
            parts.join(" and ")
        }
    }
}

/// Where an agent's spend is kept, and where the team's is added up.
pub trait Ledger: Send + Sync {
    /// What this agent spent before this process (a restarted agent goes on from there).
    fn own(&self) -> Spend;
    /// The team's limits and what the whole team has spent, this agent included.
    fn team(&self) -> (Limits, Spend);
    /// Records `total`, everything this agent has spent.
    fn record(&self, total: &Spend);
}

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
