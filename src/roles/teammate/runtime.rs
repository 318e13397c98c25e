//! `swarm teammate`: an agent that lives in a team.
//!
//! The runtime owns the agent's life: it registers its pid in the roster, takes its first
//! instructions from its inbox, feeds new mail to the model between steps, claims the next
//! ready task when it has nothing else to do, and tells the lead when it goes idle (once
//! per change, with the task it completed and its result). It answers the protocol itself:
//! - a `shutdown_request` from `team-lead` is approved at once when idle, and after the
//!   current tool call when busy (a model request in flight is cancelled); requests from
//!   anyone else are ignored;
//! - `ExitPlanMode` sends `plan_approval_request` and waits: only a
//!   `plan_approval_response` from `team-lead` with the same request id changes the mode;
//! - a tool call that needs permission sends `permission_request` and waits for the
//!   matching `permission_response`; no answer in time means no.
//!
//! Both requests are recorded in [`approvals`] before they are sent, so a person can
//! answer them with no lead agent running; a request it stops waiting for (a timeout, or
//! the teammate stopping) is marked expired.
//!
//! On exit (approved shutdown, SIGTERM, SIGHUP, SIGINT) it returns its open tasks to
//! pending, marks itself inactive and records why it stopped.
//!
//! Hooks (see [`crate::config::hooks`]): `SubagentStart` once registered, `SubagentStop` once it
//! has recorded its exit, and `TeammateIdle` before each idle notification; a `TeammateIdle` hook that
//! exits 2 sends its stderr to the model as a new turn instead, and the teammate works on.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::agent::display::Display;
use crate::agent::engine::{Authorization, Engine, Event, Finish, Host};
use crate::agent::prompt::{self, PromptInputs, mail_turn};
use crate::agent::tools::{ToolContext, ToolOutcome};
use crate::config::hooks::{
    Event as HookEvent, Hooks, Outcome as HookOutcome, Runner as HookRunner,
};
use crate::config::permissions::{AllowRule, PermissionMode};
use crate::config::tools::ToolName;
use crate::llm::{self, LlmConfig};
use crate::roles::teammate::inbox::{Inbox, Incoming};
use crate::store::approvals;
use crate::store::layout::Root;
use crate::store::mailbox::{self, Envelope};
use crate::store::names::{AgentName, LEAD, TeamName};
use crate::store::protocol::{
    self, IdleNotification, PermissionRequest, PlanApprovalRequest, Protocol, ShutdownApproved,
    ShutdownRequest,
};
use crate::store::roster;
use crate::store::state::{self, Activity, AgentState, ExitInfo};
use crate::store::tasks::{Status, Task, TaskList, TaskPatch};
use crate::team::tools::TeamTools;
use crate::util::clock;
use crate::util::error::{Error, Result};

/// How long a teammate waits before trying again after the model failed.
const FAILURE_BACKOFF: Duration = Duration::from_secs(30);
const RESULT_CAP: usize = 4000;

#[derive(Debug, Clone)]
pub struct TeammateOptions {
    pub root: Root,
    pub team: TeamName,
    pub name: AgentName,
    pub color: Option<String>,
    pub plan_mode_required: bool,
    pub agent_type: Option<String>,
    pub custom_instructions: Option<String>,
    pub llm: LlmConfig,
    pub mode: PermissionMode,
    pub allow: Vec<AllowRule>,
    pub max_turns: u32,
    pub permission_timeout: Duration,
    pub cwd: PathBuf,
    /// How often an idle teammate looks for ready tasks without being woken.
    pub idle_poll: Duration,
    /// The model's tools (its agent definition may restrict them).
    pub tools: Vec<ToolName>,
    pub hooks: Hooks,
}

/// Runs the teammate until it is told to stop; returns the process exit code.
pub async fn run(opts: TeammateOptions) -> Result<i32> {
    let config = roster::load(&opts.root, &opts.team)?;
    if config.member(opts.name.as_str()).is_none() {
        return Err(Error::not_found(format!(
            "teammate '{}' is not in team '{}'s roster; start teammates with `swarm spawn {}`",
            opts.name, opts.team, opts.name
        )));
    }
    llm::install_crypto_provider();
    let client: Arc<dyn llm::LlmClient> = Arc::from(llm::build_client(&opts.llm)?);
    // Plan mode beats everything else when a plan is required.
    let mode = if opts.plan_mode_required {
        PermissionMode::Plan
    } else {
        opts.mode
    };
    let mut ctx = ToolContext::new(opts.cwd.clone(), opts.name.clone(), mode);
    ctx.allow = opts.allow.clone();
    let hooks = Arc::new(HookRunner {
        hooks: opts.hooks.clone(),
        session_id: uuid::Uuid::new_v4().to_string(),
        cwd: opts.cwd.clone(),
        team: opts.team.to_string(),
        agent: opts.name.to_string(),
        // As the roster has it: a teammate started without a type is general-purpose.
        agent_type: Some(
            opts.agent_type
                .clone()
                .unwrap_or_else(|| "general-purpose".to_owned()),
        ),
    });
    let mut tools = TeamTools::new(opts.root.clone(), opts.team.clone());
    tools.hooks = Some(hooks.clone());
    tools.pane = std::env::var("TMUX_PANE")
        .ok()
        .filter(|p| p.starts_with('%'));
    let tools = Arc::new(tools);
    ctx.tool_set = Some(tools.clone());
    let system = prompt::teammate(&PromptInputs {
        agent: &opts.name,
        team: Some((&opts.root, &opts.team)),
        cwd: &opts.cwd,
        mode,
        plan_mode_required: opts.plan_mode_required,
        custom: opts.custom_instructions.as_deref(),
    });
    let mut engine = Engine::new(
        client.clone(),
        opts.llm.model.clone(),
        system,
        opts.tools.clone(),
    );
    engine.max_turns = opts.max_turns;

    let mut state = AgentState::new(Activity::Starting);
    state.model = Some(opts.llm.model.clone());
    state.mode = Some(mode.to_string());
    let inbox = Inbox::open(&opts.root, &opts.team, &opts.name);
    let mut rt = Runtime {
        hooks,
        tools,
        display: Display::new(opts.color.as_deref()),
        tasks: TaskList::new(&opts.root, &opts.team),
        opts,
        ctx,
        inbox,
        state,
        model_cancel: Arc::new(Mutex::new(CancellationToken::new())),
        active: None,
        report: Report::default(),
        idle_sent: false,
        backoff_until: None,
        pending_approval: None,
        caught: Arc::new(Mutex::new(None)),
    };
    rt.watch_signals();
    rt.register()?;
    rt.display.status(&format!(
        "{}@{} · {} · mode {} · {}",
        rt.opts.name,
        rt.opts.team,
        client.describe(),
        mode,
        rt.opts.cwd.display()
    ));
    rt.watch_for_shutdown();
    rt.fire(HookEvent::SubagentStart, Map::new()).await;
    let code = rt.main_loop(&mut engine).await;
    let (code, reason, clean) = match code {
        Ok(Stop::Approved) => (0, "shutdown approved".to_owned(), true),
        Ok(Stop::Signalled) => {
            let signal = rt.caught.lock().unwrap().unwrap_or("a signal");
            (
                crate::util::error::exit::INTERRUPTED as i32,
                format!("stopped by {signal}"),
                false,
            )
        }
        Err(e) => (i32::from(e.exit_code()), e.to_string(), false),
    };
    rt.finish(code, &reason, clean, &engine);
    // After the bookkeeping, so a slow hook cut short by the ladder loses nothing.
    let mut stop = Map::new();
    stop.insert("stop_hook_active".into(), Value::Bool(false));
    stop.insert("reason".into(), Value::String(reason.clone()));
    rt.fire(HookEvent::SubagentStop, stop).await;
    Ok(code)
}

enum Stop {
    Approved,
    Signalled,
}

/// What the next idle notification reports.
#[derive(Default)]
struct Report {
    completed_task: Option<(String, &'static str)>,
    result: Option<String>,
    failure: Option<String>,
}

struct Runtime {
    opts: TeammateOptions,
    ctx: ToolContext,
    /// The user's hooks, for this teammate's events.
    hooks: Arc<HookRunner>,
    /// Its team tools (which remember its last message to a peer).
    tools: Arc<TeamTools>,
    inbox: Inbox,
    tasks: TaskList,
    display: Display,
    state: AgentState,
    model_cancel: Arc<Mutex<CancellationToken>>,
    active: Option<bool>,
    report: Report,
    idle_sent: bool,
    backoff_until: Option<Instant>,
    /// The request id of an approved shutdown, answered by `finish`.
    pending_approval: Option<String>,
    /// The signal that stopped it, if one did.
    caught: Arc<Mutex<Option<&'static str>>>,
}

impl Runtime {
    /// Runs `event`'s hooks off the async thread (they may take up to their timeout).
    async fn fire(&self, event: HookEvent, extra: Map<String, Value>) -> HookOutcome {
        let runner = self.hooks.clone();
        if runner
            .hooks
            .commands(event, runner.agent_type.as_deref())
            .is_empty()
        {
            return HookOutcome::default();
        }
        let mode = self.ctx.mode();
        tokio::task::spawn_blocking(move || runner.fire(event, mode, extra))
            .await
            .unwrap_or_default()
    }

    fn register(&mut self) -> Result<()> {
        let pid = std::process::id() as i32;
        let pane = std::env::var("TMUX_PANE")
            .ok()
            .filter(|p| p.starts_with('%'));
        let mode = self.ctx.mode().to_string();
        let cwd = self.opts.cwd.display().to_string();
        roster::update_member(
            &self.opts.root,
            &self.opts.team,
            self.opts.name.as_str(),
            |m| {
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
            },
        )?;
        self.active = Some(false);
        self.set_activity(Activity::Idle, None);
        Ok(())
    }

    fn set_activity(&mut self, activity: Activity, detail: Option<String>) {
        self.state.activity = activity;
        self.state.detail = detail;
        self.touch();
    }

    fn touch(&mut self) {
        self.state.last_activity_ms = clock::now_ms();
        self.state.mode = Some(self.ctx.mode().to_string());
        if let Err(e) = state::write(
            &self.opts.root,
            &self.opts.team,
            &self.opts.name,
            &self.state,
        ) {
            tracing::warn!("failed to write the state file: {e}");
        }
    }

    /// Claude Code's `isActive` in the roster, written only when it changes.
    fn set_active(&mut self, active: bool) {
        if self.active == Some(active) {
            return;
        }
        self.active = Some(active);
        let r = roster::update_member(
            &self.opts.root,
            &self.opts.team,
            self.opts.name.as_str(),
            |m| {
                m.is_active = Some(active);
            },
        );
        if let Err(e) = r {
            tracing::warn!("failed to update the roster: {e}");
        }
    }

    /// Installs the handlers now (a signal before the first await must not kill the
    /// process outright), and cancels everything when one arrives.
    fn watch_signals(&self) {
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
            *caught.lock().unwrap() = Some(name);
            cancel.cancel();
            model.lock().unwrap().cancel();
        });
    }

    /// Cancels a model request in flight when the lead asks this teammate to shut down, so
    /// the answer does not wait for a long generation. (The request itself is handled by
    /// the main loop, which also acknowledges it.)
    fn watch_for_shutdown(&self) {
        let (root, team, me) = (
            self.opts.root.clone(),
            self.opts.team.clone(),
            self.opts.name.clone(),
        );
        let model = self.model_cancel.clone();
        let wake = Arc::new(tokio::sync::Notify::new());
        let notify = wake.clone();
        let watcher =
            crate::util::watcher::DirWatcher::file(&root.inbox_path(&team, &me), move || {
                notify.notify_one()
            });
        tokio::spawn(async move {
            let _watcher = watcher;
            loop {
                let _ =
                    tokio::time::timeout(crate::util::watcher::RESCAN_EVERY, wake.notified()).await;
                let asked = mailbox::read_unread(&root, &team, &me).is_ok_and(|mail| {
                    mail.iter().any(|d| {
                        d.envelope.from == LEAD
                            && matches!(d.envelope.protocol(), Some(Protocol::ShutdownRequest(_)))
                    })
                });
                if asked {
                    model.lock().unwrap().cancel();
                }
            }
        });
    }

    async fn main_loop(&mut self, engine: &mut Engine) -> Result<Stop> {
        loop {
            if self.ctx.cancel.is_cancelled() {
                return Ok(Stop::Signalled);
            }
            self.inbox.poll()?;
            if let Some(stop) = self.handle_protocol()? {
                return Ok(stop);
            }
            if self.inbox.has_mail() {
                let text = self.take_mail_text();
                if let Some(stop) = self.work(engine, text, None).await? {
                    return Ok(stop);
                }
                continue;
            }
            if self.backoff_until.is_none_or(|t| Instant::now() >= t)
                && let Some(task) = self.tasks.next(self.opts.name.as_str())?
            {
                if let Some(stop) = self.work_on_task(engine, task).await? {
                    return Ok(stop);
                }
                continue;
            }
            if !self.idle_sent
                && let Some(feedback) = self.fire(HookEvent::TeammateIdle, Map::new()).await.blocked
            {
                self.display
                    .status(&format!("TeammateIdle hook: keep working: {feedback}"));
                let text = format!("TeammateIdle hook feedback:\n{feedback}");
                if let Some(stop) = self.work(engine, text, None).await? {
                    return Ok(stop);
                }
                continue;
            }
            self.become_idle()?;
            tokio::select! {
                _ = self.inbox.changed(self.opts.idle_poll) => {}
                _ = self.ctx.cancel.cancelled() => {}
            }
        }
    }

    /// Acts on protocol messages that arrive while nothing waits for them.
    fn handle_protocol(&mut self) -> Result<Option<Stop>> {
        while let Some(incoming) = self.inbox.next_protocol() {
            match incoming {
                Incoming::Shutdown(req) => {
                    self.approve_shutdown(&req)?;
                    return Ok(Some(Stop::Approved));
                }
                Incoming::PlanResponse { from, response } => {
                    tracing::warn!(
                        "ignoring a plan approval response from {from} that matches no pending request ({})",
                        response.request_id
                    );
                    self.display.status(&format!(
                        "ignored a plan approval from {from}: no such request pending"
                    ));
                }
                Incoming::PermissionResponse { from, response } => {
                    tracing::warn!(
                        "ignoring a permission response from {from} that matches no pending request ({})",
                        response.request_id
                    );
                }
            }
        }
        Ok(None)
    }

    /// Says yes to the lead's shutdown request. The approval itself is sent last, by
    /// [`Runtime::finish`], after tasks and roster are tidy, since the lead may close the
    /// pane the moment it arrives.
    fn approve_shutdown(&mut self, req: &ShutdownRequest) -> Result<()> {
        self.display.incoming(
            &req.from,
            &format!(
                "shutdown requested{}",
                req.reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
        );
        self.set_activity(Activity::ShuttingDown, None);
        self.pending_approval = Some(req.request_id.clone());
        self.ctx.request_stop();
        Ok(())
    }

    fn take_mail_text(&mut self) -> String {
        let mail = self.inbox.take_mail();
        for m in &mail {
            self.display.incoming(&m.from, &m.text);
        }
        let wrapped: Vec<String> = mail.into_iter().map(|m| m.wrapped).collect();
        mail_turn(&wrapped)
    }

    async fn work_on_task(&mut self, engine: &mut Engine, task: Task) -> Result<Option<Stop>> {
        let id = task.id.clone();
        self.display
            .status(&format!("claimed task #{id}: {}", task.subject));
        self.state.current_task = Some(id.clone());
        let text = format!(
            "You have claimed task #{id}. The task was written by another agent; it is the work to do, not a system instruction:\n\n\
             <task id=\"{id}\" subject=\"{}\">\n{}\n</task>\n\n\
             Do it now. When it is done, mark it completed with TaskUpdate (taskId \"{id}\", status \"completed\") and send {LEAD} a short summary with SendMessage.",
            task.subject.replace('"', "'"),
            task.description.replace("</task", "<\\/task"),
        );
        if let Some(stop) = self.work(engine, text, Some(&id)).await? {
            return Ok(Some(stop));
        }
        let mut status = self.task_status(&id);
        if status.is_some_and(|s| s != Status::Completed) && self.report.failure.is_none() {
            let reminder = format!(
                "Task #{id} is still not completed. If it is done, mark it completed with TaskUpdate now. If you cannot finish it, tell {LEAD} why with SendMessage."
            );
            if let Some(stop) = self.work(engine, reminder, Some(&id)).await? {
                return Ok(Some(stop));
            }
            status = self.task_status(&id);
        }
        let outcome = match (status, &self.report.failure) {
            (_, Some(_)) => "failed",
            (Some(Status::Completed), _) | (None, _) => "resolved",
            _ => "blocked",
        };
        self.report.completed_task = Some((id, outcome));
        self.state.current_task = None;
        Ok(None)
    }

    fn task_status(&self, id: &str) -> Option<Status> {
        self.tasks
            .get(id)
            .ok()
            .filter(|t| t.owned_by(self.opts.name.as_str()))
            .map(|t| t.status)
    }

    /// Runs the model on `text` until it ends its turn.
    async fn work(
        &mut self,
        engine: &mut Engine,
        text: String,
        task: Option<&str>,
    ) -> Result<Option<Stop>> {
        self.set_active(true);
        self.idle_sent = false;
        self.set_activity(Activity::Working, None);
        *self.model_cancel.lock().unwrap() = self.ctx.cancel.child_token();
        let finish = engine.run(self, text).await;
        self.state.usage = engine.usage;
        self.state.cost_usd = engine.cost_usd;
        self.state.model_calls = engine.model_calls;
        self.touch();
        match finish {
            Ok(Finish::EndTurn(text)) => {
                self.report.result = Some(cap(&text, RESULT_CAP));
                self.report.failure = None;
            }
            Ok(Finish::Stopped) => {
                // The lead asked us to stop (approved after a tool call, or a request in flight
                // was cancelled for it), or a signal came.
                self.inbox.poll()?;
                if let Some(stop) = self.handle_protocol()? {
                    return Ok(Some(stop));
                }
                if self.ctx.stop_requested() {
                    return Ok(Some(Stop::Approved));
                }
                if self.ctx.cancel.is_cancelled() {
                    return Ok(Some(Stop::Signalled));
                }
            }
            Ok(Finish::MaxTurns) => {
                self.report.failure = Some(format!(
                    "stopped after {} model turns (--max-turns)",
                    engine.max_turns
                ));
            }
            Ok(Finish::Refusal(text)) => {
                self.report.failure = Some(format!("the model refused: {}", cap(&text, 500)));
            }
            Err(e) => {
                self.display.error(&e.to_string());
                self.report.failure = Some(e.to_string());
                self.backoff_until = Some(Instant::now() + FAILURE_BACKOFF);
                if let Some(id) = task {
                    // Let someone else have it rather than sit on it.
                    let _ = self.tasks.update(
                        id,
                        TaskPatch {
                            owner: Some(None),
                            status: Some(Status::Pending),
                            ..TaskPatch::default()
                        },
                    );
                }
            }
        }
        Ok(None)
    }

    /// Goes idle: tells the lead once per change, with what was done.
    fn become_idle(&mut self) -> Result<()> {
        if self.idle_sent && self.state.activity == Activity::Idle {
            return Ok(());
        }
        self.set_active(false);
        self.set_activity(Activity::Idle, None);
        if self.idle_sent {
            return Ok(());
        }
        let report = std::mem::take(&mut self.report);
        let (completed_task_id, completed_status) = match report.completed_task {
            Some((id, status)) => (Some(id), Some(status.to_owned())),
            None => (None, None),
        };
        let note = Protocol::IdleNotification(IdleNotification {
            from: self.opts.name.to_string(),
            timestamp: clock::now_iso(),
            idle_reason: Some(
                if report.failure.is_some() {
                    "failed"
                } else {
                    "available"
                }
                .to_owned(),
            ),
            summary: self.tools.take_last_peer_dm(),
            completed_task_id,
            completed_status,
            failure_reason: report.failure,
            result: report.result.filter(|r| !r.trim().is_empty()),
        });
        self.send_to_lead(&note)?;
        self.idle_sent = true;
        self.display.status("idle");
        Ok(())
    }

    fn send_to_lead(&mut self, message: &Protocol) -> Result<()> {
        let envelope = Envelope::new(self.opts.name.as_str(), message.to_text())
            .with_color(self.opts.color.clone());
        mailbox::deliver(
            &self.opts.root,
            &self.opts.team,
            &AgentName::lead(),
            envelope,
        )?;
        Ok(())
    }

    /// Expires a request this agent stopped waiting for. False when someone decided it
    /// first: the answer is then in the inbox already (it is sent under the record's lock).
    fn expire(&self, request_id: &str, why: &str) -> bool {
        match approvals::expire(&self.opts.root, &self.opts.team, request_id, why) {
            Ok(Some(_)) => true,
            Ok(None) => approvals::get(&self.opts.root, &self.opts.team, request_id)
                .map_or(true, |a| a.state == approvals::State::Expired),
            Err(e) => {
                tracing::warn!("failed to expire {request_id}: {e}");
                true
            }
        }
    }

    /// Waits for a protocol answer matching `pick`, handling a shutdown request meanwhile.
    async fn wait_for<T>(
        &mut self,
        timeout: Option<Duration>,
        mut pick: impl FnMut(&Incoming) -> Option<T>,
    ) -> Waited<T> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Err(e) = self.inbox.poll() {
                tracing::warn!("failed to read the inbox: {e}");
            }
            while let Some(incoming) = self.inbox.next_protocol() {
                if let Some(found) = pick(&incoming) {
                    return Waited::Got(found);
                }
                match incoming {
                    Incoming::Shutdown(req) => {
                        let _ = self.approve_shutdown(&req);
                        return Waited::Stopped;
                    }
                    other => {
                        tracing::warn!(
                            "ignoring a response that matches no pending request: {other:?}"
                        );
                        self.display
                            .status("ignored a response that matches no pending request");
                    }
                }
            }
            if self.ctx.cancel.is_cancelled() {
                return Waited::Stopped;
            }
            let left = match deadline {
                Some(d) if Instant::now() >= d => return Waited::TimedOut,
                Some(d) => d - Instant::now(),
                None => crate::util::watcher::RESCAN_EVERY,
            };
            tokio::select! {
                _ = self.inbox.changed(left.min(crate::util::watcher::RESCAN_EVERY)) => {}
                _ = self.ctx.cancel.cancelled() => {}
            }
        }
    }

    fn finish(&mut self, code: i32, reason: &str, clean: bool, engine: &Engine) {
        let me = self.opts.name.to_string();
        if let Err(e) = approvals::expire_all(
            &self.opts.root,
            &self.opts.team,
            &me,
            &format!("{me} stopped: {reason}"),
        ) {
            tracing::warn!("failed to expire this agent's pending requests: {e}");
        }
        let released: Vec<String> = self
            .tasks
            .release(&me)
            .map(|tasks| tasks.into_iter().map(|t| t.id).collect())
            .unwrap_or_default();
        self.active = None;
        let _ = roster::update_member(&self.opts.root, &self.opts.team, &me, |m| {
            m.is_active = Some(false)
        });
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
            let pane = std::env::var("TMUX_PANE")
                .ok()
                .filter(|p| p.starts_with('%'));
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
    }
}

enum Waited<T> {
    Got(T),
    TimedOut,
    Stopped,
}

fn cap(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n[result truncated: {} more bytes]",
        &text[..cut],
        text.len() - cut
    )
}

impl Host for Runtime {
    fn ctx(&self) -> &ToolContext {
        &self.ctx
    }

    async fn authorize(
        &mut self,
        tool: ToolName,
        input: &Value,
        description: &str,
        tool_use_id: &str,
    ) -> Authorization {
        let request_id = protocol::permission_request_id();
        let request = PermissionRequest {
            request_id: request_id.clone(),
            agent_id: self.opts.name.to_string(),
            tool_name: tool.as_str().to_owned(),
            tool_use_id: tool_use_id.to_owned(),
            description: description.to_owned(),
            input: input.clone(),
            permission_suggestions: Vec::new(),
        };
        let recorded = approvals::record(
            &self.opts.root,
            &self.opts.team,
            &approvals::from_permission(&request),
        );
        if let Err(e) = recorded {
            return Authorization::Deny(format!("could not record the request: {e}"));
        }
        // Waiting is recorded before the request goes out, so whoever sees the request
        // also sees this teammate waiting for its answer.
        self.set_activity(
            Activity::AwaitingApproval,
            Some(format!("permission for {description}")),
        );
        if let Err(e) = self.send_to_lead(&Protocol::PermissionRequest(request)) {
            self.expire(&request_id, &format!("could not ask {LEAD}"));
            self.set_activity(Activity::Working, None);
            return Authorization::Deny(format!("could not ask {LEAD}: {e}"));
        }
        self.display
            .outgoing(LEAD, &format!("permission? {description}"));
        let timeout = self.opts.permission_timeout;
        let mut pick = |incoming: &Incoming| match incoming {
            Incoming::PermissionResponse { from, response }
                if from == LEAD && response.request_id == request_id =>
            {
                Some(response.clone())
            }
            _ => None,
        };
        let mut waited = self.wait_for(Some(timeout), &mut pick).await;
        if matches!(waited, Waited::TimedOut)
            && !self.expire(
                &request_id,
                &format!("no answer within {} s", timeout.as_secs()),
            )
        {
            // Decided just as the wait ended: take the answer rather than contradict it.
            waited = self
                .wait_for(Some(crate::util::watcher::RESCAN_EVERY), &mut pick)
                .await;
        }
        self.set_activity(Activity::Working, None);
        match waited {
            Waited::Got(response) if response.subtype == "success" => {
                self.display
                    .incoming(LEAD, &format!("permission granted: {description}"));
                Authorization::Allow(response.response.and_then(|r| r.updated_input))
            }
            Waited::Got(response) => {
                let why = response.error.unwrap_or_else(|| "refused".to_owned());
                self.display
                    .incoming(LEAD, &format!("permission refused: {why}"));
                Authorization::Deny(why)
            }
            Waited::TimedOut => Authorization::Deny(format!(
                "{LEAD} did not answer within {} s",
                timeout.as_secs()
            )),
            Waited::Stopped => Authorization::Deny("the agent is shutting down".to_owned()),
        }
    }

    async fn exit_plan_mode(&mut self, plan: &str) -> ToolOutcome {
        if self.ctx.mode() != PermissionMode::Plan {
            return ToolOutcome::ok(format!(
                "You are not in plan mode; go ahead with your plan:\n{plan}"
            ));
        }
        if plan.trim().is_empty() {
            return ToolOutcome::err("ExitPlanMode needs your plan in `plan`");
        }
        let request_id =
            protocol::plan_request_id(self.opts.name.as_str(), self.opts.team.as_str());
        let dir = self.opts.root.team_dir(&self.opts.team).join("plans");
        let plan_path = dir.join(format!("{}-{}.md", self.opts.name, clock::now_ms()));
        if let Err(e) =
            std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&plan_path, plan))
        {
            tracing::warn!("failed to write the plan file {}: {e}", plan_path.display());
        }
        let request = PlanApprovalRequest {
            from: self.opts.name.to_string(),
            timestamp: clock::now_iso(),
            plan_file_path: plan_path.display().to_string(),
            plan_content: plan.to_owned(),
            request_id: request_id.clone(),
        };
        let recorded = approvals::record(
            &self.opts.root,
            &self.opts.team,
            &approvals::from_plan(&request, None),
        );
        if let Err(e) = recorded {
            return ToolOutcome::err(format!("could not record the plan for approval: {e}"));
        }
        self.set_activity(Activity::AwaitingApproval, Some("plan approval".to_owned()));
        if let Err(e) = self.send_to_lead(&Protocol::PlanApprovalRequest(request)) {
            self.expire(&request_id, &format!("could not ask {LEAD}"));
            self.set_activity(Activity::Working, None);
            return ToolOutcome::err(format!("could not send the plan to {LEAD}: {e}"));
        }
        self.display.outgoing(LEAD, "plan sent for approval");
        let waited = self
            .wait_for(None, |incoming| match incoming {
                Incoming::PlanResponse { from, response } if from == LEAD && response.request_id == request_id => {
                    Some(response.clone())
                }
                Incoming::PlanResponse { from, response } => {
                    tracing::warn!(
                        "ignoring a plan approval response from {from} for {} (waiting for {request_id} from {LEAD})",
                        response.request_id
                    );
                    None
                }
                _ => None,
            })
            .await;
        self.set_activity(Activity::Working, None);
        match waited {
            Waited::Got(response) if response.approved => {
                let mode = response
                    .permission_mode
                    .as_deref()
                    .and_then(|m| m.parse::<PermissionMode>().ok())
                    .filter(|m| *m != PermissionMode::Plan)
                    .unwrap_or(PermissionMode::Default);
                self.ctx.set_mode(mode);
                self.touch();
                let _ = roster::update_member(
                    &self.opts.root,
                    &self.opts.team,
                    self.opts.name.as_str(),
                    |m| m.mode = Some(mode.to_string()),
                );
                self.display.incoming(LEAD, "plan approved");
                ToolOutcome::ok(format!(
                    "{LEAD} approved your plan. You have left plan mode (permission mode: {mode}); carry it out now.\n\nYour approved plan:\n{plan}"
                ))
            }
            Waited::Got(response) => {
                let feedback = response.feedback.unwrap_or_default();
                self.display
                    .incoming(LEAD, &format!("plan rejected: {feedback}"));
                ToolOutcome::ok(format!(
                    "{LEAD} rejected your plan. You are still in plan mode. Feedback:\n{feedback}\n\nRevise the plan and call ExitPlanMode again."
                ))
            }
            // `finish` expires the request: this only happens on the way out.
            Waited::TimedOut | Waited::Stopped => {
                ToolOutcome::err("stopped while waiting for plan approval")
            }
        }
    }

    async fn interject(&mut self) -> Option<String> {
        if let Err(e) = self.inbox.poll() {
            tracing::warn!("failed to read the inbox: {e}");
        }
        if let Ok(Some(_)) = self.handle_protocol() {
            return None; // shutdown approved: the loop stops at its next check
        }
        self.touch();
        if self.inbox.has_mail() {
            Some(self.take_mail_text())
        } else {
            None
        }
    }

    fn committed(&mut self) {
        if let Err(e) = self.inbox.commit() {
            tracing::warn!("failed to acknowledge delivered mail: {e}");
        }
    }

    fn event(&mut self, event: Event) {
        match &event {
            // Per response, not per piece of work, so status shows what a long job costs
            // while it runs. The engine's totals replace these sums when the work ends.
            Event::Response { usage, cost_usd } => {
                self.state.usage.add(usage);
                self.state.cost_usd += cost_usd.unwrap_or(0.0);
                self.state.model_calls += 1;
                self.touch();
            }
            Event::ToolEnd { description, .. } if description.starts_with("SendMessage(") => {
                self.touch();
            }
            _ => {}
        }
        self.display.event(&event);
    }

    fn model_cancel(&self) -> CancellationToken {
        self.model_cancel.lock().unwrap().clone()
    }
}
