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
//! [`Host`]'s. Several reads called in one turn run concurrently, and so do calls in a row of
//! a tool that runs them together (the lead's Agent calls spawn their teammates at once);
//! every other call runs alone, in the order the model wrote it.
//!
//! With a [`Transcript`], each response is recorded (with the user blocks its request
//! added) and fsynced before the host is told the request was answered, which is when
//! mail is acknowledged. Before each request the conversation may be compacted
//! ([`compaction`]); the system prompt and tools never change.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::compaction::{self, Estimate};
use crate::tools::{self, ToolContext, ToolOutcome, call_target, describe_call};
use crate::transcript::{self, Record, Restored, Transcript};
use swarm_config::permissions::{self, Verdict};
use swarm_config::tools::ToolName;
use swarm_llm::{
    ContentBlock, INVALID_ARGUMENTS_KEY, LlmClient, LlmError, Message, Request, Response, Role,
    StopReason, StreamEvent, context_window, estimate_cost_usd,
};
use swarm_util::meter::Usage;

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
    /// The conversation was compacted: its estimated size before and after, in tokens.
    /// `summarized` is false when the model's summary could not be had and the oldest
    /// turns were dropped instead, or for a teammate's new-task digest.
    Compacted {
        before_tokens: u64,
        after_tokens: u64,
        summarized: bool,
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
    /// The mail keys whose text is in the request being sent, recorded with its response
    /// so a resumed agent acknowledges them rather than reading them twice.
    fn in_flight_keys(&self) -> Vec<String> {
        Vec::new()
    }
    /// What a compacted context must always carry besides the summary and the task (the
    /// lead's team state).
    fn compaction_context(&self) -> Option<String> {
        None
    }
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
    /// Where the conversation is recorded as it goes.
    pub transcript: Option<Transcript>,
    /// The model's context window in tokens; compaction starts at 80 % of it.
    pub context_window: u64,
    /// The last compaction's summary, for a teammate's digest.
    pub last_summary: Option<String>,
    /// User blocks added since the last transcript record.
    unrecorded: Vec<ContentBlock>,
    /// The text the current `run` was called with, kept verbatim through compaction.
    task: String,
    estimate: Estimate,
    /// Compacted since the last response: not again until the next one.
    compacted: bool,
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
            system,
            tools,
            max_turns: 200,
            max_tokens: 16_000,
            messages: Vec::new(),
            usage: Usage::default(),
            cost_usd: 0.0,
            model_calls: 0,
            timings: None,
            transcript: None,
            context_window: context_window(&model),
            last_summary: None,
            unrecorded: Vec::new(),
            task: String::new(),
            estimate: Estimate::default(),
            compacted: false,
            model,
        }
    }

    /// Takes up a conversation restored from a transcript. Tool calls whose results were
    /// lost get an error result each, recorded with the next response like any user block.
    pub fn restore(&mut self, r: Restored) {
        self.messages = r.messages;
        self.usage = r.usage;
        self.cost_usd = r.cost_usd;
        self.model_calls = r.model_calls;
        self.unrecorded.clear();
        self.estimate = Estimate::default();
        let lost = transcript::lost_results(&self.messages);
        if !lost.is_empty() {
            self.push_user(lost);
        }
    }

    /// Adds `text` as the next user message and runs until the model ends its turn.
    pub async fn run<H: Host>(&mut self, host: &mut H, text: String) -> Result<Finish, LlmError> {
        self.task = text.clone();
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
            let mut request = self.request(host.ctx());
            if !self.compacted
                && self.estimate.tokens(&request) >= compaction::threshold(self.context_window)
                && compaction::worth_it(&self.messages)
            {
                if self.compact(host, &request).await.is_err() {
                    return Ok(Finish::Stopped);
                }
                request.messages = self.messages.clone();
            }
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
            let (text, calls, stop) = self.take_response(host, response);
            match stop {
                StopReason::Refusal => return Ok(Finish::Refusal(text)),
                StopReason::PauseTurn if calls.is_empty() => continue,
                _ if !calls.is_empty() => {
                    let truncated = stop == StopReason::MaxTokens;
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

    /// The next request: the whole conversation, with the tools' specs.
    fn request(&self, ctx: &ToolContext) -> Request {
        Request {
            model: self.model.clone(),
            system: self.system.clone(),
            messages: self.messages.clone(),
            tools: self
                .tools
                .iter()
                .filter_map(|t| tools::spec(*t, ctx))
                .collect(),
            max_tokens: self.max_tokens,
            thinking: None,
            agent: Some(ctx.agent.to_string()),
        }
    }

    /// Takes a response into the conversation: counts what it cost, records it (and the
    /// user blocks before it), lets the host acknowledge what it carried. Returns its text,
    /// its tool calls and why it stopped.
    fn take_response<H: Host>(
        &mut self,
        host: &mut H,
        response: Response,
    ) -> (String, Vec<(String, String, Value)>, StopReason) {
        self.model_calls += 1;
        self.usage.add(&response.usage);
        let cost = estimate_cost_usd(&response.model, &response.usage)
            .or_else(|| estimate_cost_usd(&self.model, &response.usage));
        self.cost_usd += cost.unwrap_or(0.0);
        let content: Vec<ContentBlock> = response
            .content
            .into_iter()
            .filter(|b| !matches!(b, ContentBlock::Text { text } if text.is_empty()))
            .collect();
        let record = transcript::response_record(
            &content,
            response.usage,
            &response.model,
            cost.unwrap_or(0.0),
            host.in_flight_keys(),
        );
        self.record(|t, blocks| t.record_turn(blocks, record));
        // Only now, with the turn on disk: the host acknowledges the mail it carried.
        host.committed();
        host.event(Event::Response {
            usage: response.usage,
            cost_usd: cost,
        });
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
        self.estimate
            .after_response(&response.usage, &self.messages);
        self.compacted = false;
        (text, calls, response.stop_reason)
    }

    /// Appends a user message, merging into a trailing user message so roles alternate.
    fn push_user(&mut self, blocks: Vec<ContentBlock>) {
        self.unrecorded.extend(blocks.iter().cloned());
        transcript::push_user(&mut self.messages, blocks);
    }

    /// Writes to the transcript, if there is one, with the user blocks not yet recorded.
    /// A failure is logged and the agent goes on: losing the record costs a resume its
    /// latest turn, stopping would cost the work.
    fn record(
        &mut self,
        write: impl FnOnce(&mut Transcript, Vec<ContentBlock>) -> swarm_util::error::Result<()>,
    ) {
        let blocks = std::mem::take(&mut self.unrecorded);
        if let Some(t) = self.transcript.as_mut()
            && let Err(e) = write(t, blocks)
        {
            tracing::warn!("failed to record the transcript: {e}");
        }
    }

    /// Replaces the older turns with the model's summary of them (or, if that fails, drops
    /// the oldest), and records it. Err when the agent was cancelled meanwhile.
    async fn compact<H: Host>(&mut self, host: &mut H, request: &Request) -> Result<(), ()> {
        let before = self.estimate.tokens(request);
        let summary_request = compaction::summary_request(request);
        let cancel = host.model_cancel();
        let answer = {
            let mut on_event = |e: StreamEvent| host.event(Event::Stream(e));
            self.client
                .complete(&summary_request, &mut on_event, &cancel)
                .await
        };
        let context = host.compaction_context();
        let summary = match answer {
            Err(LlmError::Cancelled) => return Err(()),
            Err(e) => {
                tracing::warn!("the summary request for compaction failed: {e}");
                None
            }
            Ok(r) => {
                self.model_calls += 1;
                self.usage.add(&r.usage);
                let cost = estimate_cost_usd(&r.model, &r.usage)
                    .or_else(|| estimate_cost_usd(&self.model, &r.usage));
                self.cost_usd += cost.unwrap_or(0.0);
                host.event(Event::Response {
                    usage: r.usage,
                    cost_usd: cost,
                });
                Some(
                    Message {
                        role: Role::Assistant,
                        content: r.content,
                    }
                    .text(),
                )
                .filter(|t| !t.trim().is_empty())
            }
        };
        let (messages, method) = match &summary {
            Some(s) => (
                compaction::rebuild(&self.messages, s, context.as_deref(), &self.task),
                "summary",
            ),
            None => (
                compaction::drop_oldest(&self.messages, context.as_deref(), &self.task),
                "dropped",
            ),
        };
        self.messages = messages;
        self.last_summary = summary.clone().or(self.last_summary.take());
        let after = compaction::request_tokens(&Request {
            messages: self.messages.clone(),
            ..request.clone()
        });
        self.recompacted(method, summary.unwrap_or_default(), before, after);
        host.event(Event::Compacted {
            before_tokens: before,
            after_tokens: after,
            summarized: method == "summary",
        });
        Ok(())
    }

    /// Starts the next piece of work from `digest` alone: the earlier turns go (without a
    /// model call). Nothing happens to an empty conversation. The digest is a turn of its
    /// own, acknowledged, so the work that follows is still the latest user turn by itself
    /// (which is what a scripted model matches on).
    pub fn start_from_digest<H: Host>(&mut self, host: &mut H, digest: String) {
        if self.messages.is_empty() {
            return;
        }
        let before = self.estimate.basis.map_or(0, |(t, _)| t);
        self.messages = vec![
            Message::user_text(digest.clone()),
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::Text {
                    text: "Noted: that is my earlier work.".to_owned(),
                }],
            },
        ];
        let after = (digest.len() / 4) as u64;
        self.recompacted("digest", digest, before, after);
        host.event(Event::Compacted {
            before_tokens: before,
            after_tokens: after,
            summarized: false,
        });
    }

    /// After the conversation was replaced: record it whole, and start estimating afresh.
    fn recompacted(&mut self, method: &str, summary: String, before: u64, after: u64) {
        let record = Record::Compaction {
            method: method.to_owned(),
            summary,
            messages: self.messages.clone(),
            before_tokens: before,
            after_tokens: after,
            usage: self.usage,
            cost_usd: self.cost_usd,
            model_calls: self.model_calls,
            time: swarm_util::clock::now_iso(),
        };
        // The replaced conversation holds the unrecorded blocks: the record has them.
        self.record(|t, _| t.append(&[record]));
        self.estimate = Estimate::default();
        self.compacted = true;
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
        let run_one = |d: &Decision| {
            let d = d.clone();
            async move {
                match d {
                    Decision::Run(tool, input) => tools::run(tool, input, ctx).await,
                    Decision::Done(outcome) => outcome,
                }
            }
        };
        // Reads in a row run together; a call that changes files, runs a command or
        // talks to the team runs alone (but for a batch, below), after what the model
        // called before it, as Claude Code does: the model writes calls in the order they
        // must happen.
        let mut outcomes = Vec::with_capacity(decided.len());
        let mut i = 0;
        while i < decided.len() {
            // Calls of a tool that runs them together (the lead's Agent calls, which spawn
            // their teammates at once) in a row: one batch, in place of them all.
            let together = together(&decided[i..], ctx);
            if together > 1 {
                let Decision::Run(tool, _) = &decided[i].2 else {
                    unreachable!("a batch is of calls that run")
                };
                let inputs = decided[i..i + together]
                    .iter()
                    .map(|(_, _, d)| match d {
                        Decision::Run(_, input) => input.clone(),
                        Decision::Done(_) => unreachable!("a batch is of calls that run"),
                    })
                    .collect();
                outcomes.extend(tools::run_together(*tool, inputs, ctx));
                i += together;
                continue;
            }
            let reads = decided[i..]
                .iter()
                .take_while(|(_, _, d)| d.reads_only())
                .count()
                .max(1);
            let batch = &decided[i..i + reads];
            outcomes.extend(join_all(batch.iter().map(|(_, _, d)| run_one(d))).await);
            i += reads;
        }
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

/// How many calls at the head of `decided` run together: calls of one tool that runs its
/// calls in a row together (see [`tools::runs_together`]), all allowed to run.
fn together(decided: &[(String, String, Decision)], ctx: &ToolContext) -> usize {
    let Some((_, _, Decision::Run(tool, _))) = decided.first() else {
        return 0;
    };
    if !tools::runs_together(*tool, ctx) {
        return 0;
    }
    decided
        .iter()
        .take_while(|(_, _, d)| matches!(d, Decision::Run(t, _) if t == tool))
        .count()
}

/// A call either runs, or already has its answer (refused, malformed, or answered by the
/// host, like `ExitPlanMode`).
#[derive(Clone)]
enum Decision {
    Run(ToolName, Value),
    Done(ToolOutcome),
}

impl Decision {
    /// Safe to run alongside other reads: it changes nothing.
    fn reads_only(&self) -> bool {
        match self {
            Decision::Run(tool, _) => tool.kind() == swarm_config::tools::ToolKind::ReadOnly,
            Decision::Done(_) => true,
        }
    }
}
