//! The shutdown ladder: ask, wait, then insist, and verify nothing is left.
//!
//! `shutdown_request` → wait for the teammate to exit (it approves and exits by itself) up
//! to the timeout → SIGTERM to every process of its session → 5 s → SIGKILL → `kill-pane`
//! (only a pane tagged with this team) → verify the process and the pane are gone. A
//! rejection stops the ladder unless forced. Afterwards the member leaves the roster, its
//! open tasks return to pending and the lead is told (once; see [`crate::life::supervisor`]),
//! and its git worktree, if it had one, is removed when unchanged and kept otherwise (see
//! [`swarm_git::worktree`]).
//!
//! Signals only reach the process the teammate's state file names (pid and start time), so
//! a reused pid is never hit; the session is the teammate's own (tmux makes each pane a
//! session leader), which also holds what its Bash tool started.
//!
//! A member swarm did not start (a Claude Code teammate) is watched through the pane the
//! roster names: that pane's process is what the ladder asks, signals and waits for, and
//! a pane that is gone from the team's tmux server means its process is gone too.
//!
//! The ladders of [`shut_down_all`] share their looks at the team (`SharedLooks`), and a
//! step is shown on the roster only while the teammate's process is still there, so
//! stopping 64 teammates neither looks at the team 640 times a second nor writes the
//! roster for steps nobody would see.
//!
//! A member swarm cannot see (no pid, and no pane on the team's tmux server) is taken off
//! at once only when nothing says it ever ran, as after `swarm team add`, or when it is one
//! of swarm's own that never registered. One the roster says may run (a pane id, a
//! backend, an `isActive`, as a Claude Code teammate writes them) is asked, and leaves when
//! it agrees; silent past the timeout, it is declared dead (its tasks return to pending,
//! the lead is told) and leaves, since swarm has nothing to signal. Only the member asked
//! answers: an answer to its request from anyone else is ignored and logged.

use std::collections::HashSet;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::error::{Error, Result};
use crate::life::status::{self, MemberStatus};
use crate::life::supervisor;
use crate::spawn::window::{TeamWindow, TeamWindowOptions};
use swarm_config::project::UserDirs;
use swarm_store::Store;
use swarm_store::mailbox::Envelope;
use swarm_store::protocol::{self, Protocol, ShutdownRequest};
use swarm_store::roster;
use swarm_tmux::Tmux;
use swarm_util::error::Base as _;
use swarm_util::names::{AgentName, LEAD};
use swarm_util::{clock, process};

/// How long a pane may stay open after its member's process ended.
const PANE_GONE_WITHIN: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct LadderOptions {
    /// How long to wait for the teammate to agree and exit.
    pub timeout: Duration,
    /// Skip the request: terminate at once.
    pub force: bool,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Where the user's hooks are, for a stopped teammate's `SubagentStop`.
    pub dirs: UserDirs,
}

impl LadderOptions {
    /// Ask, wait up to 30 s, then insist with 5 s between SIGTERM and SIGKILL.
    pub fn new(dirs: UserDirs) -> LadderOptions {
        LadderOptions {
            timeout: Duration::from_secs(30),
            force: false,
            grace: Duration::from_secs(5),
            dirs,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It agreed and exited by itself.
    Approved,
    /// It stopped on SIGTERM.
    Terminated,
    /// It needed SIGKILL.
    Killed,
    /// It was not running.
    NotRunning,
    /// It said no (and the ladder was not forced).
    Rejected(String),
    /// swarm could not see it, and it did not answer within the timeout.
    DeclaredDead,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub name: String,
    pub outcome: Outcome,
    pub steps: Vec<String>,
}

/// Runs the ladder for one teammate. `progress` hears each step as it happens.
pub fn shut_down(
    store: &Store,
    tmux: Option<&Tmux>,
    name: &str,
    opts: &LadderOptions,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Report> {
    let look = || Look::take(store, tmux);
    shut_down_looking(store, tmux, name, opts, progress, &look)
}

/// The ladder for one teammate, seeing the team through `look`, which returns a look taken
/// after it was called.
fn shut_down_looking(
    store: &Store,
    tmux: Option<&Tmux>,
    name: &str,
    opts: &LadderOptions,
    progress: &(dyn Fn(&str) + Sync),
    look: &(dyn Fn() -> Result<Look> + Sync),
) -> Result<Report> {
    if name == LEAD {
        return Err(Error::usage(
            "the lead is not shut down with the ladder; stop it in its pane (Ctrl-C)",
        ));
    }
    let mut steps = Vec::new();
    // The roster shows a step only while the process is still there (`swarm status` shows
    // it as shutting down); after that, writing it (for every teammate of a big team, one
    // after another under the roster's lock) would show nobody anything.
    let gone = std::cell::Cell::new(false);
    let mut step = |s: String| {
        progress(&format!("{name}: {s}"));
        if !gone.get() {
            let _ = store.roster().update_member(name, |m| {
                m.extra
                    .insert(status::SHUTDOWN_STEP.into(), s.clone().into());
            });
        }
        steps.push(s);
    };
    let ladder = Ladder {
        store,
        tmux,
        name,
        opts,
        look,
        gone: &gone,
    };
    let outcome = ladder.climb(&mut step)?;
    Ok(Report {
        name: name.to_owned(),
        outcome,
        steps,
    })
}

/// One teammate's way down the ladder.
struct Ladder<'a> {
    store: &'a Store,
    tmux: Option<&'a Tmux>,
    name: &'a str,
    opts: &'a LadderOptions,
    look: &'a (dyn Fn() -> Result<Look> + Sync),
    /// Its process is gone (or going of its own accord): steps no longer go to the roster.
    gone: &'a std::cell::Cell<bool>,
}

impl Ladder<'_> {
    /// The teammate as a fresh look sees it.
    fn observe(&self) -> Result<MemberStatus> {
        let look = (self.look)()?;
        look.seen.member(self.name).cloned().ok_or_else(|| {
            Error::not_found(format!(
                "no member named '{}' in team '{}'; see `swarm status`",
                self.name,
                self.store.team()
            ))
        })
    }

    /// Every rung: ask, then end it (there or here), then make sure it is gone and settle
    /// what it leaves. Returns how it ended.
    fn climb(&self, step: &mut dyn FnMut(String)) -> Result<Outcome> {
        let first = self.observe()?;
        let mut outcome = Outcome::NotRunning;
        if first.pid.is_none()
            && first.pane_record.is_none()
            && let Some(unseen) = self.not_started(&first, step)?
        {
            return Ok(unseen);
        }
        // A pid means something only on this host: a teammate elsewhere is asked, never
        // signalled from here.
        let target = first
            .pid
            .filter(|_| first.alive && is_here(&first))
            .map(Target::of);
        if first.alive && !self.opts.force {
            match ask_and_wait(self.store, self.name, self.opts, self.look, step)? {
                Some(rejected @ Outcome::Rejected(_)) => return Ok(rejected),
                Some(asked) => {
                    self.gone.set(true);
                    outcome = asked;
                }
                None => {}
            }
        }
        if outcome != Outcome::Approved {
            outcome = self.end(&first, target, step)?.unwrap_or(outcome);
        } else if let Some(target) = target {
            // Whatever its Bash tool left behind goes with it.
            if !target.wait_gone(Duration::from_secs(2)) {
                target.signal(Signal::SIGKILL);
            }
        }
        self.gone.set(true);
        self.settle(target, step)?;
        Ok(outcome)
    }

    /// A teammate with neither a process nor a pane: it ended, never started, or runs
    /// where this host cannot see it (then its outcome, all done here).
    fn not_started(
        &self,
        first: &MemberStatus,
        step: &mut dyn FnMut(String),
    ) -> Result<Option<Outcome>> {
        let config = self.store.roster().load()?;
        if first.state == "dead" {
            // Its pane is gone from a server that answers: so is its process.
            step(format!(
                "not running ({})",
                first.detail.as_deref().unwrap_or("process gone")
            ));
        } else if may_run_unseen(config.require(self.name)?) {
            return shut_down_unseen(self.store, self.name, self.opts, step).map(Some);
        } else {
            step("never started".to_owned());
        }
        Ok(None)
    }

    /// Ends a teammate that did not go when asked: its session on its host, or SIGTERM
    /// then SIGKILL here. A remote process is ended there even when its heartbeat says it
    /// is gone: a hung one beats no more, and would be left behind. `None`: nothing ran.
    fn end(
        &self,
        first: &MemberStatus,
        target: Option<Target>,
        step: &mut dyn FnMut(String),
    ) -> Result<Option<Outcome>> {
        let (store, name, opts) = (self.store, self.name, self.opts);
        let remote = store
            .roster()
            .load()?
            .member(name)
            .and_then(crate::spawn::remote::host_of)
            .filter(|_| !is_here(first))
            .map(str::to_owned);
        if let Some(host) = &remote {
            step(crate::spawn::remote::end_session(
                store, name, host, &opts.dirs,
            )?);
            let killed = reap_remote(store, name, host, first, opts, step)?;
            return Ok(Some(if killed {
                Outcome::Killed
            } else {
                Outcome::Terminated
            }));
        }
        if !self.observe()?.alive {
            if let Some(target) = target
                && !target.wait_gone(Duration::from_secs(2))
            {
                // Whatever its Bash tool left behind goes with it.
                target.signal(Signal::SIGKILL);
            }
            return Ok(None);
        }
        let target = target.unwrap_or(Target::NOTHING);
        let n = target.signal(Signal::SIGTERM);
        step(format!("SIGTERM to {target} ({n} process(es))"));
        if target.wait_gone(opts.grace) {
            return Ok(Some(Outcome::Terminated));
        }
        let n = target.signal(Signal::SIGKILL);
        step(format!(
            "still running after {} s: SIGKILL ({n} process(es))",
            opts.grace.as_secs()
        ));
        target.wait_gone(Duration::from_secs(5));
        Ok(Some(Outcome::Killed))
    }

    /// Closes its pane, waits for its end, refuses a process or pane that outlived it,
    /// then reports the end, settles its worktree and takes it off the roster.
    fn settle(&self, target: Option<Target>, step: &mut dyn FnMut(String)) -> Result<()> {
        let (store, name) = (self.store, self.name);
        if let Some(tmux) = self.tmux {
            close_pane(store, tmux, name, step)?;
            close_dead_pane(tmux, &self.observe()?, step);
        }
        let last = wait_until_ended(&|| self.observe(), self.tmux, step)?;
        if last.alive || target.is_some_and(|t| !t.gone()) {
            return Err(Error::StillRunning(format!(
                "{name} is still running after SIGKILL (pid {}); check it by hand",
                last.pid.unwrap_or_default()
            )));
        }
        if last.pane_alive == Some(true) {
            return Err(Error::Pane(format!(
                "{name}'s process has ended but its pane is still open {} s after kill-pane; close it by hand (`swarm attach`)",
                PANE_GONE_WITHIN.as_secs()
            )));
        }
        if let Some(r) = supervisor::report_exit(store, &last, &self.opts.dirs)? {
            released(step, &r.released);
            if let Some(line) = r.worktree {
                step(line);
            }
        }
        leave(store, name, &self.opts.dirs, step)
    }
}

/// Whether `m` runs on this host, where its pid means something.
fn is_here(m: &MemberStatus) -> bool {
    swarm_store::liveness::is_here(m.host.as_deref())
}

/// Makes sure the process of `first`, on `host`, is gone after its session ended: killed
/// there when it outlived `opts.grace`, and then declared dead (its heartbeat would say it
/// lives until it times out). True when it had to be killed.
fn reap_remote(
    store: &Store,
    name: &str,
    host: &str,
    first: &MemberStatus,
    opts: &LadderOptions,
    step: &mut dyn FnMut(String),
) -> Result<bool> {
    let state = first.state_file.as_ref();
    let Some((pid, start)) = state.and_then(|s| s.start_ticks.map(|t| (s.pid, t))) else {
        return Ok(false);
    };
    let (line, killed) =
        crate::spawn::remote::reap(store.root(), name, host, &opts.dirs, pid, start, opts.grace)?;
    step(line);
    if killed && let Some(token) = first.token {
        store.agents().declare_dead(token)?;
    }
    Ok(killed)
}

/// Asks a running member to shut down and waits up to the timeout: `Approved` when it
/// exits, `Rejected` when it says no, `None` when it does neither in time. An approval
/// while its process still runs is only a step shown: the process ending is what counts.
fn ask_and_wait(
    store: &Store,
    name: &str,
    opts: &LadderOptions,
    look: &(dyn Fn() -> Result<Look> + Sync),
    step: &mut dyn FnMut(String),
) -> Result<Option<Outcome>> {
    let request_id = ask(store, name)?;
    step(format!("asked to shut down ({request_id})"));
    let deadline = Instant::now() + opts.timeout;
    let mut ignored = HashSet::new();
    let mut agreed = false;
    loop {
        let now = look()?;
        if !now.seen.member(name).is_some_and(|m| m.alive) {
            step("agreed and exited".to_owned());
            return Ok(Some(Outcome::Approved));
        }
        match verdict(&now.answers, name, &request_id, &mut ignored) {
            Some(Err(reason)) => {
                step(format!("refused: {reason}"));
                // It goes on working: no longer being shut down.
                let _ = store
                    .roster()
                    .update_member(name, |m| m.extra.remove(status::SHUTDOWN_STEP));
                return Ok(Some(Outcome::Rejected(reason)));
            }
            Some(Ok(())) if !agreed => {
                agreed = true;
                step("agreed; waiting for its process to exit".to_owned());
            }
            _ => {}
        }
        if Instant::now() >= deadline {
            step(format!("no exit within {} s", opts.timeout.as_secs()));
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The member once its process and its pane have ended, after its pane was closed. A
/// teammate that was still starting when the ladder began has a process only now: it is
/// given the moment kill-pane's SIGHUP takes, then killed. A pane ends a moment after its
/// process (tmux reaps the process first, and a shell around a client outlives it): that
/// end is waited for, not sampled once.
fn wait_until_ended(
    observe: &dyn Fn() -> Result<MemberStatus>,
    tmux: Option<&Tmux>,
    step: &mut dyn FnMut(String),
) -> Result<MemberStatus> {
    let mut last = observe()?;
    let deadline = Instant::now() + Duration::from_secs(5);
    while last.alive && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        last = observe()?;
    }
    let here = swarm_store::liveness::is_here(last.host.as_deref());
    if let (true, true, Some(pid)) = (last.alive, here, last.pid) {
        let late = Target::of(pid);
        let n = late.signal(Signal::SIGKILL);
        step(format!(
            "started late and still running: SIGKILL ({n} process(es))"
        ));
        late.wait_gone(Duration::from_secs(5));
        last = observe()?;
    }
    let deadline = Instant::now() + PANE_GONE_WITHIN;
    while !last.alive && last.pane_alive == Some(true) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        last = observe()?;
        if let Some(tmux) = tmux {
            close_dead_pane(tmux, &last, step);
        }
    }
    Ok(last)
}

/// The last steps for a member that is gone: its worktree settled (usually done by the
/// exit report already; this catches one that never registered), then off the roster,
/// which returns whatever tasks it still held.
fn leave(store: &Store, name: &str, dirs: &UserDirs, mut step: impl FnMut(String)) -> Result<()> {
    if let Some(line) = swarm_git::settle::settle(store, name, dirs) {
        step(line);
    }
    let removed = store.roster().remove_member(name)?;
    let ids: Vec<String> = removed.released.into_iter().map(|t| t.id).collect();
    released(&mut step, &ids);
    step("removed from the roster".to_owned());
    Ok(())
}

fn released(step: &mut dyn FnMut(String), ids: &[String]) {
    if !ids.is_empty() {
        step(format!("returned task(s) #{} to pending", ids.join(", #")));
    }
}

/// The ladder for a member swarm cannot watch: ask, and take it off on its word (a Claude
/// Code teammate approves and exits), or declare it dead when it stays silent past the
/// timeout. Forced, it stays: swarm has nothing to stop and will not skip the asking.
fn shut_down_unseen(
    store: &Store,
    name: &str,
    opts: &LadderOptions,
    mut step: impl FnMut(String),
) -> Result<Outcome> {
    let unseen = |why: &str| {
        Error::conflict(format!(
            "cannot tell whether {name} is still running: swarm has no process or pane of it to watch{why}; it stays on the roster: stop it where it runs, then take it off with `swarm team remove {name}`"
        ))
    };
    if opts.force {
        return Err(unseen(" or stop (--force does not ask it)"));
    }
    let request_id = ask(store, name)?;
    step(format!(
        "asked to shut down ({request_id}); swarm cannot see its process, so only its answer counts"
    ));
    let deadline = Instant::now() + opts.timeout;
    let mut ignored = HashSet::new();
    loop {
        match answer(store, name, &request_id, &mut ignored) {
            Some(Ok(())) => break,
            Some(Err(reason)) => {
                step(format!("refused: {reason}"));
                let _ = store
                    .roster()
                    .update_member(name, |m| m.extra.remove(status::SHUTDOWN_STEP));
                return Ok(Outcome::Rejected(reason));
            }
            None if Instant::now() >= deadline => {
                declare_dead(store, name, opts, &mut step)?;
                return Ok(Outcome::DeclaredDead);
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    step("agreed to shut down".to_owned());
    leave(store, name, &opts.dirs, &mut step)?;
    Ok(Outcome::Approved)
}

/// A member swarm cannot see that stayed silent past the timeout: reported dead (its
/// tasks return to pending, the lead is told) and taken off the roster.
fn declare_dead(
    store: &Store,
    name: &str,
    opts: &LadderOptions,
    step: &mut dyn FnMut(String),
) -> Result<()> {
    let why = format!(
        "it did not answer the shutdown request within {} s",
        opts.timeout.as_secs()
    );
    step(format!(
        "{why}: declared dead (if it still runs somewhere, stop it there)"
    ));
    let seen = status::observe(store, None)?;
    if let Some(mut m) = seen.member(name).cloned() {
        m.state = "dead".to_owned();
        m.detail = Some(why);
        if let Some(r) = supervisor::report_exit(store, &m, &opts.dirs)? {
            released(step, &r.released);
        }
    }
    leave(store, name, &opts.dirs, step)
}

/// Whether `m` may run where swarm cannot see it ([`roster::Member::may_run_unseen`]); never
/// one of swarm's own teammates, each of which records its process as it starts: one that
/// recorded none never ran, or died before it registered.
fn may_run_unseen(m: &roster::Member) -> bool {
    m.engine.as_deref() != Some("swarm") && m.may_run_unseen()
}

/// Sends `name` a `shutdown_request` from the lead; returns its id.
fn ask(store: &Store, name: &str) -> Result<String> {
    let request_id = protocol::shutdown_request_id(name);
    let request = Protocol::ShutdownRequest(ShutdownRequest {
        request_id: request_id.clone(),
        from: LEAD.to_owned(),
        reason: Some("the lead is shutting the team down".to_owned()),
        timestamp: clock::now_iso(),
    });
    store.mail().deliver(
        &AgentName::parse_any(name)?,
        Envelope::new(LEAD, request.to_text()),
    )?;
    Ok(request_id)
}

/// Kills the teammate's pane if it is tagged with this team and still there.
fn close_pane(store: &Store, tmux: &Tmux, name: &str, step: &mut dyn FnMut(String)) -> Result<()> {
    let opts = TeamWindowOptions::for_team(store, None);
    let Some(window) = TeamWindow::find(tmux, store.team(), opts)? else {
        return Ok(());
    };
    for pane in window.panes()? {
        if pane.agent.as_deref() == Some(name) {
            window.kill_pane(pane.pane)?;
            step(format!("closed pane {}", pane.pane));
        }
    }
    Ok(())
}

/// Closes the pane the roster names for a member swarm did not start (Claude Code's),
/// once `remain-on-exit` kept it after its process ended: it is not tagged as ours, so
/// nothing else would, and a dead pane runs nothing.
fn close_dead_pane(tmux: &Tmux, m: &MemberStatus, step: &mut dyn FnMut(String)) {
    if let Some(p) = m
        .pane_record
        .as_ref()
        .filter(|p| p.dead && p.agent.is_none())
        && tmux.kill_pane(p.pane).is_ok()
    {
        step(format!("closed pane {}", p.pane));
    }
}

/// What the ladder signals: the teammate's whole session when it leads one (as every pane
/// process does), else its process group when it leads that, else the process alone, so
/// a teammate started some other way never takes its parent's session down with it.
/// What the ladder signals: the session, group or process of a pid it observed, and that
/// process's start time then, checked before every signal so that a pid reused since is
/// never hit.
#[derive(Debug, Clone, Copy)]
struct Target {
    scope: Scope,
    started: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
enum Scope {
    Session(i32),
    Group(i32),
    Process(i32),
    Nothing,
}

impl Target {
    const NOTHING: Target = Target {
        scope: Scope::Nothing,
        started: None,
    };

    fn of(pid: i32) -> Target {
        let Some(started) = process::start_ticks(pid) else {
            // Gone already: whatever runs under that pid later is someone else.
            return Target::NOTHING;
        };
        let scope = if process::session_of(pid) == Some(pid) {
            Scope::Session(pid)
        } else if process::pgid_of(pid) == Some(pid) {
            Scope::Group(pid)
        } else {
            Scope::Process(pid)
        };
        Target {
            scope,
            started: Some(started),
        }
    }

    /// Whether the pid now names another process than the one observed. A session or
    /// group whose leader is gone keeps its id while any member lives (the kernel does not
    /// reuse it), so its members are still reached.
    fn reused(self) -> bool {
        match self.scope {
            Scope::Session(pid) | Scope::Group(pid) | Scope::Process(pid) => {
                process::start_ticks(pid).is_some_and(|now| Some(now) != self.started)
            }
            Scope::Nothing => false,
        }
    }

    fn signal(self, signal: Signal) -> usize {
        if self.reused() {
            return 0;
        }
        match self.scope {
            Scope::Session(sid) => process::signal_session(sid, signal),
            Scope::Group(pgid) => usize::from(process::signal_group(pgid, signal)),
            Scope::Process(pid) => usize::from(process::signal(pid, signal)),
            Scope::Nothing => 0,
        }
    }

    fn gone(self) -> bool {
        match self.scope {
            Scope::Session(sid) => self.reused() || process::session_members(sid).is_empty(),
            Scope::Group(pid) | Scope::Process(pid) => self.reused() || !process::is_alive(pid),
            Scope::Nothing => true,
        }
    }

    fn wait_gone(self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if self.gone() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.scope {
            Scope::Session(s) => write!(f, "session {s}"),
            Scope::Group(g) => write!(f, "process group {g}"),
            Scope::Process(p) => write!(f, "pid {p}"),
            Scope::Nothing => f.write_str("nothing"),
        }
    }
}

/// The answer `name` gave to `request_id`, if one arrived (see [`verdict`]).
fn answer(
    store: &Store,
    name: &str,
    request_id: &str,
    ignored: &mut HashSet<String>,
) -> Option<Result<(), String>> {
    verdict(&answers(store), name, request_id, ignored)
}

/// One answer to a shutdown request in the lead's inbox.
#[derive(Debug, Clone)]
struct Answer {
    key: String,
    from: String,
    request_id: String,
    /// Its sender names itself as the envelope does.
    signed: bool,
    kind: &'static str,
    verdict: Result<(), String>,
}

/// Every answer to a shutdown request in the lead's inbox.
fn answers(store: &Store) -> Vec<Answer> {
    let Ok(mail) = store.mail().read_all(&AgentName::lead()) else {
        return Vec::new();
    };
    mail.into_iter()
        .filter_map(|d| {
            let e = d.envelope;
            let p = e.protocol()?;
            let (request_id, verdict) = match &p {
                Protocol::ShutdownApproved(a) => (a.request_id.clone(), Ok(())),
                Protocol::ShutdownRejected(r) => (r.request_id.clone(), Err(r.reason.clone())),
                _ => return None,
            };
            Some(Answer {
                key: d.key,
                signed: p.signed_by(&e.from),
                kind: p.kind(),
                from: e.from,
                request_id,
                verdict,
            })
        })
        .collect()
}

/// The answer `name` gave to `request_id`, if one arrived: approved, or rejected with a
/// reason. An answer from anyone else is not `name`'s to give: it is ignored, and logged
/// once (its key goes into `ignored`).
fn verdict(
    answers: &[Answer],
    name: &str,
    request_id: &str,
    ignored: &mut HashSet<String>,
) -> Option<Result<(), String>> {
    for a in answers.iter().filter(|a| a.request_id == request_id) {
        if a.from == name && a.signed {
            return Some(a.verdict.clone());
        }
        if ignored.insert(a.key.clone()) {
            tracing::warn!(
                "ignoring a {} from {} for {request_id}: that request was sent to {name}",
                a.kind,
                a.from
            );
        }
    }
    None
}

/// What a ladder looks at: the team, then the answers to shutdown requests in the lead's
/// inbox.
#[derive(Clone)]
struct Look {
    seen: status::TeamStatus,
    answers: Vec<Answer>,
}

impl Look {
    fn take(store: &Store, tmux: Option<&Tmux>) -> Result<Look> {
        let seen = status::observe(store, tmux)?;
        Ok(Look {
            seen,
            answers: answers(store),
        })
    }
}

/// Looks at the team shared by the ladders of one [`shut_down_all`]: each ladder gets a
/// look taken after it asked, one look serves every ladder waiting, and looks start at
/// most every [`LOOK_EVERY`]. Sixty-four ladders polling ten times a second would
/// otherwise look at a team of 64 (a tmux query, its state files, the lead's inbox) 640
/// times a second, and the shutdown would wait on its own looking.
struct SharedLooks<T, F> {
    take: F,
    state: Mutex<Looking<T>>,
    ready: Condvar,
}

/// Looks started and finished so far, the latest, and whether one is being taken.
struct Looking<T> {
    started: u64,
    finished: u64,
    latest: Option<Result<T>>,
    busy: bool,
    last_start: Option<Instant>,
}

/// The least time between two shared looks: how often one ladder polls anyway.
const LOOK_EVERY: Duration = Duration::from_millis(100);

impl<T: Clone, F: Fn() -> Result<T>> SharedLooks<T, F> {
    fn new(take: F) -> Self {
        SharedLooks {
            take,
            state: Mutex::new(Looking {
                started: 0,
                finished: 0,
                latest: None,
                busy: false,
                last_start: None,
            }),
            ready: Condvar::new(),
        }
    }

    /// A look taken after this call began.
    fn fresh(&self) -> Result<T> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let wanted = st.started + 1;
        loop {
            if st.finished >= wanted {
                return match st.latest.as_ref().expect("a finished look") {
                    Ok(look) => Ok(look.clone()),
                    Err(e) => Err(e.copy()),
                };
            }
            if st.busy {
                st = self.ready.wait(st).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            // This caller takes the next look, for everyone waiting.
            st.busy = true;
            let wait = st
                .last_start
                .map_or(Duration::ZERO, |t| LOOK_EVERY.saturating_sub(t.elapsed()));
            drop(st);
            std::thread::sleep(wait);
            let mut st2 = self.state.lock().unwrap_or_else(|p| p.into_inner());
            st2.started += 1;
            st2.last_start = Some(Instant::now());
            let number = st2.started;
            drop(st2);
            let look = (self.take)();
            st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            st.latest = Some(look);
            st.finished = number;
            st.busy = false;
            self.ready.notify_all();
        }
    }
}

/// Runs the ladder on every teammate of `team` that is alive, telling `say` what it does.
/// Nothing is done when the team's tmux server is gone: every pane went with it, each
/// teammate got SIGHUP and records its own end, and the person should find them on the
/// roster, marked dead, with their tasks released, rather than taken off it.
pub fn stop_team(
    store: &Store,
    tmux: Option<&Tmux>,
    opts: &LadderOptions,
    say: &(dyn Fn(&str) + Sync),
) -> Vec<Result<Report>> {
    let Ok(seen) = status::observe(store, tmux) else {
        return Vec::new();
    };
    if tmux.is_some() && !seen.tmux_reachable {
        return Vec::new();
    }
    let names: Vec<String> = seen
        .members
        .iter()
        .filter(|m| m.name != LEAD && (m.alive || m.pane_alive == Some(true)))
        .map(|m| m.name.clone())
        .collect();
    if names.is_empty() {
        return Vec::new();
    }
    say(&format!(
        "\nshutting down {} teammate(s): {}",
        names.len(),
        names.join(", ")
    ));
    shut_down_all(store, tmux, &names, opts, &|line| say(&format!("  {line}")))
}

/// Runs the ladder for several teammates at once; each result in input order. The ladders
/// share their looks at the team (see `SharedLooks`).
pub fn shut_down_all(
    store: &Store,
    tmux: Option<&Tmux>,
    names: &[String],
    opts: &LadderOptions,
    progress: &(dyn Fn(&str) + Sync),
) -> Vec<Result<Report>> {
    let looks = SharedLooks::new(|| Look::take(store, tmux));
    let look = || looks.fresh();
    let look = &look;
    std::thread::scope(|s| {
        let handles: Vec<_> = names
            .iter()
            .map(|n| s.spawn(move || shut_down_looking(store, tmux, n, opts, progress, look)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Runtime("the shutdown ladder panicked".into())))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A pid whose process is not the one observed (its start time differs, as after the
    /// pid was reused) is neither signalled nor waited for.
    #[test]
    fn a_reused_pid_is_never_signalled() {
        let mut child = std::process::Command::new("sleep")
            .arg("100")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let observed = Target::of(pid);
        assert!(matches!(observed.scope, Scope::Process(p) if p == pid));
        let reused = Target {
            started: observed.started.map(|t| t + 1),
            ..observed
        };
        assert_eq!(reused.signal(Signal::SIGKILL), 0);
        assert!(reused.gone());
        assert_eq!(child.try_wait().unwrap(), None, "the other process was hit");
        assert_eq!(observed.signal(Signal::SIGKILL), 1);
        child.wait().unwrap();
    }

    #[test]
    fn shared_looks_are_fresh_and_shared() {
        let taken = AtomicUsize::new(0);
        let looks = SharedLooks::new(|| {
            taken.fetch_add(1, Ordering::SeqCst);
            let began = Instant::now();
            std::thread::sleep(Duration::from_millis(20));
            Ok(began)
        });
        let (threads, polls) = (16, 4);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for _ in 0..polls {
                        let asked = Instant::now();
                        // The look it gets began after it asked.
                        assert!(looks.fresh().unwrap() >= asked);
                    }
                });
            }
        });
        let taken = taken.load(Ordering::SeqCst);
        // About one look per round of asks; far fewer than one per ask in any case.
        assert!(
            taken < threads * polls / 2,
            "{taken} looks for {} asks",
            threads * polls
        );
    }
}
