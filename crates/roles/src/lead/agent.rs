//! The lead agent: a model that turns a goal into tasks, spawns teammates, and answers
//! them, until the work is done.
//!
//! What it is told is `super::prompt`'s; what wakes it, and how its inbox is sorted for
//! it, `super::host`'s.
//!
//! The goal is done when every task is completed and the lead, told so, ends its turn.
//! When nothing moves for a while (no teammate working, tasks open), the lead is nudged
//! with the team's status; after a few fruitless nudges the run stops as stalled.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::OUTAGE_BACKOFF;
use crate::error::Result;
use swarm_agent::display::Display;
use swarm_agent::engine::{Engine, Finish};
use swarm_config::hooks::Hooks;
use swarm_config::permissions::PermissionMode;
use swarm_config::tools::ToolName;
use swarm_llm::LlmError;
use swarm_store::state::{Activity, AgentState};
use swarm_store::{Store, Topic};
use swarm_team::life::status;
use swarm_team::toolset::tools::TeamTools;
use swarm_util::clock;
use swarm_util::meter::Limits;
use swarm_util::names::{AgentName, LEAD};

use super::ending::{all_done, waiting_for, without_a_team};
use super::merging::Merging;
use crate::builder::{Agent, AgentBuilder, InTeam, Membership};

pub use super::ending::Outcome;

use super::host::LeadHost;
pub use super::options::LeadAgentOptions;
use super::prompt::{first_turn, system_prompt};

/// Puts the lead's agent together; returns its engine, its host, and whether its
/// conversation was restored.
fn start(o: &LeadAgentOptions, stop: &CancellationToken) -> Result<(Engine, LeadHost, bool)> {
    let hooks = Hooks::load(&o.cwd, &o.powers.launcher.dirs);
    for problem in &hooks.problems {
        swarm_config::hooks::report(problem);
    }
    let mut tools = TeamTools::new(o.store.clone());
    tools.lead = Some(o.powers.clone());
    let team = Membership {
        store: o.store.clone(),
        // The lead has no limit of its own: the team's, from budget.json, is the one it
        // keeps to.
        budget: Limits::default(),
        hooks,
        agent_type: LEAD.to_owned(),
        tools,
        resumed: o.resumed,
    };
    let (
        Agent { engine, mut ctx },
        InTeam {
            budget, restored, ..
        },
    ) = AgentBuilder {
        name: AgentName::lead(),
        llm: o.llm.clone(),
        cwd: o.cwd.clone(),
        mode: PermissionMode::Default,
        allow: Vec::new(),
        env: Default::default(),
        system: system_prompt(o),
        tools: ToolName::LEAD.to_vec(),
        max_turns: o.max_turns,
        timings: o.timings.clone(),
        context_window: o.context_window,
    }
    .in_team(team)?;
    ctx.cancel = stop.child_token();
    let mut state = AgentState::new(Activity::Working);
    state.model = Some(o.llm.model.clone());
    state.provider = Some(o.llm.provider.to_string());
    let host = LeadHost {
        ctx,
        plan_mode: Some(o.powers.launcher.lead.permission_mode)
            .filter(|m| *m != PermissionMode::Plan)
            .map(|m| m.to_string()),
        store: o.store.clone(),
        approver: o.approver,
        display: Display::new(Some("red")),
        seen: Default::default(),
        reported: Default::default(),
        mail: Vec::new(),
        in_flight: Vec::new(),
        idle: BTreeMap::new(),
        state,
        budget,
        goal: o.goal.clone(),
        notes: Vec::new(),
        teammate_stopped: false,
    };
    Ok((engine, host, restored))
}

/// Runs the lead's model until the goal is done, the run stalls, or `stop` fires.
pub async fn run(o: LeadAgentOptions, stop: CancellationToken) -> Result<(Outcome, Engine)> {
    let (mut engine, host, restored) = start(&o, &stop)?;
    let mut lead = Lead {
        store: o.store.clone(),
        merging: Merging::new(o.powers.launcher.clone()),
        o: &o,
        host,
        told_done: false,
        quiet_since: Instant::now(),
        nudges: 0,
        away: 0,
    };
    lead.host.display.status(&format!(
        "team-lead@{} · {} · approver: {:?}",
        o.store.team(),
        engine.client.describe(),
        o.approver
    ));
    let wake = Arc::new(tokio::sync::Notify::new());
    let notify = wake.clone();
    let _watch = lead.store.watch(
        Topic::Inbox(AgentName::lead()),
        Box::new(move || notify.notify_one()),
    );
    let mut pending_input = Some(first_turn(&o, restored));
    loop {
        if stop.is_cancelled() {
            return Ok((Outcome::Stopped("stopped by a signal".to_owned()), engine));
        }
        if let Some(text) = pending_input.take() {
            if let Some(outcome) = lead.turn(&mut engine, text).await {
                return Ok((outcome, engine));
            }
            continue;
        }
        let next = match lead.next().await {
            Ok(next) => {
                lead.back_from_outage();
                next
            }
            // The team's database is away (a restart, a partition): no model call starts
            // until it is back, the pane says so once, and the lead looks again.
            Err(e) => match e.away() {
                Some(why) => lead.outage(why),
                None => return Err(e),
            },
        };
        match next {
            Next::Turn(text) => pending_input = Some(text),
            Next::End(outcome) => return Ok((outcome, engine)),
            Next::Again => {}
            Next::Pause(wait) => tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.cancelled() => {}
            },
            Next::Wait => tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                _ = stop.cancelled() => {}
            },
        }
    }
}

/// A lead at work: its host, the merge queue it runs, and how quiet the team has been.
struct Lead<'o> {
    o: &'o LeadAgentOptions,
    store: Store,
    host: LeadHost,
    merging: Merging,
    /// The model was told that every task is completed.
    told_done: bool,
    quiet_since: Instant,
    /// Nudges since the team last moved.
    nudges: u32,
    /// Looks in a row that found the team's database away.
    away: u32,
}

/// What the lead does next, between turns.
enum Next {
    Turn(String),
    End(Outcome),
    /// Nothing to do until news or the next look.
    Wait,
    /// Look again at once.
    Again,
    /// Look again after this long (the database is away).
    Pause(Duration),
}

impl Lead<'_> {
    /// One more look that found the database away: said in the pane at the first, then a
    /// wait that grows with the outage.
    fn outage(&mut self, why: &str) -> Next {
        self.away += 1;
        if self.away == 1 {
            tracing::warn!("waiting for the team's database: {why}");
            self.host
                .display
                .status(&format!("waiting for the team's database: {why}"));
        }
        Next::Pause(OUTAGE_BACKOFF * self.away.min(10))
    }

    /// The database answered again: an outage is not the team being quiet.
    fn back_from_outage(&mut self) {
        if std::mem::take(&mut self.away) > 0 {
            self.host.display.status("the team's database is back");
            self.quiet_since = Instant::now();
        }
    }

    /// One turn of the model on `text`; the outcome when the run ends with it.
    async fn turn(&mut self, engine: &mut Engine, text: String) -> Option<Outcome> {
        self.host.touch(Activity::Working);
        match engine.run(&mut self.host, text).await {
            Ok(Finish::EndTurn(last)) => {
                if let Some(outcome) = without_a_team(&self.store, &last) {
                    return Some(outcome);
                }
            }
            Ok(Finish::Stopped) => return Some(Outcome::Stopped("stopped by a signal".to_owned())),
            Ok(Finish::MaxTurns) => {
                return Some(Outcome::Failed(format!(
                    "the lead hit its limit of {} turns",
                    engine.max_turns
                )));
            }
            Ok(Finish::Refusal(t)) => {
                return Some(Outcome::Failed(format!("the lead's model refused: {t}")));
            }
            Err(LlmError::BudgetExhausted(why)) => return Some(Outcome::Budget(why)),
            Err(e) => return Some(Outcome::Failed(e.to_string())),
        }
        self.host.state.usage = engine.usage;
        self.host.state.cost_usd = engine.cost_usd;
        self.host.state.model_calls = engine.model_calls;
        self.host.touch(Activity::Idle);
        self.quiet_since = Instant::now();
        let tasks = self.store.tasks();
        (self.told_done && self.host.mail.is_empty() && all_done(tasks) && self.merging.settled())
            .then(|| Outcome::Done("done: every task is completed".to_owned()))
    }

    /// Between turns: the news, the merge queue, the budget, whether all is done, and
    /// whether the team stalled.
    async fn next(&mut self) -> Result<Next> {
        let mut news_now = self.host.poll()?;
        if std::mem::take(&mut self.host.teammate_stopped) {
            self.merging.poke();
        }
        let tasks = self.store.tasks();
        self.merging.watch(tasks);
        if let Some(news) = self.merging.step().await {
            self.host.notes.extend(news.lines);
            news_now |= news.urgent;
        }
        // The lead hears what landed before it sums up.
        news_now |= self.told_done && !self.host.notes.is_empty() && self.merging.settled();
        if news_now {
            // News: whatever stalled has moved (the waiting `swarm run` shows this detail).
            self.host.state.detail = None;
            return Ok(self.host.take_mail().map_or(Next::Again, Next::Turn));
        }
        // Told while it can still act on it, not at its next news, which may come too late.
        if let Some(notice) = self.host.budget.team_notice_once() {
            return Ok(Next::Turn(notice));
        }
        if all_done(tasks) && !self.told_done && self.merging.settled() {
            self.told_done = true;
            let n = tasks.list().map(|t| t.len()).unwrap_or(0);
            return Ok(Next::Turn(format!(
                "All tasks are completed ({n} of {n}). Check the result if you want, then end your turn with a short summary: the team will be shut down."
            )));
        }
        if self.quiet_since.elapsed() >= self.o.stall_after {
            return self.quiet();
        }
        Ok(Next::Wait)
    }

    /// The team has been quiet for a while: if nobody is working, the lead is nudged with
    /// the team's status; after a few fruitless nudges the run stops as stalled.
    fn quiet(&mut self) -> Result<Next> {
        let o = self.o;
        let seen = status::observe(&o.store, Some(&o.powers.launcher.tmux))?;
        let working = !self.merging.settled()
            || seen
                .members
                .iter()
                .any(|m| m.name != LEAD && m.alive && m.state != "idle");
        self.quiet_since = Instant::now();
        if working {
            return Ok(Next::Wait);
        }
        self.nudges += 1;
        let waiting = waiting_for(self.store.tasks(), &seen);
        if self.nudges > 3 {
            return Ok(Next::End(Outcome::Failed(format!(
                "the team stalled: nobody is working; waiting for {waiting}"
            ))));
        }
        self.host.state.detail = Some(format!("stalled, waiting for {waiting}"));
        Ok(Next::Turn(format!(
            "Nothing has happened for {} s: no teammate is working, and the run is waiting for {waiting}. Here is the team:\n{}\nDecide what to do (assign tasks, spawn a teammate, or message someone).",
            o.stall_after.as_secs(),
            status::render_for_width(&seen, clock::now_ms(), 90)
        )))
    }
}
