//! What a tool call is given and what it gives back: the context every tool of one agent
//! shares ([`ToolContext`]), a tool's answer ([`ToolOutcome`]), the seam where a layer
//! above plugs in its tools ([`ToolSet`]), and the small helpers the implementations share.
//! The general tools (`bash`, `fs_tools`) and their dispatch (`tools`) build on it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use swarm_config::permissions::{AllowRule, PermissionMode};
use swarm_config::tools::ToolName;
use swarm_llm::ToolSpec;
use swarm_util::names::AgentName;

/// Largest tool output sent to the model, in bytes.
pub const DEFAULT_OUTPUT_CAP: usize = 30_000;

/// Tools implemented above this layer (the team's), plugged into an agent's context.
pub trait ToolSet: Send + Sync + std::fmt::Debug {
    /// The spec of `tool`, if this set implements it.
    fn spec(&self, tool: ToolName) -> Option<ToolSpec>;
    /// What a call is about, shown as `Tool(detail)`.
    fn detail(&self, tool: ToolName, input: &Value) -> String;
    fn run(&self, tool: ToolName, input: Value, ctx: &ToolContext) -> ToolOutcome;
    /// A note to add to the result of a Write or Edit that changed `path` (a file leased
    /// by someone else's task, say); the change itself is never refused here.
    fn note_on_change(&self, _path: &Path, _ctx: &ToolContext) -> Option<String> {
        None
    }
    /// Whether calls of `tool` made in a row in one turn are better run together by
    /// [`ToolSet::run_together`] (the lead's Agent calls, which spawn at once).
    fn runs_together(&self, _tool: ToolName) -> bool {
        false
    }
    /// Runs calls of `tool` that came in a row in one turn: one outcome per input, in order.
    fn run_together(
        &self,
        tool: ToolName,
        inputs: Vec<Value>,
        ctx: &ToolContext,
    ) -> Vec<ToolOutcome> {
        inputs
            .into_iter()
            .map(|input| self.run(tool, input, ctx))
            .collect()
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

/// Everything tools share during one agent's life.
#[derive(Debug)]
pub struct ToolContext {
    pub cwd: PathBuf,
    pub agent: AgentName,
    pub mode: Mutex<PermissionMode>,
    pub allow: Vec<AllowRule>,
    /// Variables the agent's commands get on top of this process's own (a settings file's
    /// `env`).
    pub env: std::collections::BTreeMap<String, String>,
    pub bash_timeout: Duration,
    pub output_cap: usize,
    /// Set when the agent is to stop after the current step (it approved its own shutdown).
    stop_requested: AtomicBool,
    pub cancel: CancellationToken,
    /// The tools a layer above adds (the team tools), if any.
    pub tool_set: Option<Arc<dyn ToolSet>>,
}

impl ToolContext {
    pub fn new(cwd: PathBuf, agent: AgentName, mode: PermissionMode) -> ToolContext {
        ToolContext {
            cwd,
            agent,
            mode: Mutex::new(mode),
            allow: Vec::new(),
            env: Default::default(),
            bash_timeout: Duration::from_secs(120),
            output_cap: DEFAULT_OUTPUT_CAP,
            stop_requested: AtomicBool::new(false),
            cancel: CancellationToken::new(),
            tool_set: None,
        }
    }

    pub fn mode(&self) -> PermissionMode {
        *self.mode.lock().unwrap()
    }

    pub fn set_mode(&self, mode: PermissionMode) {
        *self.mode.lock().unwrap() = mode;
    }

    /// Asks the loop to stop once the current step is done.
    pub fn request_stop(&self) {
        self.stop_requested.store(true, Ordering::SeqCst);
    }

    pub fn stop_requested(&self) -> bool {
        self.stop_requested.load(Ordering::SeqCst)
    }
}

/// The marker that ends an output cut short, saying how much was dropped.
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
