//! Who leads a team right now: whoever holds an flock on `teams/<team>/lead.flock`, for
//! the life of its process. The kernel frees the lock the moment the lead dies, so a
//! lead that crashed never blocks a new one, and two leads never run at once.

use std::fs::File;

use crate::store::layout::Root;
use crate::store::names::TeamName;
use crate::store::roster;
use crate::util::error::{Error, Result};

/// Holds the team's lead lock; the lead is whoever holds it.
pub struct LeadLock {
    _file: File,
}

impl LeadLock {
    pub fn acquire(root: &Root, team: &TeamName) -> Result<LeadLock> {
        let path = root.lead_lock_path(team);
        let file = crate::store::files::open_lock_file(root, &path)?;
        match file.try_lock() {
            Ok(()) => Ok(LeadLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => {
                let pid = roster::load(root, team)
                    .ok()
                    .and_then(|c| c.extra.get("leadProcess").and_then(|p| p["pid"].as_i64()));
                Err(Error::conflict(format!(
                    "team '{team}' already has a lead running{}; attach to it with `swarm attach {team}`",
                    pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
                )))
            }
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io("lock", &path, e)),
        }
    }
}

/// Whether a process holds the team's lead lock right now.
pub fn is_running(root: &Root, team: &TeamName) -> bool {
    let path = root.lead_lock_path(team);
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
    {
        Ok(file) => matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock)),
        Err(_) => false,
    }
}
