//! Wake-ups pushed by the server: every write says what it changed with `NOTIFY` on the
//! channel `swarm`, in the transaction that writes (so a wake-up never comes before the
//! change is there to be read), and one listening connection per store handle wakes the
//! watchers whose [`Topic`] the change concerns.
//!
//! Invariants:
//! - a notification's payload is `<team>\n<kind>\n<agent>` (`inbox`, `state` with their
//!   agent; `tasks`, `roster`, `approvals` with none); the server folds equal ones in a
//!   transaction into one;
//! - [`Watchers::watch`] returns once the listener listens, so any write committed after it
//!   returns wakes it; the listener's thread lives while some watch does, on a connection
//!   of its own, and stops within [`TICK`] of the last watch being dropped;
//! - a wake-up is a hint, as the seam says: when the listener loses its connection it
//!   connects again with backoff and then wakes every watcher (it may have missed
//!   something), and whoever waits still looks again on a timer;
//! - every wait is bounded: a listener that cannot start within [`START`] makes the watch
//!   a silent one (warned about), which the waiter's timer covers.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, GenericClient};

use crate::connect::Database;
use swarm_store::seam::{Hold, Topic};
use swarm_util::names::TeamName;

/// The channel every swarm write notifies.
const CHANNEL: &str = "swarm";
/// How often the listener looks whether it still has watchers.
const TICK: Duration = Duration::from_millis(250);
/// How long a watch waits for the listener to listen.
const START: Duration = Duration::from_secs(5);

/// What a write changed, as its notification names it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Change<'a> {
    Inbox(&'a str),
    State(&'a str),
    Tasks,
    Roster,
    Approvals,
}

impl Change<'_> {
    fn payload(self, team: &TeamName) -> String {
        let (kind, agent) = match self {
            Change::Inbox(a) => ("inbox", a),
            Change::State(a) => ("state", a),
            Change::Tasks => ("tasks", ""),
            Change::Roster => ("roster", ""),
            Change::Approvals => ("approvals", ""),
        };
        format!("{team}\n{kind}\n{agent}")
    }
}

/// Says `change` to the team's watchers when the caller's transaction commits.
pub(crate) fn notify(
    client: &mut impl GenericClient,
    team: &TeamName,
    change: Change<'_>,
) -> Result<(), postgres::Error> {
    client.execute(
        "SELECT pg_notify($1, $2)",
        &[&CHANNEL, &change.payload(team)],
    )?;
    Ok(())
}

/// Whether a notification's `kind` and `agent` concern `topic`.
fn concerns(topic: &Topic, kind: &str, agent: &str) -> bool {
    match topic {
        Topic::Inbox(a) => kind == "inbox" && a.as_str() == agent,
        Topic::Mail => kind == "inbox",
        Topic::State(a) => kind == "state" && a.as_str() == agent,
        Topic::States => kind == "state",
        Topic::Tasks => kind == "tasks",
        Topic::Roster => kind == "roster",
        Topic::Approvals => kind == "approvals",
    }
}

type Wake = Arc<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct Inner {
    next_id: u64,
    watches: Vec<(u64, Topic, Wake)>,
    /// A listener thread runs.
    running: bool,
    /// It listens now.
    listening: bool,
}

/// The watches of one store handle and its listener.
pub(crate) struct Watchers {
    db: Arc<Database>,
    team: TeamName,
    inner: Mutex<Inner>,
    changed: Condvar,
}

impl std::fmt::Debug for Watchers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Watchers({})", self.team)
    }
}

/// Ends a watch when dropped.
struct Unwatch {
    watchers: Arc<Watchers>,
    id: u64,
}

impl Drop for Unwatch {
    fn drop(&mut self) {
        self.watchers
            .lock()
            .watches
            .retain(|(id, _, _)| *id != self.id);
    }
}

impl Watchers {
    pub(crate) fn new(db: Arc<Database>, team: &TeamName) -> Arc<Watchers> {
        Arc::new(Watchers {
            db,
            team: team.clone(),
            inner: Mutex::new(Inner::default()),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Calls `wake` after each change that concerns `topic`, until the hold is dropped.
    pub(crate) fn watch(self: &Arc<Self>, topic: Topic, wake: Box<dyn Fn() + Send + Sync>) -> Hold {
        let mut inner = self.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.watches.push((id, topic, Arc::from(wake)));
        if !inner.running {
            inner.running = true;
            let me = self.clone();
            std::thread::Builder::new()
                .name("swarm-pg-listen".into())
                .spawn(move || me.listen())
                .expect("spawn the listener thread");
        }
        let (inner, waited) = self
            .changed
            .wait_timeout_while(inner, START, |i| i.running && !i.listening)
            .unwrap_or_else(|p| p.into_inner());
        if waited.timed_out() {
            tracing::warn!(
                "the team's database at {} is not listened to yet; changes are seen by rescanning",
                self.db.at()
            );
        }
        drop(inner);
        Hold::new(Unwatch {
            watchers: self.clone(),
            id,
        })
    }

    /// The listener thread: listens, wakes, reconnects, and ends when no watch is left.
    fn listen(self: Arc<Self>) {
        let mut tries = 0u32;
        // Whether changes may have gone unheard (a lost connection, a failed start).
        let mut missed = false;
        loop {
            match self.db.take().and_then(|c| self.subscribe(c)) {
                Ok(client) => {
                    if missed {
                        self.wake_all();
                    }
                    tries = 0;
                    if self.serve(client) {
                        return;
                    }
                }
                Err(e) => {
                    tracing::debug!("failed to listen to the team's database: {e}");
                    tries += 1;
                }
            }
            missed = true;
            self.lock().listening = false;
            if self.quit_if_unwatched() {
                return;
            }
            // The first try after a loss at once, then backing off to 2 s.
            std::thread::sleep(TICK * tries.min(8));
        }
    }

    fn subscribe(&self, mut client: Client) -> swarm_store::error::Result<Client> {
        client
            .batch_execute(&format!("LISTEN {CHANNEL}"))
            .map_err(|e| self.db.failed("listen to changes", &e))?;
        self.lock().listening = true;
        self.changed.notify_all();
        Ok(client)
    }

    /// Wakes watchers until the connection fails (`false`) or no watch is left (`true`).
    fn serve(&self, mut client: Client) -> bool {
        loop {
            let next = client.notifications().timeout_iter(TICK).next();
            match next {
                Ok(Some(n)) => self.wake(n.payload()),
                Ok(None) if client.is_closed() => return false,
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!("lost the listening connection: {e}");
                    return false;
                }
            }
            if self.quit_if_unwatched() {
                let _ = client.batch_execute(&format!("UNLISTEN {CHANNEL}"));
                self.db.give_back(client);
                return true;
            }
        }
    }

    /// Marks the listener stopped when no watch is left; under the lock, so a watch made at
    /// that moment starts a new one.
    fn quit_if_unwatched(&self) -> bool {
        let mut inner = self.lock();
        if inner.watches.is_empty() {
            inner.running = false;
            inner.listening = false;
            return true;
        }
        false
    }

    fn wake(&self, payload: &str) {
        let mut parts = payload.splitn(3, '\n');
        let (Some(team), Some(kind)) = (parts.next(), parts.next()) else {
            return;
        };
        if team != self.team.as_str() {
            return;
        }
        let agent = parts.next().unwrap_or("");
        let wakes: Vec<Wake> = self
            .lock()
            .watches
            .iter()
            .filter(|(_, topic, _)| concerns(topic, kind, agent))
            .map(|(_, _, wake)| wake.clone())
            .collect();
        // Called outside the lock: a wake may watch or unwatch.
        for wake in wakes {
            wake();
        }
    }

    fn wake_all(&self) {
        let wakes: Vec<Wake> = self.lock().watches.iter().map(|w| w.2.clone()).collect();
        for wake in wakes {
            wake();
        }
    }
}
