//! `swarm agent -p`: one agent in the foreground, with nobody but the terminal to ask.
//!
//! A call that needs permission is put to the person at the terminal when there is one,
//! and refused (with what to do instead) when there is not. Plan approval works the same.

use std::io::{BufRead, IsTerminal, Write};

use serde_json::Value;

use crate::agent::display::Display;
use crate::agent::engine::{Authorization, Event, Host};
use crate::agent::tools::{ToolContext, ToolOutcome};
use crate::config::permissions::PermissionMode;
use crate::config::tools::ToolName;

pub struct SoloHost {
    pub ctx: ToolContext,
    pub display: Display,
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
