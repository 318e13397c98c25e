//! The agent loop: ask the model, run the tools it calls, send the results back, until it
//! ends its turn.
//!
//! Invariants the Messages API enforces and this loop keeps:
//! - every `tool_use` block of an assistant turn gets exactly one `tool_result`, at the
//!   start of the next user message and in the same order (extra text comes after them);
//! - the assistant's content goes back verbatim (thinking blocks and their signatures);
//! - a tool call cut off by `max_tokens` is never run; the model is told and continues.
//!
//! The loop does not know whether it runs a solo agent, a teammate or the lead: what
//! differs (who grants permissions, where new mail comes from, what is displayed) is the
//! [`Host`]'s. Tools run concurrently when the model calls several in one turn.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::tools::{self, ToolContext, ToolOutcome, call_target, describe_call};
use crate::config::permissions::{self, Verdict};
use crate::config::tools::ToolName;
use crate::llm::{
    ContentBlock, LlmClient, LlmError, Message, Request, Role, StopReason, StreamEvent, Usage,
    anthropic::INVALID_ARGUMENTS_KEY, estimate_cost_usd,
};

/// What the loop reports as it goes, for displays and state files.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Stream(StreamEvent),
    /// A model response arrived (its usage is already added to the totals).
    Response {
        usage: Usage,
        cost_usd: Option<f64>,
    },
    ToolStart {
        id: String,
        description: String,
    },
    ToolEnd {
        id: String,
        description: String,
        outcome: ToolOutcome,
    },
}

/// The answer to a permission question.
#[derive(Debug, Clone, PartialEq)]
pub enum Authorization {
    /// Run it, with a replaced input if the approver edited it.
    Allow(Option<Value>),
    Deny(String),
}

/// What the loop needs from whoever runs it.
#[allow(async_fn_in_trait)]
pub trait Host: Send {
    fn ctx(&self) -> &ToolContext;
    /// Asks for permission to run a call the rules do not allow by themselves.
    async fn authorize(
        &mut self,
        tool: ToolName,
        input: &Value,
        description: &str,
        tool_use_id: &str,
    ) -> Authorization;
    /// Handles `ExitPlanMode`: asks for the plan's approval and waits for the answer.
    async fn exit_plan_mode(&mut self, plan: &str) -> ToolOutcome;
    /// New input that arrived meanwhile (mail), appended to the next user message.
    async fn interject(&mut self) -> Option<String>;
    /// Called once a request carrying everything added so far was answered: the input in
    /// it is now in the model's context (a teammate acknowledges its mail here).
    fn committed(&mut self);
    fn event(&mut self, event: Event);
    /// Cancels a model request in flight (not running tools): by default, with the agent.
    fn model_cancel(&self) -> CancellationToken {
        self.ctx().cancel.clone()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    /// The model ended its turn; its last text.
    EndTurn(String),
    MaxTurns,
    /// The host asked to stop (the agent approved its own shutdown, or was cancelled).
    Stopped,
    Refusal(String),
}

pub struct Engine {
    pub client: Arc<dyn LlmClient>,
    pub model: String,
    pub system: String,
    pub tools: Vec<ToolName>,
    pub max_turns: u32,
    pub max_tokens: u32,
    pub messages: Vec<Message>,
    pub usage: Usage,
    pub cost_usd: f64,
    pub model_calls: u64,
    /// Where to append each turn's timings (`SWARM_TIMINGS`, for `scripts/bench`).
    pub timings: Option<PathBuf>,
}

impl Engine {
    pub fn new(
        client: Arc<dyn LlmClient>,
        model: String,
        system: String,
        tools: Vec<ToolName>,
    ) -> Engine {
        Engine {
            client,
            model,
            system,
            tools,
            max_turns: 200,
            max_tokens: 16_000,
            messages: Vec::new(),
            usage: Usage::default(),
            cost_usd: 0.0,
            model_calls: 0,
            timings: None,
        }
    }

    /// Adds `text` as the next user message and runs until the model ends its turn.
    pub async fn run<H: Host>(&mut self, host: &mut H, text: String) -> Result<Finish, LlmError> {
        self.push_user(vec![ContentBlock::Text { text }]);
        let mut turns = 0;
        let timings = self.timings.as_deref().and_then(open_timings);
        loop {
            let mut timing = TurnTiming {
                out: timings.as_ref(),
                start: Instant::now(),
                http: None,
            };
            if host.ctx().cancel.is_cancelled() || host.ctx().stop_requested() {
                return Ok(Finish::Stopped);
            }
            if turns >= self.max_turns {
                return Ok(Finish::MaxTurns);
            }
            turns += 1;
            let request = Request {
                model: self.model.clone(),
                system: self.system.clone(),
                messages: self.messages.clone(),
                tools: self
                    .tools
                    .iter()
                    .filter_map(|t| tools::spec(*t, host.ctx()))
                    .collect(),
                max_tokens: self.max_tokens,
                thinking: None,
                agent: Some(host.ctx().agent.to_string()),
            };
            let cancel = host.model_cancel();
            let http_start = Instant::now();
            let response = {
                let mut on_event = |e: StreamEvent| host.event(Event::Stream(e));
                self.client.complete(&request, &mut on_event, &cancel).await
            };
            timing.http = Some(http_start.elapsed());
            let response = match response {
                Ok(r) => r,
                Err(LlmError::Cancelled) => return Ok(Finish::Stopped),
                Err(e) => return Err(e),
            };
            host.committed();
            self.model_calls += 1;
            self.usage.add(&response.usage);
            let cost = estimate_cost_usd(&response.model, &response.usage)
                .or_else(|| estimate_cost_usd(&self.model, &response.usage));
            self.cost_usd += cost.unwrap_or(0.0);
            host.event(Event::Response {
                usage: response.usage,
                cost_usd: cost,
            });
            let content: Vec<ContentBlock> = response
                .content
                .into_iter()
                .filter(|b| !matches!(b, ContentBlock::Text { text } if text.is_empty()))
                .collect();
            let text = Message {
                role: Role::Assistant,
                content: content.clone(),
            }
            .text();
            let calls: Vec<(String, String, Value)> = content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolUse { id, name, input } => {
                        Some((id.clone(), name.clone(), input.clone()))
                    }
                    _ => None,
                })
                .collect();
            if !content.is_empty() {
                self.messages.push(Message {
                    role: Role::Assistant,
                    content,
                });
            }
            match response.stop_reason {
                StopReason::Refusal => return Ok(Finish::Refusal(text)),
                StopReason::PauseTurn if calls.is_empty() => continue,
                _ if !calls.is_empty() => {
                    let truncated = response.stop_reason == StopReason::MaxTokens;
                    let mut blocks = self.run_tools(host, calls, truncated).await;
                    if let Some(extra) = host.interject().await {
                        blocks.push(ContentBlock::Text { text: extra });
                    }
                    self.push_user(blocks);
                }
                StopReason::MaxTokens => {
                    self.push_user(vec![ContentBlock::Text {
                        text: "Your reply was cut off at the output token limit. Continue where you stopped, in smaller steps.".into(),
                    }]);
                }
                _ => match host.interject().await {
                    // Mail arrived while the model was answering: keep going with it.
                    Some(extra) => self.push_user(vec![ContentBlock::Text { text: extra }]),
                    None => return Ok(Finish::EndTurn(text)),
                },
            }
        }
    }

    /// Appends a user message, merging into a trailing user message so roles alternate.
    fn push_user(&mut self, blocks: Vec<ContentBlock>) {
        match self.messages.last_mut() {
            Some(last) if last.role == Role::User => last.content.extend(blocks),
            _ => self.messages.push(Message {
                role: Role::User,
                content: blocks,
            }),
        }
    }

    /// Decides, then runs, every call of one turn; results come back in call order.
    async fn run_tools<H: Host>(
        &mut self,
        host: &mut H,
        calls: Vec<(String, String, Value)>,
        truncated: bool,
    ) -> Vec<ContentBlock> {
        let last = calls.len().saturating_sub(1);
        let mut decided: Vec<(String, String, Decision)> = Vec::with_capacity(calls.len());
        for (i, (id, name, input)) in calls.into_iter().enumerate() {
            let decision = if truncated && i == last {
                Decision::Done(ToolOutcome::err(
                    "this call was cut off by the output token limit before it was complete, so it was not run; send it again",
                ))
            } else {
                self.decide(host, &id, &name, input).await
            };
            if let Decision::Run(tool, input) = &decision {
                host.event(Event::ToolStart {
                    id: id.clone(),
                    description: describe_call(*tool, input, host.ctx()),
                });
            }
            decided.push((id, name, decision));
        }
        let ctx = host.ctx();
        let outcomes = join_all(decided.iter().map(|(_, _, d)| async move {
            match d {
                Decision::Run(tool, input) => tools::run(*tool, input.clone(), ctx).await,
                Decision::Done(outcome) => outcome.clone(),
            }
        }))
        .await;
        let mut blocks = Vec::with_capacity(outcomes.len());
        for ((id, name, d), outcome) in decided.into_iter().zip(outcomes) {
            let description = match &d {
                Decision::Run(tool, input) => describe_call(*tool, input, host.ctx()),
                Decision::Done(_) => format!("{name}(…)"),
            };
            host.event(Event::ToolEnd {
                id: id.clone(),
                description,
                outcome: outcome.clone(),
            });
            blocks.push(ContentBlock::ToolResult {
                tool_use_id: id,
                content: if outcome.content.is_empty() {
                    "(empty)".to_owned()
                } else {
                    outcome.content
                },
                is_error: outcome.is_error,
            });
        }
        blocks
    }

    /// Checks one call: known, available, well-formed, permitted. `ExitPlanMode` is
    /// answered here, in order, by the host.
    async fn decide<H: Host>(&self, host: &mut H, id: &str, name: &str, input: Value) -> Decision {
        let Some(tool) = ToolName::parse(name).filter(|t| self.tools.contains(t)) else {
            return Decision::Done(ToolOutcome::err(format!("no such tool: {name}")));
        };
        if let Some(raw) = input.get(INVALID_ARGUMENTS_KEY) {
            return Decision::Done(ToolOutcome::err(format!(
                "the tool input was not valid JSON: {raw}"
            )));
        }
        if !input.is_object() {
            return Decision::Done(ToolOutcome::err("the tool input must be a JSON object"));
        }
        if tool == ToolName::ExitPlanMode {
            let plan = input
                .get("plan")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            return Decision::Done(host.exit_plan_mode(&plan).await);
        }
        let ctx = host.ctx();
        let (command, path) = call_target(tool, &input, ctx);
        let verdict = permissions::verdict(
            ctx.mode(),
            &ctx.allow,
            tool.as_str(),
            tool.kind(),
            command.as_deref(),
            path.as_deref(),
            &ctx.cwd,
        );
        match verdict {
            Verdict::Allow => Decision::Run(tool, input),
            Verdict::Deny(reason) => Decision::Done(ToolOutcome::err(reason)),
            Verdict::Ask => {
                let description = describe_call(tool, &input, ctx);
                match host.authorize(tool, &input, &description, id).await {
                    Authorization::Allow(updated) => Decision::Run(tool, updated.unwrap_or(input)),
                    Authorization::Deny(reason) => {
                        Decision::Done(ToolOutcome::err(format!("permission denied: {reason}")))
                    }
                }
            }
        }
    }
}

/// With a timings file, each model turn appends one JSON line to it:
/// `{"http_us": N, "turn_us": N}`, the time inside `client.complete` (the HTTP round trip,
/// streaming included) and the whole turn (building the request, the call, the tools, the
/// bookkeeping). For `scripts/bench`; off by default.
fn open_timings(path: &Path) -> Option<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .ok()
}

/// Writes its turn's line when the turn ends, whichever way it ends.
struct TurnTiming<'a> {
    out: Option<&'a std::fs::File>,
    start: Instant,
    http: Option<Duration>,
}

impl Drop for TurnTiming<'_> {
    fn drop(&mut self) {
        use std::io::Write;
        if let (Some(mut out), Some(http)) = (self.out, self.http) {
            let line = format!(
                "{{\"http_us\":{},\"turn_us\":{}}}\n",
                http.as_micros(),
                self.start.elapsed().as_micros()
            );
            let _ = out.write_all(line.as_bytes());
        }
    }
}

/// A call either runs, or already has its answer (refused, malformed, or answered by the
/// host, like `ExitPlanMode`).
enum Decision {
    Run(ToolName, Value),
    Done(ToolOutcome),
}
