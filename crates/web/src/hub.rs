//! One team, live: the latest [`TeamView`] in parts, each with a version, published to
//! every page that watches the team; the teammates' panes, captured while someone
//! watches; and the notices of what the page's actions came to.
//!
//! While a page watches, a hub wakes on the store's change notices (`Store::watch`: the
//! roster, the mailboxes, the agents' states and the task list) and also looks again every
//! second, the ground truth (a notice may be late or lost; the merge queue and the spend
//! have none; a process may die without a file changing). It takes a new view then, and
//! publishes only the parts that changed. A team watched only for notifications is looked
//! at every 5 s (30 s once nothing of it runs), without change notices: each costs the
//! user one of its few inotify instances. With no page watching and no notifications the
//! hub sleeps, and a read takes its view on demand.
//!
//! Requests are not watched: a request is recorded before it is sent to the lead's inbox,
//! and its answer written before it goes to the teammate's, so a mailbox notice follows
//! every change to one (an expiry follows a teammate's own state change).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

use crate::error::Result;
use crate::errors::ApiError;
use crate::notify::Notifier;
use crate::view::TeamView;
use swarm_store::roster::TeamConfig;
use swarm_store::{Hold, Store, Teams, Topic};
use swarm_team::views::feed::FeedReader;
use swarm_tmux::{PaneId, Tmux};
use swarm_util::clock;
use swarm_util::names::TeamName;

/// The tmux server of a team, if it has one (the front end knows how to find it).
pub type TmuxFor = Arc<dyn Fn(&Store) -> Option<Tmux> + Send + Sync>;

/// After a change notice, how long to wait for the rest of a burst before looking.
const SETTLE: Duration = Duration::from_millis(10);
/// How often the panes are captured while a page watches.
const PANES_EVERY: Duration = Duration::from_secs(1);
/// How often a team nobody watches is looked at for notifications (without change
/// notices: each costs the user an inotify instance, of which there are few).
const UNWATCHED_EVERY: Duration = Duration::from_secs(5);
/// The same for a team with nothing running (a finished one, most likely).
const DORMANT_EVERY: Duration = Duration::from_secs(30);
/// A pane's last lines the page gets.
const PANE_LINES: usize = 60;
/// Notices kept (the page shows the newest).
const NOTICES: usize = 20;

/// One published part of a team's view.
#[derive(Debug, Clone)]
pub struct Part {
    pub version: u64,
    pub json: Arc<str>,
}

/// Every part as last published, by name.
#[derive(Debug, Clone, Default)]
pub struct Published {
    pub parts: BTreeMap<&'static str, Part>,
}

pub struct Hub {
    store: Store,
    tmux: Option<Tmux>,
    inner: Mutex<Inner>,
    published: watch::Sender<Arc<Published>>,
    watchers: AtomicUsize,
    /// A change notice, or a page that started watching.
    wake: Notify,
    notifier: Option<Arc<Notifier>>,
    rescan: Duration,
}

#[derive(Default)]
struct Inner {
    feed: FeedReader,
    last: Option<Arc<TeamView>>,
    /// The JSON each part was last published with, and its version.
    parts: HashMap<&'static str, (String, u64)>,
    version: u64,
    notices: VecDeque<Value>,
}

impl Hub {
    fn new(
        store: Store,
        tmux: Option<Tmux>,
        notifier: Option<Arc<Notifier>>,
        rescan: Duration,
    ) -> Hub {
        Hub {
            store,
            tmux,
            inner: Mutex::new(Inner::default()),
            published: watch::channel(Arc::new(Published::default())).0,
            watchers: AtomicUsize::new(0),
            wake: Notify::new(),
            notifier,
            rescan,
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn tmux(&self) -> Option<&Tmux> {
        self.tmux.as_ref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the team's view now and publishes what changed (blocking: call it from a
    /// blocking thread).
    pub fn refresh(&self) -> Result<Arc<TeamView>> {
        let mut inner = self.lock();
        let view = match TeamView::take(&self.store, self.tmux.as_ref(), &mut inner.feed) {
            Ok(view) => Arc::new(view),
            Err(e) => {
                let gone = json!({"team": self.store.team().as_str(), "error": e.to_string()});
                self.publish(&mut inner, vec![("team", gone)]);
                return Err(e);
            }
        };
        self.publish(&mut inner, view.parts());
        if let Some(notifier) = &self.notifier {
            notifier.observe(inner.last.as_deref(), &view);
        }
        inner.last = Some(Arc::clone(&view));
        Ok(view)
    }

    /// The last view taken, or a new one if none was.
    pub fn latest(&self) -> Result<Arc<TeamView>> {
        // Not in the match: a scrutinee's guard would live through `refresh`, which locks.
        let last = self.lock().last.clone();
        match last {
            Some(view) => Ok(view),
            None => self.refresh(),
        }
    }

    fn publish(&self, inner: &mut Inner, parts: Vec<(&'static str, Value)>) {
        let mut changed = false;
        for (name, value) in parts {
            let text = value.to_string();
            if inner.parts.get(name).is_some_and(|(old, _)| *old == text) {
                continue;
            }
            inner.version += 1;
            let version = inner.version;
            inner.parts.insert(name, (text, version));
            changed = true;
        }
        if changed {
            let parts = inner
                .parts
                .iter()
                .map(|(name, (text, version))| {
                    let part = Part {
                        version: *version,
                        json: Arc::from(text.as_str()),
                    };
                    (*name, part)
                })
                .collect();
            self.published.send_replace(Arc::new(Published { parts }));
        }
    }

    /// Says what an action came to, on every page watching the team.
    pub fn notice(&self, text: impl Into<String>, ok: bool) {
        let text = text.into();
        tracing::info!("{}: {text}", self.store.team());
        let mut inner = self.lock();
        inner
            .notices
            .push_back(json!({"atMs": clock::now_ms(), "text": text, "ok": ok}));
        while inner.notices.len() > NOTICES {
            inner.notices.pop_front();
        }
        let notices = Value::Array(inner.notices.iter().cloned().collect());
        self.publish(&mut inner, vec![("notices", notices)]);
    }

    /// A page starts watching: it gets every part now and each change after, until the
    /// returned guard drops.
    pub fn subscribe(self: &Arc<Self>) -> (watch::Receiver<Arc<Published>>, Watching) {
        self.watchers.fetch_add(1, Ordering::SeqCst);
        self.wake.notify_one();
        let rx = self.published.subscribe();
        (rx, Watching(Arc::clone(self)))
    }

    /// Looks again soon (after an action, so its effect shows at once).
    pub fn poke(&self) {
        self.wake.notify_one();
    }

    fn wanted(&self) -> bool {
        self.watchers.load(Ordering::SeqCst) > 0 || self.notifier.is_some()
    }

    /// Keeps the view fresh while it is wanted; parks otherwise. Runs for the server's
    /// life.
    async fn run(self: Arc<Self>) {
        loop {
            while !self.wanted() {
                self.wake.notified().await;
            }
            let mut holds: Option<Vec<Hold>> = None;
            let (mut last_look, mut last_capture): (Option<Instant>, Option<Instant>) =
                (None, None);
            let mut woken = true;
            while self.wanted() {
                let watched = self.watchers.load(Ordering::SeqCst) > 0;
                // Change notices only while a page watches: a team watched for notifications
                // alone is looked at on a timer.
                if watched != holds.is_some() {
                    holds = watched.then(|| self.watch());
                }
                let every = if watched {
                    self.rescan
                } else {
                    self.unwatched_every()
                };
                if woken || last_look.is_none_or(|t| t.elapsed() >= every) {
                    let me = Arc::clone(&self);
                    match tokio::task::spawn_blocking(move || me.refresh()).await {
                        Ok(Err(e)) => tracing::debug!("team {}: {e}", self.store.team()),
                        Err(e) => tracing::warn!(
                            "team {}: taking its view panicked: {e}",
                            self.store.team()
                        ),
                        Ok(Ok(_)) => {}
                    }
                    last_look = Some(Instant::now());
                }
                if watched && last_capture.is_none_or(|t| t.elapsed() >= PANES_EVERY) {
                    let me = Arc::clone(&self);
                    let _ = tokio::task::spawn_blocking(move || me.capture_panes()).await;
                    last_capture = Some(Instant::now());
                }
                let tick = if watched {
                    PANES_EVERY.min(every)
                } else {
                    every
                };
                woken = tokio::select! {
                    () = self.wake.notified() => {
                        tokio::time::sleep(SETTLE).await;
                        true
                    }
                    () = tokio::time::sleep(tick) => false,
                };
            }
        }
    }

    /// How often to look at the team when no page watches it.
    fn unwatched_every(&self) -> Duration {
        let running = self.lock().last.as_ref().is_none_or(|v| {
            v.members
                .iter()
                .any(|m| m.status.alive || m.status.pane_alive == Some(true))
        });
        if running {
            UNWATCHED_EVERY
        } else {
            DORMANT_EVERY
        }
    }

    /// The store's change notices for this team, each waking the hub.
    fn watch(self: &Arc<Self>) -> Vec<Hold> {
        [Topic::Roster, Topic::Mail, Topic::States, Topic::Tasks]
            .into_iter()
            .map(|topic| {
                let me = Arc::downgrade(self);
                self.store.watch(
                    topic,
                    Box::new(move || {
                        if let Some(hub) = me.upgrade() {
                            hub.wake.notify_one();
                        }
                    }),
                )
            })
            .collect()
    }

    /// The last lines of every live teammate's pane, published as the `panes` part.
    fn capture_panes(&self) {
        let (Some(tmux), Some(view)) = (&self.tmux, self.lock().last.clone()) else {
            return;
        };
        let live: Vec<(String, Option<String>, PaneId)> = view
            .members
            .iter()
            .filter(|m| m.status.pane_alive == Some(true))
            .filter_map(|m| {
                let pane = m.status.pane.as_deref()?.parse().ok()?;
                Some((m.status.name.clone(), m.status.color.clone(), pane))
            })
            .collect();
        let ids: Vec<PaneId> = live.iter().map(|(_, _, p)| *p).collect();
        let texts: HashMap<PaneId, String> = match tmux
            .capture_panes(&ids, Some(-(PANE_LINES as i64)))
        {
            Ok(all) => all.into_iter().collect(),
            // A pane closed since the view was taken: one at a time, skipping it.
            Err(_) => ids
                .iter()
                .filter_map(|p| Some((*p, tmux.capture_pane(*p, Some(-(PANE_LINES as i64))).ok()?)))
                .collect(),
        };
        let panes: Vec<Value> = live
            .into_iter()
            .filter_map(|(name, color, pane)| {
                let text = last_lines(texts.get(&pane)?, PANE_LINES);
                Some(json!({"name": name, "color": color, "pane": pane.to_string(), "text": text}))
            })
            .collect();
        let mut inner = self.lock();
        self.publish(&mut inner, vec![("panes", Value::Array(panes))]);
    }
}

/// A page watching a hub; dropping it stops counting it.
pub struct Watching(Arc<Hub>);

impl Drop for Watching {
    fn drop(&mut self) {
        self.0.watchers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The last `n` lines of a pane's text, without the blank lines below its cursor.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().map(str::trim_end).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The hubs of the teams served, made when first asked for.
pub struct Hubs {
    teams: Teams,
    only: Option<TeamName>,
    tmux_for: TmuxFor,
    notifier: Option<Arc<Notifier>>,
    rescan: Duration,
    runtime: tokio::runtime::Handle,
    map: Mutex<HashMap<TeamName, Arc<Hub>>>,
}

impl Hubs {
    pub fn new(
        teams: Teams,
        only: Option<TeamName>,
        tmux_for: TmuxFor,
        notifier: Option<Arc<Notifier>>,
        rescan: Duration,
        runtime: tokio::runtime::Handle,
    ) -> Hubs {
        Hubs {
            teams,
            only,
            tmux_for,
            notifier,
            rescan,
            runtime,
            map: Mutex::new(HashMap::new()),
        }
    }

    /// The teams served, by name (blocking).
    pub fn teams(&self) -> Result<Vec<TeamConfig>> {
        let mut teams = self.teams.list()?;
        if let Some(only) = &self.only {
            teams.retain(|t| t.name == only.as_str());
        }
        Ok(teams)
    }

    /// The hub of team `name` (blocking: the first time, its roster is read): 400 for a
    /// name that cannot be a team's, 404 for a team not served.
    pub fn get(&self, name: &str) -> std::result::Result<Arc<Hub>, ApiError> {
        let team = TeamName::new(name).map_err(|e| ApiError::bad_request(e.to_string()))?;
        let not_served = || {
            ApiError::not_found(format!(
                "no team '{team}' is served here; see GET /api/teams"
            ))
        };
        if self.only.as_ref().is_some_and(|only| *only != team) {
            return Err(not_served());
        }
        if let Some(hub) = self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&team)
        {
            return Ok(Arc::clone(hub));
        }
        let store = self.teams.open(&team).map_err(ApiError::from)?;
        store.roster().load().map_err(|e| match e.is_not_found() {
            true => not_served(),
            false => ApiError::from(e),
        })?;
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let hub = map.entry(team.clone()).or_insert_with(|| {
            let tmux = (self.tmux_for)(&store);
            let hub = Arc::new(Hub::new(store, tmux, self.notifier.clone(), self.rescan));
            self.runtime.spawn(Arc::clone(&hub).run());
            hub
        });
        Ok(Arc::clone(hub))
    }

    /// Makes a hub for every team served (so notifications cover teams nobody watches).
    pub fn start_all(&self) {
        for team in self.teams().unwrap_or_default() {
            let _ = self.get(&team.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pane_shows_its_last_lines_without_the_blank_screen_below() {
        assert_eq!(last_lines("a\nb  \nc\n\n\n   \n", 2), "b\nc");
        assert_eq!(last_lines("", 5), "");
    }
}
