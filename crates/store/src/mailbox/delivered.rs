//! The delivered log, `<agent>.delivered.jsonl` (swarm's own file): every message that was
//! put in front of its reader and acknowledged, one compact JSON envelope per line, in
//! order. It only grows; a torn last line (a crash mid-append) is skipped by readers.
//! [`Cursor`] lets a reader that keeps coming back (the dashboard) parse only what was
//! appended since its last look.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::files;
use crate::layout::Root;
use crate::mailbox::envelope::Envelope;
use swarm_util::error::{Base as _, IoContext};
use swarm_util::names::{AgentName, TeamName};
use swarm_util::{json, no_symlinks};

/// Appends `entries` to the delivered log and returns the log's length before, for
/// [`truncate_delivered`]. A failed append (a full disk) leaves the log as it was, and an
/// append after a torn last line (a crash mid-append) starts on a line of its own, so no
/// message is ever glued onto garbage.
pub(super) fn append_delivered(root: &Root, path: &Path, entries: &[Value]) -> Result<u64> {
    files::check(root, path)?;
    let mut f = no_symlinks::open(
        std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            // It holds the lead's signed entries: only their reader's to read.
            .mode(0o600),
        "open",
        path,
    )?;
    let before = f.metadata().ctx("read", path)?.len();
    let mut buf = Vec::new();
    let mut last = [0u8];
    if before > 0 && f.read_exact_at(&mut last, before - 1).is_ok() && last[0] != b'\n' {
        buf.push(b'\n');
    }
    for e in entries {
        buf.extend_from_slice(json::to_compact(e).as_bytes());
        buf.push(b'\n');
    }
    let appended = f.write_all(&buf).and_then(|()| {
        if root.durable() {
            f.sync_data()
        } else {
            Ok(())
        }
    });
    if let Err(e) = appended {
        let _ = f.set_len(before);
        return Err(Error::io("append to", path, e));
    }
    Ok(before)
}

/// Takes back an append whose messages stayed in the inbox after all (the inbox could not
/// be rewritten), so a later acknowledgement does not log them twice.
pub(super) fn truncate_delivered(path: &Path, len: u64) {
    let cut =
        no_symlinks::open(std::fs::OpenOptions::new().write(true), "open", path).and_then(|f| {
            f.set_len(len)
                .map_err(|e| swarm_util::error::Error::io("truncate", path, e))
        });
    if let Err(e) = cut {
        tracing::warn!(path = %path.display(), "failed to take back an append to the delivered log: {e}");
    }
}

/// Messages already acknowledged, oldest first (the delivered log).
pub(crate) fn read_delivered(
    root: &Root,
    team: &TeamName,
    agent: &AgentName,
) -> Result<Vec<Envelope>> {
    let path = root.delivered_log_path(team, agent);
    let Some(bytes) = files::read(root, &path)? else {
        return Ok(Vec::new());
    };
    // A torn line (a crash mid-append) is skipped, not fatal.
    Ok(bytes
        .split(|&b| b == b'\n')
        .filter_map(|l| json::parse::<Envelope>(l).ok())
        .collect())
}

/// How far a reader has read one delivered log: the file (by inode, so a log that was
/// replaced is read from its start) and the offset of the first line not yet read.
#[derive(Debug, Clone, Default)]
pub struct Cursor {
    ino: u64,
    offset: u64,
}

impl Cursor {
    /// A cursor on log `log` (for files, its inode; another backend's own number for the
    /// log) before `offset` (for files, a byte offset; another backend's position). The
    /// default cursor, on log 0, is on no log: the first read from it restarts.
    pub fn at(log: u64, offset: u64) -> Cursor {
        Cursor { ino: log, offset }
    }

    /// The log this cursor is on (see [`Cursor::at`]).
    pub fn log(&self) -> u64 {
        self.ino
    }

    /// Where in its log this cursor is (see [`Cursor::at`]).
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

/// What a delivered log gained since a reader last looked.
#[derive(Debug, Clone, Default)]
pub struct Appended {
    /// The log is not the one the cursor was on (it was replaced, cut short, or is gone):
    /// forget what was read from it before.
    pub restarted: bool,
    pub envelopes: Vec<Envelope>,
}

/// The messages appended to `agent`'s delivered log since `cursor`, which moves past them.
/// Only whole lines are read: a line still being appended is read next time.
pub(crate) fn read_delivered_since(
    root: &Root,
    team: &TeamName,
    agent: &AgentName,
    cursor: &mut Cursor,
) -> Result<Appended> {
    let path = root.delivered_log_path(team, agent);
    files::check(root, &path)?;
    let mut file = match no_symlinks::open(std::fs::OpenOptions::new().read(true), "open", &path) {
        Ok(f) => f,
        Err(swarm_util::error::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            *cursor = Cursor::default();
            return Ok(Appended {
                restarted: true,
                envelopes: Vec::new(),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let meta = file.metadata().ctx("read", &path)?;
    let mut appended = Appended::default();
    if meta.ino() != cursor.ino || meta.len() < cursor.offset {
        *cursor = Cursor {
            ino: meta.ino(),
            offset: 0,
        };
        appended.restarted = true;
    }
    if meta.len() == cursor.offset {
        return Ok(appended);
    }
    file.seek(SeekFrom::Start(cursor.offset))
        .ctx("read", &path)?;
    let mut buf = Vec::new();
    file.read_to_end(&mut buf).ctx("read", &path)?;
    let Some(end) = buf.iter().rposition(|&b| b == b'\n') else {
        return Ok(appended);
    };
    appended.envelopes = buf[..end]
        .split(|&b| b == b'\n')
        .filter_map(|line| json::parse::<Envelope>(line).ok())
        .collect();
    cursor.offset += end as u64 + 1;
    Ok(appended)
}

/// The agents of `team` that have a live inbox or a delivered log, sorted by name.
pub(crate) fn agents_with_mail(root: &Root, team: &TeamName) -> Result<Vec<AgentName>> {
    let dir = root.inbox_dir(team);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read directory", &dir, e)),
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let stem = name
                .strip_suffix(".delivered.jsonl")
                .or_else(|| name.strip_suffix(".json"))?;
            Some(stem.to_owned())
        })
        .collect();
    names.sort();
    names.dedup();
    Ok(names
        .iter()
        .filter_map(|n| AgentName::parse_any(n).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivered_logs_are_tailed_by_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let team = TeamName::new("t").unwrap();
        let bob = AgentName::new("bob").unwrap();
        std::fs::create_dir_all(root.inbox_dir(&team)).unwrap();
        let log = root.delivered_log_path(&team, &bob);
        let line = |t: &str| {
            let mut s = json::to_compact(&Envelope::new("alice", t));
            s.push('\n');
            s
        };
        let texts = |a: Appended| a.envelopes.into_iter().map(|e| e.text).collect::<Vec<_>>();
        let mut cursor = Cursor::default();
        let mut read = || read_delivered_since(&root, &team, &bob, &mut cursor).unwrap();
        assert!(read().envelopes.is_empty());
        std::fs::write(&log, line("first")).unwrap();
        assert_eq!(texts(read()), ["first"]);
        // A torn line waits until it is whole.
        let second = line("second");
        let (head, rest) = second.split_at(10);
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(head.as_bytes()).unwrap();
        assert!(read().envelopes.is_empty());
        f.write_all(rest.as_bytes()).unwrap();
        assert_eq!(texts(read()), ["second"]);
        // Replaced by a shorter file: read again from the start.
        std::fs::remove_file(&log).unwrap();
        std::fs::write(&log, line("fresh")).unwrap();
        let again = read();
        assert!(again.restarted);
        assert_eq!(texts(again), ["fresh"]);
    }

    #[test]
    fn an_append_after_a_torn_line_starts_a_line_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let team = TeamName::new("t").unwrap();
        let bob = AgentName::new("bob").unwrap();
        std::fs::create_dir_all(root.inbox_dir(&team)).unwrap();
        let log = root.delivered_log_path(&team, &bob);
        let whole = json::to_compact(&Envelope::new("alice", "whole"));
        // A crash mid-append left half a line.
        std::fs::write(&log, format!("{whole}\n{}", &whole[..20])).unwrap();
        let next = serde_json::to_value(Envelope::new("alice", "next")).unwrap();
        append_delivered(&root, &log, &[next]).unwrap();
        let texts: Vec<String> = read_delivered(&root, &team, &bob)
            .unwrap()
            .into_iter()
            .map(|e| e.text)
            .collect();
        assert_eq!(texts, ["whole", "next"]);
    }
}
