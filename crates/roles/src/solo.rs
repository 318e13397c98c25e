//! `swarm agent -p`: one agent in the foreground, with nobody but the terminal to ask.
//!
//! A call that needs permission is put to the person at the terminal when there is one,
//! and refused (with what to do instead) when there is not. Plan approval works the same.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use serde_json::Value;

use crate::builder::{Agent, AgentBuilder};
use crate::error::{Error, Result};
use swarm_agent::display::Display;
use swarm_agent::engine::{Authorization, Event, Finish, Host};
use swarm_agent::prompt::{self, PromptInputs};
use swarm_agent::tools::{ToolContext, ToolOutcome};
use swarm_config::permissions::{AllowRule, PermissionMode};
use swarm_config::tools::ToolName;
use swarm_llm::LlmConfig;
use swarm_util::names::AgentName;

pub struct SoloOptions {
    pub prompt: String,
    pub llm: LlmConfig,
    pub mode: PermissionMode,
    pub allow: Vec<AllowRule>,
    /// What the agent's commands get on top of this process's environment.
    pub env: std::collections::BTreeMap<String, String>,
    pub max_turns: u32,
    pub cwd: PathBuf,
    /// Where each model turn appends its timings, for `scripts/bench`.
    pub timings: Option<PathBuf>,
    /// `--context-window`: overrides the model's window from the table.
    pub context_window: Option<u64>,
}

/// Runs the agent on its prompt until it ends its turn; Ctrl-C stops it. The answer goes
/// to stdout, what it cost to stderr. Returns the exit code.
pub async fn run(o: SoloOptions) -> Result<u8> {
    let agent = AgentName::new("agent").expect("valid");
    let system = prompt::solo(&PromptInputs {
        agent: &agent,
        cwd: &o.cwd,
        mode: o.mode,
        plan_mode_required: false,
        custom: None,
    });
    let Agent { mut engine, ctx } = AgentBuilder {
        name: agent,
        llm: o.llm,
        cwd: o.cwd,
        mode: o.mode,
        allow: o.allow,
        env: o.env,
        system,
        tools: ToolName::SOLO.to_vec(),
        max_turns: o.max_turns,
        timings: o.timings,
        context_window: o.context_window,
    }
    .alone()?;
    let mut host = SoloHost {
        ctx,
        display: Display::new(None),
    };
    let cancel = host.ctx.cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    let finish = engine.run(&mut host, o.prompt).await?;
    println!();
    let usage = engine.usage;
    eprintln!(
        "· {} model call(s), {} input / {} output tokens{}",
        engine.model_calls,
        usage.input_tokens,
        usage.output_tokens,
        if engine.cost_usd > 0.0 {
            format!(", ~${:.4}", engine.cost_usd)
        } else {
            String::new()
        }
    );
    match finish {
        Finish::EndTurn(_) => Ok(0),
        Finish::MaxTurns => Err(Error::Unfinished(format!(
            "stopped after {} model turns; raise --max-turns",
            engine.max_turns
        ))),
        Finish::Refusal(text) => Err(Error::Unfinished(format!("the model refused: {text}"))),
        Finish::Stopped => Err(swarm_util::error::Error::Interrupted.into()),
    }
}

/// The terminal as the agent loop's host.
struct SoloHost {
    ctx: ToolContext,
    display: Display,
}

fn ask(question: &str) -> Option<bool> {
    if !std::io::stdin().is_terminal() {
        return None;
    }
    print!("\n{question} [y/N] ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok()?;
    Some(matches!(line.trim(), "y" | "Y" | "yes"))
}

impl Host for SoloHost {
    fn ctx(&self) -> &ToolContext {
        &self.ctx
    }

    async fn authorize(
        &mut self,
        _tool: ToolName,
        _input: &Value,
        description: &str,
        _id: &str,
    ) -> Authorization {
        match ask(&format!("Allow {description}?")) {
            Some(true) => Authorization::Allow(None),
            Some(false) => Authorization::Deny("the user said no".to_owned()),
            None => Authorization::Deny(
                "nobody to ask (not a terminal); run with --permission-mode acceptEdits or bypassPermissions, or --allow RULE"
                    .to_owned(),
            ),
        }
    }

    async fn exit_plan_mode(&mut self, plan: &str) -> ToolOutcome {
        if self.ctx.mode() != PermissionMode::Plan {
            return ToolOutcome::ok("You are not in plan mode; go ahead.");
        }
        println!("\n── plan ──\n{plan}\n──────────");
        match ask("Approve this plan?") {
            Some(true) => {
                self.ctx.set_mode(PermissionMode::Default);
                ToolOutcome::ok(
                    "The user approved your plan. You have left plan mode; carry it out now.",
                )
            }
            Some(false) => {
                ToolOutcome::ok("The user rejected your plan. Stay in plan mode and revise it.")
            }
            None => ToolOutcome::ok(
                "Nobody can approve plans here (not a terminal). Stop now and give your plan as your final answer.",
            ),
        }
    }

    async fn interject(&mut self) -> Option<String> {
        None
    }

    fn committed(&mut self) {}

    fn event(&mut self, event: Event) {
        self.display.event(&event);
    }
}
