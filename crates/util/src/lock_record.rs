//! The record a swarm lock holder keeps in its flock sidecar of the directory locks it
//! makes (see `util::lock`), and recognising from it what a dead holder left: its lock
//! directories, and the staging directories they were made under. A directory is named
//! by inode and birth time, both of which a rename keeps and a refresh leaves alone.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Marks a record line naming a directory lock still under its staging name.
pub(super) const STAGED: &str = "staged";
/// Between a lock directory's path and the rest of its staging name.
pub(super) const STAGING_MARK: &str = ".staged-";

/// Removes, the first time this process locks something in `dir`, staging directories
/// whose maker is dead: one killed between making its staging directory and recording it
/// leaves a directory no record names. (A recorded one is removed by the next holder.)
pub(super) fn collect_staged_once(dir: &Path) {
    static SEEN: Mutex<Option<std::collections::HashSet<PathBuf>>> = Mutex::new(None);
    let first = SEEN
        .lock()
        .unwrap()
        .get_or_insert_with(Default::default)
        .insert(dir.to_path_buf());
    if !first {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(at) = name.rfind(STAGING_MARK) else {
            continue;
        };
        let pid = name[at + STAGING_MARK.len()..]
            .split('-')
            .next()
            .and_then(|p| p.parse::<i32>().ok());
        if pid.is_some_and(|p| !crate::process::is_alive(p)) {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// A name, unique to this attempt, under which a directory lock is made and recorded
/// before it is moved into place: `F.lock.staged-<pid>-<random>`.
pub(super) fn staging_path(lock_path: &Path) -> PathBuf {
    let mut p = lock_path.as_os_str().to_owned();
    p.push(format!(
        "{STAGING_MARK}{}-{:08x}",
        std::process::id(),
        fastrand::u32(..)
    ));
    PathBuf::from(p)
}

/// One directory lock a sidecar names, by inode and birth time: held (`path` is
/// `F.lock`), or staged (made under `path`, a staging name, and perhaps already moved to
/// `F.lock`; a rename keeps both inode and birth time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Recorded {
    pub(super) ino: u64,
    pub(super) born_ns: i64,
    pub(super) staged: bool,
    pub(super) path: PathBuf,
}

impl Recorded {
    /// The directory lock this entry is about, `F.lock`.
    pub(super) fn lock_path(&self) -> PathBuf {
        if !self.staged {
            return self.path.clone();
        }
        let text = self.path.as_os_str().to_string_lossy();
        match text.rfind(STAGING_MARK) {
            Some(i) => PathBuf::from(&text[..i]),
            None => self.path.clone(),
        }
    }
}

pub(super) type Record = Vec<Recorded>;

/// The record is the lines before the first empty one: it is overwritten in place, never
/// truncated, because ext4 flushes a file truncated to zero when it is closed.
pub(super) fn read_record(sidecar: &mut File) -> Record {
    let mut text = String::new();
    if sidecar.seek(SeekFrom::Start(0)).is_err() || sidecar.read_to_string(&mut text).is_err() {
        return Vec::new();
    }
    text.lines()
        .take_while(|line| !line.is_empty())
        .filter_map(|line| {
            let (staged, line) = match line.strip_prefix(STAGED) {
                Some(rest) => (true, rest.strip_prefix(' ')?),
                None => (false, line),
            };
            let mut parts = line.splitn(3, ' ');
            Some(Recorded {
                ino: parts.next()?.parse().ok()?,
                born_ns: parts.next()?.parse().ok()?,
                staged,
                path: PathBuf::from(parts.next()?),
            })
        })
        .collect()
}

pub(super) fn write_record(sidecar: &mut File, text: &str) -> io::Result<()> {
    let ended = format!("{text}\n");
    sidecar.write_all_at(ended.as_bytes(), 0)
}

/// Removes the directory lock `path` if it is the very directory a dead swarm holder
/// recorded, and any staging directory that holder left for it.
pub(super) fn break_orphan(path: &Path, record: &[Recorded]) -> bool {
    for entry in record.iter().filter(|e| e.staged && e.lock_path() == path) {
        if std::fs::symlink_metadata(&entry.path).is_ok_and(|m| is_recorded(entry, &m)) {
            let _ = std::fs::remove_dir(&entry.path);
        }
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let ours = record
        .iter()
        .any(|e| e.lock_path() == path && is_recorded(e, &meta));
    if ours {
        tracing::warn!(path = %path.display(), "removing a lock directory left by a crashed swarm process");
        let _ = std::fs::remove_dir(path);
    }
    ours
}

/// Whether `meta` is the very directory `entry` recorded. An inode number alone is not
/// enough (ext4 hands a freed one to the next directory made, which may be Claude Code's
/// lock), so the birth time must match too; where the filesystem keeps none, no directory
/// is recognised and a dead holder's lock waits to go stale like anyone's.
pub(super) fn is_recorded(entry: &Recorded, meta: &std::fs::Metadata) -> bool {
    let born = born_ns(meta);
    meta.is_dir() && born != 0 && entry.ino == meta.ino() && entry.born_ns == born
}

/// When a directory was made (its birth time), which, unlike its ctime, the refresher's
/// mtime updates leave alone; 0 where the filesystem keeps none.
pub(super) fn born_ns(meta: &std::fs::Metadata) -> i64 {
    meta.created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_nanos()).ok())
        .unwrap_or(0)
}
