//! The rate-limit gate: the moment before which no agent sends to a provider, shared by
//! every agent of a team so that one 429 makes them all wait once, together, instead of
//! each finding the limit for itself.
//!
//! - One gate per provider key (provider and base URL). In a team it is the team's, kept by
//!   the store ([`swarm_util::meter::RateGate`]); every process also keeps its own, so
//!   clients of one process share a gate even without a team (a solo agent).
//! - `until_ms` only moves later ([`RateLimit::merged`]). `since_ms` is when the current
//!   closed spell began, `by` who last pushed it.
//! - Failing to read or write the team's gate never fails a model call: the gate of this
//!   process still holds, so the agent still waits, only alone.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex};

use swarm_util::clock;
use swarm_util::meter::{RateGate as TeamGate, RateLimit};

/// Every gate of this process, so clients of one process share them even without a team.
static LOCAL: LazyLock<Mutex<BTreeMap<String, RateLimit>>> =
    LazyLock::new(|| Mutex::new(BTreeMap::new()));

/// The gate of one provider, for one client.
#[derive(Debug, Clone)]
pub struct Gate {
    key: String,
    team: Option<Arc<dyn TeamGate>>,
}

impl Gate {
    /// The gate of `key` (see [`provider_key`]), shared with the team's when there is one.
    pub fn new(key: String, team: Option<Arc<dyn TeamGate>>) -> Gate {
        Gate { key, team }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// The spell in force: the later of this process's and the team's, if any.
    pub fn read(&self) -> Option<RateLimit> {
        let local = LOCAL.lock().unwrap().get(&self.key).cloned();
        let shared = self.team.as_ref().and_then(|team| {
            team.read(&self.key).unwrap_or_else(|e| {
                tracing::warn!("{e}");
                None
            })
        });
        match (local, shared) {
            (Some(a), Some(b)) => Some(if b.until_ms > a.until_ms { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    /// Closes the gate until `until_ms` unless it already is until later; returns the spell
    /// now in force. Blocks on the team gate's lock: call it off the async threads.
    pub fn close(&self, until_ms: i64, reason: &str, by: &str) -> RateLimit {
        let now = clock::now_ms();
        let new = RateLimit {
            until_ms,
            reason: reason.to_owned(),
            since_ms: now,
            by: by.to_owned(),
        };
        let mut in_force = {
            let mut local = LOCAL.lock().unwrap();
            let merged = RateLimit::merged(local.get(&self.key), new.clone(), now);
            local.insert(self.key.clone(), merged.clone());
            merged
        };
        if let Some(team) = &self.team {
            match team.close(&self.key, new) {
                Ok(shared) if shared.until_ms > in_force.until_ms => in_force = shared,
                Ok(_) => {}
                Err(e) => tracing::warn!(
                    "failed to share the rate limit with the team: {e}; waiting alone"
                ),
            }
        }
        in_force
    }
}

/// The key of a provider: its kind and base URL (two servers are two limits).
pub fn provider_key(provider: &str, base_url: &str) -> String {
    format!("{provider} {base_url}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    use swarm_util::meter::GateError;

    /// A team's gate as every backend keeps it, merging by the one rule, in memory.
    #[derive(Default)]
    struct Shared(Mutex<HashMap<String, RateLimit>>);

    impl TeamGate for Shared {
        fn read(&self, provider: &str) -> Result<Option<RateLimit>, GateError> {
            Ok(self.0.lock().unwrap().get(provider).cloned())
        }
        fn close(&self, provider: &str, spell: RateLimit) -> Result<RateLimit, GateError> {
            let mut gates = self.0.lock().unwrap();
            let merged = RateLimit::merged(gates.get(provider), spell, clock::now_ms());
            gates.insert(provider.to_owned(), merged.clone());
            Ok(merged)
        }
    }

    #[test]
    fn a_team_s_agents_wait_for_the_latest_moment_any_of_them_met() {
        let store = Arc::new(Shared::default());
        let team_gate = || Some(store.clone() as Arc<dyn TeamGate>);
        let key = provider_key("scripted", "http://t.invalid:1");
        let gate = Gate::new(key.clone(), team_gate());
        let far = clock::now_ms() + 60_000;
        assert_eq!(gate.close(far, "429", "alice").until_ms, far);
        assert_eq!(gate.close(far - 10_000, "529", "bob").until_ms, far);
        // Another process's view: the team's gate alone.
        let shared = store.read(&key).unwrap().unwrap();
        assert_eq!((shared.until_ms, shared.by.as_str()), (far, "alice"));
        // A later moment from the team is the one in force here too.
        let later = RateLimit {
            until_ms: far + 5_000,
            reason: "429".into(),
            since_ms: clock::now_ms(),
            by: "carol".into(),
        };
        store.close(&key, later).unwrap();
        assert_eq!(gate.read().unwrap().by, "carol");
        assert_eq!(gate.close(far, "429", "alice").by, "carol");
    }

    #[test]
    fn without_a_team_the_gate_is_the_process_s() {
        let key = provider_key("scripted", "http://solo.invalid:3");
        let a = Gate::new(key.clone(), None);
        assert_eq!(a.read(), None);
        let until = clock::now_ms() + 30_000;
        a.close(until, "429", "solo");
        assert_eq!(Gate::new(key, None).read().unwrap().until_ms, until);
    }
}
