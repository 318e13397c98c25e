//! Waking up when files in a directory change.
//!
//! An inotify watch (one instance and one reading thread per process, shared by its
//! watchers) on the directory, not the file: writers replace files by rename,
//! which a watch on the file's inode would miss. Only changes are heard, never a mere open
//! or read, so readers of a directory do not wake its watchers. inotify cannot filter a directory
//! by name, though, so such a watch wakes for every entry's change and the filter runs
//! after the wake-up: a file that is only ever touched in place (an inbox's bell, see
//! `store::mailbox::bell`) is better watched itself ([`DirWatcher::touched`]). Events can be
//! dropped (queue overflow, network filesystems), so a watcher is only a latency
//! optimisation: callers always also rescan on a timer ([`RESCAN_EVERY`]), which is the
//! ground truth.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, InotifyEvent, WatchDescriptor};

/// How often a waiting reader looks again even without an event.
pub const RESCAN_EVERY: Duration = Duration::from_secs(1);

/// What a watch hears: changes only. Opening, reading and closing a file unwritten are left
/// out (the `notify` crate cannot leave them out): every reader of a watched directory would
/// otherwise wake every watcher of it, and an idle team's readers are many.
const CHANGES: AddWatchFlags = AddWatchFlags::IN_CREATE
    .union(AddWatchFlags::IN_DELETE)
    .union(AddWatchFlags::IN_MODIFY)
    .union(AddWatchFlags::IN_CLOSE_WRITE)
    .union(AddWatchFlags::IN_ATTRIB)
    .union(AddWatchFlags::IN_MOVED_FROM)
    .union(AddWatchFlags::IN_MOVED_TO)
    .union(AddWatchFlags::IN_DELETE_SELF)
    .union(AddWatchFlags::IN_MOVE_SELF);

pub struct DirWatcher {
    /// Its subscription in the process's hub; `None` if the watch could not be made.
    id: Option<u64>,
    events: Arc<AtomicU64>,
}

impl DirWatcher {
    /// Calls `wake` when an entry of `dir` accepted by `filter` is created, changed,
    /// renamed or removed (every change in `dir` wakes the watcher's thread; `filter`
    /// decides whether it goes on to `wake`). If the directory cannot be watched, a
    /// warning is logged and only the caller's rescans remain.
    pub fn new(
        dir: &Path,
        filter: impl Fn(&Path) -> bool + Send + 'static,
        wake: impl Fn() + Send + 'static,
    ) -> DirWatcher {
        let events = Arc::new(AtomicU64::new(0));
        let sub = Sub {
            path: dir.to_path_buf(),
            filter: Mutex::new(Box::new(filter)),
            wake: Mutex::new(Box::new(wake)),
            events: events.clone(),
        };
        match hub().and_then(|h| h.subscribe(sub)) {
            Ok(id) => DirWatcher {
                id: Some(id),
                events,
            },
            Err(e) => {
                tracing::warn!(dir = %dir.display(), "cannot watch for changes ({e}); polling every {RESCAN_EVERY:?} instead");
                DirWatcher { id: None, events }
            }
        }
    }

    /// How many notifications the watcher's thread has been woken for so far, whether or
    /// not they passed the filter: what the watch costs.
    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// Calls `wake` when the file at `path` itself is touched or written in place: the
    /// watch is on its inode, so nothing else in its directory wakes it, but a file
    /// replaced by a rename is lost to it (use [`DirWatcher::file`] for those). If it
    /// cannot be watched (it does not exist), a warning is logged and only the caller's
    /// rescans remain.
    pub fn touched(path: &Path, wake: impl Fn() + Send + 'static) -> DirWatcher {
        DirWatcher::new(path, |_: &Path| true, wake)
    }

    /// Watches one file (by name, in its directory).
    pub fn file(path: &Path, wake: impl Fn() + Send + 'static) -> DirWatcher {
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let name = path.file_name().map(|n| n.to_owned());
        DirWatcher::new(&dir, move |p: &Path| p.file_name() == name.as_deref(), wake)
    }
}

impl Drop for DirWatcher {
    fn drop(&mut self) {
        if let (Some(id), Ok(hub)) = (self.id, hub()) {
            hub.unsubscribe(id);
        }
    }
}

/// Which entries of a watched directory a watcher wants to hear of.
type Filter = Box<dyn Fn(&Path) -> bool + Send>;

/// One watcher's interest: the path watched, which changes it wants, whom to wake.
struct Sub {
    path: PathBuf,
    filter: Mutex<Filter>,
    wake: Mutex<Box<dyn Fn() + Send>>,
    events: Arc<AtomicU64>,
}

/// The process's one inotify instance and the thread that reads it. One per process, not
/// one per watcher: the kernel allows a user 128 instances by default, and a team of a
/// hundred processes on one machine with two watchers each would run out.
struct Hub {
    inotify: Inotify,
    subs: Mutex<Subs>,
}

#[derive(Default)]
struct Subs {
    next: u64,
    /// Watchers by id, with the watch each is on (several may share one: inotify gives the
    /// same inode the same descriptor).
    by_id: HashMap<u64, (WatchDescriptor, Arc<Sub>)>,
}

/// The process's hub, started the first time a watcher is made.
fn hub() -> std::io::Result<&'static Hub> {
    static HUB: OnceLock<std::result::Result<Hub, nix::errno::Errno>> = OnceLock::new();
    let hub = HUB.get_or_init(|| {
        Inotify::init(InitFlags::IN_CLOEXEC).map(|inotify| Hub {
            inotify,
            subs: Mutex::new(Subs::default()),
        })
    });
    match hub {
        Ok(hub) => {
            static READER: std::sync::Once = std::sync::Once::new();
            READER.call_once(|| {
                let spawned = std::thread::Builder::new()
                    .name("swarm-watch".into())
                    .spawn(move || hub.read_forever());
                if let Err(e) = spawned {
                    tracing::warn!("failed to start the file watch thread: {e}");
                }
            });
            Ok(hub)
        }
        Err(e) => Err(std::io::Error::from(*e)),
    }
}

impl Hub {
    fn subscribe(&self, sub: Sub) -> std::io::Result<u64> {
        let mut subs = self.subs.lock().unwrap_or_else(|p| p.into_inner());
        // Adding the same inode again keeps its descriptor; the mask is the same for all.
        let wd = self.inotify.add_watch(&sub.path, CHANGES)?;
        subs.next += 1;
        let id = subs.next;
        subs.by_id.insert(id, (wd, Arc::new(sub)));
        Ok(id)
    }

    fn unsubscribe(&self, id: u64) {
        let mut subs = self.subs.lock().unwrap_or_else(|p| p.into_inner());
        let Some((wd, _)) = subs.by_id.remove(&id) else {
            return;
        };
        if !subs.by_id.values().any(|(w, _)| *w == wd) {
            let _ = self.inotify.rm_watch(wd);
        }
    }

    /// Reads events until the process ends, waking each watcher a batch concerns once; a
    /// lost event (the queue overflowed) wakes every watcher, since their rescans then have
    /// something to find.
    fn read_forever(&self) {
        loop {
            let batch = match self.inotify.read_events() {
                Ok(batch) => batch,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return tracing::warn!("stopped watching for changes: {e}"),
            };
            let subs: Vec<(WatchDescriptor, Arc<Sub>)> = {
                let subs = self.subs.lock().unwrap_or_else(|p| p.into_inner());
                subs.by_id.values().cloned().collect()
            };
            for (wd, sub) in &subs {
                let mine: Vec<&InotifyEvent> = batch
                    .iter()
                    .filter(|e| e.wd == *wd || overflowed(e))
                    .collect();
                sub.events.fetch_add(mine.len() as u64, Ordering::Relaxed);
                if mine.iter().any(|e| passes(e, sub)) {
                    (sub.wake.lock().unwrap_or_else(|p| p.into_inner()))();
                }
            }
        }
    }
}

fn overflowed(event: &InotifyEvent) -> bool {
    event.mask.contains(AddWatchFlags::IN_Q_OVERFLOW)
}

/// Whether `event` on `sub`'s watch is one it wants to hear of.
fn passes(event: &InotifyEvent, sub: &Sub) -> bool {
    if overflowed(event) {
        return true;
    }
    if event.mask.contains(AddWatchFlags::IN_IGNORED) {
        return false;
    }
    let filter = sub.filter.lock().unwrap_or_else(|p| p.into_inner());
    match &event.name {
        Some(name) => filter(&sub.path.join(name)),
        None => filter(&sub.path),
    }
}

/// A blocking waiter for changes to one file, for command-line followers.
pub struct FileWaiter {
    rx: mpsc::Receiver<()>,
    _watcher: DirWatcher,
}

impl FileWaiter {
    pub fn new(path: PathBuf) -> FileWaiter {
        let (tx, rx) = mpsc::channel();
        let watcher = DirWatcher::file(&path, move || {
            let _ = tx.send(());
        });
        FileWaiter {
            rx,
            _watcher: watcher,
        }
    }

    /// Returns when the file may have changed, or after `timeout`.
    pub fn wait(&self, timeout: Duration) {
        if self.rx.recv_timeout(timeout).is_ok() {
            while self.rx.try_recv().is_ok() {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn wait_until(what: &str, f: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn wakes_for_changes_it_wants_and_not_for_readers() {
        let dir = tempfile::tempdir().unwrap();
        let woken = Arc::new(AtomicU64::new(0));
        let count = woken.clone();
        let json = |p: &Path| p.extension().is_some_and(|e| e == "json");
        let watcher = DirWatcher::new(dir.path(), json, move || {
            count.fetch_add(1, Ordering::Relaxed);
        });
        std::fs::write(dir.path().join("a.txt"), b"x").unwrap();
        wait_until("the watch to hear a.txt", || watcher.events() > 0);
        assert_eq!(woken.load(Ordering::Relaxed), 0, "a.txt is filtered out");

        crate::atomic::write(&dir.path().join("a.json"), b"[]", false).unwrap();
        wait_until("a.json to wake it", || woken.load(Ordering::Relaxed) > 0);

        // A hundred readers, then one change: only the change reaches the thread.
        let heard = watcher.events();
        for _ in 0..100 {
            std::fs::read(dir.path().join("a.json")).unwrap();
            std::fs::read_dir(dir.path()).unwrap().for_each(drop);
        }
        std::fs::write(dir.path().join("b.txt"), b"y").unwrap();
        wait_until("b.txt to be heard", || watcher.events() > heard);
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            watcher.events() - heard <= 4,
            "readers woke the watch: {} events",
            watcher.events() - heard
        );
        let started = Instant::now();
        drop(watcher);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "drop stops the thread"
        );
    }

    #[test]
    fn a_touched_file_wakes_its_own_watch() {
        let dir = tempfile::tempdir().unwrap();
        let bell = dir.path().join("bell");
        std::fs::write(&bell, b"").unwrap();
        let (tx, rx) = mpsc::channel();
        let _watcher = DirWatcher::touched(&bell, move || {
            let _ = tx.send(());
        });
        let f = std::fs::File::options().write(true).open(&bell).unwrap();
        f.set_modified(std::time::SystemTime::now()).unwrap();
        rx.recv_timeout(Duration::from_secs(10))
            .expect("touching the bell wakes its watch");
    }
}

#[cfg(test)]
mod sharing {
    use super::*;

    /// The kernel's default allows a user 128 inotify instances: a process's watchers must
    /// share one, or a team of a hundred on one machine runs out and its members poll.
    #[test]
    fn a_process_uses_one_inotify_instance_for_all_its_watchers() {
        let dirs: Vec<_> = (0..5).map(|_| tempfile::tempdir().unwrap()).collect();
        let watchers: Vec<DirWatcher> = dirs
            .iter()
            .map(|d| DirWatcher::new(d.path(), |_| true, || {}))
            .collect();
        let instances = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("inotify"))
            })
            .count();
        assert_eq!(
            instances,
            1,
            "one inotify instance for {} watchers",
            watchers.len()
        );
    }
}
