//! Reading an inbox and acknowledging what was read: acknowledged entries go to the
//! delivered log first, then leave the live inbox, under its lock. A reader without the
//! lock sees a whole array; a corrupt inbox is moved aside, never emptied.

use serde_json::Value;
use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::files;
use crate::layout::Root;
use crate::mailbox::delivered::{append_delivered, truncate_delivered};
use crate::mailbox::envelope::{Delivery, Envelope};
use crate::mailbox::inbox_file::{load_locked, lock_inbox, read_entries};
use crate::mailbox::send::{commit_spool, spool_has_mail};
use swarm_util::error::Base as _;
use swarm_util::json;
use swarm_util::names::{AgentName, TeamName};

/// Every unread message in `agent`'s inbox, oldest first. Takes no lock unless the inbox
/// is corrupt and has to be moved aside.
pub(crate) fn read_unread(
    root: &Root,
    team: &TeamName,
    agent: &AgentName,
) -> Result<Vec<Delivery>> {
    Ok(read_all(root, team, agent)?
        .into_iter()
        .filter(|d| !d.envelope.is_read())
        .collect())
}

/// Every entry in the live inbox (unread, and entries a Claude Code 2.1.88 reader marked
/// read), oldest first.
pub(crate) fn read_all(root: &Root, team: &TeamName, agent: &AgentName) -> Result<Vec<Delivery>> {
    let path = root.inbox_path(team, agent);
    let spool = root.spool_dir(team, agent);
    if spool_has_mail(&spool) {
        // Left by a sender that died before its message was committed.
        let guard = lock_inbox(root, &path)?;
        commit_spool(root, team, agent, &guard)?;
    }
    let entries = match read_entries(root, &path)? {
        Some(e) => e,
        None => {
            let _guard = lock_inbox(root, &path)?;
            load_locked(root, &path)?
        }
    };
    Ok(entries
        .into_iter()
        .filter_map(|v| match serde_json::from_value::<Envelope>(v) {
            Ok(envelope) => Some(Delivery {
                key: envelope.key(),
                envelope,
            }),
            Err(e) => {
                tracing::warn!(path = %path.display(), "skipping an inbox entry that is not a message: {e}");
                None
            }
        })
        .collect())
}

/// One version of an inbox file, known without reading it: its inode, length and
/// modification time. Every swarm write replaces the file; a version is only trusted to
/// stand for its content once [`Version::settled`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

impl Version {
    /// A version from its parts, for a backend other than files: `id` names the inbox (a
    /// file's inode), `len` changes with every write (a file's length; another backend's
    /// write counter) and `modified_ns` is when it was last written, in nanoseconds since
    /// the epoch.
    pub fn from_parts(id: u64, len: u64, modified_ns: i128) -> Version {
        Version {
            ino: id,
            len,
            mtime_ns: modified_ns,
        }
    }

    /// Last modified long enough ago (2 s) that a write since, even one that reused the
    /// inode and kept the length, would have a later modification time than this.
    pub fn settled(&self) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        now - self.mtime_ns >= 2_000_000_000
    }
}

/// The version of `agent`'s inbox file now; `None` when there is none (or it cannot be
/// looked at, or is a symlink).
pub(crate) fn version(root: &Root, team: &TeamName, agent: &AgentName) -> Option<Version> {
    use std::os::unix::fs::MetadataExt;
    let path = root.inbox_path(team, agent);
    files::check(root, &path).ok()?;
    let meta = std::fs::symlink_metadata(&path).ok()?;
    meta.is_file().then(|| Version {
        ino: meta.ino(),
        len: meta.len(),
        mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
    })
}

/// Acknowledges delivered messages: appends them to the delivered log, then removes them
/// from the live inbox. Keys not in the inbox are ignored. Returns how many were removed.
pub(crate) fn ack(
    root: &Root,
    team: &TeamName,
    agent: &AgentName,
    keys: &[String],
) -> Result<usize> {
    if keys.is_empty() {
        return Ok(0);
    }
    let keys: HashSet<&str> = keys.iter().map(String::as_str).collect();
    let path = root.inbox_path(team, agent);
    let guard = lock_inbox(root, &path)?;
    commit_spool(root, team, agent, &guard)?;
    let entries = load_locked(root, &path)?;
    let (done, keep): (Vec<Value>, Vec<Value>) = entries.into_iter().partition(|v| {
        serde_json::from_value::<Envelope>(v.clone()).is_ok_and(|e| keys.contains(e.key().as_str()))
    });
    if done.is_empty() {
        return Ok(0);
    }
    let log = root.delivered_log_path(team, agent);
    let logged_from = append_delivered(root, &log, &done)?;
    if let Err(e) = files::write(root, &path, &json::to_pretty(&keep)) {
        truncate_delivered(&log, logged_from);
        return Err(e.into());
    }
    Ok(done.len())
}

/// Removes `agent`'s inbox, when the member it was made for never started (a spawn that
/// failed after delivering the first instructions). A missing inbox is fine.
pub(crate) fn remove_inbox(root: &Root, team: &TeamName, agent: &AgentName) -> Result<()> {
    let path = root.inbox_path(team, agent);
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", &path, e)),
        _ => Ok(()),
    }
}
