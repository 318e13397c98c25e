//! What a teammate has believed from its lead, kept across its restarts: the `msg_id` and
//! timestamp of each signed entry it accepted in the last [`MAX_AGE_MS`] (older entries are
//! refused anyway, so older ids need not be kept). Without it a copy of a signed entry,
//! put back in the inbox after a resume or a respawn, would be believed a second time.
//!
//! One file per teammate under the root of the host it runs on,
//! `teams/<team>/lead_seen/<agent>.json` (`{"<msg_id>": <epoch ms>, ...}`), replaced whole
//! on each change; it is only ever read by that teammate. A file that cannot be read is
//! moved aside and counts as empty (a warning says so): the age limit still bounds what a
//! replay could reach.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::files;
use crate::layout::Root;
use crate::mailbox::lead_sig::{CLOCK_SKEW_MS, MAX_AGE_MS};
use swarm_util::clock;
use swarm_util::error::IoContext;
use swarm_util::names::{AgentName, TeamName};

/// The ids a teammate believed, with when each was written (epoch ms).
pub type Seen = BTreeMap<String, i64>;

/// What `agent` of `team` has believed, as last recorded here.
pub fn load(root: &Root, team: &TeamName, agent: &AgentName) -> Result<Seen> {
    let path = root.lead_seen_path(team, agent);
    let Some(bytes) = files::read(root, &path)? else {
        return Ok(Seen::new());
    };
    match serde_json::from_slice::<Seen>(&bytes) {
        Ok(seen) => Ok(seen),
        Err(e) => {
            let aside = path.with_extension(format!("corrupt.{}", clock::now_ms()));
            let _ = std::fs::rename(&path, &aside);
            tracing::warn!(
                "failed to read {}: {e}; moved it to {} and starting from none",
                path.display(),
                aside.display()
            );
            Ok(Seen::new())
        }
    }
}

/// Records `seen` as what `agent` has believed, without the ids too old to matter.
pub fn record(root: &Root, team: &TeamName, agent: &AgentName, seen: &mut Seen) -> Result<()> {
    let oldest = clock::now_ms() - MAX_AGE_MS - CLOCK_SKEW_MS;
    seen.retain(|_, at| *at >= oldest);
    let path = root.lead_seen_path(team, agent);
    files::check(root, &path)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).ctx("create directory", dir)?;
    }
    let bytes = serde_json::to_vec(seen).unwrap_or_default();
    Ok(files::write(root, &path, &bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_believed_survives_a_restart_and_old_ids_are_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let (team, bob) = (TeamName::new("t").unwrap(), AgentName::new("bob").unwrap());
        assert!(load(&root, &team, &bob).unwrap().is_empty());
        let now = clock::now_ms();
        let mut seen = Seen::from([
            ("fresh".to_owned(), now),
            ("ancient".to_owned(), now - MAX_AGE_MS - CLOCK_SKEW_MS - 1),
        ]);
        record(&root, &team, &bob, &mut seen).unwrap();
        let back = load(&root, &team, &bob).unwrap();
        assert_eq!(back.keys().collect::<Vec<_>>(), ["fresh"]);
        // A torn file is moved aside, not fatal.
        std::fs::write(root.lead_seen_path(&team, &bob), b"{\"fre").unwrap();
        assert!(load(&root, &team, &bob).unwrap().is_empty());
    }
}
