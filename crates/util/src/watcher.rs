//! Waking up when files in a directory change.
//!
//! notify (inotify on Linux) watches the directory, not the file: writers replace files by
//! rename, which a watch on the file's inode would miss. Events can be dropped (queue
//! overflow, network filesystems), so a watcher is only a latency optimisation: callers
//! always also rescan on a timer ([`RESCAN_EVERY`]), which is the ground truth.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

/// How often a waiting reader looks again even without an event.
pub const RESCAN_EVERY: Duration = Duration::from_secs(1);

pub struct DirWatcher {
    _watcher: Option<notify::RecommendedWatcher>,
}

impl DirWatcher {
    /// Calls `wake` when an entry of `dir` accepted by `filter` is created, changed,
    /// renamed or removed. If the directory cannot be watched, a warning is logged and only
    /// the caller's rescans remain.
    pub fn new(
        dir: &Path,
        filter: impl Fn(&Path) -> bool + Send + 'static,
        wake: impl Fn() + Send + 'static,
    ) -> DirWatcher {
        let handler = move |res: notify::Result<notify::Event>| {
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
            Ok(w) => DirWatcher { _watcher: Some(w) },
            Err(e) => {
                tracing::warn!(dir = %dir.display(), "cannot watch for changes ({e}); polling every {RESCAN_EVERY:?} instead");
                DirWatcher { _watcher: None }
            }
        }
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
