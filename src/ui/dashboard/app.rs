//! The live dashboard: the [`App`] (the latest snapshot, the UI state, and carrying out
//! what keys ask for: resolving approvals as `human`, showing a member's tmux pane) and
//! [`run`], its event loop in a terminal.
//!
//! The loop sleeps until something happens. Three things wake it, all through one channel:
//! a key (a thread blocked in crossterm's `event::read`), a change in the team (the store's
//! change notices on its mail, agent states, approvals, tasks and roster; a burst of
//! them becomes one reload after [`SETTLE`], at most one per [`MIN_RELOAD_GAP`]), and a
//! once-a-second tick, which refreshes the "ago" columns, notices pane deaths (nothing in
//! the store changes when a pane dies) and is the rescan that covers any notice missed.
//! Nothing else runs between wake-ups.
//!
//! The terminal is restored on every way out: `ratatui::try_init` installs a panic hook that
//! restores it, and [`run`] restores it on return and on error.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::crossterm::event::{self, Event, KeyEvent, KeyEventKind};

use crate::ui::dashboard::model::{Snapshot, Source};
use crate::ui::dashboard::ui::{Action, UiState};
use crate::ui::dashboard::view;
use swarm::error::{Error, Result};
use swarm_store::approvals::{Decision, Kind};
use swarm_store::{Hold, Store, Topic};
use swarm_team::life::status::MemberStatus;
use swarm_tmux::{Caller, PaneId, Tmux};
use swarm_util::names::TeamName;
use swarm_util::watcher as watch;

/// How long a burst of file events may go on before the dashboard reloads.
pub const SETTLE: Duration = Duration::from_millis(50);

/// The least time between two reloads: busy teammates rewrite their state files often, and
/// each reload asks tmux about the panes once.
pub const MIN_RELOAD_GAP: Duration = Duration::from_millis(250);

/// Whether the loop goes on after a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Quit,
}

/// The dashboard without a terminal: snapshot, UI state, and the actions keys trigger.
pub struct App {
    source: Source,
    snap: Snapshot,
    ui: UiState,
    jumper: Jumper,
}

impl App {
    /// Loads the team's first snapshot; fails if the team cannot be read.
    pub fn new(source: Source) -> Result<App> {
        let mut source = source;
        let snap = source.load()?;
        Ok(App {
            source,
            snap,
            ui: UiState::default(),
            jumper: Jumper::outside_tmux(),
        })
    }

    /// Uses `jumper` to show panes (tests pass [`Jumper::outside_tmux`]).
    pub fn with_jumper(mut self, jumper: Jumper) -> App {
        self.jumper = jumper;
        self
    }

    #[cfg(test)]
    pub fn snapshot(&self) -> &Snapshot {
        &self.snap
    }

    #[cfg(test)]
    pub fn ui(&self) -> &UiState {
        &self.ui
    }

    /// Takes a new snapshot. If the team cannot be read, the last one stays on screen with
    /// the problem in its header.
    pub fn refresh(&mut self) {
        match self.source.load() {
            Ok(snap) => {
                let old = std::mem::replace(&mut self.snap, snap);
                self.ui.keep_feed_position(&old, &self.snap);
            }
            Err(e) => {
                self.snap.now_ms = swarm_util::clock::now_ms();
                self.snap.problems = vec![format!("the team: {e}")];
            }
        }
    }

    /// Applies a key and carries out what it asks for.
    pub fn handle_key(&mut self, key: KeyEvent) -> Flow {
        match self.ui.handle_key(&self.snap, key) {
            None => {}
            Some(Action::Quit) => return Flow::Quit,
            Some(Action::Approve { request_id }) => self.decide(&request_id, true, None),
            Some(Action::Reject {
                request_id,
                feedback,
            }) => self.decide(&request_id, false, Some(feedback).filter(|f| !f.is_empty())),
            Some(Action::Jump { member }) => {
                let result = match self.snap.member(&member) {
                    Some(m) => self
                        .jumper
                        .show(self.source.tmux(), self.source.store().team(), m),
                    None => Err(format!("{member} is no longer on the roster")),
                };
                match result {
                    Ok(text) => self.ui.notify(text),
                    Err(text) => self.ui.warn(text),
                }
            }
        }
        Flow::Continue
    }

    /// Resolves a request as `human`; the outcome, or why it failed, goes to the notice line.
    fn decide(&mut self, request_id: &str, approve: bool, feedback: Option<String>) {
        let result = self.source.store().approvals().resolve(
            request_id,
            Decision {
                approve,
                feedback,
                mode: None,
                by: "human".to_owned(),
                via: None,
            },
        );
        match result {
            Ok(a) => {
                let what = match a.kind {
                    Kind::Plan => "plan",
                    Kind::Permission => "permission request",
                };
                self.ui.notify(format!(
                    "{} {}'s {what} [{}]; the answer is in its inbox",
                    a.state.as_str(),
                    a.agent,
                    a.request_id
                ));
            }
            Err(e) => self.ui.warn(format!("could not resolve {request_id}: {e}")),
        }
        self.refresh();
    }

    pub fn draw(&self, frame: &mut Frame) {
        view::draw(frame, &self.snap, &self.ui);
    }

    /// One frame as plain text (`swarm watch --once`).
    pub fn render_text(&self, width: u16, height: u16) -> String {
        view::render_text(&self.snap, &self.ui, width, height)
    }
}

/// Shows a member's pane: inside tmux on the team's own server, `switch-client` to it
/// (which selects its session, window and pane); anywhere else, says how to get there.
#[derive(Debug, Clone)]
pub struct Jumper {
    /// The socket of the tmux server this process runs inside (`$TMUX`), if any.
    caller_socket: Option<PathBuf>,
}

impl Jumper {
    /// A jumper for a dashboard running where `caller` says.
    pub fn for_caller(caller: &Caller) -> Jumper {
        Jumper {
            caller_socket: caller.socket.clone(),
        }
    }

    /// A jumper for a dashboard not running inside tmux.
    pub fn outside_tmux() -> Jumper {
        Jumper {
            caller_socket: None,
        }
    }

    /// Shows `m`'s pane. `Ok` and `Err` both carry a line for the notice.
    pub fn show(
        &self,
        tmux: Option<&Tmux>,
        team: &TeamName,
        m: &MemberStatus,
    ) -> std::result::Result<String, String> {
        let Some(pane) = m.pane.as_deref().and_then(|p| p.parse::<PaneId>().ok()) else {
            return Err(format!("{} has no tmux pane ({})", m.name, m.state));
        };
        let attach = format!("run `swarm attach {team}` in a terminal to see the team");
        let (Some(tmux), Some(mine)) = (tmux, &self.caller_socket) else {
            return Err(format!(
                "not inside tmux: {attach} ({} is pane {pane})",
                m.name
            ));
        };
        let theirs = match tmux.display(&pane, "#{socket_path}") {
            Ok(s) => PathBuf::from(s.trim()),
            Err(e) => return Err(format!("cannot reach {}'s pane {pane}: {e}", m.name)),
        };
        if !same_file(mine, &theirs) {
            return Err(format!(
                "the team runs on another tmux server ({}): {attach} ({} is pane {pane})",
                theirs.display(),
                m.name
            ));
        }
        tmux.attach(&pane, true)
            .map(|()| format!("showing {} (pane {pane})", m.name))
            .map_err(|e| format!("cannot show {}'s pane {pane}: {e}", m.name))
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// What wakes the loop.
enum Wake {
    Input(Event),
    InputFailed(io::Error),
    Changed,
}

/// Runs the dashboard in this terminal until the user quits.
pub fn run(app: App) -> Result<()> {
    let mut app = app;
    let (tx, rx) = mpsc::channel::<Wake>();
    let changed = Arc::new(AtomicBool::new(false));
    let store = app.source.store().clone();
    let mut watches = Watches::new(store, tx.clone(), changed.clone());
    watches.ensure(&app.snap);
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            ratatui::restore();
            return Err(Error::Runtime(format!(
                "failed to set up the terminal: {e}"
            )));
        }
    };
    // Keys are read from here on, in raw mode; the thread ends with the process.
    let input = tx;
    let reader = std::thread::Builder::new()
        .name("swarm-watch-keys".into())
        .spawn(move || {
            loop {
                let wake = match event::read() {
                    Ok(ev) => Wake::Input(ev),
                    Err(e) => Wake::InputFailed(e),
                };
                let failed = matches!(wake, Wake::InputFailed(_));
                if input.send(wake).is_err() || failed {
                    return;
                }
            }
        });
    if let Err(e) = reader {
        ratatui::restore();
        return Err(Error::Runtime(format!(
            "failed to start the key reader: {e}"
        )));
    }
    let result = event_loop(&mut terminal, &mut app, &rx, &mut watches, &changed);
    ratatui::restore();
    result
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    rx: &mpsc::Receiver<Wake>,
    watches: &mut Watches,
    changed: &AtomicBool,
) -> Result<()> {
    let tick = watch::RESCAN_EVERY;
    let mut next_tick = Instant::now() + tick;
    let mut reload_at: Option<Instant> = None;
    let mut last_reload = Instant::now();
    let mut redraw = true;
    loop {
        if redraw {
            terminal
                .draw(|f| app.draw(f))
                .map_err(|e| Error::Runtime(format!("failed to draw: {e}")))?;
            redraw = false;
        }
        let deadline = reload_at.map_or(next_tick, |r| r.min(next_tick));
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Wake::Input(Event::Key(key))) => {
                if key.kind != KeyEventKind::Release {
                    if app.handle_key(key) == Flow::Quit {
                        return Ok(());
                    }
                    redraw = true;
                }
            }
            Ok(Wake::Input(Event::Resize(..))) => redraw = true,
            Ok(Wake::Input(_)) => {}
            Ok(Wake::InputFailed(e)) => {
                return Err(Error::Runtime(format!("failed to read the keyboard: {e}")));
            }
            Ok(Wake::Changed) => {
                reload_at.get_or_insert_with(|| {
                    (Instant::now() + SETTLE).max(last_reload + MIN_RELOAD_GAP)
                });
            }
            Err(RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                let ticked = now >= next_tick;
                if ticked || reload_at.is_some_and(|r| now >= r) {
                    // Cleared first: a change during the load wakes us again.
                    changed.store(false, Ordering::SeqCst);
                    reload_at = None;
                    last_reload = now;
                    app.refresh();
                    redraw = true;
                }
                if ticked {
                    watches.ensure(&app.snap);
                    next_tick = now + tick;
                }
            }
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        }
    }
}

/// The store's change notices for everything the dashboard shows, each waking the loop.
///
/// A topic is watched from the first snapshot that shows something of it: a backend may
/// be unable to watch what does not exist yet (the file store cannot watch a directory
/// before it is made, and says so), and until then the once-a-second tick covers it.
struct Watches {
    store: Store,
    tx: mpsc::Sender<Wake>,
    changed: Arc<AtomicBool>,
    /// One per topic; `None` until the topic has something.
    holds: Vec<(Topic, Option<Hold>)>,
}

impl Watches {
    fn new(store: Store, tx: mpsc::Sender<Wake>, changed: Arc<AtomicBool>) -> Watches {
        let topics = [
            Topic::Roster,
            Topic::Mail,
            Topic::States,
            Topic::Approvals,
            Topic::Tasks,
        ];
        Watches {
            store,
            tx,
            changed,
            holds: topics.into_iter().map(|t| (t, None)).collect(),
        }
    }

    /// Starts watching every topic `snap` shows something of that is not watched yet.
    fn ensure(&mut self, snap: &Snapshot) {
        for (topic, hold) in &mut self.holds {
            if hold.is_some() || !shows_any(snap, topic) {
                continue;
            }
            let tx = self.tx.clone();
            let changed = self.changed.clone();
            *hold = Some(self.store.watch(
                topic.clone(),
                Box::new(move || {
                    // One message per burst: the loop clears the flag when it reloads.
                    if !changed.swap(true, Ordering::SeqCst) {
                        let _ = tx.send(Wake::Changed);
                    }
                }),
            ));
        }
    }
}

/// Whether `snap` shows anything of `topic` (the roster always: the team was read).
fn shows_any(snap: &Snapshot, topic: &Topic) -> bool {
    match topic {
        Topic::Roster => true,
        Topic::Mail | Topic::Inbox(_) => !snap.feed.is_empty(),
        Topic::States | Topic::State(_) => snap.members.iter().any(|m| m.state_file.is_some()),
        Topic::Approvals => !snap.approvals.is_empty(),
        Topic::Tasks => !snap.tasks.is_empty(),
    }
}
