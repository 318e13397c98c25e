//! The teammate as the agent loop's host: what the engine asks of it between and during
//! steps.
//!
//! - `ExitPlanMode` sends `plan_approval_request` and waits: only a
//!   `plan_approval_response` from `team-lead` with the same request id changes the mode;
//! - a tool call that needs permission sends `permission_request` and waits for the
//!   matching `permission_response`; no answer in time means no.
//!
//! Both requests are recorded in [`approvals`] before they are sent, so a person can
//! answer them with no lead agent running; a request it stops waiting for (a timeout, or
//! the teammate stopping) is marked expired. Mail that arrives meanwhile joins the next
//! model request, and is acknowledged once a request carrying it was answered.

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::teammate::inbox::Incoming;
use crate::teammate::runtime::Runtime;
use swarm_agent::engine::{Authorization, Event, Host};
use swarm_agent::tools::{ToolContext, ToolOutcome};
use swarm_config::permissions::PermissionMode;
use swarm_config::tools::ToolName;
use swarm_llm::StreamEvent;
use swarm_store::approvals;
use swarm_store::documents;
use swarm_store::protocol::{self, PermissionRequest, PlanApprovalRequest, Protocol};
use swarm_store::state::Activity;
use swarm_util::clock;
use swarm_util::names::LEAD;

pub(super) enum Waited<T> {
    Got(T),
    TimedOut,
    Stopped,
}

impl Runtime {
    /// Expires a request this agent stopped waiting for. False when someone decided it
    /// first: the answer is then in the inbox already (it is sent under the record's lock).
    pub(super) fn expire(&self, request_id: &str, why: &str) -> bool {
        match self.store.approvals().expire(request_id, why) {
            Ok(Some(_)) => true,
            Ok(None) => self
                .store
                .approvals()
                .get(request_id)
                .map_or(true, |a| a.state == approvals::State::Expired),
            Err(e) => {
                tracing::warn!("failed to expire {request_id}: {e}");
                true
            }
        }
    }

    /// Waits for a protocol answer matching `pick`, handling a shutdown request meanwhile.
    pub(super) async fn wait_for<T>(
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
                None => swarm_util::watcher::RESCAN_EVERY,
            };
            tokio::select! {
                _ = self.inbox.changed(left.min(swarm_util::watcher::RESCAN_EVERY)) => {}
                _ = self.ctx.cancel.cancelled() => {}
            }
        }
    }

    /// Who decided a request, as its pane and the model are told: a person (`swarm
    /// approve`, recorded as `human`) or the lead, whose address every answer comes from.
    /// Records the lead's answer on the request, unless someone decided it already: a
    /// Claude Code lead answers by mail and keeps no record of its own.
    fn record_answer(
        &self,
        id: &str,
        approve: bool,
        feedback: Option<String>,
        mode: Option<String>,
    ) {
        let decision = approvals::Decision {
            approve,
            feedback,
            mode,
            by: LEAD.to_owned(),
            via: None,
        };
        let store = &self.store;
        if let Err(e) = store.approvals().answered(id, decision) {
            tracing::warn!("failed to record {LEAD}'s answer to {id}: {e}");
        }
    }

    fn decider(&self, request_id: &str) -> &'static str {
        match self.store.approvals().get(request_id) {
            Ok(a) if a.resolved_by.as_deref() == Some("human") => "a person",
            _ => LEAD,
        }
    }
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
        let recorded = self
            .store
            .approvals()
            .record(&approvals::from_permission(&request));
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
                .wait_for(Some(swarm_util::watcher::RESCAN_EVERY), &mut pick)
                .await;
        }
        self.set_activity(Activity::Working, None);
        if let Waited::Got(r) = &waited {
            let approve = r.subtype == "success";
            self.record_answer(&request_id, approve, r.error.clone(), None);
        }
        match waited {
            Waited::Got(response) if response.subtype == "success" => {
                let by = self.decider(&request_id);
                self.display
                    .incoming(by, &format!("permission granted: {description}"));
                Authorization::Allow(response.response.and_then(|r| r.updated_input))
            }
            Waited::Got(response) => {
                let why = response.error.unwrap_or_else(|| "refused".to_owned());
                let by = self.decider(&request_id);
                self.display
                    .incoming(by, &format!("permission refused: {why}"));
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
            protocol::plan_request_id(self.opts.name.as_str(), self.store.team().as_str());
        let plan_path = documents::new_plan_path(&self.store, &self.opts.name);
        if let Err(e) = documents::write_plan(&self.store, &plan_path, plan) {
            tracing::warn!("failed to keep a copy of the plan: {e}");
        }
        let request = PlanApprovalRequest {
            from: self.opts.name.to_string(),
            timestamp: clock::now_iso(),
            plan_file_path: plan_path.display().to_string(),
            plan_content: plan.to_owned(),
            request_id: request_id.clone(),
        };
        let recorded = self
            .store
            .approvals()
            .record(&approvals::from_plan(&request, None));
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
        if let Waited::Got(r) = &waited {
            let (feedback, mode) = (r.feedback.clone(), r.permission_mode.clone());
            self.record_answer(&request_id, r.approved, feedback, mode);
        }
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
                let _ = self
                    .store
                    .roster()
                    .update_member(self.opts.name.as_str(), |m| m.mode = Some(mode.to_string()));
                let by = self.decider(&request_id);
                self.display.incoming(by, "plan approved");
                ToolOutcome::ok(format!(
                    "{by} approved your plan. You have left plan mode (permission mode: {mode}); carry it out now.\n\nYour approved plan:\n{plan}"
                ))
            }
            Waited::Got(response) => {
                let feedback = response.feedback.unwrap_or_default();
                let by = self.decider(&request_id);
                self.display
                    .incoming(by, &format!("plan rejected: {feedback}"));
                ToolOutcome::ok(format!(
                    "{by} rejected your plan. You are still in plan mode. Feedback:\n{feedback}\n\nRevise the plan and call ExitPlanMode again."
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

    fn in_flight_keys(&self) -> Vec<String> {
        self.inbox.in_flight().to_vec()
    }

    fn event(&mut self, event: Event) {
        match &event {
            // Per response, not per piece of work, so status shows what a long job costs
            // while it runs. The engine's totals replace these sums when the work ends.
            // Written so that `swarm status` and the lead's pane show the wait.
            Event::Stream(StreamEvent::RateLimited { until_ms, reason }) => {
                self.state.set_rate_limited(Some((*until_ms, reason)));
                self.touch();
            }
            Event::Response { usage, cost_usd } => {
                self.state.set_rate_limited(None);
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
