//! What this process last read of each task file, so that reading a whole board that did
//! not change parses nothing: the lead, `swarm status`, the web view and the teammates'
//! idle loops read the list every pass, and a board of thousands of tasks cost them a
//! parse of every file each time (issue 35). A file is read again when its inode, device,
//! size, modification time or change time differ from those it was read at.
//!
//! Invariants:
//! - it serves only whole-list reads (`TaskList::read_all`, under the list lock or not);
//!   the task a mutation or a claim rewrites is read from its file under its locks, as
//!   before;
//! - a file changed within [`SETTLE`] is read every time, never served from here: a file
//!   rewritten in place (Claude Code does not rename) within one tick of the file system's
//!   clock keeps its times, so only a file whose times have settled can be trusted by them
//!   (git's "racy" rule);
//! - a file that does not parse is read again a few times ([`TORN_RETRIES`]) before it is
//!   skipped: a half-written file is the next moment's whole one, never taken as the
//!   truth; one that stays unparsable is remembered as such (by its stamp) so that the
//!   next list does not wait for it again;
//! - entries of files gone from a listed directory are dropped by that listing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::tasks::model::Task;

/// How long after its last change a file is read every time.
pub(super) const SETTLE: Duration = Duration::from_secs(2);
/// How many times a file that does not parse is read again, [`TORN_PAUSE`] apart.
pub(super) const TORN_RETRIES: u32 = 5;
const TORN_PAUSE: Duration = Duration::from_millis(20);

/// What identifies one version of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: i64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stamp {
    /// The stamp of `name` in the directory `dir` (`None`: not a regular file there).
    fn of(dir: &std::fs::File, name: &str) -> Option<Stamp> {
        use nix::fcntl::AtFlags;
        use nix::sys::stat::{SFlag, fstatat};
        let st = fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
        let regular = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFREG;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        regular.then(|| Stamp {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size,
            mtime_ns: ns(st.st_mtime, st.st_mtime_nsec),
            ctime_ns: ns(st.st_ctime, st.st_ctime_nsec),
        })
    }

    /// Whether its last change is older than [`SETTLE`] at `now_ns`.
    fn settled(&self, now_ns: i128) -> bool {
        now_ns - self.mtime_ns.max(self.ctime_ns) > SETTLE.as_nanos() as i128
    }
}

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

#[derive(Debug, Clone)]
enum Read {
    Task(Box<Task>),
    /// It did not parse, read after read.
    Unparsable,
}

type Files = HashMap<u64, (Stamp, Read)>;

/// Every directory's files, by task id.
static SEEN: Mutex<Option<HashMap<PathBuf, Files>>> = Mutex::new(None);

/// How a file read went: its task, or that it did not parse (`why`).
pub(super) enum Parsed {
    Task(Box<Task>),
    Unparsable(String),
    Missing,
}

/// One whole-list read of a task directory: what was read before there, taken out for the
/// read and put back, without the files it did not find, when it is done.
pub(super) struct Listing {
    dir: PathBuf,
    handle: Option<std::fs::File>,
    before: Files,
    now: Files,
    now_ns: i128,
}

impl Listing {
    pub(super) fn of(dir: &Path) -> Listing {
        Listing::at(dir, now_ns())
    }

    fn at(dir: &Path, now_ns: i128) -> Listing {
        let before = SEEN
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
            .and_then(|all| all.remove(dir))
            .unwrap_or_default();
        Listing {
            dir: dir.to_path_buf(),
            handle: std::fs::File::open(dir).ok(),
            before,
            now: Files::new(),
            now_ns,
        }
    }

    /// Task `id`, from what was read before when its file has not changed since, else by
    /// `read` (again, while it does not parse: see the module).
    pub(super) fn task(
        &mut self,
        id: u64,
        read: &mut dyn FnMut() -> crate::error::Result<Parsed>,
    ) -> crate::error::Result<Option<Task>> {
        let stamp = self
            .handle
            .as_ref()
            .and_then(|dir| Stamp::of(dir, &format!("{id}.json")))
            .filter(|s| s.settled(self.now_ns));
        if let Some(stamp) = stamp
            && let Some((at, was)) = self.before.remove(&id)
            && at == stamp
        {
            let task = match &was {
                Read::Task(t) => Some((**t).clone()),
                Read::Unparsable => None,
            };
            self.now.insert(id, (at, was));
            return Ok(task);
        }
        let outcome = read_whole(&self.dir.join(format!("{id}.json")), read)?;
        // Kept under the stamp taken before the read: a change during it makes the next
        // look read again.
        let kept = match &outcome {
            Parsed::Task(t) => Some(Read::Task(t.clone())),
            Parsed::Unparsable(_) => Some(Read::Unparsable),
            Parsed::Missing => None,
        };
        if let (Some(stamp), Some(kept)) = (stamp, kept) {
            self.now.insert(id, (stamp, kept));
        }
        Ok(match outcome {
            Parsed::Task(t) => Some(*t),
            Parsed::Unparsable(_) | Parsed::Missing => None,
        })
    }
}

impl Drop for Listing {
    fn drop(&mut self) {
        let now = std::mem::take(&mut self.now);
        let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
        seen.get_or_insert_with(HashMap::new)
            .insert(std::mem::take(&mut self.dir), now);
    }
}

/// `read`, again while what it finds does not parse (a file being written in place), up
/// to [`TORN_RETRIES`] times; one still unparsable is skipped with a warning.
fn read_whole(
    path: &Path,
    read: &mut dyn FnMut() -> crate::error::Result<Parsed>,
) -> crate::error::Result<Parsed> {
    let mut tries = 0;
    loop {
        match read()? {
            Parsed::Unparsable(why) if tries < TORN_RETRIES => {
                tracing::debug!(path = %path.display(), "a task file that does not parse (yet): {why}");
                tries += 1;
                std::thread::sleep(TORN_PAUSE);
            }
            Parsed::Unparsable(why) => {
                tracing::warn!(path = %path.display(), "skipping a task file that does not parse: {why}");
                return Ok(Parsed::Unparsable(why));
            }
            other => return Ok(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(path: &Path) -> crate::error::Result<Parsed> {
        Ok(match std::fs::read(path) {
            Ok(bytes) => match serde_json::from_slice::<Task>(&bytes) {
                Ok(t) => Parsed::Task(Box::new(t)),
                Err(e) => Parsed::Unparsable(e.to_string()),
            },
            Err(_) => Parsed::Missing,
        })
    }

    /// Task `id` of `dir` through a listing as of `now`, counting reads.
    fn list(dir: &Path, id: u64, now: i128, reads: &std::cell::Cell<u32>) -> Option<String> {
        let path = dir.join(format!("{id}.json"));
        let mut read = || {
            reads.set(reads.get() + 1);
            parse(&path)
        };
        Listing::at(dir, now)
            .task(id, &mut read)
            .unwrap()
            .map(|t| t.subject)
    }

    #[test]
    fn a_settled_file_is_parsed_once_and_a_changed_or_young_one_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.json");
        std::fs::write(&path, r#"{"id":"1","subject":"a","status":"pending"}"#).unwrap();
        let (now, later) = (now_ns(), now_ns() + 60_000_000_000);
        let reads = std::cell::Cell::new(0);
        // Young: read every time.
        assert_eq!(list(dir.path(), 1, now, &reads).as_deref(), Some("a"));
        assert_eq!(list(dir.path(), 1, now, &reads).as_deref(), Some("a"));
        assert_eq!(reads.get(), 2);
        // Settled: read once.
        assert_eq!(list(dir.path(), 1, later, &reads).as_deref(), Some("a"));
        assert_eq!(list(dir.path(), 1, later, &reads).as_deref(), Some("a"));
        assert_eq!(reads.get(), 3);
        // Rewritten in place: read again.
        std::fs::write(&path, r#"{"id":"1","subject":"bb","status":"pending"}"#).unwrap();
        assert_eq!(list(dir.path(), 1, later, &reads).as_deref(), Some("bb"));
        assert_eq!(reads.get(), 4);
        // A listing that did not find it forgets it.
        drop(Listing::at(dir.path(), later));
        assert_eq!(list(dir.path(), 1, later, &reads).as_deref(), Some("bb"));
        assert_eq!(reads.get(), 5);
    }

    #[test]
    fn a_half_written_file_is_read_again_until_it_is_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("2.json");
        let whole = r#"{"id":"2","subject":"whole","status":"pending"}"#;
        // Claude Code writes in place: a reader may find the first half.
        std::fs::write(&path, &whole[..20]).unwrap();
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(TORN_PAUSE * 2);
                std::fs::write(&path, whole).unwrap();
            })
        };
        let reads = std::cell::Cell::new(0);
        let got = list(dir.path(), 2, now_ns(), &reads);
        writer.join().unwrap();
        assert_eq!(got.as_deref(), Some("whole"));
        assert!(reads.get() > 1, "read again: {}", reads.get());
        // One that stays torn is skipped, after its retries.
        std::fs::write(dir.path().join("3.json"), "{\"id\":").unwrap();
        let reads = std::cell::Cell::new(0);
        assert!(list(dir.path(), 3, now_ns(), &reads).is_none());
        assert_eq!(reads.get(), TORN_RETRIES + 1);
    }
}
