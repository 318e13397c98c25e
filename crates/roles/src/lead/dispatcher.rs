//! `swarm lead`: the process in a team's first pane. It owns the team's live state.
//!
//! One dispatcher loop, fed by a reconcile tick (twice a second: one batched tmux query,
//! a pid check per agent, see [`status::observe`]) and by signals. Each tick it reports
//! teammates whose process ended (tasks back to pending, `teammate_terminated` to the lead's
//! inbox; exactly once, see [`supervisor`]) and redraws the team's table in its pane.
//!
//! Resumed (`--resume`, see [`resume`]), it restarts the teammates that had not finished
//! before its first reconcile tick.
//!
//! Only one lead runs per team (an flock on `teams/<team>/lead.flock`, held for life). On
//! Ctrl-C, SIGTERM or SIGHUP it shuts its teammates down through the ladder, unless it was
//! started with `--keep-team`, and leaves the team's files for the record.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_util::FutureExt;

use serde_json::json;
use tokio::signal::unix::{SignalKind, signal};

use crate::error::ExitCode;
use crate::error::{Error, Result};
use crate::heartbeat::Beater;
use crate::lead::agent::{self as lead_agent, LeadAgentOptions};
use swarm_store::Store;
use swarm_store::documents;
use swarm_store::state::{Activity, AgentState, ExitInfo};
use swarm_team::life::resume;
use swarm_team::life::shutdown::{self, LadderOptions};
use swarm_team::life::status;
use swarm_team::life::supervisor;
use swarm_team::runs::report;
use swarm_team::spawn::launch::Launcher;
use swarm_tmux::Tmux;
use swarm_util::clock;
use swarm_util::names::{AgentName, LEAD};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
pub struct LeadOptions {
    /// Its team, opened once where the process starts.
    pub store: Store,
    pub tmux: Option<Tmux>,
    pub keep_team: bool,
    pub reconcile_every: Duration,
    pub ladder: LadderOptions,
    /// Draw the team table in this terminal.
    pub draw: bool,
    /// The lead's own tmux pane (`$TMUX_PANE`), recorded in the roster.
    pub pane: Option<String>,
    /// Resumed (`--resume`): restart the unfinished teammates with this, before supervising.
    pub resume: Option<Launcher>,
    /// The exit code an error ends the lead with (the binary's mapping).
    pub exit_code: ExitCode,
}

/// Records this process as the team's lead (Claude Code's `leadProcess`, and the lead
/// member's pane).
pub fn register(store: &Store, pane: Option<&str>) -> Result<AgentState> {
    let pid = std::process::id() as i32;
    store.roster().update(|c| {
        c.extra.insert(
            "leadProcess".to_owned(),
            json!({
                "pid": pid,
                "pidSpace": "host",
                "claimedAt": clock::now_ms(),
                "procStart": swarm_util::process::start_ticks(pid).map(|t| t.to_string()),
            }),
        );
        if let (Some(p), Some(lead)) = (pane, c.member_mut(LEAD)) {
            lead.tmux_pane_id = p.to_owned();
            lead.backend_type = Some("tmux".to_owned());
        }
        Ok(())
    })?;
    let state = AgentState::new(Activity::Idle);
    store.agents().write_state(&AgentName::lead(), &state)?;
    Ok(state)
}

/// How the lead ended, as its state file records it last.
struct End {
    code: i32,
    reason: String,
    clean: bool,
}

/// Runs the lead until a signal or, with an agent, until its goal is done; returns the
/// exit code.
///
/// Once it holds the lead lock, the lead records its end on every way out (its work
/// done, an error, a panic, a signal): waiters take the lock's release as the sign that
/// the record they read is the last one (see `team::run`), so a lead gone without one
/// truly died without a word.
pub async fn run(opts: LeadOptions, agent: Option<LeadAgentOptions>) -> Result<i32> {
    // From here on a signal is an orderly stop, not a death without a record.
    let stop = CancellationToken::new();
    listen_for_signals(stop.clone())?;
    let _lock = opts.store.agents().acquire_lead()?;
    let mut me = AgentState::new(Activity::Idle);
    let led = AssertUnwindSafe(lead(&opts, agent, stop, &mut me))
        .catch_unwind()
        .await;
    let end = match led {
        Ok(Ok(end)) => end,
        Ok(Err(e)) => End {
            code: i32::from((opts.exit_code)(&e)),
            reason: format!("the lead failed: {e}"),
            clean: false,
        },
        Err(panic) => End {
            code: i32::from(swarm_util::error::exit::FAILURE),
            reason: format!("the lead panicked: {}", panic_text(panic.as_ref())),
            clean: false,
        },
    };
    if !end.clean {
        tracing::error!("{}", end.reason);
    }
    record_end(&opts, &mut me, &end)?;
    Ok(end.code)
}

/// Cancels `stop` at the first SIGINT, SIGTERM or SIGHUP; later ones are ignored, so the
/// lead always finishes its shutdown and records its end.
fn listen_for_signals(stop: CancellationToken) -> Result<()> {
    let listen = |kind| {
        signal(kind).map_err(|e| Error::Runtime(format!("failed to install a signal handler: {e}")))
    };
    let (mut int, mut term, mut hup) = (
        listen(SignalKind::interrupt())?,
        listen(SignalKind::terminate())?,
        listen(SignalKind::hangup())?,
    );
    tokio::spawn(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
        stop.cancel();
        // Keep the handlers installed: a second signal must not kill the lead halfway.
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
        }
    });
    Ok(())
}

/// What a panic carried, as text.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// Writes the lead's last state: `Exited`, with its code and reason. A failure is said in
/// the pane and the log, retried once, and returned: a waiter would otherwise take the
/// lead for dead without a word.
fn record_end(opts: &LeadOptions, me: &mut AgentState, end: &End) -> Result<()> {
    me.activity = Activity::Exited;
    me.current_task = None;
    me.exit = Some(ExitInfo {
        code: end.code,
        reason: end.reason.clone(),
        released_tasks: Vec::new(),
        clean: end.clean,
    });
    tracing::info!(
        "recording the lead's end: code {}, {}",
        end.code,
        end.reason
    );
    let write = || opts.store.agents().write_state(&AgentName::lead(), me);
    let written = write().or_else(|e| {
        let line = format!("failed to record the lead's end (retrying once): {e}");
        tracing::error!("{line}");
        say(&line);
        std::thread::sleep(Duration::from_millis(200));
        write().inspect_err(|e| {
            tracing::error!("failed to record the lead's end: {e}");
            say(&format!("failed to record the lead's end: {e}"));
        })
    });
    Ok(written?)
}

/// The lead's work once it holds the lock: register, resume the teammates, lead (or only
/// supervise) until done or stopped, shut the team down, land the last merges and write
/// the report. `me` is the state it keeps up to date for [`record_end`].
async fn lead(
    opts: &LeadOptions,
    agent: Option<LeadAgentOptions>,
    stop: CancellationToken,
    me: &mut AgentState,
) -> Result<End> {
    *me = register(&opts.store, opts.pane.as_deref())?;
    tracing::info!(
        "lead of team {} registered (pid {})",
        opts.store.team(),
        me.pid
    );
    // Where processes beat, the lead does too: its place outlives a lost connection.
    let fenced = stop.clone();
    let _beater = match Beater::start(&opts.store, &AgentName::lead(), move || fenced.cancel())? {
        Some((token, beater)) => {
            me.token = Some(token);
            me.host = Some(swarm_store::liveness::this_host().to_owned());
            write_state(opts, me);
            Some(beater)
        }
        None => None,
    };
    swarm_util::fault::point("lead.registered");
    // Before the supervisor's first look, which would report the stopped teammates dead.
    if let Some(launcher) = opts.resume.clone() {
        let respawned = tokio::task::spawn_blocking(move || resume::respawn_teammates(&launcher))
            .await
            .map_err(|e| Error::Runtime(format!("resuming the teammates panicked: {e}")))??;
        for r in respawned {
            tracing::info!("resume: {}: {}", r.name, r.how);
            say(&format!("resume: {}: {}", r.name, r.how));
        }
    }
    let supervisor = tokio::spawn(supervise(opts.clone(), agent.is_none(), stop.clone()));
    // Where the work began, so the report can tell what was committed since.
    let mut base = None;
    let (code, outcome) = match agent.clone() {
        None => {
            stop.cancelled().await;
            (0, None)
        }
        Some(a) => {
            base = report::git_head(&a.cwd);
            let (outcome, engine) = lead_agent::run(a, stop.clone()).await?;
            me.usage = engine.usage;
            me.cost_usd = engine.cost_usd;
            me.model_calls = engine.model_calls;
            tracing::info!("the lead agent ended: {}", outcome.describe());
            (outcome.exit_code(), Some(outcome))
        }
    };
    if !opts.keep_team {
        me.activity = Activity::ShuttingDown;
        write_state(opts, me);
        let opts2 = opts.clone();
        let _ = tokio::task::spawn_blocking(move || stop_team(&opts2)).await;
    }
    stop.cancel();
    let _ = supervisor.await;
    let (Some(a), Some(outcome)) = (agent, outcome) else {
        return Ok(End {
            code,
            reason: "the lead stopped".to_owned(),
            clean: true,
        });
    };
    if matches!(outcome, lead_agent::Outcome::Done(_)) {
        land_last_merges(opts).await;
    }
    let result = outcome.describe();
    // Stopped by a signal it handled is an orderly end too (`swarm status` shows it
    // exited, as a finished run); only a code of 0 counts as finished for resuming.
    let clean = code == 0
        || matches!(
            outcome,
            lead_agent::Outcome::Budget(_) | lead_agent::Outcome::Stopped(_)
        );
    // The report reads everyone's state file, the lead's figures and result included;
    // `Exited` comes after it (see `record_end`), since waiters take it to mean the report
    // is there.
    me.exit = Some(ExitInfo {
        code,
        reason: result.clone(),
        released_tasks: Vec::new(),
        clean,
    });
    write_state(opts, me);
    let text = report::render(&opts.store, &a.goal, &result, &a.cwd, base.as_deref());
    match documents::write_report(&opts.store, &text) {
        Ok(path) => say(&format!("\n{text}\n(report written to {})", path.display())),
        Err(e) => say(&format!("\n{text}\n(failed to write the report: {e})")),
    }
    Ok(End {
        code,
        reason: result,
        clean,
    })
}

/// Writes the lead's state on the way to its end; a failure is logged (the end record,
/// which matters, is written after it and retried).
fn write_state(opts: &LeadOptions, me: &AgentState) {
    if let Err(e) = opts.store.agents().write_state(&AgentName::lead(), me) {
        tracing::warn!("failed to write the lead's state: {e}");
    }
}

/// The teammates are gone: land what they committed last, and remove the worktrees whose
/// work is on the target, before the report lists the queue.
async fn land_last_merges(opts: &LeadOptions) {
    let store = opts.store.clone();
    let merge = swarm_git::merge::Options {
        dirs: opts.ladder.dirs.clone(),
        ..Default::default()
    };
    let last = tokio::task::spawn_blocking(move || {
        swarm_git::merge::run(&store, &merge, &|e| say(&swarm_git::merge::describe(e)))
    })
    .await;
    match last {
        Ok(Ok(o)) => o.removed.iter().for_each(|line| say(line)),
        Ok(Err(e)) => say(&format!("the merge queue failed: {e}")),
        Err(e) => say(&format!("the merge queue's run panicked: {e}")),
    }
}

/// The reconcile loop, until `stop`: report what ended, redraw the table when asked to.
async fn supervise(opts: LeadOptions, draw_table: bool, stop: CancellationToken) {
    let mut events: Vec<String> = Vec::new();
    let mut interval = tokio::time::interval(opts.reconcile_every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The task list is read again only when it changed: an idle team over a large board
    // costs its lead almost nothing.
    let board = std::sync::Arc::new(swarm_store::board::Board::new());
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = stop.cancelled() => return,
        }
        let (store, tmux) = (opts.store.clone(), opts.tmux.clone());
        let (dirs, board) = (opts.ladder.dirs.clone(), board.clone());
        match tokio::task::spawn_blocking(move || {
            supervisor::reconcile_on(&store, tmux.as_ref(), &dirs, Some(&board))
        })
        .await
        {
            Ok(Ok((seen, reported))) => {
                for r in reported {
                    events.push(format!(
                        "{} {} stopped: {}",
                        clock::now_iso(),
                        r.name,
                        r.reason
                    ));
                }
                if draw_table && opts.draw {
                    draw(&seen, &events);
                }
            }
            Ok(Err(e)) => tracing::warn!("reconcile failed: {e}"),
            Err(e) => tracing::warn!("reconcile panicked: {e}"),
        }
    }
}

/// Runs the ladder on every teammate that is alive, saying what it does in this pane.
pub fn stop_team(opts: &LeadOptions) -> Vec<swarm_team::error::Result<shutdown::Report>> {
    shutdown::stop_team(&opts.store, opts.tmux.as_ref(), &opts.ladder, &|line| {
        say(line)
    })
}

/// Prints a line if the lead's terminal is still there. When its pane was closed, the
/// lead is stopping the team because of it, and `println!` would panic halfway through.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{line}");
}

fn draw(seen: &status::TeamStatus, events: &[String]) {
    use std::io::Write;
    let mut out = String::from("\x1b[H\x1b[2J");
    let width = terminal_size::terminal_size()
        .map(|(w, _)| usize::from(w.0))
        .unwrap_or(80);
    out.push_str(&status::render_for_width(seen, clock::now_ms(), width));
    if !events.is_empty() {
        out.push('\n');
        for e in events.iter().rev().take(10).rev() {
            out.push_str(&format!("  {e}\n"));
        }
    }
    out.push_str("\n(swarm lead: supervising; Ctrl-C shuts the team down)\n");
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    let _ = stdout.flush();
}
