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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::NewTask;
    use crate::{Root, Teams};
    use swarm_util::names::TeamName;

    /// A file team `t` in a temp root (kept while the directory lives).
    fn team() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let teams = Teams::new(Root::new(dir.path()));
        let team = TeamName::new("t").unwrap();
        teams.create_team(&team, None, dir.path()).unwrap();
        let store = teams.open(&team).unwrap();
        (dir, store)
    }

    /// Waits up to 5 s for `board` to say the list changed.
    fn noticed(board: &Board, store: &Store) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if board.changed(store) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn a_task_written_is_noticed_and_a_claims_bookkeeping_is_not() {
        let (dir, store) = team();
        let board = Board::new();
        assert!(board.changed(&store), "the first look reads");
        assert!(!board.changed(&store));
        let made = store
            .tasks()
            .create(NewTask {
                subject: "new".into(),
                ..NewTask::default()
            })
            .unwrap();
        assert!(noticed(&board, &store), "a new task is noticed");
        // A look for a task to claim that finds none drops the claim index: not a change.
        while board.changed(&store) {}
        store.tasks().next("bob").unwrap();
        assert!(noticed(&board, &store), "a claim is a change");
        while board.changed(&store) {}
        assert!(store.tasks().next("carol").unwrap().is_none());
        // The index and lock files the fruitless look wrote, then a positive sign that
        // events are delivered (a task rewritten in place, as Claude Code writes).
        std::thread::sleep(Duration::from_millis(300));
        assert!(!board.changed(&store), "nothing but bookkeeping changed");
        let path = dir.path().join(format!("tasks/t/{}.json", made.id));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("\"new\"", "\"renamed\"")).unwrap();
        assert!(
            noticed(&board, &store),
            "a task written in place is noticed"
        );
        assert_eq!(store.tasks().list().unwrap()[0].subject, "renamed");
    }

    /// Every idle teammate looks for a task now and then; a look that finds nothing ready
    /// must leave nothing in the task directory (a lock, a dropped index) that wakes every
    /// other watcher of it, or an idle team's cost grows with the square of its size.
    #[test]
    fn a_look_that_finds_nothing_ready_leaves_no_trace_a_watcher_hears() {
        use std::sync::{Arc, Mutex};
        let (dir, store) = team();
        let new = |subject: &str| NewTask {
            subject: subject.into(),
            ..NewTask::default()
        };
        let first = store.tasks().create(new("held")).unwrap();
        store.tasks().next("bob").unwrap().expect("bob claims it");
        let blocked = store.tasks().create(new("waits")).unwrap();
        store
            .tasks()
            .update(
                &blocked.id,
                crate::tasks::TaskPatch {
                    add_blocked_by: vec![first.id.clone()],
                    ..Default::default()
                },
            )
            .unwrap();
        // Every entry the watch hears of, by name.
        let heard: Arc<Mutex<Vec<String>>> = Arc::default();
        let names = heard.clone();
        let _watch = swarm_util::watcher::DirWatcher::new(
            &dir.path().join("tasks/t"),
            move |p| {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                names.lock().unwrap().push(name.into_owned());
                false
            },
            || {},
        );
        for agent in ["carol", "dave", "erin"] {
            assert!(store.tasks().next(agent).unwrap().is_none());
        }
        // A positive sign that the watch hears this directory: a file written in it.
        std::fs::write(dir.path().join("tasks/t/sign"), b"x").unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !heard.lock().unwrap().iter().any(|n| n == "sign") && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let heard = heard.lock().unwrap().clone();
        assert!(heard.iter().any(|n| n == "sign"), "the watch hears nothing");
        assert!(
            heard.iter().all(|n| n == "sign"),
            "the fruitless looks were heard: {heard:?}"
        );
    }

    #[test]
    fn tasks_are_read_again_only_after_a_change() {
        let (dir, store) = team();
        let board = Board::new();
        assert!(board.tasks(&store).unwrap().is_empty());
        // A task file written (as Claude Code writes one) is noticed and read...
        let first = board.tasks(&store).unwrap();
        std::fs::write(
            dir.path().join("tasks/t/1.json"),
            r#"{"id":"1","subject":"a","status":"pending"}"#,
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut seen = first.len();
        while seen == 0 && Instant::now() < deadline {
            seen = board.tasks(&store).unwrap().len();
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(seen, 1, "a task file written is noticed and read");
        // ...and with nothing changed since, the same list is given, not read again.
        let again = board.tasks(&store).unwrap();
        assert!(
            Arc::ptr_eq(&again, &board.tasks(&store).unwrap()),
            "no change: no read"
        );
    }
}
