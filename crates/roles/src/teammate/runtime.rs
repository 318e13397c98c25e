//! A teammate's runtime: what it holds while it lives (its options, its agent's tool
//! context, its inbox, its store handle, its state as last written) and what every part of
//! its life does with it: record its activity, tell the lead, run its hooks. Its life
//! (`super::lifecycle`), its work loop (`super::work`) and what it answers its agent
//! (`super::host`) each build on this.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::heartbeat::Beater;
use crate::teammate::active::ActiveFlag;
use crate::teammate::inbox::Inbox;
use crate::teammate::options::TeammateOptions;
use swarm_agent::compaction::DoneTask;
use swarm_agent::display::Display;
use swarm_agent::tools::ToolContext;
use swarm_config::hooks::{Event as HookEvent, Outcome as HookOutcome, Runner as HookRunner};
use swarm_store::Store;
use swarm_store::mailbox::Envelope;
use swarm_store::protocol::Protocol;
use swarm_store::state::{Activity, AgentState};
use swarm_team::toolset::tools::TeamTools;
use swarm_util::clock;
use swarm_util::names::AgentName;

/// Most milliseconds a state file's `lastActivityMs` lags behind (see [`Runtime::touch`]).
const TOUCH_EVERY_MS: i64 = 1000;

pub(super) enum Stop {
    Approved,
    Signalled,
    /// A model call was refused: its budget, or the team's, is spent.
    Budget(String),
}

/// What the next idle notification reports.
#[derive(Default)]
pub(super) struct Report {
    pub(super) completed_task: Option<(String, &'static str)>,
    pub(super) result: Option<String>,
    pub(super) failure: Option<String>,
}

pub(super) struct Runtime {
    pub(super) opts: TeammateOptions,
    pub(super) ctx: ToolContext,
    /// The user's hooks, for this teammate's events.
    pub(super) hooks: Arc<HookRunner>,
    /// Its team tools (which remember its last message to a peer).
    pub(super) tools: Arc<TeamTools>,
    pub(super) inbox: Inbox,
    /// The team's shared state.
    pub(super) store: Store,
    pub(super) display: Display,
    pub(super) state: AgentState,
    pub(super) model_cancel: Arc<Mutex<CancellationToken>>,
    /// The model is at work on something (see [`Runtime::watch_for_shutdown`]).
    pub(super) in_turn: Arc<AtomicBool>,
    /// The state as last written (see [`Runtime::touch`]).
    pub(super) written: Option<AgentState>,
    pub(super) active: Option<bool>,
    /// Writes `active` to the roster off the teammate's way (once it has registered).
    pub(super) active_flag: Option<ActiveFlag>,
    pub(super) report: Report,
    pub(super) idle_sent: bool,
    pub(super) backoff_until: Option<Instant>,
    /// Whether the task list may have changed since it last looked for a task to claim.
    pub(super) board: swarm_store::board::Board,
    /// The request id of an approved shutdown, answered by `finish`.
    pub(super) pending_approval: Option<String>,
    /// The signal that stopped it, if one did.
    pub(super) caught: Arc<Mutex<Option<&'static str>>>,
    /// Its earlier tasks, for the digest it starts each new task from.
    pub(super) done_tasks: Vec<DoneTask>,
    /// The text of its first piece of work when that was not a task (its spawn prompt).
    pub(super) first_instructions: Option<String>,
    /// Its heartbeat, on a team whose processes beat.
    pub(super) beater: Option<Beater>,
    /// The team declared this process dead (its heartbeat stopped): it stops.
    pub(super) fenced: Arc<AtomicBool>,
}

impl Runtime {
    /// Runs `event`'s hooks off the async thread (they may take up to their timeout).
    pub(super) async fn fire(&self, event: HookEvent, extra: Map<String, Value>) -> HookOutcome {
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

    pub(super) fn set_activity(&mut self, activity: Activity, detail: Option<String>) {
        self.state.activity = activity;
        self.state.detail = detail;
        self.touch();
    }

    /// Writes the state file with the time of this activity; when only that time moved
    /// since a write less than [`TOUCH_EVERY_MS`] ago, it is not written (what a reader
    /// sees is that much older, and nothing else is): a turn touches it several times.
    pub(super) fn touch(&mut self) {
        let now = clock::now_ms();
        self.state.mode = Some(self.ctx.mode().to_string());
        if let Some(w) = &self.written
            && now - w.last_activity_ms < TOUCH_EVERY_MS
            && self.state == *w
        {
            return;
        }
        self.state.last_activity_ms = now;
        match self
            .store
            .agents()
            .write_state(&self.opts.name, &self.state)
        {
            Ok(()) => self.written = Some(self.state.clone()),
            Err(e) => {
                self.written = None;
                tracing::warn!("failed to write the state file: {e}");
            }
        }
    }

    /// Claude Code's `isActive` in the roster, written only when it changes, and by the
    /// writer thread (see [`ActiveFlag`]): a teammate never waits on the roster for it.
    pub(super) fn set_active(&mut self, active: bool) {
        if self.active == Some(active) {
            return;
        }
        self.active = Some(active);
        if let Some(flag) = &self.active_flag {
            flag.set(active);
        }
    }

    pub(super) fn send_to_lead(&mut self, message: &Protocol) -> Result<()> {
        let envelope = Envelope::new(self.opts.name.as_str(), message.to_text())
            .with_color(self.opts.color.clone());
        self.store.mail().deliver(&AgentName::lead(), envelope)?;
        Ok(())
    }
}
