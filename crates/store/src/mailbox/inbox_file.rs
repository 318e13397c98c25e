//! The live inbox file, `<agent>.json`, as the readers and the senders both handle it:
//! taking its lock (making its folder first), reading its array, and moving a corrupt one
//! aside. A read without the lock sees a whole array (every write replaces the file); a
//! file that is not a JSON array is moved aside as `<agent>.json.corrupt-<stamp>` under the
//! lock, never emptied.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::Result;
use crate::files;
use crate::layout::Root;
use swarm_util::error::IoContext;
use swarm_util::{clock, json, lock};

pub(super) fn lock_inbox(root: &Root, path: &Path) -> Result<lock::Locked> {
    if let Some(dir) = path.parent()
        && !dir.exists()
    {
        std::fs::create_dir_all(dir).ctx("create directory", dir)?;
    }
    Ok(files::lock(root, path)?)
}

/// Reads the array without a lock: `Ok(None)` if the file is corrupt.
pub(super) fn read_entries(root: &Root, path: &Path) -> Result<Option<Vec<Value>>> {
    Ok(match files::read(root, path)? {
        Some(bytes) => parse_entries(&bytes),
        None => Some(Vec::new()),
    })
}

pub(super) fn parse_entries(bytes: &[u8]) -> Option<Vec<Value>> {
    json::parse::<Vec<Value>>(bytes).ok()
}

/// Reads the array while holding the lock, moving a corrupt file aside.
pub(super) fn load_locked(root: &Root, path: &Path) -> Result<Vec<Value>> {
    if let Some(entries) = read_entries(root, path)? {
        return Ok(entries);
    }
    let aside = quarantine_path(path);
    std::fs::rename(path, &aside).ctx("move corrupt inbox aside", path)?;
    tracing::warn!(
        "inbox {} was not a JSON array; moved it aside to {} and started a new one",
        path.display(),
        aside.display()
    );
    Ok(Vec::new())
}

pub(super) fn quarantine_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(format!(".corrupt-{}", clock::compact_stamp()));
    PathBuf::from(p)
}
