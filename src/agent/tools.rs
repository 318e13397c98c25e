//! The tools an agent can call: their names and input schemas (Claude Code's, so prompts
//! carry over), what each needs permission for, and dispatch to the implementations.
//!
//! Tools never fail the loop: every problem becomes a tool result with `is_error`, which the
//! model can read and act on. Outputs over the cap are cut with a marker saying how much
//! was dropped.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::agent::{bash, fs_tools};
use crate::config::permissions::{AllowRule, PermissionMode, ToolKind};
use crate::llm::ToolSpec;
use crate::store::layout::Root;
use crate::store::names::{AgentName, TeamName};
use crate::team::tools as team_tools;

/// Largest tool output sent to the model, in bytes.
pub const DEFAULT_OUTPUT_CAP: usize = 30_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolName {
    Bash,
    Read,
    Write,
    Edit,
    Glob,
    Grep,
    SendMessage,
    TaskCreate,
    TaskGet,
    TaskList,
    TaskUpdate,
    ExitPlanMode,
    Agent,
    TeamStatus,
}

impl ToolName {
    /// A teammate's tools.
    pub const ALL: [ToolName; 12] = [
        ToolName::Bash,
        ToolName::Read,
        ToolName::Write,
        ToolName::Edit,
        ToolName::Glob,
        ToolName::Grep,
        ToolName::SendMessage,
        ToolName::TaskCreate,
        ToolName::TaskGet,
        ToolName::TaskList,
        ToolName::TaskUpdate,
        ToolName::ExitPlanMode,
    ];

    /// The lead's tools: the team, and reading (it delegates the changes).
    pub const LEAD: [ToolName; 10] = [
        ToolName::Agent,
        ToolName::SendMessage,
        ToolName::TaskCreate,
        ToolName::TaskGet,
        ToolName::TaskList,
        ToolName::TaskUpdate,
        ToolName::TeamStatus,
        ToolName::Read,
        ToolName::Glob,
        ToolName::Grep,
    ];

    /// The tools that need no team.
    pub const SOLO: [ToolName; 7] = [
        ToolName::Bash,
        ToolName::Read,
        ToolName::Write,
        ToolName::Edit,
        ToolName::Glob,
        ToolName::Grep,
        ToolName::ExitPlanMode,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Bash => "Bash",
            ToolName::Read => "Read",
            ToolName::Write => "Write",
            ToolName::Edit => "Edit",
            ToolName::Glob => "Glob",
            ToolName::Grep => "Grep",
            ToolName::SendMessage => "SendMessage",
            ToolName::TaskCreate => "TaskCreate",
            ToolName::TaskGet => "TaskGet",
            ToolName::TaskList => "TaskList",
            ToolName::TaskUpdate => "TaskUpdate",
            ToolName::ExitPlanMode => "ExitPlanMode",
            ToolName::Agent => "Agent",
            ToolName::TeamStatus => "TeamStatus",
        }
    }

    pub fn parse(name: &str) -> Option<ToolName> {
        ToolName::ALL
            .into_iter()
            .chain(ToolName::LEAD)
            .find(|t| t.as_str() == name)
    }

    pub fn kind(self) -> ToolKind {
        match self {
            ToolName::Bash => ToolKind::Execute,
            ToolName::Write | ToolName::Edit => ToolKind::Edit,
            ToolName::Read | ToolName::Glob | ToolName::Grep => ToolKind::ReadOnly,
            ToolName::SendMessage
            | ToolName::TaskCreate
            | ToolName::TaskGet
            | ToolName::TaskList
            | ToolName::TaskUpdate
            | ToolName::Agent
            | ToolName::TeamStatus => ToolKind::Team,
            ToolName::ExitPlanMode => ToolKind::PlanExit,
        }
    }

    pub fn spec(self) -> ToolSpec {
        let (description, schema) = match self {
            ToolName::Bash => (
                "Run a shell command in the working directory. Output (stdout and stderr) is returned; long output is truncated.",
                json!({"type": "object", "properties": {
                    "command": {"type": "string", "description": "The command to run"},
                    "timeout": {"type": "number", "description": "Timeout in milliseconds (max 600000)"},
                    "description": {"type": "string", "description": "What the command does, in 5-10 words"}
                }, "required": ["command"]}),
            ),
            ToolName::Read => (
                "Read a file. Returns numbered lines (cat -n style). Use offset and limit for large files.",
                json!({"type": "object", "properties": {
                    "file_path": {"type": "string", "description": "Path of the file (absolute, or relative to the working directory)"},
                    "offset": {"type": "number", "description": "Line to start at (1-based)"},
                    "limit": {"type": "number", "description": "Number of lines to read"}
                }, "required": ["file_path"]}),
            ),
            ToolName::Write => (
                "Write a file, replacing it if it exists and creating parent directories.",
                json!({"type": "object", "properties": {
                    "file_path": {"type": "string"},
                    "content": {"type": "string"}
                }, "required": ["file_path", "content"]}),
            ),
            ToolName::Edit => (
                "Replace text in a file. old_string must occur exactly once unless replace_all is true.",
                json!({"type": "object", "properties": {
                    "file_path": {"type": "string"},
                    "old_string": {"type": "string"},
                    "new_string": {"type": "string"},
                    "replace_all": {"type": "boolean", "default": false}
                }, "required": ["file_path", "old_string", "new_string"]}),
            ),
            ToolName::Glob => (
                "Find files by glob pattern (e.g. \"src/**/*.rs\"), honouring .gitignore.",
                json!({"type": "object", "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string", "description": "Directory to search in (default: the working directory)"}
                }, "required": ["pattern"]}),
            ),
            ToolName::Grep => (
                "Search file contents with a regular expression, honouring .gitignore.",
                json!({"type": "object", "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string"},
                    "glob": {"type": "string", "description": "Only files matching this glob"},
                    "type": {"type": "string", "description": "Only files of this type, as ripgrep names them (rust, py, js, go...)"},
                    "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]},
                    "-A": {"type": "number", "description": "Lines of context after each match (content mode)"},
                    "-B": {"type": "number", "description": "Lines of context before each match (content mode)"},
                    "-C": {"type": "number", "description": "Lines of context before and after each match (content mode)"},
                    "-n": {"type": "boolean", "description": "Show line numbers (content mode; default true)"},
                    "-i": {"type": "boolean"},
                    "head_limit": {"type": "number"},
                    "multiline": {"type": "boolean", "description": "Let a match span lines, with . matching newlines"}
                }, "required": ["pattern"]}),
            ),
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
            ToolName::ExitPlanMode => (
                "Present your plan and ask to leave plan mode. Wait for approval before editing files or running commands.",
                json!({"type": "object", "properties": {"plan": {"type": "string", "description": "The plan, in Markdown"}}, "required": ["plan"]}),
            ),
            ToolName::Agent => (
                "Spawn a teammate in its own tmux pane. It receives `prompt` as its first instructions, then works on the shared task list by itself. Use mode \"plan\" to make it present a plan for your approval before it changes anything.",
                json!({"type": "object", "properties": {
                    "name": {"type": "string", "description": "A short unique name: letters, digits, - and _"},
                    "prompt": {"type": "string", "description": "Its first instructions"},
                    "description": {"type": "string", "description": "3-5 words on its role"},
                    "subagent_type": {"type": "string", "description": "An agent type: general-purpose, Explore, Plan, or one defined in .claude/agents"},
                    "model": {"type": "string"},
                    "mode": {"type": "string", "enum": ["plan", "default", "acceptEdits", "bypassPermissions"]},
                    "isolation": {"type": "string", "enum": ["worktree"], "description": "worktree: it works in its own git worktree on branch swarm/<team>/<name>, so its changes do not touch the shared checkout"}
                }, "required": ["name", "prompt"]}),
            ),
            ToolName::TeamStatus => (
                "The team right now: each member's state (idle, working, awaiting-approval, dead...), current task and last activity, and the task counts.",
                json!({"type": "object", "properties": {}}),
            ),
        };
        ToolSpec {
            name: self.as_str().to_owned(),
            description: description.to_owned(),
            input_schema: schema,
        }
    }
}

/// A tool's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub content: String,
    pub is_error: bool,
}

impl ToolOutcome {
    pub fn ok(content: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            content: content.into(),
            is_error: false,
        }
    }

    pub fn err(content: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            content: content.into(),
            is_error: true,
        }
    }
}

/// The agent's team, when it has one.
#[derive(Debug, Clone)]
pub struct TeamContext {
    pub root: Root,
    pub team: TeamName,
}

/// Everything tools share during one agent's life.
#[derive(Debug)]
pub struct ToolContext {
    pub cwd: PathBuf,
    pub agent: AgentName,
    pub team: Option<TeamContext>,
    pub mode: Mutex<PermissionMode>,
    pub allow: Vec<AllowRule>,
    pub bash_timeout: Duration,
    pub output_cap: usize,
    /// Set by SendMessage when this agent approved its own shutdown.
    pub shutdown_approved: AtomicBool,
    /// The last direct message this agent sent to a peer, for its idle notification.
    pub last_peer_dm: Mutex<Option<String>>,
    pub cancel: CancellationToken,
    /// What only the lead can do: spawn teammates.
    pub lead: Option<LeadPowers>,
    /// The user's hooks for this agent's events (TaskCreated, TaskCompleted).
    pub hooks: Option<std::sync::Arc<crate::config::hooks::Runner>>,
}

/// The lead's means to start teammates, as `swarm spawn` would.
#[derive(Debug, Clone)]
pub struct LeadPowers {
    pub settings: crate::team::inherit::LeadSettings,
    pub env: std::collections::BTreeMap<String, String>,
    pub tmux: crate::tmux::Tmux,
    pub inside_tmux: bool,
    pub max_teammates: usize,
}

impl ToolContext {
    pub fn new(
        cwd: PathBuf,
        agent: AgentName,
        team: Option<TeamContext>,
        mode: PermissionMode,
    ) -> ToolContext {
        ToolContext {
            cwd,
            agent,
            team,
            mode: Mutex::new(mode),
            allow: Vec::new(),
            bash_timeout: Duration::from_secs(120),
            output_cap: DEFAULT_OUTPUT_CAP,
            shutdown_approved: AtomicBool::new(false),
            last_peer_dm: Mutex::new(None),
            cancel: CancellationToken::new(),
            lead: None,
            hooks: None,
        }
    }

    pub fn mode(&self) -> PermissionMode {
        *self.mode.lock().unwrap()
    }

    pub fn set_mode(&self, mode: PermissionMode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub fn shutdown_approved(&self) -> bool {
        self.shutdown_approved.load(Ordering::SeqCst)
    }

    pub fn team(&self) -> Result<&TeamContext, ToolOutcome> {
        self.team
            .as_ref()
            .ok_or_else(|| ToolOutcome::err("this agent is not part of a team"))
    }
}

/// The command or path a call touches, for the permission check and the request text.
pub fn call_target(
    tool: ToolName,
    input: &Value,
    ctx: &ToolContext,
) -> (Option<String>, Option<PathBuf>) {
    let s = |k: &str| input.get(k).and_then(Value::as_str);
    match tool {
        ToolName::Bash => (s("command").map(str::to_owned), None),
        ToolName::Write | ToolName::Edit | ToolName::Read => (
            None,
            s("file_path").map(|p| fs_tools::absolute(&ctx.cwd, p)),
        ),
        _ => (None, None),
    }
}

/// A one-line description of a call, for displays and permission requests.
pub fn describe_call(tool: ToolName, input: &Value) -> String {
    let s = |k: &str| input.get(k).and_then(Value::as_str).unwrap_or("");
    let detail = match tool {
        ToolName::Bash => s("command").to_owned(),
        ToolName::Read | ToolName::Write | ToolName::Edit => s("file_path").to_owned(),
        ToolName::Glob | ToolName::Grep => s("pattern").to_owned(),
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
        ToolName::TaskList | ToolName::ExitPlanMode | ToolName::TeamStatus => String::new(),
    };
    let detail: String = detail
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(120)
        .collect();
    format!("{}({detail})", tool.as_str())
}

/// A JSON string or number as text (models send ids either way).
pub fn value_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.trim_start_matches('#').to_owned(),
        other => other.to_string(),
    }
}

/// Runs one allowed call. (`ExitPlanMode` is the runtime's, not a tool's.)
pub async fn run(tool: ToolName, input: Value, ctx: &ToolContext) -> ToolOutcome {
    let outcome = match tool {
        // Bash caps its output while reading it, so a huge stream never sits in memory.
        ToolName::Bash => return bash::run(input, ctx).await,
        ToolName::Read => fs_tools::read(input, ctx),
        ToolName::Write => fs_tools::write(input, ctx),
        ToolName::Edit => fs_tools::edit(input, ctx),
        ToolName::Glob => fs_tools::glob(input, ctx),
        ToolName::Grep => fs_tools::grep(input, ctx),
        ToolName::SendMessage => team_tools::send_message(input, ctx),
        ToolName::TaskCreate => team_tools::task_create(input, ctx),
        ToolName::TaskGet => team_tools::task_get(input, ctx),
        ToolName::TaskList => team_tools::task_list(ctx),
        ToolName::TaskUpdate => team_tools::task_update(input, ctx),
        ToolName::Agent => team_tools::spawn_teammate(input, ctx),
        ToolName::TeamStatus => team_tools::team_status(ctx),
        ToolName::ExitPlanMode => ToolOutcome::err("ExitPlanMode is handled by the agent runtime"),
    };
    truncate(outcome, ctx.output_cap)
}

/// Cuts an outcome to `cap` bytes (at a character boundary) and says how much was cut.
pub fn truncate(mut outcome: ToolOutcome, cap: usize) -> ToolOutcome {
    if outcome.content.len() > cap {
        let mut cut = cap;
        while !outcome.content.is_char_boundary(cut) {
            cut -= 1;
        }
        let dropped = outcome.content.len() - cut;
        outcome.content.truncate(cut);
        outcome.content.push_str(&truncation_marker(dropped));
    }
    outcome
}

pub fn truncation_marker(dropped: usize) -> String {
    format!("\n… [output truncated: {dropped} more bytes not shown]")
}

/// Input field helpers shared by the implementations.
pub fn required_str<'a>(input: &'a Value, key: &str) -> Result<&'a str, ToolOutcome> {
    input
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolOutcome::err(format!("missing required string parameter '{key}'")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_marks_what_was_cut() {
        let t = truncate(ToolOutcome::ok("é".repeat(10)), 5);
        assert!(t.content.starts_with("éé"));
        assert!(
            t.content.contains("output truncated: 16 more bytes"),
            "{}",
            t.content
        );
        assert_eq!(truncate(ToolOutcome::ok("short"), 5).content, "short");
    }

    #[test]
    fn every_tool_has_an_object_schema() {
        for t in ToolName::ALL.into_iter().chain(ToolName::LEAD) {
            let spec = t.spec();
            assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
            assert_eq!(ToolName::parse(&spec.name), Some(t));
        }
    }

    #[test]
    fn grep_declares_claude_codes_options() {
        let schema = ToolName::Grep.spec().input_schema;
        for option in [
            "pattern",
            "path",
            "glob",
            "type",
            "output_mode",
            "-A",
            "-B",
            "-C",
            "-n",
            "-i",
            "head_limit",
            "multiline",
        ] {
            assert!(schema["properties"].get(option).is_some(), "{option}");
        }
    }
}
