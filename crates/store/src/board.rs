//! The task list as a reader that looks again and again sees it: the lead's supervisor
//! passes and a teammate's idle loop. It is read again only once the store said the tasks
//! changed (`Store::watch(Topic::Tasks)`: inotify on the task directory, or the database's
//! `NOTIFY`), or when [`LOOK_AT_LEAST_EVERY`] has passed since the last read (a notice can
//! be lost), so an idle team over a board of thousands reads nothing most passes.
//!
//! Invariants:
//! - a change noticed during a read makes the next look read again (the flag is cleared
//!   before the read, not after);
//! - the first look always reads; a watch that could not be set up leaves only the timer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::Store;
use crate::error::Result;
use crate::seam::{Hold, Topic};
use crate::tasks::Task;

/// The longest a reader goes without reading the list, notice or not.
pub const LOOK_AT_LEAST_EVERY: Duration = Duration::from_secs(30);

/// A task list read again only when it changed. One reader asks either [`Board::changed`]
/// (then reads what it needs itself) or [`Board::tasks`].
pub struct Board {
    changed: Arc<AtomicBool>,
    looked: Mutex<Option<Instant>>,
    tasks: Mutex<Option<Arc<Vec<Task>>>>,
    watch: Mutex<Option<Hold>>,
}

impl Default for Board {
    fn default() -> Board {
        Board::new()
    }
}

impl Board {
    pub fn new() -> Board {
        Board {
            changed: Arc::new(AtomicBool::new(true)),
            looked: Mutex::new(None),
            tasks: Mutex::new(None),
            watch: Mutex::new(None),
        }
    }

    /// Whether the list may have changed since the last look (a notice came, or it is
    /// time to look anyway); this look is counted.
    pub fn changed(&self, store: &Store) -> bool {
        self.watch_once(store);
        let noticed = self.changed.swap(false, Ordering::SeqCst);
        let mut looked = self.looked.lock().unwrap_or_else(|p| p.into_inner());
        let due = noticed || looked.is_none_or(|at| at.elapsed() >= LOOK_AT_LEAST_EVERY);
        if due {
            *looked = Some(Instant::now());
        }
        due
    }

    /// The tasks: read again when they may have changed, else as last read.
    pub fn tasks(&self, store: &Store) -> Result<Arc<Vec<Task>>> {
        let due = self.changed(store);
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        if !due && let Some(t) = tasks.as_ref() {
            return Ok(t.clone());
        }
        match store.tasks().list() {
            Ok(fresh) => {
                let fresh = Arc::new(fresh);
                *tasks = Some(fresh.clone());
                Ok(fresh)
            }
            Err(e) => {
                self.changed.store(true, Ordering::SeqCst);
                Err(e)
            }
        }
    }

    /// Tells it the list changed (this process changed it, or thinks it may have).
    pub fn touch(&self) {
        self.changed.store(true, Ordering::SeqCst);
    }

    fn watch_once(&self, store: &Store) {
        let mut watch = self.watch.lock().unwrap_or_else(|p| p.into_inner());
        if watch.is_none() {
            let changed = self.changed.clone();
            *watch = Some(store.watch(
                Topic::Tasks,
                Box::new(move || changed.store(true, Ordering::SeqCst)),
            ));
        }
    }
}
