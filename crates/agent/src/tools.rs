//! The tools an agent can call: the general ones (Bash, Read, Write, Edit, Glob, Grep,
//! and ExitPlanMode, which the host answers), their input schemas (Claude Code's, so
//! prompts carry over), what a call touches for the permission check, and dispatch. Tools
//! from a layer above (the team's) plug in as a [`ToolSet`] (see `tool_context`, which
//! also holds what every call is given and gives back).
//!
//! Tools never fail the loop: every problem becomes a tool result with `is_error`, which the
//! model can read and act on. Outputs over the cap are cut with a marker saying how much
//! was dropped.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::{bash, fs_tools};
use swarm_config::tools::ToolName;
use swarm_llm::ToolSpec;

pub use crate::tool_context::{
    DEFAULT_OUTPUT_CAP, ToolContext, ToolOutcome, ToolSet, required_str, truncation_marker,
};

/// The spec of a general tool; `None` for a tool this layer does not implement.
pub fn general_spec(tool: ToolName) -> Option<ToolSpec> {
    let (description, schema) = match tool {
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
        ToolName::ExitPlanMode => (
            "Present your plan and ask to leave plan mode. Wait for approval before editing files or running commands.",
            json!({"type": "object", "properties": {"plan": {"type": "string", "description": "The plan, in Markdown"}}, "required": ["plan"]}),
        ),
        _ => return None,
    };
    Some(ToolSpec {
        name: tool.as_str().to_owned(),
        description: description.to_owned(),
        input_schema: schema,
    })
}

/// Whether calls of `tool` in a row run together (see [`ToolSet::runs_together`]).
pub fn runs_together(tool: ToolName, ctx: &ToolContext) -> bool {
    ctx.tool_set.as_ref().is_some_and(|s| s.runs_together(tool))
}

/// Runs calls of `tool` that came in a row together (see [`ToolSet::run_together`]).
pub fn run_together(tool: ToolName, inputs: Vec<Value>, ctx: &ToolContext) -> Vec<ToolOutcome> {
    let Some(set) = &ctx.tool_set else {
        let none = || ToolOutcome::err(format!("{} needs a team", tool.as_str()));
        return inputs.iter().map(|_| none()).collect();
    };
    set.run_together(tool, inputs, ctx)
        .into_iter()
        .map(|o| truncate(o, ctx.output_cap))
        .collect()
}

/// The spec the model is given for `tool`: a general tool's, else the plugged-in set's.
pub fn spec(tool: ToolName, ctx: &ToolContext) -> Option<ToolSpec> {
    general_spec(tool).or_else(|| ctx.tool_set.as_ref()?.spec(tool))
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
pub fn describe_call(tool: ToolName, input: &Value, ctx: &ToolContext) -> String {
    let s = |k: &str| input.get(k).and_then(Value::as_str).unwrap_or("");
    let detail = match tool {
        ToolName::Bash => s("command").to_owned(),
        ToolName::Read | ToolName::Write | ToolName::Edit => s("file_path").to_owned(),
        ToolName::Glob | ToolName::Grep => s("pattern").to_owned(),
        ToolName::ExitPlanMode => String::new(),
        _ => ctx
            .tool_set
            .as_ref()
            .map(|set| set.detail(tool, input))
            .unwrap_or_default(),
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

/// Runs one allowed call. (`ExitPlanMode` is the host's, not a tool's.)
pub async fn run(tool: ToolName, input: Value, ctx: &ToolContext) -> ToolOutcome {
    let outcome = match tool {
        // Bash caps its output while reading it, so a huge stream never sits in memory.
        ToolName::Bash => return bash::run(input, ctx).await,
        ToolName::Read => fs_tools::read(input, ctx),
        ToolName::Write | ToolName::Edit => {
            let target = call_target(tool, &input, ctx).1;
            let mut outcome = if tool == ToolName::Write {
                fs_tools::write(input, ctx)
            } else {
                fs_tools::edit(input, ctx)
            };
            if !outcome.is_error
                && let (Some(path), Some(set)) = (target, &ctx.tool_set)
                && let Some(note) = set.note_on_change(&path, ctx)
            {
                outcome.content.push('\n');
                outcome.content.push_str(&note);
            }
            outcome
        }
        ToolName::Glob => fs_tools::glob(input, ctx),
        ToolName::Grep => fs_tools::grep(input, ctx),
        ToolName::ExitPlanMode => ToolOutcome::err("ExitPlanMode is handled by the agent runtime"),
        _ => match &ctx.tool_set {
            Some(set) => set.run(tool, input, ctx),
            None => ToolOutcome::err(format!("{} needs a team", tool.as_str())),
        },
    };
    truncate(outcome, ctx.output_cap)
}

/// Cuts an outcome to `cap` bytes (at a character boundary) and says how much was cut.
pub fn truncate(mut outcome: ToolOutcome, cap: usize) -> ToolOutcome {
    if outcome.content.len() > cap {
        let cut = outcome.content.floor_char_boundary(cap);
        let dropped = outcome.content.len() - cut;
        outcome.content.truncate(cut);
        outcome.content.push_str(&truncation_marker(dropped));
    }
    outcome
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
    fn every_general_tool_has_an_object_schema() {
        for t in ToolName::SOLO {
            let spec = general_spec(t).expect("a general tool");
            assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
            assert_eq!(ToolName::parse(&spec.name), Some(t));
        }
    }

    #[test]
    fn grep_declares_claude_codes_options() {
        let schema = general_spec(ToolName::Grep).unwrap().input_schema;
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
