//! What model calls cost and the brakes on them, in the words both sides use: the store
//! keeps them (an agent's usage in its state, ledgers, the team's rate-limit gates) and the
//! model client spends and obeys them. Values and two seams, no I/O: [`Ledger`] and
//! [`RateGate`] are implemented by each store backend and called by the model client.

use serde::{Deserialize, Serialize};

/// Tokens one response (or a running total) billed for, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
    }
}

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

/// A gate's failure, the backend's own error kept whole: the model client only reports it
/// (a gate that cannot be read is an open gate), so it needs no kinds of its own.
pub type GateError = Box<dyn std::error::Error + Send + Sync>;

/// One provider's closed spell at the team's rate-limit gate (see [`RateGate`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimit {
    /// Epoch milliseconds before which nobody sends.
    pub until_ms: i64,
    pub reason: String,
    /// When this spell began.
    pub since_ms: i64,
    /// The agent that last pushed `until_ms` later.
    pub by: String,
}

impl RateLimit {
    /// The spell after `new` meets `current` at `now_ms`: the later moment wins; a spell
    /// still running keeps its start. Every backend merges this way.
    pub fn merged(current: Option<&RateLimit>, new: RateLimit, now_ms: i64) -> RateLimit {
        match current {
            Some(c) if c.until_ms >= new.until_ms => c.clone(),
            Some(c) if c.until_ms > now_ms => RateLimit {
                since_ms: c.since_ms,
                ..new
            },
            _ => new,
        }
    }
}

/// The team's rate-limit gates, one per provider (a key naming the provider and its base
/// URL: two servers are two limits): the moment before which no agent of the team sends to
/// it, so that one 429 makes the whole team wait once, together, instead of each agent
/// finding the limit for itself. A gate's moment only moves later ([`RateLimit::merged`]).
pub trait RateGate: Send + Sync {
    /// The spell recorded for `provider`, if any (it may be over already).
    fn read(&self, provider: &str) -> Result<Option<RateLimit>, GateError>;
    /// Merges `spell` into `provider`'s gate, atomically; returns the spell now in force.
    /// Blocks on the gate's lock: call it off the async threads.
    fn close(&self, provider: &str, spell: RateLimit) -> Result<RateLimit, GateError>;
}

impl std::fmt::Debug for dyn RateGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RateGate")
    }
}
