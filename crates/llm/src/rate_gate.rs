//! The rate-limit gate: the moment before which no agent sends to a provider, shared by
//! every agent of a team so that one 429 makes them all wait once, together, instead of
//! each finding the limit for itself.
//!
//! - One gate per provider key (provider and base URL). In a team it lives in a file,
//!   `<team dir>/rate-limit.json`: `{"<key>": {"until_ms", "reason", "since_ms", "by"}}`.
//!   Without one (a solo agent) it lives in this process only.
//! - `until_ms` only moves later: a writer keeps the later of the recorded moment and its
//!   own. `since_ms` is when the current closed spell began, `by` who last pushed it.
//! - Writes follow the store's rule (lock with `util::lock`, read, modify, atomic durable
//!   replace); readers read without a lock, since a replace is atomic. A file that does not
//!   parse counts as an open gate and is rewritten: it holds only moments that pass anyway.
//! - Failing to read or write the file never fails a model call: the gate of this process
//!   still holds, so the agent still waits, only alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

use serde::{Deserialize, Serialize};

use swarm_util::{atomic, clock, lock, no_symlinks};

/// One provider's closed spell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Closed {
    /// Epoch milliseconds before which nobody sends.
    pub until_ms: i64,
    pub reason: String,
    /// When this spell began.
    pub since_ms: i64,
    /// The agent that last pushed `until_ms` later.
    pub by: String,
}

/// The file's shape: provider key to spell.
pub type Gates = BTreeMap<String, Closed>;

/// Every gate of this process, so clients of one process share them even without a file.
static LOCAL: LazyLock<Mutex<Gates>> = LazyLock::new(|| Mutex::new(Gates::new()));

/// The gate of one provider, for one client.
#[derive(Debug, Clone)]
pub struct RateGate {
    key: String,
    file: Option<PathBuf>,
}

impl RateGate {
    /// The gate of `key` (see [`provider_key`]), shared through `file` when there is one.
    pub fn new(key: String, file: Option<PathBuf>) -> RateGate {
        RateGate { key, file }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// The spell in force: the later of this process's and the file's, if any.
    pub fn read(&self) -> Option<Closed> {
        let local = LOCAL.lock().unwrap().get(&self.key).cloned();
        let shared = self
            .file
            .as_deref()
            .and_then(|f| read_file(f).remove(&self.key));
        match (local, shared) {
            (Some(a), Some(b)) => Some(if b.until_ms > a.until_ms { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    /// Closes the gate until `until_ms` unless it already is until later; returns the spell
    /// now in force. Blocks on the file's lock: call it off the async threads.
    pub fn close(&self, until_ms: i64, reason: &str, by: &str) -> Closed {
        let now = clock::now_ms();
        let new = Closed {
            until_ms,
            reason: reason.to_owned(),
            since_ms: now,
            by: by.to_owned(),
        };
        let mut in_force = {
            let mut local = LOCAL.lock().unwrap();
            let merged = merge(local.get(&self.key), new.clone(), now);
            local.insert(self.key.clone(), merged.clone());
            merged
        };
        if let Some(file) = &self.file {
            match close_in_file(file, &self.key, new, now) {
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

/// The spell after `new` meets `current`: the later moment wins; a spell still running
/// keeps its start.
pub fn merge(current: Option<&Closed>, new: Closed, now_ms: i64) -> Closed {
    match current {
        Some(c) if c.until_ms >= new.until_ms => c.clone(),
        Some(c) if c.until_ms > now_ms => Closed {
            since_ms: c.since_ms,
            ..new
        },
        _ => new,
    }
}

/// Every gate in `file`; none when it is missing or does not parse.
pub fn read_file(file: &Path) -> Gates {
    match no_symlinks::read(file) {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!("ignoring {}: {e}", file.display());
            Gates::new()
        }),
        Ok(None) => Gates::new(),
        Err(e) => {
            tracing::warn!("{e}");
            Gates::new()
        }
    }
}

/// Merges `new` into `key`'s spell in `file` under its lock; returns the spell in force.
pub fn close_in_file(
    file: &Path,
    key: &str,
    new: Closed,
    now_ms: i64,
) -> swarm_util::error::Result<Closed> {
    let _held = lock::lock(file, lock::DEFAULT_TIMEOUT)?;
    let mut gates = read_file(file);
    let merged = merge(gates.get(key), new, now_ms);
    if gates.get(key) == Some(&merged) {
        return Ok(merged);
    }
    gates.insert(key.to_owned(), merged.clone());
    let bytes = serde_json::to_vec_pretty(&gates).expect("gates serialise");
    atomic::write(file, &bytes, true)?;
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spell(until_ms: i64, since_ms: i64, by: &str) -> Closed {
        Closed {
            until_ms,
            reason: format!("429 for {by}"),
            since_ms,
            by: by.into(),
        }
    }

    #[test]
    fn until_only_moves_later_and_a_running_spell_keeps_its_start() {
        let now = 1_000;
        let a = spell(5_000, 900, "a");
        // Earlier or equal: nothing changes.
        assert_eq!(merge(Some(&a), spell(4_000, now, "b"), now), a);
        assert_eq!(merge(Some(&a), spell(5_000, now, "b"), now), a);
        // Later: the new moment and its author, the old start.
        assert_eq!(
            merge(Some(&a), spell(7_000, now, "b"), now),
            spell(7_000, 900, "b")
        );
        // A spell that is over starts afresh.
        assert_eq!(
            merge(Some(&a), spell(9_000, 6_000, "b"), 6_000),
            spell(9_000, 6_000, "b")
        );
        assert_eq!(merge(None, spell(3, 2, "c"), 1), spell(3, 2, "c"));
    }

    #[test]
    fn the_file_keeps_the_latest_moment_per_provider() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rate-limit.json");
        let gate = RateGate::new(
            provider_key("scripted", "http://t.invalid:1"),
            Some(file.clone()),
        );
        let far = clock::now_ms() + 60_000;
        assert_eq!(gate.close(far, "429", "alice").until_ms, far);
        assert_eq!(gate.close(far - 10_000, "529", "bob").until_ms, far);
        let other = RateGate::new(
            provider_key("openai", "http://t.invalid:2"),
            Some(file.clone()),
        );
        other.close(far - 5_000, "429", "carol");
        let gates = read_file(&file);
        assert_eq!(gates.len(), 2);
        let g = &gates["scripted http://t.invalid:1"];
        assert_eq!((g.until_ms, g.by.as_str()), (far, "alice"));
        // Another process's view: the file alone.
        let fresh = RateGate::new("scripted http://t.invalid:1".into(), Some(file.clone()));
        assert_eq!(fresh.read().unwrap().until_ms, far);
        // A corrupt file is an open gate, then rewritten whole.
        std::fs::write(&file, b"{not json").unwrap();
        assert!(read_file(&file).is_empty());
        let later = far + 1_000;
        close_in_file(&file, "k", spell(later, 0, "dave"), 0).unwrap();
        assert_eq!(read_file(&file)["k"].until_ms, later);
    }

    #[test]
    fn without_a_file_the_gate_is_the_process_s() {
        let key = provider_key("scripted", "http://solo.invalid:3");
        let a = RateGate::new(key.clone(), None);
        assert_eq!(a.read(), None);
        let until = clock::now_ms() + 30_000;
        a.close(until, "429", "solo");
        assert_eq!(RateGate::new(key, None).read().unwrap().until_ms, until);
    }

    /// The argument that makes the test binary a writer process (see below).
    const CHILD: &str = "rate-gate-writer";
    const WRITERS: usize = 6;
    const ROUNDS: i64 = 15;

    /// A writer process: closes the shared gate and its own key `ROUNDS` times, checking
    /// after each close that the gate never moved earlier. Run only by the test below,
    /// which passes `rate-gate-writer <file> <i>` as extra (never matching) test filters.
    #[test]
    #[ignore = "a child process of concurrent_writers_in_processes_lose_nothing"]
    fn gate_writer_child() {
        let args: Vec<String> = std::env::args().collect();
        let Some(at) = args.iter().position(|a| a == CHILD) else {
            return;
        };
        let file = PathBuf::from(&args[at + 1]);
        let i: i64 = args[at + 2].parse().unwrap();
        let base = 4_000_000_000_000;
        let mut seen = 0;
        for round in 0..ROUNDS {
            let until = base + round * 1_000 + i;
            let shared = close_in_file(&file, "shared", spell(until, 0, &i.to_string()), 0)
                .unwrap()
                .until_ms;
            assert!(shared >= until && shared >= seen, "moved earlier");
            seen = shared;
            close_in_file(&file, &format!("own{i}"), spell(until, 0, "x"), 0).unwrap();
        }
    }

    #[test]
    fn concurrent_writers_in_processes_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rate-limit.json");
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = (0..WRITERS)
            .map(|i| {
                std::process::Command::new(&exe)
                    .args(["--exact", "rate_gate::tests::gate_writer_child"])
                    .args(["--ignored", "--test-threads=1", "-q", CHILD])
                    .arg(&file)
                    .arg(i.to_string())
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success(), "a writer failed");
        }
        let gates = read_file(&file);
        let top = 4_000_000_000_000 + (ROUNDS - 1) * 1_000 + WRITERS as i64 - 1;
        assert_eq!(gates["shared"].until_ms, top);
        for i in 0..WRITERS {
            let own = &gates[&format!("own{i}")];
            assert_eq!(
                own.until_ms,
                4_000_000_000_000 + (ROUNDS - 1) * 1_000 + i as i64
            );
        }
        assert_eq!(gates.len(), WRITERS + 1, "{gates:?}");
    }
}
