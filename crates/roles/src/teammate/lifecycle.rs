//! `swarm teammate`: an agent that lives in a team, from start to exit.
//!
//! It registers its pid (and pane) in the roster, installs its signal handlers before
//! anything can block, runs the work loop (see `super::work`), and on exit (approved
//! shutdown, SIGTERM, SIGHUP, SIGINT) expires its pending requests, returns its open tasks
//! to pending, marks itself inactive and records why it stopped; only then does it send
//! its `shutdown_approved`, since the lead may close the pane the moment it arrives. A
//! teammate whose budget (its own or the team's) is spent stops the same way, with exit
//! code 9 (see [`swarm_llm::budget`]).
//!
//! Resumed (`--resume`, by a resumed lead), it restores its conversation from its
//! transcript first and continues the task it held (see `super::work`).
//!
//! Hooks (see [`swarm_config::hooks`]): `SubagentStart` once registered, `SubagentStop`
//! once it has recorded its exit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::builder::{Agent, AgentBuilder, InTeam, Membership};
use crate::error::ExitCode;
use crate::error::{Error, Result};
use crate::heartbeat::Beater;
use crate::lead_sig::LeadGuard;
use crate::teammate::active::ActiveFlag;
use crate::teammate::inbox::Inbox;
use crate::teammate::options::{TeammateFlags, TeammateOptions};
use crate::teammate::runtime::{Report, Runtime, Stop};
use swarm_agent::display::Display;
use swarm_agent::engine::Engine;
use swarm_agent::prompt::PromptInputs;
use swarm_config::hooks::Event as HookEvent;
use swarm_config::permissions::PermissionMode;
use swarm_config::profile::Profile;
use swarm_store::Store;
use swarm_store::Teams;
use swarm_store::liveness;
use swarm_store::protocol::{Protocol, ShutdownApproved, shutdown_target};
use swarm_store::state::{Activity, AgentState, ExitInfo};
use swarm_team::spawn::prompt::{self};
use swarm_team::toolset::tools::TeamTools;
use swarm_util::clock;
use swarm_util::error::Base as _;
use swarm_util::names::{AgentName, LEAD};

/// `swarm teammate`: who it is checked, its team opened (once: everything it does goes
/// through this handle), its options resolved, and its life run to its end. A start that
/// fails is recorded in its state (see [`record_start_failure`]). Returns the process's
/// exit code.
pub fn start(
    flags: TeammateFlags,
    teams: &Teams,
    profile: &Profile,
    pane: Option<String>,
    exit_code: ExitCode,
) -> Result<u8> {
    let (team, name) = flags.identity()?;
    let store = teams.open(&team)?;
    let options = TeammateOptions::resolve(flags, store.clone(), profile, pane, exit_code);
    let lived = options.and_then(|opts| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Runtime(format!("failed to start the async runtime: {e}")))?
            .block_on(run(opts))
    });
    let code = lived.inspect_err(|e| record_start_failure(&store, &name, exit_code(e), e))?;
    Ok(u8::try_from(code).unwrap_or(1))
}

/// Runs the teammate until it is told to stop; returns the process exit code.
pub async fn run(opts: TeammateOptions) -> Result<i32> {
    swarm_util::fault::point("teammate.start");
    let config = opts.store.roster().load()?;
    if config.member(opts.name.as_str()).is_none() {
        return Err(Error::not_found(format!(
            "teammate '{}' is not in team '{}'s roster; start teammates with `swarm spawn {}`",
            opts.name,
            opts.store.team(),
            opts.name
        )));
    }
    let (mode, Agent { mut engine, ctx }, InTeam { hooks, tools, .. }) = build(&opts)?;
    let mut state = AgentState::new(Activity::Starting);
    state.model = Some(opts.llm.model.clone());
    state.provider = Some(opts.llm.provider.to_string());
    state.mode = Some(mode.to_string());
    let guard = opts.lead_key.clone().map(|key| {
        // The lead's name in the roster, if not the usual one, speaks for it too.
        let mut names = vec![LEAD.to_owned()];
        let roster_lead = config.lead_agent_id.split('@').next().unwrap_or(LEAD);
        if roster_lead != LEAD && !roster_lead.is_empty() {
            names.push(roster_lead.to_owned());
        }
        let team = opts.store.team();
        let guard = LeadGuard::new(key, names).kept_in(opts.store.root(), team, &opts.name);
        if opts.bound_lead_sig {
            guard.bound_to(team, &opts.name)
        } else {
            guard
        }
    });
    let inbox = Inbox::open(&opts.store, &opts.name).guarded_by(guard.clone());
    let mut rt = Runtime {
        hooks,
        tools,
        display: Display::new(opts.color.as_deref()),
        store: opts.store.clone(),
        opts,
        ctx,
        inbox,
        state,
        model_cancel: Arc::new(Mutex::new(CancellationToken::new())),
        in_turn: Arc::new(AtomicBool::new(false)),
        written: None,
        active: None,
        active_flag: None,
        report: Report::default(),
        idle_sent: false,
        backoff_until: None,
        board: swarm_store::board::Board::new(),
        pending_approval: None,
        caught: Arc::new(Mutex::new(None)),
        done_tasks: Vec::new(),
        first_instructions: None,
        beater: None,
        fenced: Arc::new(AtomicBool::new(false)),
    };
    rt.watch_signals();
    rt.register()?;
    rt.display.status(&format!(
        "{}@{} · {} · mode {} · {}",
        rt.opts.name,
        rt.store.team(),
        engine.client.describe(),
        mode,
        rt.opts.cwd.display()
    ));
    rt.watch_for_shutdown(guard);
    rt.fire(HookEvent::SubagentStart, Map::new()).await;
    let stopped = rt.main_loop(&mut engine).await;
    let (code, reason, clean) = rt.exit(stopped);
    rt.finish(code, &reason, clean, &engine);
    // After the bookkeeping, so a slow hook cut short by the ladder loses nothing.
    let mut stop = Map::new();
    stop.insert("stop_hook_active".into(), Value::Bool(false));
    stop.insert("reason".into(), Value::String(reason.clone()));
    rt.fire(HookEvent::SubagentStop, stop).await;
    Ok(code)
}

/// Puts the teammate's agent together, in its permission mode.
fn build(opts: &TeammateOptions) -> Result<(PermissionMode, Agent, InTeam)> {
    // Plan mode beats everything else when a plan is required, unless resumed: then the
    // mode is the one it had, which an approved plan may have changed.
    let mode = if opts.plan_mode_required && !opts.resumed {
        PermissionMode::Plan
    } else {
        opts.mode
    };
    let system = prompt::teammate(
        &PromptInputs {
            agent: &opts.name,
            cwd: &opts.cwd,
            mode,
            plan_mode_required: opts.plan_mode_required,
            custom: opts.custom_instructions.as_deref(),
        },
        &opts.store,
    );
    let mut tools = TeamTools::new(opts.store.clone());
    tools.pane = opts.pane.clone();
    let team = Membership {
        store: opts.store.clone(),
        budget: opts.budget,
        hooks: opts.hooks.clone(),
        // As the roster has it: a teammate started without a type is general-purpose.
        agent_type: opts
            .agent_type
            .clone()
            .unwrap_or_else(|| "general-purpose".to_owned()),
        tools,
        resumed: opts.resumed,
    };
    let (agent, parts) = AgentBuilder {
        name: opts.name.clone(),
        llm: opts.llm.clone(),
        cwd: opts.cwd.clone(),
        mode,
        allow: opts.allow.clone(),
        env: opts.env.clone(),
        system,
        tools: opts.tools.clone(),
        max_turns: opts.max_turns,
        timings: opts.timings.clone(),
        context_window: opts.context_window,
    }
    .in_team(team)?;
    Ok((mode, agent, parts))
}

/// Records why a teammate stopped before its work began (no key for its model, a project
/// it cannot read) in its state file, where `swarm status` and the lead's report of its
/// death find it; its log has the error too, as every pane process's fatal error. Nothing
/// is written for a name the roster lacks, nor over the state of a live namesake.
pub fn record_start_failure(store: &Store, name: &AgentName, code: u8, error: &Error) {
    let member = store
        .roster()
        .load()
        .is_ok_and(|c| c.member(name.as_str()).is_some());
    let previous = store.agents().read_state(name);
    let me = std::process::id() as i32;
    let namesake = previous
        .as_ref()
        .is_some_and(|s| s.pid != me && s.activity != Activity::Exited && s.process_alive());
    if !member || namesake {
        return;
    }
    let mut s = AgentState::new(Activity::Exited);
    if let Some(p) = previous {
        // A resumed teammate keeps what it had spent.
        (s.usage, s.cost_usd, s.model_calls, s.model, s.provider) =
            (p.usage, p.cost_usd, p.model_calls, p.model, p.provider);
    }
    let reason = error.to_string();
    s.detail = Some(reason.clone());
    s.exit = Some(ExitInfo {
        code: i32::from(code),
        reason,
        released_tasks: Vec::new(),
        clean: false,
    });
    if let Err(e) = store.agents().write_state(name, &s) {
        tracing::warn!("failed to record why {name} could not start: {e}");
    }
}

/// Its life's own steps: registering, watching for signals and for the lead's shutdown
/// request, how the work loop ended, and what it records as it goes.
impl Runtime {
    /// The exit code, the reason and whether it stopped cleanly, for how the work loop
    /// ended.
    fn exit(&self, stopped: Result<Stop>) -> (i32, String, bool) {
        if self.fenced.load(Ordering::Relaxed) {
            return (
                i32::from(swarm_util::error::exit::CONFLICT),
                "declared dead by its team (its heartbeat stopped): its tasks are someone else's now".to_owned(),
                false,
            );
        }
        match stopped {
            Ok(Stop::Approved) => (0, "shutdown approved".to_owned(), true),
            Ok(Stop::Budget(why)) => (
                i32::from(swarm_util::error::exit::BUDGET),
                format!("budget exhausted: {why}"),
                true,
            ),
            Ok(Stop::Signalled) => {
                let signal = self.caught.lock().unwrap().unwrap_or("a signal");
                (
                    swarm_util::error::exit::INTERRUPTED as i32,
                    format!("stopped by {signal}"),
                    false,
                )
            }
            Err(e) => (i32::from((self.opts.exit_code)(&e)), e.to_string(), false),
        }
    }

    pub(super) fn register(&mut self) -> Result<()> {
        let pid = std::process::id() as i32;
        let pane = self.opts.pane.clone();
        let mode = self.ctx.mode().to_string();
        let cwd = self.opts.cwd.display().to_string();
        self.store
            .roster()
            .update_member(self.opts.name.as_str(), |m| {
                m.pid = Some(pid);
                m.is_active = Some(false);
                m.mode = Some(mode);
                // Where it really works (the supervisor runs its SubagentStop hook there
                // if it dies).
                m.cwd = cwd;
                if let Some(p) = pane {
                    m.tmux_pane_id = p;
                    m.backend_type = Some("tmux".to_owned());
                }
            })?;
        self.active = Some(false);
        self.active_flag = Some(ActiveFlag::new(&self.store, &self.opts.name, false));
        self.start_beating()?;
        self.set_activity(Activity::Idle, None);
        Ok(())
    }

    /// Registers this process and beats, where the team's processes do; once the team
    /// declares it dead, everything it does is cancelled and it stops.
    fn start_beating(&mut self) -> Result<()> {
        let (fenced, cancel) = (self.fenced.clone(), self.ctx.cancel.clone());
        let model = self.model_cancel.clone();
        let on_fenced = move || {
            fenced.store(true, Ordering::Relaxed);
            cancel.cancel();
            model.lock().unwrap().cancel();
        };
        if let Some((token, beater)) = Beater::start(&self.store, &self.opts.name, on_fenced)? {
            self.state.token = Some(token);
            self.state.host = Some(liveness::this_host().to_owned());
            self.beater = Some(beater);
        }
        Ok(())
    }

    /// Installs the handlers now (a signal before the first await must not kill the
    /// process outright), and cancels everything when one arrives.
    pub(super) fn watch_signals(&self) {
        let cancel = self.ctx.cancel.clone();
        let model = self.model_cancel.clone();
        let caught = self.caught.clone();
        let (Ok(mut term), Ok(mut hup), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::warn!("failed to install signal handlers");
            return;
        };
        tokio::spawn(async move {
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = hup.recv() => "SIGHUP (its pane or tmux server went away)",
                _ = int.recv() => "SIGINT",
            };
            swarm_util::fault::point("teammate.signalled");
            *caught.lock().unwrap() = Some(name);
            cancel.cancel();
            model.lock().unwrap().cancel();
        });
    }

    /// Cancels a model request in flight when the lead asks this teammate to shut down, so
    /// the answer does not wait for a long generation. (The request itself is handled by
    /// the main loop, which also acknowledges it.) Between turns it neither reads nor
    /// wakes on a timer: the main loop is looking at the inbox then. With the lead's key
    /// (`guard`), only a signed request counts.
    pub(super) fn watch_for_shutdown(&self, guard: Option<LeadGuard>) {
        let (store, me) = (self.store.clone(), self.opts.name.clone());
        let model = self.model_cancel.clone();
        let wake = self.inbox.side.clone();
        let in_turn = self.in_turn.clone();
        tokio::spawn(async move {
            loop {
                if in_turn.load(Ordering::Relaxed) {
                    let every = swarm_util::watcher::RESCAN_EVERY;
                    let _ = tokio::time::timeout(every, wake.notified()).await;
                } else {
                    // A turn's start wakes it too.
                    wake.notified().await;
                }
                if !in_turn.load(Ordering::Relaxed) {
                    continue;
                }
                let asked = store.mail().read_unread(&me).is_ok_and(|mail| {
                    mail.iter().any(|d| {
                        d.envelope.from == LEAD
                            && d.envelope.protocol().is_some_and(|p| {
                                matches!(&p, Protocol::ShutdownRequest(r)
                                    if shutdown_target(&r.request_id) == Some(me.as_str()))
                                    && p.signed_by(LEAD)
                            })
                            && guard.as_ref().is_none_or(|g| g.believes(&d.envelope))
                    })
                });
                if asked {
                    model.lock().unwrap().cancel();
                }
            }
        });
    }

    pub(super) fn finish(&mut self, code: i32, reason: &str, clean: bool, engine: &Engine) {
        let me = self.opts.name.to_string();
        if let Err(e) = self
            .store
            .approvals()
            .expire_all(&me, &format!("{me} stopped: {reason}"))
        {
            tracing::warn!("failed to expire this agent's pending requests: {e}");
        }
        let released: Vec<String> = self
            .store
            .tasks()
            .release(&me)
            .map(|tasks| tasks.into_iter().map(|t| t.id).collect())
            .unwrap_or_default();
        self.active = None;
        if let Some(mut flag) = self.active_flag.take() {
            flag.finish();
        }
        let _ = self
            .store
            .roster()
            .update_member(&me, |m| m.is_active = Some(false));
        self.state.usage = engine.usage;
        self.state.cost_usd = engine.cost_usd;
        self.state.model_calls = engine.model_calls;
        self.state.current_task = None;
        self.state.exit = Some(ExitInfo {
            code,
            reason: reason.to_owned(),
            released_tasks: released.clone(),
            clean,
        });
        self.set_activity(Activity::Exited, Some(reason.to_owned()));
        if let Some(request_id) = self.pending_approval.take() {
            let pane = self.opts.pane.clone();
            let approved = Protocol::ShutdownApproved(ShutdownApproved {
                request_id,
                from: me,
                timestamp: clock::now_iso(),
                backend_type: pane.as_ref().map(|_| "tmux".to_owned()),
                pane_id: pane,
            });
            if let Err(e) = self.send_to_lead(&approved) {
                tracing::warn!("failed to send shutdown_approved: {e}");
            }
        }
        self.display.status(&format!("exiting ({reason})"));
        // Its end is written: from here its state says it, not its beat.
        self.beater = None;
    }
}
