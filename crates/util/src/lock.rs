//! Cross-process locks for shared files: a kernel flock plus Claude Code's directory lock.
//!
//! Every mutation of a shared file `F` holds, in this order:
//! 1. an exclusive `flock` on the sidecar `F.flock`, a file that is never renamed or
//!    deleted and is opened close-on-exec (std opens with `O_CLOEXEC`), so a tmux server or
//!    other child never inherits it; the kernel frees it the moment a holder dies;
//! 2. Claude Code's lock, the directory `F.lock/` (proper-lockfile's protocol): made with
//!    `mkdir`, its mtime refreshed every 2 s while held, broken when older than 10 s,
//!    removed with `rmdir`. This excludes Claude Code processes, which do not see flock.
//!
//! A swarm process never lets a directory lock exist that its sidecar does not name: it
//! makes the directory under a staging name, records that inode in the sidecar (still
//! under the flock), and only then moves it into place with `renameat2(RENAME_NOREPLACE)`,
//! which fails if anyone holds `F.lock/` and so is as exclusive as `mkdir`. The record is
//! cleared after `rmdir`. A record found by the next flock holder therefore means its maker
//! died holding (or taking) the lock, and that directory is removed at once instead of
//! after 10 s, however early the maker died; a directory lock no record names belongs to
//! someone else (Claude Code) and is only broken when stale. (On a filesystem without
//! `RENAME_NOREPLACE` the lock is made with a plain `mkdir` and recorded just after, so a
//! maker killed in between costs its waiters the 10 s.) Waits are bounded by the caller's
//! timeout (the store's, see `store::layout::Root`), which by default outlasts the
//! staleness limit so that no waiter fails because an owner died; they back off with
//! jittered exponential sleeps and end in [`Error::LockTimeout`] naming the path.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant, SystemTime};

use crate::error::{Error, IoContext, Result};
use crate::lock_record::{
    Recorded, STAGED, born_ns, break_orphan, collect_staged_once, read_record, staging_path,
    write_record,
};
use crate::{fault, no_symlinks};

/// proper-lockfile's default: a directory lock untouched for this long is abandoned.
pub const STALE_AFTER: Duration = Duration::from_secs(10);
const REFRESH_EVERY: Duration = Duration::from_secs(2);
/// How long a lock is waited for unless the caller says otherwise: longer than a dead
/// Claude Code owner's lock takes to go stale, so a waiter outlasts it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// An exclusive hold on a shared file. Dropping it releases both locks.
#[derive(Debug)]
pub struct Locked {
    // Field order is drop order: the directory lock goes before the flock.
    dirs: Vec<DirLock>,
    sidecar: File,
    /// The anchor the sidecar belongs to, for error messages.
    anchor: PathBuf,
    /// How long a further directory lock ([`Locked::also_lock_dir`]) is waited for.
    timeout: Duration,
}

impl Locked {
    /// Additionally takes Claude Code's directory lock of another file (a single task
    /// inside a list-locked task directory). Released with the rest. Taking one this guard
    /// already holds does nothing: waiting for it would wait for ourselves.
    pub fn also_lock_dir(&mut self, anchor: &Path) -> Result<()> {
        if self.holds_dir(anchor) {
            return Ok(());
        }
        let deadline = Instant::now() + self.timeout;
        self.take_dir(anchor, deadline)
    }

    pub fn holds_dir(&self, anchor: &Path) -> bool {
        let path = dir_lock_path(anchor);
        self.dirs.iter().any(|d| d.path == path)
    }

    /// Releases the directory lock of `anchor` taken with [`Locked::also_lock_dir`] before
    /// the rest, so a Claude Code process may write that file while this guard lives on.
    pub fn unlock_dir(&mut self, anchor: &Path) -> Result<()> {
        let path = dir_lock_path(anchor);
        let Some(i) = self.dirs.iter().position(|d| d.path == path) else {
            return Ok(());
        };
        // Removed before the record forgets it: a crash in between leaves a record naming a
        // directory that is gone (or, if remade, has another inode), which breaks nothing.
        drop(self.dirs.remove(i));
        self.record()
    }

    fn record(&mut self) -> Result<()> {
        self.record_with(None)
    }

    /// Records the directory locks held, plus one about to be moved into place.
    fn record_with(&mut self, staged: Option<&Recorded>) -> Result<()> {
        let mut text: String = self
            .dirs
            .iter()
            .map(|d| format!("{} {} {}\n", d.ino, d.born_ns, d.path.display()))
            .collect();
        if let Some(entry) = staged {
            let (ino, born, path) = (entry.ino, entry.born_ns, entry.path.display());
            text.push_str(&format!("{STAGED} {ino} {born} {path}\n"));
        }
        write_record(&mut self.sidecar, &text)
            .map_err(|e| Error::io("write lock file", sidecar_path(&self.anchor), e))
    }

    /// Takes Claude Code's directory lock of `anchor`, recorded in the sidecar before it
    /// exists (see the module's notes).
    fn take_dir(&mut self, anchor: &Path, deadline: Instant) -> Result<()> {
        let path = dir_lock_path(anchor);
        let staged = staging_path(&path);
        if let Some(dir) = path.parent() {
            collect_staged_once(dir);
        }
        std::fs::create_dir(&staged).ctx("create lock directory", &staged)?;
        let meta = std::fs::symlink_metadata(&staged).ctx("stat lock directory", &staged)?;
        let entry = Recorded {
            ino: meta.ino(),
            born_ns: born_ns(&meta),
            staged: true,
            path: staged.clone(),
        };
        if let Err(e) = self.record_with(Some(&entry)) {
            let _ = std::fs::remove_dir(&staged);
            return Err(e);
        }
        fault::point("lock.before_rename");
        let placed = place(&staged, &path, deadline);
        if placed.is_err() {
            let _ = std::fs::remove_dir(&staged);
            let _ = self.record();
        }
        let dir = placed?;
        fault::point("lock.after_mkdir");
        self.dirs.push(dir);
        self.record()
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        let recorded = !self.dirs.is_empty();
        for dir in self.dirs.drain(..).rev() {
            drop(dir);
        }
        if recorded {
            let _ = write_record(&mut self.sidecar, "");
        }
        // The flock is released when `sidecar` closes.
    }
}

/// Locks the shared file `anchor` (which need not exist yet), waiting up to `timeout`.
pub fn lock(anchor: &Path, timeout: Duration) -> Result<Locked> {
    let deadline = Instant::now() + timeout;
    let sidecar = flock_sidecar(anchor, Some(deadline))?.expect("waits until the deadline");
    finish_lock(anchor, sidecar, deadline, timeout)
}

/// Locks `anchor` only if no other swarm process holds it right now (Claude Code's lock is
/// still waited for, up to `timeout`).
pub fn try_lock(anchor: &Path, timeout: Duration) -> Result<Option<Locked>> {
    let deadline = Instant::now() + timeout;
    match flock_sidecar(anchor, None)? {
        Some(sidecar) => finish_lock(anchor, sidecar, deadline, timeout).map(Some),
        None => Ok(None),
    }
}

/// The hold of a freshly taken flock, cleared of whatever a dead holder of it left: its
/// lock of `anchor`, any further ones it took inside it (per-task locks), their staging
/// directories.
fn holding(anchor: &Path, sidecar: File, timeout: Duration) -> Result<Locked> {
    let mut locked = Locked {
        dirs: Vec::new(),
        sidecar,
        anchor: anchor.to_path_buf(),
        timeout,
    };
    let orphans = read_record(&mut locked.sidecar);
    for entry in &orphans {
        break_orphan(&entry.lock_path(), &orphans);
    }
    if !orphans.is_empty() {
        locked.record()?;
    }
    Ok(locked)
}

/// Takes only the flock on `anchor`'s sidecar, not Claude Code's directory lock of
/// `anchor` itself: for operations that mutate other files, each of which the caller then
/// locks with [`Locked::also_lock_dir`] (claiming one task of a list).
pub fn lock_sidecar_only(anchor: &Path, timeout: Duration) -> Result<Locked> {
    let deadline = Instant::now() + timeout;
    let sidecar = flock_sidecar(anchor, Some(deadline))?.expect("waits until the deadline");
    holding(anchor, sidecar, timeout)
}

fn finish_lock(
    anchor: &Path,
    sidecar: File,
    deadline: Instant,
    timeout: Duration,
) -> Result<Locked> {
    let mut locked = holding(anchor, sidecar, timeout)?;
    locked.take_dir(anchor, deadline)?;
    fault::point("lock.held");
    Ok(locked)
}

fn sidecar_path(anchor: &Path) -> PathBuf {
    let mut p = anchor.as_os_str().to_owned();
    p.push(".flock");
    PathBuf::from(p)
}

fn dir_lock_path(anchor: &Path) -> PathBuf {
    let mut p = anchor.as_os_str().to_owned();
    p.push(".lock");
    PathBuf::from(p)
}

/// Takes the flock, waiting until `deadline`; with no deadline, tries once.
///
/// A waiter polls for a few milliseconds, then blocks in the kernel (from a helper thread,
/// so the deadline still holds): a blocked waiter is woken the moment the lock is free,
/// where a sleeping poller can lose to busier processes again and again.
fn flock_sidecar(anchor: &Path, deadline: Option<Instant>) -> Result<Option<File>> {
    let path = sidecar_path(anchor);
    let started = Instant::now();
    let mut backoff = Backoff::new();
    loop {
        let file = open_sidecar(&path)?;
        match file.try_lock() {
            Ok(()) => match verified(file, &path)? {
                Some(f) => return Ok(Some(f)),
                None => continue,
            },
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("lock", &path, e)),
        }
        let Some(deadline) = deadline else {
            return Ok(None);
        };
        if Instant::now() >= deadline {
            return Err(Error::LockTimeout {
                path,
                waited: started.elapsed(),
            });
        }
        if started.elapsed() < POLL_FIRST {
            backoff.sleep(deadline);
            continue;
        }
        match block_until(file, deadline) {
            Some(Ok(file)) => match verified(file, &path)? {
                Some(f) => return Ok(Some(f)),
                None => continue,
            },
            Some(Err(e)) => return Err(Error::io("lock", &path, e)),
            None => {
                return Err(Error::LockTimeout {
                    path,
                    waited: started.elapsed(),
                });
            }
        }
    }
}

/// How long a waiter polls before it blocks in the kernel.
const POLL_FIRST: Duration = Duration::from_millis(5);

fn open_sidecar(path: &Path) -> Result<File> {
    // Never through a symlink: the record is written into the sidecar. Opened as it is
    // first: an open that may create takes its directory's lock, which every agent of a
    // big team wants at once; the sidecar exists but for the first lock of a file.
    let open = |create: bool| {
        no_symlinks::open(
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(create)
                .truncate(false),
            "open lock file",
            path,
        )
    };
    match open(false) {
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            open(true)
        }
        r => r,
    }
}

/// The locked file, if it is still the file the path names (the sidecar is never
/// replaced, but if someone did, our lock would guard a ghost).
fn verified(file: File, path: &Path) -> Result<Option<File>> {
    let held = file.metadata().ctx("stat lock file", path)?;
    Ok(match std::fs::metadata(path) {
        Ok(now) if now.dev() == held.dev() && now.ino() == held.ino() => Some(file),
        _ => None,
    })
}

/// Blocks on `file`'s flock until `deadline`. `None` on timeout: the helper thread then
/// releases the lock as soon as it gets it (the channel drops the file).
fn block_until(file: File, deadline: Instant) -> Option<std::io::Result<File>> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name("swarm-lock-wait".into())
        .spawn(move || {
            let result = file.lock().map(|()| file);
            // If the waiter gave up, this send fails and drops the file, unlocking it.
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        return Some(Err(e));
    }
    rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .ok()
}

/// Moves the recorded staging directory `staged` to `path`, the directory lock, waiting
/// until `deadline` while someone else (Claude Code) holds it.
fn place(staged: &Path, path: &Path, deadline: Instant) -> Result<DirLock> {
    match make_dir_lock(path, deadline, || rename_no_replace(staged, path)) {
        Err(Error::Io { source, .. }) if source.raw_os_error() == Some(nix::libc::EINVAL) => {
            // The filesystem cannot rename without replacing: make the lock in place, as
            // proper-lockfile does.
            let _ = std::fs::remove_dir(staged);
            make_dir_lock(path, deadline, || std::fs::create_dir(path))
        }
        placed => placed,
    }
}

/// Makes the directory lock `path` with `make` (which fails with `AlreadyExists` while
/// someone holds it), breaking it when stale and otherwise waiting until `deadline`.
fn make_dir_lock(
    path: &Path,
    deadline: Instant,
    mut make: impl FnMut() -> io::Result<()>,
) -> Result<DirLock> {
    let started = Instant::now();
    let mut backoff = Backoff::new();
    loop {
        match make() {
            Ok(()) => return DirLock::held(path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if break_stale(path) {
                    continue;
                }
            }
            Err(e) => return Err(Error::io("create lock directory", path, e)),
        }
        if Instant::now() >= deadline {
            return Err(Error::LockTimeout {
                path: path.to_path_buf(),
                waited: started.elapsed(),
            });
        }
        backoff.sleep(deadline);
    }
}

/// `rename`, failing with `AlreadyExists` rather than replacing an empty directory.
fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    match renameat2(AT_FDCWD, from, AT_FDCWD, to, RenameFlags::RENAME_NOREPLACE) {
        Ok(()) => Ok(()),
        Err(nix::errno::Errno::EEXIST | nix::errno::Errno::ENOTEMPTY) => {
            Err(io::ErrorKind::AlreadyExists.into())
        }
        Err(errno) => Err(io::Error::from_raw_os_error(errno as i32)),
    }
}

/// Claude Code's (proper-lockfile's) lock: a directory next to the file.
#[derive(Debug)]
struct DirLock {
    path: PathBuf,
    ino: u64,
    born_ns: i64,
    refresh_id: u64,
}

impl DirLock {
    /// The directory lock at `path`, just made by us: kept fresh from now on.
    fn held(path: &Path) -> Result<DirLock> {
        let meta = std::fs::symlink_metadata(path).ctx("stat lock directory", path)?;
        Ok(DirLock {
            born_ns: born_ns(&meta),
            ino: meta.ino(),
            path: path.to_path_buf(),
            refresh_id: refresher::register(path.to_path_buf()),
        })
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        refresher::unregister(self.refresh_id);
        if let Err(e) = std::fs::remove_dir(&self.path) {
            tracing::warn!(path = %self.path.display(), error = %e, "failed to remove lock directory");
        }
    }
}

/// Removes `path` if it is a lock directory untouched for over 10 s (proper-lockfile's
/// rule). False if it is not, or could not be removed: the caller then waits and backs
/// off as for a live lock, rather than spin.
fn break_stale(path: &Path) -> bool {
    let stale = std::fs::symlink_metadata(path).is_ok_and(|m| {
        m.is_dir()
            && m.modified().is_ok_and(|mtime| {
                SystemTime::now()
                    .duration_since(mtime)
                    .is_ok_and(|age| age > STALE_AFTER)
            })
    });
    if !stale {
        return false;
    }
    tracing::warn!(path = %path.display(), "breaking a stale lock directory (untouched for over 10 s)");
    std::fs::remove_dir(path).is_ok()
}

/// Exponential backoff from 100 µs to 2 ms with ±25 % jitter, never past the deadline.
/// The cap is low because critical sections are short: a long sleep would leave the lock
/// idle and starve a waiter behind processes that poll more often.
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff::new()
    }
}

impl Backoff {
    pub fn new() -> Backoff {
        Backoff {
            next: Duration::from_micros(100),
        }
    }

    pub fn sleep(&mut self, deadline: Instant) {
        let jitter = 0.75 + fastrand::f64() * 0.5;
        let wait = self.next.mul_f64(jitter);
        let left = deadline.saturating_duration_since(Instant::now());
        std::thread::sleep(wait.min(left));
        self.next = (self.next * 2).min(Duration::from_millis(2));
    }
}

/// Keeps held directory locks fresh so Claude Code never declares them stale.
mod refresher {
    use super::*;
    use std::sync::Condvar;

    static HELD: Mutex<BTreeMap<u64, PathBuf>> = Mutex::new(BTreeMap::new());
    /// Signalled when a lock is registered: the thread sleeps on it while none is held,
    /// so an idle process is not woken every 2 s for nothing.
    static HOLDING: Condvar = Condvar::new();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    static START: Once = Once::new();

    pub(super) fn register(path: PathBuf) -> u64 {
        START.call_once(|| {
            let _ = std::thread::Builder::new()
                .name("swarm-lock-refresh".into())
                .spawn(refresh_forever);
        });
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        HELD.lock().unwrap().insert(id, path);
        HOLDING.notify_one();
        id
    }

    pub(super) fn unregister(id: u64) {
        HELD.lock().unwrap().remove(&id);
    }

    fn refresh_forever() {
        loop {
            drop(HOLDING.wait_while(HELD.lock().unwrap(), |held| held.is_empty()));
            std::thread::sleep(REFRESH_EVERY);
            let held: Vec<PathBuf> = HELD.lock().unwrap().values().cloned().collect();
            for p in held {
                if let Ok(f) = File::open(&p) {
                    let _ = f.set_modified(SystemTime::now());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock_record::STAGING_MARK;
    use std::os::unix::fs::FileExt;

    fn held(ino: u64, born_ns: i64, path: &str) -> Recorded {
        Recorded {
            ino,
            born_ns,
            staged: false,
            path: PathBuf::from(path),
        }
    }

    /// What a holder killed after recording its staged directory leaves: the record, the
    /// directory (still staged, or already in place), and the flock free.
    fn die_holding(anchor: &Path, moved: bool) -> PathBuf {
        let lock_path = dir_lock_path(anchor);
        let staged = staging_path(&lock_path);
        std::fs::create_dir(&staged).unwrap();
        let meta = std::fs::metadata(&staged).unwrap();
        let (ino, born) = (meta.ino(), born_ns(&meta));
        let mut sidecar = open_sidecar(&sidecar_path(anchor)).unwrap();
        let line = format!("{STAGED} {ino} {born} {}\n", staged.display());
        write_record(&mut sidecar, &line).unwrap();
        if moved {
            std::fs::rename(&staged, &lock_path).unwrap();
        }
        staged
    }

    #[test]
    fn a_holder_that_died_at_any_point_is_recognised_at_once() {
        for moved in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let anchor = dir.path().join("inbox.json");
            let staged = die_holding(&anchor, moved);
            // Far shorter than the 10 s after which an unrecorded lock would go stale.
            let l = lock(&anchor, Duration::from_millis(500)).unwrap();
            assert!(
                !staged.exists(),
                "the dead holder's staging directory is cleaned up"
            );
            drop(l);
            let left: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .flatten()
                .map(|e| e.file_name())
                .collect();
            assert_eq!(left, ["inbox.json.flock"], "moved: {moved}");
        }
    }

    #[test]
    fn a_holder_that_died_after_its_lock_was_refreshed_is_recognised_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let anchor = dir.path().join("inbox.json");
        let mut l = lock(&anchor, DEFAULT_TIMEOUT).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        // What the refresher does every 2 s; it moves the directory's ctime.
        File::open(dir_lock_path(&anchor))
            .unwrap()
            .set_modified(SystemTime::now())
            .unwrap();
        // Dies: the directory and its record stay, the flock goes.
        for held in std::mem::take(&mut l.dirs) {
            std::mem::forget(held);
        }
        drop(l);
        lock(&anchor, Duration::from_millis(500)).unwrap();
    }

    #[test]
    fn a_record_naming_a_reused_inode_breaks_nobody_elses_lock() {
        let dir = tempfile::tempdir().unwrap();
        let anchor = dir.path().join("inbox.json");
        let lock_path = dir_lock_path(&anchor);
        // Claude Code's lock, with the inode a dead swarm holder recorded but born later.
        std::fs::create_dir(&lock_path).unwrap();
        let ino = std::fs::metadata(&lock_path).unwrap().ino();
        let mut sidecar = open_sidecar(&sidecar_path(&anchor)).unwrap();
        write_record(
            &mut sidecar,
            &format!("{ino} 12345 {}\n", lock_path.display()),
        )
        .unwrap();
        let err = lock(&anchor, Duration::from_millis(150)).unwrap_err();
        assert!(matches!(err, Error::LockTimeout { .. }), "{err}");
        assert!(lock_path.is_dir());
    }

    #[test]
    fn a_stale_lock_that_cannot_be_removed_is_waited_for_not_spun_on() {
        let dir = tempfile::tempdir().unwrap();
        let anchor = dir.path().join("inbox.json");
        let old_dir = dir.path().join("old");
        std::fs::create_dir(&old_dir).unwrap();
        std::fs::write(old_dir.join("x"), b"").unwrap();
        let old = SystemTime::now() - Duration::from_secs(11);
        File::open(&old_dir).unwrap().set_modified(old).unwrap();
        // Stale but not empty: rmdir fails every time.
        std::fs::rename(&old_dir, dir_lock_path(&anchor)).unwrap();
        let err = lock(&anchor, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, Error::LockTimeout { .. }), "{err}");
    }

    #[test]
    fn unrecorded_staging_directories_of_dead_makers_are_collected() {
        let dir = tempfile::tempdir().unwrap();
        let anchor = dir.path().join("inbox.json");
        let dead = dir
            .path()
            .join(format!("inbox.json.lock{STAGING_MARK}2147483646-0000abcd"));
        let live = dir.path().join(format!(
            "inbox.json.lock{STAGING_MARK}{}-00000001",
            std::process::id()
        ));
        std::fs::create_dir(&dead).unwrap();
        std::fs::create_dir(&live).unwrap();
        drop(lock(&anchor, DEFAULT_TIMEOUT).unwrap());
        assert!(!dead.exists());
        assert!(live.exists());
    }

    #[test]
    fn an_unrecorded_lock_with_a_staged_record_is_left_to_its_owner() {
        let dir = tempfile::tempdir().unwrap();
        let anchor = dir.path().join("inbox.json");
        let staged = die_holding(&anchor, false);
        // Claude Code took the lock after our holder died before moving its directory in.
        std::fs::create_dir(dir_lock_path(&anchor)).unwrap();
        let err = lock(&anchor, Duration::from_millis(150)).unwrap_err();
        assert!(matches!(err, Error::LockTimeout { .. }), "{err}");
        assert!(dir_lock_path(&anchor).is_dir());
        assert!(!staged.exists());
    }

    #[test]
    fn lock_creates_and_removes_dir_lock() {
        let dir = tempfile::tempdir().unwrap();
        let anchor = dir.path().join("inbox.json");
        {
            let _l = lock(&anchor, DEFAULT_TIMEOUT).unwrap();
            assert!(dir.path().join("inbox.json.lock").is_dir());
            assert!(dir.path().join("inbox.json.flock").is_file());
        }
        assert!(!dir.path().join("inbox.json.lock").exists());
        assert!(
            dir.path().join("inbox.json.flock").exists(),
            "the sidecar is never deleted"
        );
    }

    #[test]
    fn a_shorter_record_hides_the_longer_one_it_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = open_sidecar(&dir.path().join("x.flock")).unwrap();
        write_record(&mut f, "1 2 /a/long/path\n3 4 /b\n").unwrap();
        assert_eq!(read_record(&mut f).len(), 2);
        write_record(&mut f, "5 6 /c\n").unwrap();
        assert_eq!(read_record(&mut f), [held(5, 6, "/c")]);
        write_record(&mut f, "").unwrap();
        assert_eq!(read_record(&mut f), []);
        // A sidecar written before records were terminated still reads.
        f.set_len(0).unwrap();
        f.write_all_at(b"7 8 /d\n", 0).unwrap();
        assert_eq!(read_record(&mut f), [held(7, 8, "/d")]);
    }

    #[test]
    fn a_held_dir_lock_is_taken_once_and_can_be_let_go_early() {
        let dir = tempfile::tempdir().unwrap();
        let task = dir.path().join("1.json");
        let lockdir = dir.path().join("1.json.lock");
        let mut l = lock_sidecar_only(&dir.path().join(".lock"), DEFAULT_TIMEOUT).unwrap();
        l.also_lock_dir(&task).unwrap();
        assert!(l.holds_dir(&task));
        l.also_lock_dir(&task).unwrap();
        assert_eq!(read_record(&mut l.sidecar).len(), 1);
        l.unlock_dir(&task).unwrap();
        assert!(!lockdir.exists());
        assert!(!l.holds_dir(&task));
        assert_eq!(read_record(&mut l.sidecar), []);
        l.also_lock_dir(&task).unwrap();
        assert!(lockdir.is_dir());
        drop(l);
        assert!(!lockdir.exists());
    }

    #[test]
    fn stale_dir_lock_is_broken_and_fresh_one_waits() {
        let dir = tempfile::tempdir().unwrap();
        let anchor = dir.path().join("config.json");
        let lockdir = dir.path().join("config.json.lock");
        std::fs::create_dir(&lockdir).unwrap();
        // Fresh: someone else (Claude Code) holds it; we must time out.
        // SAFETY-free: set_var is unsafe in edition 2024, so use a short deadline directly.
        let err = lock(&anchor, Duration::from_millis(150)).unwrap_err();
        assert!(matches!(err, Error::LockTimeout { .. }), "{err}");
        // Old: broken.
        let old = SystemTime::now() - Duration::from_secs(11);
        File::open(&lockdir).unwrap().set_modified(old).unwrap();
        let _l = lock(&anchor, DEFAULT_TIMEOUT).unwrap();
    }
}
