//! The team tools the agents call: SendMessage, the task tools, and the lead's Agent and
//! TeamStatus, over the shared store. They plug into the agent's engine as a
//! [`ToolSet`], which is all the engine knows of them.
//!
//! Recipients are checked against the roster (an unknown name is an error the model sees,
//! never a new inbox). Setting a task's owner goes through the real claim (compare-and-set
//! under the list lock) and tells the new owner with a `task_assignment` message. Task
//! hooks run through [`crate::toolset::task_events`]; a hook's refusal fails the tool with the
//! hook's stderr as feedback.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use crate::spawn::launch::{Launcher, SpawnRequest, Spawned};
use crate::toolset::task_events::{self, Created};
use swarm_agent::tools::{ToolContext, ToolOutcome, ToolSet, required_str, value_str};
use swarm_config::hooks::Runner as HookRunner;
use swarm_config::tools::ToolName;
use swarm_llm::ToolSpec;
use swarm_store::Store;
use swarm_store::approvals;
use swarm_store::mailbox::Envelope;
use swarm_store::merge_queue::TASK_COMMIT_KEY;
use swarm_store::protocol::{
    self, Protocol, ShutdownApproved, ShutdownRejected, ShutdownRequest, TaskAssignment,
};
use swarm_store::tasks::leases;
use swarm_store::tasks::{NewTask, Status, Task, TaskPatch};
use swarm_util::clock;
use swarm_util::names::{AgentName, LEAD};

/// The lead's means to start teammates, as `swarm spawn` would, up to a limit.
#[derive(Debug, Clone)]
pub struct LeadPowers {
    pub launcher: Launcher,
    pub max_teammates: usize,
    /// Where new teammates go when a call names no host: the one of these with the
    /// fewest of the team's teammates (`swarm run --hosts`); none: this machine.
    pub hosts: Vec<String>,
}

/// One agent's team tools.
#[derive(Debug)]
pub struct TeamTools {
    pub store: Store,
    /// The agent's own tmux pane, named in its `shutdown_approved`.
    pub pane: Option<String>,
    /// What only the lead can do: spawn teammates.
    pub lead: Option<LeadPowers>,
    /// The user's hooks for this agent's events (TaskCreated, TaskCompleted).
    pub hooks: Option<Arc<HookRunner>>,
    /// The last direct message this agent sent to a peer, for its idle notification.
    last_peer_dm: Mutex<Option<String>>,
}

impl ToolSet for TeamTools {
    fn spec(&self, tool: ToolName) -> Option<ToolSpec> {
        spec(tool)
    }

    fn detail(&self, tool: ToolName, input: &Value) -> String {
        let s = |k: &str| input.get(k).and_then(Value::as_str).unwrap_or("");
        match tool {
            ToolName::SendMessage => format!("to {}", s("to")),
            ToolName::TaskCreate => s("subject").to_owned(),
            ToolName::TaskGet | ToolName::TaskUpdate => format!(
                "#{}{}",
                input.get("taskId").map(value_str).unwrap_or_default(),
                input
                    .get("status")
                    .and_then(Value::as_str)
                    .map(|st| format!(" → {st}"))
                    .unwrap_or_default()
            ),
            ToolName::Agent => s("name").to_owned(),
            ToolName::MergeQueue => format!("{} {}", s("action"), s("branch")).trim().to_owned(),
            _ => String::new(),
        }
    }

    fn run(&self, tool: ToolName, input: Value, ctx: &ToolContext) -> ToolOutcome {
        match tool {
            ToolName::SendMessage => self.send_message(input, ctx),
            ToolName::TaskCreate => self.task_create(input, ctx),
            ToolName::TaskGet => self.task_get(input),
            ToolName::TaskList => self.task_list(),
            ToolName::TaskUpdate => self.task_update(input, ctx),
            ToolName::Agent => self
                .spawn_teammates(std::slice::from_ref(&input), ctx)
                .pop()
                .expect("one outcome per call"),
            ToolName::TeamStatus => self.team_status(),
            ToolName::MergeQueue => {
                let dirs = self.lead.as_ref().map(|p| p.launcher.dirs.clone());
                crate::toolset::merge_tool::run(&self.store, &input, dirs.unwrap_or_default())
            }
            other => ToolOutcome::err(format!("{} is not a team tool", other.as_str())),
        }
    }

    fn runs_together(&self, tool: ToolName) -> bool {
        tool == ToolName::Agent
    }

    fn run_together(
        &self,
        tool: ToolName,
        inputs: Vec<Value>,
        ctx: &ToolContext,
    ) -> Vec<ToolOutcome> {
        match tool {
            ToolName::Agent => self.spawn_teammates(&inputs, ctx),
            other => inputs
                .into_iter()
                .map(|input| self.run(other, input, ctx))
                .collect(),
        }
    }

    fn note_on_change(&self, path: &std::path::Path, ctx: &ToolContext) -> Option<String> {
        crate::toolset::leases::note(&self.store, ctx.agent.as_str(), &ctx.cwd, path)
    }
}

/// The spec of a team tool; `None` for any other tool.
pub fn spec(tool: ToolName) -> Option<ToolSpec> {
    let (description, schema) = match tool {
        ToolName::SendMessage => (
            "Send a message to a teammate by name, to \"team-lead\", or to \"*\" (everyone). Text you print is NOT seen by anyone: use this tool to communicate. message is a string, or a structured message: {\"type\": \"shutdown_response\", \"request_id\", \"approve\", \"reason\"} or (lead only) {\"type\": \"shutdown_request\", \"reason\"} / {\"type\": \"plan_approval_response\", \"request_id\", \"approve\", \"feedback\"}.",
            json!({"type": "object", "properties": {
                    "to": {"type": "string"},
                    "message": {"description": "Text, or a structured protocol message"},
                    "summary": {"type": "string", "description": "A 5-10 word preview"}
                }, "required": ["to", "message"]}),
        ),
        ToolName::TaskCreate => (
            "Create a task in the team's shared task list.",
            json!({"type": "object", "properties": {
                    "subject": {"type": "string", "description": "Imperative title"},
                    "description": {"type": "string"},
                    "activeForm": {"type": "string", "description": "Present continuous, shown while the task runs"},
                    "blockedBy": {"type": "array", "items": {"type": "string"}, "description": "Ids of tasks that must be completed first"},
                    "files": {"type": "array", "items": {"type": "string"}, "description": "Files the task will touch, relative to the project; others changing them are warned"},
                    "metadata": {"type": "object"}
                }, "required": ["subject", "description"]}),
        ),
        ToolName::TaskGet => (
            "Get one task with its full description.",
            json!({"type": "object", "properties": {"taskId": {"type": "string"}}, "required": ["taskId"]}),
        ),
        ToolName::TaskList => (
            "List the team's tasks: id, status, owner, subject, blockers.",
            json!({"type": "object", "properties": {}}),
        ),
        ToolName::TaskUpdate => (
            "Update a task: status (pending, in_progress, completed, or deleted), owner (claims it atomically), subject, description, dependencies.",
            json!({"type": "object", "properties": {
                    "taskId": {"type": "string"},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "deleted"]},
                    "owner": {"type": "string"},
                    "subject": {"type": "string"},
                    "description": {"type": "string"},
                    "activeForm": {"type": "string"},
                    "addBlockedBy": {"type": "array", "items": {"type": "string"}},
                    "addBlocks": {"type": "array", "items": {"type": "string"}},
                    "metadata": {"type": "object"}
                }, "required": ["taskId"]}),
        ),
        ToolName::Agent => (
            "Spawn a teammate in its own tmux pane. It receives `prompt` as its first instructions, then works on the shared task list by itself. Use mode \"plan\" to make it present a plan for your approval before it changes anything.",
            json!({"type": "object", "properties": {
                    "name": {"type": "string", "description": "A short unique name: letters, digits, - and _"},
                    "prompt": {"type": "string", "description": "Its first instructions"},
                    "description": {"type": "string", "description": "3-5 words on its role"},
                    "subagent_type": {"type": "string", "description": "An agent type: general-purpose, Explore, Plan, or one defined in .claude/agents"},
                    "model": {"type": "string", "description": "Its model (default: its agent type's, else yours when on your provider, else its provider's)"},
                    "provider": {"type": "string", "enum": ["anthropic", "openai", "scripted"], "description": "The API its model runs on (default: its agent type's, else yours); its key and base URL are the environment's"},
                    "mode": {"type": "string", "enum": ["plan", "default", "acceptEdits", "bypassPermissions"]},
                    "isolation": {"type": "string", "enum": ["worktree"], "description": "worktree: it works in its own git worktree on branch swarm/<team>/<name>, so its changes do not touch the shared checkout"},
                    "engine": {"type": "string", "enum": ["swarm", "claude"], "description": "What runs it: swarm's own agent, or a Claude Code process (default: the run's)"},
                    "host": {"type": "string", "description": "Run it on this host (one of `swarm host list`), in the host's project directory; the team must be on PostgreSQL (default: this machine)"}
                }, "required": ["name", "prompt"]}),
        ),
        ToolName::TeamStatus => (
            "The team right now: each member's state (idle, working, awaiting-approval, dead...), current task and last activity, and the task counts.",
            json!({"type": "object", "properties": {}}),
        ),
        ToolName::MergeQueue => (
            "The merge queue that lands teammates' worktree branches on the team's target, one at a time, through the project's check. It runs by itself when a teammate completes a task; action \"status\" lists its entries, \"run\" takes new commits and merges what is queued now, \"retry\" puts a held branch (conflict, failed check) back in the queue and runs it.",
            json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["status", "run", "retry"]},
                    "branch": {"type": "string", "description": "retry: the held branch, swarm/<team>/<name>"}
                },
                "required": ["action"]
            }),
        ),
        _ => return None,
    };
    Some(ToolSpec {
        name: tool.as_str().to_owned(),
        description: description.to_owned(),
        input_schema: schema,
    })
}

impl TeamTools {
    pub fn new(store: Store) -> TeamTools {
        TeamTools {
            store,
            pane: None,
            lead: None,
            hooks: None,
            last_peer_dm: Mutex::new(None),
        }
    }

    /// Takes the last direct message to a peer, for the idle notification that reports it.
    pub fn take_last_peer_dm(&self) -> Option<String> {
        self.last_peer_dm.lock().unwrap().take()
    }

    fn task_hooks(&self, ctx: &ToolContext) -> task_events::Hooks<'_> {
        task_events::Hooks {
            runner: self.hooks.as_deref(),
            mode: ctx.mode(),
        }
    }

    fn my_color(&self, ctx: &ToolContext) -> Option<String> {
        self.store
            .roster()
            .load()
            .ok()?
            .member(ctx.agent.as_str())
            .and_then(|m| m.color.clone())
    }

    fn send_protocol(
        &self,
        ctx: &ToolContext,
        to: &str,
        message: &Protocol,
    ) -> Result<(), ToolOutcome> {
        self.store
            .mail()
            .send(
                to,
                Envelope::new(ctx.agent.as_str(), message.to_text()).with_color(self.my_color(ctx)),
            )
            .map(|_| ())
            .map_err(|e| ToolOutcome::err(e.to_string()))
    }

    fn send_message(&self, input: Value, ctx: &ToolContext) -> ToolOutcome {
        let run = || -> Result<ToolOutcome, ToolOutcome> {
            let to = required_str(&input, "to")?.trim();
            if to.contains('@') {
                return Err(ToolOutcome::err("address teammates by name, without @team"));
            }
            if to.eq_ignore_ascii_case(ctx.agent.as_str()) {
                return Err(ToolOutcome::err("you cannot send a message to yourself"));
            }
            let summary = input
                .get("summary")
                .and_then(Value::as_str)
                .map(str::to_owned);
            match input.get("message") {
                Some(Value::String(text)) => {
                    let sent = self
                        .store
                        .mail()
                        .send(
                            to,
                            Envelope::new(ctx.agent.as_str(), text.clone())
                                .with_summary(summary.clone())
                                .with_color(self.my_color(ctx)),
                        )
                        .map_err(|e| ToolOutcome::err(e.to_string()))?;
                    if to != "*" && to != LEAD {
                        let preview = summary.unwrap_or_else(|| text.chars().take(80).collect());
                        *self.last_peer_dm.lock().unwrap() = Some(format!("[to {to}] {preview}"));
                    }
                    let names: Vec<&str> = sent.iter().map(|s| s.to.as_str()).collect();
                    Ok(ToolOutcome::ok(if to == "*" {
                        format!(
                            "Message broadcast to {} teammate(s): {}",
                            names.len(),
                            names.join(", ")
                        )
                    } else {
                        format!("Message sent to {to}")
                    }))
                }
                Some(Value::Object(obj)) => self.structured(ctx, to, obj),
                _ => Err(ToolOutcome::err(
                    "message must be a string or a structured message object",
                )),
            }
        };
        run().unwrap_or_else(|e| e)
    }

    fn structured(
        &self,
        ctx: &ToolContext,
        to: &str,
        obj: &Map<String, Value>,
    ) -> Result<ToolOutcome, ToolOutcome> {
        let s = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_owned);
        let approve = obj.get("approve").and_then(Value::as_bool);
        let now = clock::now_iso();
        let me = ctx.agent.to_string();
        match s("type").as_deref() {
            Some("shutdown_request") => {
                if !ctx.agent.is_lead() {
                    return Err(ToolOutcome::err(
                        "only the team lead can ask a teammate to shut down",
                    ));
                }
                if to == "*" || to == LEAD {
                    return Err(ToolOutcome::err(
                        "a shutdown request goes to one teammate by name",
                    ));
                }
                let request_id = protocol::shutdown_request_id(to);
                self.send_protocol(
                    ctx,
                    to,
                    &Protocol::ShutdownRequest(ShutdownRequest {
                        request_id: request_id.clone(),
                        from: me,
                        reason: s("reason"),
                        timestamp: now,
                    }),
                )?;
                Ok(ToolOutcome::ok(format!(
                    "Shutdown request sent to {to}. Request ID: {request_id}"
                )))
            }
            Some("shutdown_response") => {
                let request_id = s("request_id")
                    .ok_or_else(|| ToolOutcome::err("shutdown_response needs request_id"))?;
                match approve {
                    Some(true) => {
                        let pane = self.pane.clone();
                        self.send_protocol(
                            ctx,
                            LEAD,
                            &Protocol::ShutdownApproved(ShutdownApproved {
                                request_id,
                                from: me,
                                timestamp: now,
                                backend_type: pane.as_ref().map(|_| "tmux".to_owned()),
                                pane_id: pane,
                            }),
                        )?;
                        ctx.request_stop();
                        Ok(ToolOutcome::ok(
                            "Shutdown approved. You will stop after this step.",
                        ))
                    }
                    Some(false) => {
                        let reason = s("reason").ok_or_else(|| {
                            ToolOutcome::err("rejecting a shutdown needs a reason")
                        })?;
                        self.send_protocol(
                            ctx,
                            LEAD,
                            &Protocol::ShutdownRejected(ShutdownRejected {
                                request_id,
                                from: me,
                                reason,
                                timestamp: now,
                            }),
                        )?;
                        Ok(ToolOutcome::ok("Shutdown rejected; keep working."))
                    }
                    None => Err(ToolOutcome::err(
                        "shutdown_response needs approve: true or false",
                    )),
                }
            }
            Some(kind @ ("plan_approval_response" | "permission_response")) => {
                self.answer_request(ctx, to, kind, obj)
            }
            Some(other) => Err(ToolOutcome::err(format!(
                "unknown message type '{other}'; use a string, or shutdown_request, shutdown_response, plan_approval_response, permission_response"
            ))),
            None => Err(ToolOutcome::err("a structured message needs a type")),
        }
    }

    /// The lead's answer to a plan approval or permission request, through the approvals
    /// record so each request is answered exactly once.
    fn answer_request(
        &self,
        ctx: &ToolContext,
        to: &str,
        kind: &str,
        obj: &Map<String, Value>,
    ) -> Result<ToolOutcome, ToolOutcome> {
        let s = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_owned);
        let approve = obj.get("approve").and_then(Value::as_bool);
        let me = ctx.agent.to_string();
        if !ctx.agent.is_lead() {
            return Err(ToolOutcome::err(
                "only the team lead answers plan approval and permission requests",
            ));
        }
        let request_id =
            s("request_id").ok_or_else(|| ToolOutcome::err(format!("{kind} needs request_id")))?;
        let approved = approve
            .ok_or_else(|| ToolOutcome::err(format!("{kind} needs approve: true or false")))?;
        let feedback = s("feedback").or_else(|| s("reason"));
        let decided = self
            .store
            .approvals()
            .resolve(
                &request_id,
                approvals::Decision {
                    approve: approved,
                    feedback,
                    mode: s("permission_mode"),
                    by: me,
                    via: None,
                },
            )
            .map_err(|e| ToolOutcome::err(e.to_string()))?;
        if decided.agent != to && to != "*" {
            tracing::info!(
                "answered {request_id} of {} (SendMessage named {to})",
                decided.agent
            );
        }
        Ok(ToolOutcome::ok(format!(
            "{} {}'s request [{request_id}]",
            if approved { "Approved" } else { "Rejected" },
            decided.agent
        )))
    }

    fn task_create(&self, input: Value, ctx: &ToolContext) -> ToolOutcome {
        let run = || -> Result<ToolOutcome, ToolOutcome> {
            let files = leases::normalize_all(&strings(&input, "files"))
                .map_err(|e| ToolOutcome::err(e.to_string()))?;
            let created = self
                .task_hooks(ctx)
                .create(
                    self.store.tasks(),
                    NewTask {
                        subject: required_str(&input, "subject")?.to_owned(),
                        description: input
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                        active_form: input
                            .get("activeForm")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        blocked_by: strings(&input, "blockedBy"),
                        metadata: leases::with_files(
                            input.get("metadata").and_then(Value::as_object).cloned(),
                            &files,
                        ),
                    },
                )
                .map_err(|e| ToolOutcome::err(e.to_string()))?;
            let task = match created {
                Created::Kept(task) => task,
                Created::Refused { feedback, .. } => {
                    return Err(ToolOutcome::err(format!(
                        "TaskCreated hook feedback:\n{feedback}"
                    )));
                }
            };
            Ok(ToolOutcome::ok(format!(
                "Task #{} created successfully: {}",
                task.id, task.subject
            )))
        };
        run().unwrap_or_else(|e| e)
    }

    fn task_get(&self, input: Value) -> ToolOutcome {
        let run = || -> Result<ToolOutcome, ToolOutcome> {
            let id = input
                .get("taskId")
                .map(value_str)
                .ok_or_else(|| ToolOutcome::err("missing taskId"))?;
            let t = self
                .store
                .tasks()
                .get(&id)
                .map_err(|e| ToolOutcome::err(e.to_string()))?;
            let mut out = task_line(&t);
            if !t.blocks.is_empty() {
                out.push_str(&format!("\nBlocks: #{}", t.blocks.join(", #")));
            }
            if !t.description.is_empty() {
                out.push_str(&format!("\n\n{}", t.description));
            }
            Ok(ToolOutcome::ok(out))
        };
        run().unwrap_or_else(|e| e)
    }

    fn task_list(&self) -> ToolOutcome {
        let run = || -> Result<ToolOutcome, ToolOutcome> {
            let tasks = self
                .store
                .tasks()
                .list()
                .map_err(|e| ToolOutcome::err(e.to_string()))?;
            let lines: Vec<String> = tasks
                .iter()
                .filter(|t| !t.is_internal())
                .map(task_line)
                .collect();
            Ok(ToolOutcome::ok(if lines.is_empty() {
                "No tasks.".to_owned()
            } else {
                lines.join("\n")
            }))
        };
        run().unwrap_or_else(|e| e)
    }

    fn task_update(&self, input: Value, ctx: &ToolContext) -> ToolOutcome {
        let run = || -> Result<ToolOutcome, ToolOutcome> {
            let store = &self.store;
            let tasks = store.tasks();
            let id = input
                .get("taskId")
                .map(value_str)
                .ok_or_else(|| ToolOutcome::err("missing taskId"))?;
            let status = input.get("status").and_then(Value::as_str);
            if status == Some("deleted") {
                tasks.delete(&id).map_err(err)?;
                return Ok(ToolOutcome::ok(format!("Task #{id} deleted")));
            }
            let status = status.map(Status::parse).transpose().map_err(err)?;
            let current = tasks.get(&id).map_err(err)?;
            let landed_commit = match status {
                Some(Status::Completed) => worktree_commit(&self.store, ctx.agent.as_str(), &id)
                    .map_err(ToolOutcome::err)?,
                _ => None,
            };
            if status == Some(Status::Completed)
                && let Some(feedback) = self.task_hooks(ctx).refuse_completion(&current)
            {
                return Err(ToolOutcome::err(format!(
                    "TaskCompleted hook feedback:\n{feedback}"
                )));
            }
            let me = ctx.agent.as_str();
            // A new owner goes through the real claim; starting an unowned task claims it.
            let new_owner = match input.get("owner").and_then(Value::as_str) {
                Some(o) if !o.is_empty() && !current.owned_by(o) => Some(o.to_owned()),
                None if status == Some(Status::InProgress) && current.owner.is_none() => {
                    Some(me.to_owned())
                }
                _ => None,
            };
            let mut notes = Vec::new();
            if let Some(owner) = &new_owner {
                self.assign(ctx, &id, &current, owner)?;
                notes.push(format!("owner={owner}"));
            }
            let clear_owner = input.get("owner").and_then(Value::as_str) == Some("");
            let patch = TaskPatch {
                subject: input
                    .get("subject")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                description: input
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                active_form: input
                    .get("activeForm")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                // The claim already set in_progress.
                status: status.filter(|s| !(new_owner.is_some() && *s == Status::InProgress)),
                owner: clear_owner.then_some(None),
                add_blocked_by: strings(&input, "addBlockedBy"),
                add_blocks: strings(&input, "addBlocks"),
                metadata: match (
                    input.get("metadata").and_then(Value::as_object),
                    landed_commit,
                ) {
                    (m, Some(commit)) => {
                        let mut m = m.cloned().unwrap_or_default();
                        m.insert(TASK_COMMIT_KEY.to_owned(), commit.into());
                        Some(m)
                    }
                    (m, None) => m.cloned(),
                },
            };
            let touched = patch.subject.is_some()
                || patch.description.is_some()
                || patch.active_form.is_some()
                || patch.status.is_some()
                || patch.owner.is_some()
                || !patch.add_blocked_by.is_empty()
                || !patch.add_blocks.is_empty()
                || patch.metadata.is_some();
            let task = if touched {
                tasks.update(&id, patch).map_err(err)?
            } else {
                tasks.get(&id).map_err(err)?
            };
            if let Some(s) = status {
                notes.push(format!("status={}", s.as_str()));
            }
            Ok(ToolOutcome::ok(format!(
                "Updated task #{id}{}: {}",
                if notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", notes.join(", "))
                },
                task_line(&task)
            )))
        };
        run().unwrap_or_else(|e| e)
    }

    /// Gives task `current` to `owner` through the real claim (a task someone owns is
    /// released first, by the lead only), and tells a new owner other than the caller with
    /// a `task_assignment`.
    fn assign(
        &self,
        ctx: &ToolContext,
        id: &str,
        current: &Task,
        owner: &str,
    ) -> Result<(), ToolOutcome> {
        let (store, me) = (&self.store, ctx.agent.as_str());
        let tasks = store.tasks();
        let config = store.roster().load().map_err(err)?;
        config.require(owner).map_err(err)?;
        if current.owner.is_some() && !ctx.agent.is_lead() {
            return Err(ToolOutcome::err(format!(
                "task #{id} is owned by {}; only the lead reassigns owned tasks",
                current.owner.as_deref().unwrap_or_default()
            )));
        }
        if current.owner.is_some() {
            tasks
                .update(
                    id,
                    TaskPatch {
                        owner: Some(None),
                        status: Some(Status::Pending),
                        ..TaskPatch::default()
                    },
                )
                .map_err(err)?;
        }
        let claimed = tasks
            .claim(id, owner, false)
            .map_err(err)?
            .map_err(|r| err(r.into_error(id, owner)))?;
        if owner != me {
            let assignment = Protocol::TaskAssignment(TaskAssignment {
                task_id: claimed.id.clone(),
                subject: claimed.subject.clone(),
                description: claimed.description.clone(),
                assigned_by: me.to_owned(),
                timestamp: clock::now_iso(),
            });
            let to = AgentName::parse_any(owner).map_err(err)?;
            store
                .mail()
                .deliver(
                    &to,
                    Envelope::new(me, assignment.to_text()).with_color(self.my_color(ctx)),
                )
                .map_err(err)?;
        }
        Ok(())
    }

    /// The lead's Agent tool: starts teammates, each in its own pane; the calls of one turn
    /// together (see [`Launcher::spawn_many`]). One outcome per call, in order.
    fn spawn_teammates(&self, inputs: &[Value], ctx: &ToolContext) -> Vec<ToolOutcome> {
        let Some(powers) = self.lead.as_ref() else {
            let refused =
                || ToolOutcome::err("only the team lead can spawn teammates (the roster is flat)");
            return inputs.iter().map(|_| refused()).collect();
        };
        let current = match self.store.roster().load() {
            Ok(config) => config.teammates().count(),
            Err(e) => return inputs.iter().map(|_| err(e.copy())).collect(),
        };
        // The team's limit counts the calls before each one.
        let mut room = powers.max_teammates.saturating_sub(current);
        let mut outcomes: Vec<Option<ToolOutcome>> = Vec::with_capacity(inputs.len());
        let mut reqs = Vec::new();
        // Teammates on other hosts, by their outcome's index: each starts over ssh, all at
        // once, beside the local ones.
        let mut remote: Vec<(usize, String, SpawnRequest)> = Vec::new();
        for input in inputs {
            match agent_request(input, ctx) {
                Err(refused) => outcomes.push(Some(refused)),
                Ok(req) if room > 0 && let Some(host) = self.host_for(powers, input, &req, &remote) => {
                    room -= 1;
                    remote.push((outcomes.len(), host, req));
                    outcomes.push(None);
                }
                Ok(_) if room == 0 => outcomes.push(Some(ToolOutcome::err(format!(
                    "the team already has {} teammate(s), the most this run allows; give more tasks to the ones you have",
                    current + reqs.len()
                )))),
                Ok(req) => {
                    room -= 1;
                    reqs.push(req);
                    outcomes.push(None);
                }
            }
        }
        let (locals, remotes) = std::thread::scope(|scope| {
            let started: Vec<_> = remote
                .iter()
                .map(|(i, host, req)| (*i, scope.spawn(|| self.spawn_on_host(powers, host, req))))
                .collect();
            let locals = powers.launcher.spawn_many(&reqs);
            let remotes: Vec<(usize, ToolOutcome)> = started
                .into_iter()
                .map(|(i, h)| {
                    let outcome = h
                        .join()
                        .unwrap_or_else(|_| ToolOutcome::err("the spawn on its host panicked"));
                    (i, outcome)
                })
                .collect();
            (locals, remotes)
        });
        for (i, outcome) in remotes {
            outcomes[i] = Some(outcome);
        }
        let mut spawned = locals.into_iter();
        outcomes
            .into_iter()
            .map(|o| {
                o.unwrap_or_else(|| match spawned.next().expect("one result per request") {
                    Ok(s) => self.spawned_outcome(&s),
                    Err(e) => err(e),
                })
            })
            .collect()
    }

    /// Where an Agent call's teammate goes, when not this machine: the call's `host`, else
    /// its agent definition's, else the run's least loaded (`--hosts`), counting those
    /// `placed` already in this batch.
    fn host_for(
        &self,
        powers: &LeadPowers,
        input: &Value,
        req: &SpawnRequest,
        placed: &[(usize, String, SpawnRequest)],
    ) -> Option<String> {
        if let Some(h) = input.get("host").and_then(Value::as_str) {
            return Some(h.to_owned());
        }
        if req.agent_type.is_some()
            && let Some(h) = powers.launcher.defined_host(req)
        {
            return Some(h);
        }
        (!powers.hosts.is_empty()).then(|| self.least_loaded(&powers.hosts, placed))
    }

    /// Of `hosts`, the one with the fewest of the team's teammates, and of those `placed`
    /// (the first of those).
    fn least_loaded(&self, hosts: &[String], placed: &[(usize, String, SpawnRequest)]) -> String {
        let roster = self.store.roster().load().ok();
        let on = |h: &String| {
            let there = roster.as_ref().map_or(0, |c| {
                c.teammates()
                    .filter(|m| crate::spawn::remote::host_of(m) == Some(h.as_str()))
                    .count()
            });
            there + placed.iter().filter(|(_, p, _)| p == h).count()
        };
        hosts
            .iter()
            .min_by_key(|h| on(h))
            .cloned()
            .unwrap_or_default()
    }

    /// A teammate on host `name`, started over ssh.
    fn spawn_on_host(&self, powers: &LeadPowers, name: &str, req: &SpawnRequest) -> ToolOutcome {
        let launcher = &powers.launcher;
        let started = crate::spawn::remote::ssh_to(self.store.root(), name, &launcher.dirs)
            .and_then(|ssh| launcher.spawn_on_host(req, &ssh));
        match started {
            Ok(s) => self.spawned_outcome(&s),
            Err(e) => ToolOutcome::err(e.to_string()),
        }
    }

    fn spawned_outcome(&self, spawned: &Spawned) -> ToolOutcome {
        let worktree = spawned
            .worktree
            .as_ref()
            .map(|w| format!("\nworktree: {} (branch {})", w.path.display(), w.branch))
            .unwrap_or_default();
        ToolOutcome::ok(format!(
            "Spawned successfully.\nagent_id: {}@{}\nname: {}\nteam_name: {}\npane: {}{worktree}\nThe agent is now running and will receive instructions via mailbox.",
            spawned.name,
            self.store.team(),
            spawned.name,
            self.store.team(),
            spawned.pane
        ))
    }

    /// The lead's TeamStatus tool.
    fn team_status(&self) -> ToolOutcome {
        let run = || -> Result<ToolOutcome, ToolOutcome> {
            let tmux = self.lead.as_ref().map(|p| &p.launcher.tmux);
            let seen = crate::life::status::observe(&self.store, tmux)
                .map_err(|e| ToolOutcome::err(e.to_string()))?;
            Ok(ToolOutcome::ok(crate::life::status::render_for_width(
                &seen,
                clock::now_ms(),
                90,
            )))
        };
        run().unwrap_or_else(|e| e)
    }
}

/// The teammate an Agent call asks for, or why the call is refused.
fn agent_request(input: &Value, ctx: &ToolContext) -> Result<SpawnRequest, ToolOutcome> {
    let err = |e: swarm_util::error::Error| ToolOutcome::err(e.to_string());
    let name = AgentName::new(required_str(input, "name")?).map_err(err)?;
    let prompt = required_str(input, "prompt")?.to_owned();
    let mode = input.get("mode").and_then(Value::as_str);
    let plan = mode == Some("plan");
    let permission_mode = match mode {
        Some(m) if !plan => Some(m.parse().map_err(err)?),
        _ => None,
    };
    let text = |k: &str| input.get(k).and_then(Value::as_str);
    Ok(SpawnRequest {
        name,
        prompt: Some(prompt),
        agent_type: text("subagent_type").map(str::to_owned),
        model: text("model").map(str::to_owned),
        provider: text("provider")
            .map(|p| p.parse::<swarm_llm::Provider>())
            .transpose()
            .map_err(|e| ToolOutcome::err(e.to_string()))?,
        // Never the model's to choose: a base URL decides where the provider's key goes.
        base_url: None,
        permission_mode,
        plan_mode_required: plan,
        cwd: ctx.cwd.clone(),
        color: None,
        isolation: text("isolation").map(str::parse).transpose().map_err(err)?,
        engine: text("engine").map(str::parse).transpose().map_err(err)?,
        // Per-agent budgets are the person's to give (`swarm spawn`); the lead's
        // teammates keep to the team's.
        budget: Default::default(),
        context_window: None,
        anthropic_version: None,
    })
}

/// For a teammate completing `task` in its worktree: the commit its branch is at, which
/// the lead's merge queue lands for the task; refused (why) while it has uncommitted
/// files, which the queue (it takes commits only) would leave behind.
fn worktree_commit(store: &Store, agent: &str, task: &str) -> Result<Option<String>, String> {
    let Ok(Some(record)) = store.worktrees().worktree(agent) else {
        return Ok(None);
    };
    let Ok(changes) = swarm_git::worktree::changes(&record) else {
        return Ok(None);
    };
    if changes.files > 0 {
        return Err(format!(
            "commit your work first: your worktree {} has {} uncommitted file(s), and the merge queue takes only commits. Run `git add -A && git commit -m \"<what and why>\"` there, then complete task #{task}.",
            record.path.display(),
            changes.files
        ));
    }
    Ok(swarm_git::worktree::branch_head(&record))
}

fn strings(input: &Value, key: &str) -> Vec<String> {
    match input.get(key) {
        Some(Value::Array(a)) => a.iter().map(value_str).collect(),
        Some(v @ (Value::String(_) | Value::Number(_))) => vec![value_str(v)],
        _ => Vec::new(),
    }
}

pub fn task_line(t: &Task) -> String {
    let mut s = format!("#{} [{}] {}", t.id, t.status.as_str(), t.subject);
    if let Some(o) = &t.owner {
        s.push_str(&format!(" (owner: {o})"));
    }
    if !t.blocked_by.is_empty() {
        s.push_str(&format!(" [blocked by #{}]", t.blocked_by.join(", #")));
    }
    s
}

/// A failure, as the model sees it.
fn err(e: impl std::fmt::Display) -> ToolOutcome {
    ToolOutcome::err(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_from_its_layer() {
        for t in ToolName::ALL.into_iter().chain(ToolName::LEAD) {
            let (team, general) = (spec(t), swarm_agent::tools::general_spec(t));
            assert!(
                team.is_none() || general.is_none(),
                "{t:?} is specified twice"
            );
            let found = team.or(general).expect("every tool has a spec");
            assert_eq!(found.input_schema["type"], "object", "{}", found.name);
            assert_eq!(ToolName::parse(&found.name), Some(t));
        }
    }
}
