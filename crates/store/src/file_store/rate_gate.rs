//! The team's rate-limit gates in a file, `<team dir>/rate-limit.json` (swarm's own, not
//! Claude Code's): `{"<provider key>": {"until_ms", "reason", "since_ms", "by"}}`.
//!
//! - A close follows the store's rule: both locks, read, merge ([`RateLimit::merged`]),
//!   atomic replace, and no write when the spell in force did not change. Readers take no
//!   lock, since a replace is atomic.
//! - A file that does not parse counts as an open gate and is rewritten whole at the next
//!   close: it holds only moments that pass anyway, so unlike the team's other files it is
//!   not worth moving aside.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::Result;
use crate::files;
use crate::layout::Root;
use swarm_util::clock;
use swarm_util::meter::{GateError, RateGate, RateLimit};
use swarm_util::names::TeamName;

/// The file's shape: provider key to spell.
type Gates = BTreeMap<String, RateLimit>;

/// One team's rate-limit file.
pub(super) struct FileRateGate {
    root: Root,
    path: PathBuf,
}

impl FileRateGate {
    pub(super) fn new(root: &Root, team: &TeamName) -> FileRateGate {
        FileRateGate {
            root: root.clone(),
            path: root.rate_limit_path(team),
        }
    }

    /// Every gate in the file; none when it is missing or does not parse.
    fn gates(&self) -> Result<Gates> {
        let Some(bytes) = files::read(&self.root, &self.path)? else {
            return Ok(Gates::new());
        };
        Ok(serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!("ignoring {}: {e}", self.path.display());
            Gates::new()
        }))
    }
}

impl RateGate for FileRateGate {
    fn read(&self, provider: &str) -> Result<Option<RateLimit>, GateError> {
        Ok(self.gates()?.remove(provider))
    }

    fn close(&self, provider: &str, spell: RateLimit) -> Result<RateLimit, GateError> {
        let _held = files::lock(&self.root, &self.path)?;
        let mut gates = self.gates()?;
        let merged = RateLimit::merged(gates.get(provider), spell, clock::now_ms());
        if gates.get(provider) == Some(&merged) {
            return Ok(merged);
        }
        gates.insert(provider.to_owned(), merged.clone());
        let bytes = serde_json::to_vec_pretty(&gates).expect("gates serialise");
        files::write(&self.root, &self.path, &bytes)?;
        Ok(merged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spell(until_ms: i64, since_ms: i64, by: &str) -> RateLimit {
        RateLimit {
            until_ms,
            reason: format!("429 for {by}"),
            since_ms,
            by: by.into(),
        }
    }

    fn team_gate(dir: &std::path::Path) -> (Root, FileRateGate) {
        let root = Root::new(dir);
        let team = TeamName::new("t").unwrap();
        std::fs::create_dir_all(root.team_dir(&team)).unwrap();
        let gate = FileRateGate::new(&root, &team);
        (root, gate)
    }

    #[test]
    fn until_only_moves_later_and_a_running_spell_keeps_its_start() {
        let now = 1_000;
        let a = spell(5_000, 900, "a");
        let merged = |new| RateLimit::merged(Some(&a), new, now);
        // Earlier or equal: nothing changes.
        assert_eq!(merged(spell(4_000, now, "b")), a);
        assert_eq!(merged(spell(5_000, now, "b")), a);
        // Later: the new moment and its author, the old start.
        assert_eq!(merged(spell(7_000, now, "b")), spell(7_000, 900, "b"));
        // A spell that is over starts afresh.
        assert_eq!(
            RateLimit::merged(Some(&a), spell(9_000, 6_000, "b"), 6_000),
            spell(9_000, 6_000, "b")
        );
        assert_eq!(
            RateLimit::merged(None, spell(3, 2, "c"), 1),
            spell(3, 2, "c")
        );
    }

    #[test]
    fn the_file_keeps_the_latest_moment_per_provider() {
        let dir = tempfile::tempdir().unwrap();
        let (root, gate) = team_gate(dir.path());
        let far = clock::now_ms() + 60_000;
        let key = "scripted http://t.invalid:1";
        assert_eq!(gate.read(key).unwrap(), None);
        assert_eq!(
            gate.close(key, spell(far, 0, "alice")).unwrap().until_ms,
            far
        );
        let kept = gate.close(key, spell(far - 10_000, 0, "bob")).unwrap();
        assert_eq!((kept.until_ms, kept.by.as_str()), (far, "alice"));
        gate.close("openai http://t.invalid:2", spell(far - 5_000, 0, "carol"))
            .unwrap();
        let file = root.rate_limit_path(&TeamName::new("t").unwrap());
        let gates: Gates = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(gates.len(), 2);
        assert_eq!(gates[key].by, "alice");
        // A corrupt file is an open gate, then rewritten whole.
        std::fs::write(&file, b"{not json").unwrap();
        assert_eq!(gate.read(key).unwrap(), None);
        gate.close("k", spell(far + 1_000, 0, "dave")).unwrap();
        assert_eq!(gate.read("k").unwrap().unwrap().until_ms, far + 1_000);
        assert_eq!(gate.read(key).unwrap(), None);
    }

    /// The argument that makes the test binary a writer process (see below).
    const CHILD: &str = "rate-gate-writer";
    const WRITERS: usize = 6;
    const ROUNDS: i64 = 15;
    const BASE: i64 = 4_000_000_000_000;

    /// A writer process: closes the shared gate and its own key `ROUNDS` times, checking
    /// after each close that the gate never moved earlier. Run only by the test below,
    /// which passes `rate-gate-writer <dir> <i>` as extra (never matching) test filters.
    #[test]
    #[ignore = "a child process of concurrent_writers_in_processes_lose_nothing"]
    fn gate_writer_child() {
        let args: Vec<String> = std::env::args().collect();
        let Some(at) = args.iter().position(|a| a == CHILD) else {
            return;
        };
        let (_, gate) = team_gate(std::path::Path::new(&args[at + 1]));
        let i: i64 = args[at + 2].parse().unwrap();
        let mut seen = 0;
        for round in 0..ROUNDS {
            let until = BASE + round * 1_000 + i;
            let shared = gate
                .close("shared", spell(until, 0, &i.to_string()))
                .unwrap()
                .until_ms;
            assert!(shared >= until && shared >= seen, "moved earlier");
            seen = shared;
            gate.close(&format!("own{i}"), spell(until, 0, "x"))
                .unwrap();
        }
    }

    #[test]
    fn concurrent_writers_in_processes_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = (0..WRITERS)
            .map(|i| {
                std::process::Command::new(&exe)
                    .args(["--exact", "file_store::rate_gate::tests::gate_writer_child"])
                    .args(["--ignored", "--test-threads=1", "-q", CHILD])
                    .arg(dir.path())
                    .arg(i.to_string())
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success(), "a writer failed");
        }
        let (_, gate) = team_gate(dir.path());
        let top = BASE + (ROUNDS - 1) * 1_000 + WRITERS as i64 - 1;
        assert_eq!(gate.read("shared").unwrap().unwrap().until_ms, top);
        for i in 0..WRITERS {
            let own = gate.read(&format!("own{i}")).unwrap().unwrap();
            assert_eq!(own.until_ms, BASE + (ROUNDS - 1) * 1_000 + i as i64);
        }
        assert_eq!(gate.gates().unwrap().len(), WRITERS + 1);
    }
}
