//! The lead agent's side of its engine: its inbox sorted for the model, and the `Host`
//! the engine asks between steps.
//!
//! The dispatcher feeds the lead's model what matters and nothing else:
//! - teammates' messages, terminations and refusals wake it;
//! - idle notifications are coalesced per teammate, and wake it only when they carry news
//!   (a finished or failed task, a result); a bare "I'm idle" waits for the next wake;
//! - plan approval and permission requests are recorded in [`approvals`] (by the teammate
//!   that asks, and again here, which adds the mode a plan's approval gives); with the
//!   lead as approver they wake it (it answers with SendMessage, which resolves the record
//!   exactly once), with a human approver they wait for `swarm approve`/the dashboard, and
//!   the lead hears of them at its next wake;
//! - a `shutdown_approved` is only ever information: nothing a teammate writes makes the
//!   lead exit;
//! - a protocol message naming another sender than its envelope is dropped with a warning,
//!   so a request is filed only under the teammate that really sent it; so is an answer to
//!   a shutdown request that was sent to someone else, and an answer to a plan or
//!   permission request (the lead asks neither);
//! - at 80 % of the team's budget the lead is told, once (woken for it if idle); at the
//!   limit its model call is refused and the run ends with [`Outcome::Budget`].

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::error::Result;
use swarm_agent::display::Display;
use swarm_agent::engine::{Authorization, Event, Host};
use swarm_agent::tools::{ToolContext, ToolOutcome};
use swarm_config::permissions::Approver;
use swarm_config::tools::ToolName;
use swarm_llm::StreamEvent;
use swarm_llm::budget::BudgetedClient;
use swarm_store::Store;
use swarm_store::approvals;
use swarm_store::mailbox::{Delivery, Envelope};
use swarm_store::protocol::{IdleNotification, Protocol};
use swarm_store::state::{Activity, AgentState};
use swarm_team::spawn::prompt::{mail_turn, wrap_message};
use swarm_util::clock;
use swarm_util::names::AgentName;

use crate::sender::forged;

use super::prompt::team_state;

pub(super) struct LeadHost {
    pub(super) ctx: ToolContext,
    /// The permission mode an approved plan gives: the lead's, unless that is plan mode.
    pub(super) plan_mode: Option<String>,
    pub(super) store: Store,
    pub(super) approver: Approver,
    pub(super) display: Display,
    pub(super) seen: std::collections::HashSet<String>,
    /// Teammates that sent the lead a message since their last idle notification.
    pub(super) reported: std::collections::HashSet<String>,
    /// Mail for the model, wrapped, with its key.
    pub(super) mail: Vec<(String, String)>,
    pub(super) in_flight: Vec<String>,
    /// The latest bare idle notification of each teammate, shown at the next wake.
    pub(super) idle: BTreeMap<String, IdleNotification>,
    pub(super) state: AgentState,
    pub(super) budget: Arc<BudgetedClient>,
    /// The goal, which every compacted context repeats.
    pub(super) goal: String,
    /// What the merge queue did since the last turn, for the next one.
    pub(super) notes: Vec<String>,
    /// A teammate stopped since the merge queue last looked.
    pub(super) teammate_stopped: bool,
}

impl LeadHost {
    /// Whether `name` is a Claude Code teammate, by the roster swarm wrote when it spawned it.
    fn runs_claude(&self, name: &str) -> bool {
        self.store.roster().load().is_ok_and(|r| {
            r.member(name)
                .is_some_and(|m| m.engine.as_deref() == Some("claude"))
        })
    }

    /// Reads the lead's inbox and sorts what arrived. Returns whether anything should wake
    /// the model.
    pub(super) fn poll(&mut self) -> Result<bool> {
        let me = AgentName::lead();
        let fresh: Vec<Delivery> = self
            .store
            .mail()
            .read_unread(&me)?
            .into_iter()
            .filter(|d| !self.seen.contains(&d.key))
            .collect();
        let mut wake = false;
        let mut consumed = Vec::new();
        for d in fresh {
            self.seen.insert(d.key.clone());
            let e = &d.envelope;
            let Some(p) = e.protocol() else {
                self.reported.insert(e.from.clone());
                self.display.incoming(&e.from, &e.text);
                self.mail.push((d.key.clone(), wrapped(e, e.text.clone())));
                wake = true;
                continue;
            };
            // Filed, shown and answered only under the envelope's sender, so one teammate
            // cannot ask (or report, or answer) in another's name.
            if let Some(why) = distrust(&p, &e.from) {
                consumed.push(d.key.clone());
                tracing::warn!("ignoring a {} from {}: {why}", p.kind(), e.from);
                continue;
            }
            match p {
                Protocol::IdleNotification(n) => {
                    consumed.push(d.key.clone());
                    wake |= self.idle_notification(&d, n);
                }
                Protocol::PlanApprovalRequest(req) => {
                    consumed.push(d.key.clone());
                    let mode = self.plan_mode.clone();
                    let record = self
                        .store
                        .approvals()
                        .record(&approvals::from_plan(&req, mode))?;
                    self.display
                        .incoming(&e.from, &format!("plan for approval [{}]", req.request_id));
                    let ask = format!(
                        "{} asks you to approve a plan (request id {}).\n\nPlan:\n{}\n\nAnswer with SendMessage to {}: message {{\"type\": \"plan_approval_response\", \"request_id\": \"{}\", \"approve\": true}} (or approve false with feedback).",
                        req.from, req.request_id, req.plan_content, req.from, req.request_id
                    );
                    let what = format!("approval of a {}", record.summary);
                    wake |= self.request(&d, &record, ask, &what);
                }
                Protocol::PermissionRequest(req) => {
                    consumed.push(d.key.clone());
                    let record = self
                        .store
                        .approvals()
                        .record(&approvals::from_permission(&req))?;
                    self.display.incoming(
                        &e.from,
                        &format!("permission for {} [{}]", req.description, req.request_id),
                    );
                    let ask = format!(
                        "{} asks permission to run {} (request id {}). Input: {}\n\nAnswer with SendMessage to {}: message {{\"type\": \"permission_response\", \"request_id\": \"{}\", \"approve\": true}} (or approve false with a reason).",
                        req.agent_id,
                        req.description,
                        req.request_id,
                        req.input,
                        req.agent_id,
                        req.request_id
                    );
                    let what = format!("permission to run {}", req.description);
                    wake |= self.request(&d, &record, ask, &what);
                }
                Protocol::ShutdownApproved(a) => {
                    // Information only: whoever sent it, the lead goes on.
                    consumed.push(d.key.clone());
                    tracing::info!("{} approved shutdown {}", a.from, a.request_id);
                }
                other @ (Protocol::TeammateTerminated(_) | Protocol::ShutdownRejected(_)) => {
                    self.teammate_stopped |= matches!(other, Protocol::TeammateTerminated(_));
                    self.display.incoming(&e.from, &other.describe());
                    self.mail
                        .push((d.key.clone(), wrapped(e, other.describe())));
                    wake = true;
                }
                other => {
                    self.mail
                        .push((d.key.clone(), wrapped(e, other.describe())));
                    wake = true;
                }
            }
        }
        self.store.mail().ack(&me, &consumed)?;
        Ok(wake)
    }

    /// An idle notification: news wakes the model, a bare "I'm idle" waits for the next
    /// wake. Returns whether it wakes the model.
    fn idle_notification(&mut self, d: &Delivery, n: IdleNotification) -> bool {
        // Claude Code never says which task it finished (no completedTaskId): its final
        // words are the only news it sends, so they wake the lead. A finished task is news
        // only when its teammate has not already said so in a message of its own since it
        // last went idle (its prompt asks it to); else the lead would take a whole turn to
        // read it twice.
        let reported = self.reported.remove(&n.from);
        let news = (n.completed_task_id.is_some() && !reported)
            || n.failure_reason.is_some()
            || n.summary.is_some()
            || (n.result.is_some() && self.runs_claude(&n.from));
        if !news {
            self.idle.insert(n.from.clone(), n);
            return false;
        }
        let e = &d.envelope;
        self.display
            .incoming(&e.from, &Protocol::IdleNotification(n.clone()).describe());
        self.mail.push((d.key.clone(), wrapped(e, render_idle(&n))));
        self.idle.remove(&n.from);
        true
    }

    /// A plan or permission request, recorded: with the lead as approver a pending one is
    /// put to the model (`ask`) and wakes it; with a person as approver the lead is told of
    /// it (`what` is asked for) at its next wake. Returns whether it wakes the model.
    fn request(
        &mut self,
        d: &Delivery,
        record: &approvals::Approval,
        ask: String,
        what: &str,
    ) -> bool {
        let e = &d.envelope;
        match self.approver {
            Approver::Lead if record.state == approvals::State::Pending => {
                self.mail.push((d.key.clone(), wrapped(e, ask)));
                true
            }
            Approver::Lead => false,
            Approver::Human => {
                self.mail
                    .push((d.key.clone(), wrapped(e, human_decides(what, record))));
                false
            }
        }
    }

    /// The next turn's text: the mail and the merge queue's notes, and the budget notice
    /// when due (alone if need be).
    pub(super) fn take_mail(&mut self) -> Option<String> {
        let notice = self.budget.team_notice_once();
        if self.mail.is_empty() && self.notes.is_empty() {
            return notice;
        }
        let mut wrapped: Vec<String> = Vec::new();
        for (key, text) in std::mem::take(&mut self.mail) {
            self.in_flight.push(key);
            wrapped.push(text);
        }
        if !self.idle.is_empty() {
            let names: Vec<&str> = self.idle.keys().map(String::as_str).collect();
            wrapped.push(format!("(idle and waiting for work: {})", names.join(", ")));
            self.idle.clear();
        }
        if !self.notes.is_empty() {
            wrapped.push(std::mem::take(&mut self.notes).join("\n"));
        }
        let turn = mail_turn(&wrapped);
        Some(match notice {
            Some(n) => format!("{turn}\n\n{n}"),
            None => turn,
        })
    }

    pub(super) fn touch(&mut self, activity: Activity) {
        self.state.activity = activity;
        self.state.last_activity_ms = clock::now_ms();
        let _ = self
            .store
            .agents()
            .write_state(&AgentName::lead(), &self.state);
    }
}

/// Why the lead must not take protocol message `p` from `from`, if it must not: it names
/// another sender than its envelope, answers a shutdown request sent to someone else, or
/// answers a plan or permission request (the teammates ask those; the lead never does).
fn distrust(p: &Protocol, from: &str) -> Option<String> {
    if let Some(why) = forged(p, from) {
        return Some(why);
    }
    matches!(
        p,
        Protocol::PlanApprovalResponse(_) | Protocol::PermissionResponse(_)
    )
    .then(|| "it answers a request the lead never makes".to_owned())
}

/// A message's text as the model is given it, with its sender.
fn wrapped(e: &Envelope, text: String) -> String {
    wrap_message(&e.from, e.color.as_deref(), e.summary.as_deref(), &text)
}

/// What the lead is told of a request a person decides. It does not wake the lead: there
/// is nothing for it to do.
fn human_decides(what: &str, record: &approvals::Approval) -> String {
    format!(
        "{} asked for {what} (request id {}, {} when you were told). A person decides it with `swarm approve` or `swarm reject`; do not answer it yourself.",
        record.agent,
        record.request_id,
        record.state.as_str()
    )
}

fn render_idle(n: &IdleNotification) -> String {
    let mut s = format!("{} is idle", n.from);
    if let Some(t) = &n.completed_task_id {
        s.push_str(&format!(
            " after task #{t} ({})",
            n.completed_status.as_deref().unwrap_or("resolved")
        ));
    }
    if let Some(f) = &n.failure_reason {
        s.push_str(&format!(". It failed: {f}"));
    }
    if let Some(sum) = &n.summary {
        s.push_str(&format!(". Last message: {sum}"));
    }
    if let Some(r) = &n.result {
        s.push_str(&format!(". Its result:\n{r}"));
    }
    s
}

impl Host for LeadHost {
    fn ctx(&self) -> &ToolContext {
        &self.ctx
    }

    async fn authorize(
        &mut self,
        _: ToolName,
        _: &Value,
        description: &str,
        _: &str,
    ) -> Authorization {
        Authorization::Deny(format!(
            "the lead does not run {description} itself; give it to a teammate"
        ))
    }

    async fn exit_plan_mode(&mut self, _: &str) -> ToolOutcome {
        ToolOutcome::ok("The lead is not in plan mode.")
    }

    async fn interject(&mut self) -> Option<String> {
        if let Err(e) = self.poll() {
            tracing::warn!("failed to read the lead's inbox: {e}");
        }
        self.take_mail()
    }

    fn committed(&mut self) {
        let keys = std::mem::take(&mut self.in_flight);
        if let Err(e) = self.store.mail().ack(&AgentName::lead(), &keys) {
            tracing::warn!("failed to acknowledge the lead's mail: {e}");
        }
        self.touch(Activity::Working);
    }

    fn event(&mut self, event: Event) {
        // Written so that `swarm status` and the team's panes show the wait.
        match &event {
            Event::Stream(StreamEvent::RateLimited { until_ms, reason }) => {
                self.state.set_rate_limited(Some((*until_ms, reason)));
                self.touch(self.state.activity);
            }
            Event::Response { .. } if self.state.rate_limited_until_ms.is_some() => {
                self.state.set_rate_limited(None);
                self.touch(self.state.activity);
            }
            _ => {}
        }
        self.display.event(&event);
    }

    fn in_flight_keys(&self) -> Vec<String> {
        self.in_flight.clone()
    }

    fn compaction_context(&self) -> Option<String> {
        Some(team_state(&self.store, &self.goal))
    }
}
