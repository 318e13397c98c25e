//! Replacing a file so that every reader sees the old bytes or the new, never a mix.
//!
//! Write a temp file in the same directory, fsync it, rename it over the target, fsync the
//! directory; several files at once share the flushes ([`write_all`]). The temp name `.<file>.tmp.<pid>.<random>` carries the writer's pid, so
//! [`collect_garbage`] can remove temp files whose writer died (or that are older than ten
//! minutes) without touching a live writer's file.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::error::{Error, IoContext, Result};

const TMP_MARK: &str = ".tmp.";
const GC_AGE: Duration = Duration::from_secs(600);

/// Atomically replaces `path` with `bytes`; `durable` adds the fsyncs that make it survive
/// a power loss, not only a process crash.
pub fn write(path: &Path, bytes: &[u8], durable: bool) -> Result<()> {
    write_all(&[(path, bytes)], durable)
        .pop()
        .expect("one result per write")
}

/// How many temp files are flushed at once by [`write_all`]: flushes made together share
/// the disk's, and a few threads are enough to overlap them.
const FLUSHERS: usize = 8;

/// Atomically replaces each `(path, bytes)`, as [`write()`] does one, as a group: every temp
/// file is written and (when `durable`) flushed, several at once, before any is renamed
/// into place, and each directory is flushed once after the renames, so N files in one
/// directory cost about what one does. Each rename is that file's commit; a failure of one
/// leaves the others' results as they are. Results come in the order given.
pub fn write_all(items: &[(&Path, &[u8])], durable: bool) -> Vec<Result<()>> {
    let staged: Vec<Result<PathBuf>> =
        crate::parallel::map(items, FLUSHERS, |(path, bytes)| stage(path, bytes, durable));
    let mut dirs: Vec<&Path> = Vec::new();
    let results: Vec<Result<()>> = items
        .iter()
        .zip(staged)
        .map(|((path, _), tmp)| {
            let tmp = tmp?;
            std::fs::rename(&tmp, path)
                .ctx("rename into place", path)
                .inspect_err(|_| {
                    let _ = std::fs::remove_file(&tmp);
                })?;
            let dir = path.parent().expect("stage checked the parent");
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
            Ok(())
        })
        .collect();
    // The renames are the commits: once done the writes have happened, and reporting a
    // failure would make callers undo or redo what readers may already have seen.
    for dir in dirs.into_iter().filter(|_| durable) {
        if let Err(e) = sync_dir(dir) {
            tracing::warn!("{e}; the writes stand but may not survive a power cut");
        }
    }
    results
}

/// Writes `bytes` to a new temp file beside `path` (flushed when `durable`) and returns
/// its name; nothing is left behind on failure.
fn stage(path: &Path, bytes: &[u8], durable: bool) -> Result<PathBuf> {
    let dir = path.parent().ok_or_else(|| {
        let none = std::io::Error::new(std::io::ErrorKind::InvalidInput, "no parent directory");
        Error::io("write", path, none)
    })?;
    collect_garbage_once(dir);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(
        ".{name}{TMP_MARK}{}.{:08x}",
        std::process::id(),
        fastrand::u32(..)
    ));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .ctx("create", &tmp)?;
        f.write_all(bytes).ctx("write", &tmp)?;
        if durable {
            f.sync_all().ctx("fsync", &tmp)?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Makes directory entries (a rename, a new file) durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .ctx("fsync directory", dir)
}

/// Removes temp files in `dir` whose writer is dead or that are older than ten minutes.
pub fn collect_garbage(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(pos) = name.rfind(TMP_MARK) else {
            continue;
        };
        if !name.starts_with('.') {
            continue;
        }
        let pid: Option<i32> = name[pos + TMP_MARK.len()..]
            .split('.')
            .next()
            .and_then(|p| p.parse().ok());
        let writer_dead = pid.is_none_or(|p| !crate::process::is_alive(p));
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age > GC_AGE);
        if (writer_dead || old) && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Runs [`collect_garbage`] the first time this process writes into `dir`.
fn collect_garbage_once(dir: &Path) {
    static SEEN: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    let first = SEEN
        .lock()
        .unwrap()
        .get_or_insert_with(HashSet::new)
        .insert(dir.to_path_buf());
    if first {
        collect_garbage(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_collects_dead_writers_temps() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.json");
        write(&target, b"[]", true).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"[]");
        // A temp file from a pid that cannot exist, and one from us (alive).
        std::fs::write(dir.path().join(".a.json.tmp.2147483646.0000abcd"), b"x").unwrap();
        let mine = dir
            .path()
            .join(format!(".a.json.tmp.{}.00000001", std::process::id()));
        std::fs::write(&mine, b"x").unwrap();
        assert_eq!(collect_garbage(dir.path()), 1);
        assert!(mine.exists());
    }
}
