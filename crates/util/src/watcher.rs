//! Waking up when files in a directory change.
//!
//! notify (inotify on Linux) watches the directory, not the file: writers replace files by
//! rename, which a watch on the file's inode would miss. inotify cannot filter a directory
//! by name, though, so such a watch wakes for every entry's change and the filter runs
//! after the wake-up: a file that is only ever touched in place (an inbox's bell, see
//! `store::mailbox::bell`) is better watched itself ([`DirWatcher::touched`]). Events can be
//! dropped (queue overflow, network filesystems), so a watcher is only a latency
//! optimisation: callers always also rescan on a timer ([`RESCAN_EVERY`]), which is the
//! ground truth.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

/// How often a waiting reader looks again even without an event.
pub const RESCAN_EVERY: Duration = Duration::from_secs(1);

pub struct DirWatcher {
    _watcher: Option<notify::RecommendedWatcher>,
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
        let seen = events.clone();
        let handler = move |res: notify::Result<notify::Event>| {
            seen.fetch_add(1, Ordering::Relaxed);
            if let Ok(event) = res
                && !event.kind.is_access()
                && event.paths.iter().any(|p| filter(p))
            {
                wake();
            }
        };
        let watcher = notify::recommended_watcher(handler).and_then(|mut w| {
            w.watch(dir, RecursiveMode::NonRecursive)?;
            Ok(w)
        });
        match watcher {
            Ok(w) => DirWatcher {
                _watcher: Some(w),
                events,
            },
            Err(e) => {
                tracing::warn!(dir = %dir.display(), "cannot watch for changes ({e}); polling every {RESCAN_EVERY:?} instead");
                DirWatcher {
                    _watcher: None,
                    events,
                }
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
