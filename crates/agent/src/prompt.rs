//! System prompts: the agent's role, where it works, its permission mode and any custom
//! instructions. A team's prompts build on these (see `team::prompt`).

use std::path::Path;

use swarm_config::permissions::PermissionMode;
use swarm_util::names::AgentName;

pub struct PromptInputs<'a> {
    pub agent: &'a AgentName,
    pub cwd: &'a Path,
    pub mode: PermissionMode,
    pub plan_mode_required: bool,
    /// A custom agent type's instructions.
    pub custom: Option<&'a str>,
}

pub fn solo(inputs: &PromptInputs) -> String {
    let mut s = format!(
        "You are a software engineering agent working in {}.\n\
         Use the tools to inspect and change files and run commands. Be concise. When the task is done, \
         end your turn with a short summary of what you did.\n",
        inputs.cwd.display()
    );
    push_mode(&mut s, inputs);
    push_custom(&mut s, inputs);
    s
}

pub fn push_mode(s: &mut String, inputs: &PromptInputs) {
    s.push_str(&format!("\nPermission mode: {}.", inputs.mode));
    if inputs.mode == PermissionMode::Plan {
        s.push_str(
            " You are in plan mode: explore with read-only tools (Read, Glob, Grep), then call ExitPlanMode with \
             a concrete plan and wait for its approval before you change any file or run any command.",
        );
        if inputs.plan_mode_required {
            s.push_str(" Your plan goes to the team lead for approval.");
        }
    }
    s.push('\n');
}

pub fn push_custom(s: &mut String, inputs: &PromptInputs) {
    if let Some(custom) = inputs.custom.filter(|c| !c.trim().is_empty()) {
        s.push_str("\n# Custom Agent Instructions\n");
        s.push_str(custom.trim());
        s.push('\n');
    }
}
