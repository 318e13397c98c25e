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

use std::time::Duration;

use serde_json::json;
use tokio::signal::unix::{SignalKind, signal};

use crate::roles::lead::agent::{self as lead_agent, LeadAgentOptions};
use crate::store::documents;
use crate::store::layout::Root;
use crate::store::lead::LeadLock;
use crate::store::names::{AgentName, LEAD, TeamName};
use crate::store::roster;
use crate::store::state::{self, Activity, AgentState, ExitInfo};
use crate::team::launch::Launcher;
use crate::team::report;
use crate::team::resume;
use crate::team::shutdown::{self, LadderOptions};
use crate::team::status;
use crate::team::supervisor;
use crate::tmux::Tmux;
use crate::util::clock;
use crate::util::error::{Error, Result};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
pub struct LeadOptions {
    pub root: Root,
    pub team: TeamName,
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
}

/// Records this process as the team's lead (Claude Code's `leadProcess`, and the lead
/// member's pane).
pub fn register(root: &Root, team: &TeamName, pane: Option<&str>) -> Result<AgentState> {
    let pid = std::process::id() as i32;
    roster::update(root, team, |c| {
        c.extra.insert(
            "leadProcess".to_owned(),
            json!({
                "pid": pid,
                "pidSpace": "host",
                "claimedAt": clock::now_ms(),
                "procStart": crate::util::process::start_ticks(pid).map(|t| t.to_string()),
            }),
        );
        if let (Some(p), Some(lead)) = (pane, c.member_mut(LEAD)) {
            lead.tmux_pane_id = p.to_owned();
            lead.backend_type = Some("tmux".to_owned());
        }
        Ok(())
    })?;
    let state = AgentState::new(Activity::Idle);
    state::write(root, team, &AgentName::lead(), &state)?;
    Ok(state)
}

/// Runs the lead until a signal or, with an agent, until its goal is done; returns the
/// exit code.
pub async fn run(opts: LeadOptions, agent: Option<LeadAgentOptions>) -> Result<i32> {
    let _lock = LeadLock::acquire(&opts.root, &opts.team)?;
    let mut me = register(&opts.root, &opts.team, opts.pane.as_deref())?;
    let stop = CancellationToken::new();
    let listen = |kind| {
        signal(kind).map_err(|e| Error::Other(format!("failed to install a signal handler: {e}")))
    };
    let (mut int, mut term, mut hup) = (
        listen(SignalKind::interrupt())?,
        listen(SignalKind::terminate())?,
        listen(SignalKind::hangup())?,
    );
    let on_signal = stop.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
        on_signal.cancel();
    });
    // Before the supervisor's first look, which would report the stopped teammates dead.
    if let Some(launcher) = opts.resume.clone() {
        let respawned = tokio::task::spawn_blocking(move || resume::respawn_teammates(&launcher))
            .await
            .map_err(|e| Error::Other(format!("resuming the teammates panicked: {e}")))??;
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
            let code = match &outcome {
                lead_agent::Outcome::Done(_) => 0,
                lead_agent::Outcome::Stopped(_) => i32::from(crate::util::error::exit::INTERRUPTED),
                lead_agent::Outcome::Failed(_) => i32::from(crate::util::error::exit::MODEL),
                lead_agent::Outcome::Budget(_) => i32::from(crate::util::error::exit::BUDGET),
            };
            (code, Some(outcome))
        }
    };
    if !opts.keep_team {
        me.activity = Activity::ShuttingDown;
        let _ = state::write(&opts.root, &opts.team, &AgentName::lead(), &me);
        let opts2 = opts.clone();
        let _ = tokio::task::spawn_blocking(move || stop_team(&opts2)).await;
    }
    stop.cancel();
    let _ = supervisor.await;
    if matches!(outcome, Some(lead_agent::Outcome::Done(_))) {
        // The teammates are gone now: land what they committed last, and remove the
        // worktrees whose work is on the target, before the report lists the queue.
        let (root, team) = (opts.root.clone(), opts.team.clone());
        let last = tokio::task::spawn_blocking(move || {
            crate::team::merge::run(&root, &team, &Default::default(), &|e| {
                say(&crate::team::merge::describe(e))
            })
        })
        .await;
        match last {
            Ok(Ok(o)) => o.removed.iter().for_each(|line| say(line)),
            Ok(Err(e)) => say(&format!("the merge queue failed: {e}")),
            Err(e) => say(&format!("the merge queue's run panicked: {e}")),
        }
    }
    if let (Some(a), Some(outcome)) = (agent, outcome) {
        let result = match &outcome {
            lead_agent::Outcome::Done(result) => result.clone(),
            lead_agent::Outcome::Stopped(why) => format!("stopped: {why}"),
            lead_agent::Outcome::Failed(why) => format!("failed: {why}"),
            lead_agent::Outcome::Budget(why) => format!("the budget ended the run: {why}"),
        };
        // Stopped by a signal it handled is an orderly end too (`swarm status` shows it
        // exited, as a finished run); only a code of 0 counts as finished for resuming.
        let clean = code == 0
            || matches!(
                outcome,
                lead_agent::Outcome::Budget(_) | lead_agent::Outcome::Stopped(_)
            );
        // The lead's own figures, then the whole team's as it ends.
        // The report reads everyone's state file, the lead's figures included; `Exited`
        // comes last, since waiters take it to mean the report is there.
        me.exit = Some(ExitInfo {
            code,
            reason: result.clone(),
            released_tasks: Vec::new(),
            clean,
        });
        let _ = state::write(&opts.root, &opts.team, &AgentName::lead(), &me);
        let text = report::render(
            &opts.root,
            &opts.team,
            &a.goal,
            &result,
            &a.cwd,
            base.as_deref(),
        );
        match documents::write_report(&opts.root, &opts.team, &text) {
            Ok(path) => say(&format!("\n{text}\n(report written to {})", path.display())),
            Err(e) => say(&format!("\n{text}\n(failed to write the report: {e})")),
        }
    }
    me.activity = Activity::Exited;
    if me.exit.is_none() {
        me.exit = Some(ExitInfo {
            code,
            reason: "the lead stopped".to_owned(),
            released_tasks: Vec::new(),
            clean: true,
        });
    }
    let _ = state::write(&opts.root, &opts.team, &AgentName::lead(), &me);
    Ok(code)
}

/// The reconcile loop, until `stop`: report what ended, redraw the table when asked to.
async fn supervise(opts: LeadOptions, draw_table: bool, stop: CancellationToken) {
    let mut events: Vec<String> = Vec::new();
    let mut interval = tokio::time::interval(opts.reconcile_every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = stop.cancelled() => return,
        }
        let (root, team, tmux) = (opts.root.clone(), opts.team.clone(), opts.tmux.clone());
        let dirs = opts.ladder.dirs.clone();
        match tokio::task::spawn_blocking(move || {
            supervisor::reconcile(&root, &team, tmux.as_ref(), &dirs)
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
pub fn stop_team(opts: &LeadOptions) -> Vec<Result<shutdown::Report>> {
    shutdown::stop_team(
        &opts.root,
        &opts.team,
        opts.tmux.as_ref(),
        &opts.ladder,
        &|line| say(line),
    )
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
    let width = ratatui::crossterm::terminal::size()
        .map(|(w, _)| usize::from(w))
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
