//! Who leads a team right now: whoever holds the lock on `teams/<team>/lead.flock`, for
//! the life of its process (a [`life_lock`]). The kernel frees it when the lead's process
//! ends, so a lead that crashed never blocks a new one, two leads never run at once, and
//! a lock seen free means the lead has written all it ever will. Looking (`is_running`)
//! takes nothing, so it never makes a lead that starts at that moment refuse.

use std::fs::File;

use crate::error::{Error, Result};
use crate::layout::Root;
use crate::roster;
use swarm_util::error::Base as _;
use swarm_util::life_lock;
use swarm_util::names::TeamName;

/// Holds the team's lead lock; the lead is whoever holds it.
pub(crate) struct LeadLock {
    _file: File,
}

impl LeadLock {
    pub fn acquire(root: &Root, team: &TeamName) -> Result<LeadLock> {
        let path = root.lead_lock_path(team);
        let file = crate::files::open_lock_file(root, &path)?;
        if life_lock::try_hold(&file, &path)? {
            return Ok(LeadLock { _file: file });
        }
        Err(already_led(team, roster::load(root, team).ok().as_ref()))
    }
}

/// The refusal of a second lead, naming the running one's pid when its roster (`config`)
/// records it. Every backend refuses with it.
pub fn already_led(team: &TeamName, config: Option<&roster::TeamConfig>) -> Error {
    let pid = config.and_then(|c| c.extra.get("leadProcess").and_then(|p| p["pid"].as_i64()));
    Error::conflict(format!(
        "team '{team}' already has a lead running{}; attach to it with `swarm attach {team}`",
        pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
    ))
}

/// Whether a process holds the team's lead lock right now.
pub(crate) fn is_running(root: &Root, team: &TeamName) -> bool {
    let path = root.lead_lock_path(team);
    crate::files::check(root, &path).is_ok() && life_lock::is_held(&path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn looking_for_a_lead_never_makes_a_starting_lead_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let team = TeamName::new("t").unwrap();
        roster::create(&root, &team, None, dir.path()).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let looker = {
            let (stop, seen, root, team) = (stop.clone(), seen.clone(), root.clone(), team.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if is_running(&root, &team) {
                        seen.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        };
        // At least 3000 starts, and on until the looker has caught a lead running at least
        // once (on a loaded machine it may take longer to be scheduled at such a moment).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut refused = 0;
        let mut starts = 0;
        while starts < 3000
            || (seen.load(Ordering::Relaxed) == 0 && std::time::Instant::now() < deadline)
        {
            match LeadLock::acquire(&root, &team) {
                Ok(lock) => drop(lock),
                Err(_) => refused += 1,
            }
            starts += 1;
        }
        stop.store(true, Ordering::Relaxed);
        looker.join().unwrap();
        let seen_running = seen.load(Ordering::Relaxed);
        assert_eq!(refused, 0, "a look made a starting lead refuse");
        assert!(
            seen_running > 0,
            "the looker never saw a lead: it proved nothing"
        );
    }

    #[test]
    fn a_running_lead_is_seen_and_a_second_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let team = TeamName::new("t").unwrap();
        roster::create(&root, &team, None, dir.path()).unwrap();
        assert!(!is_running(&root, &team));
        let lock = LeadLock::acquire(&root, &team).unwrap();
        assert!(is_running(&root, &team));
        assert!(LeadLock::acquire(&root, &team).is_err());
        drop(lock);
        assert!(!is_running(&root, &team));
    }
}
