//! `swarm agents list`: the agent types in reach and where each comes from.

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::{Value, json};

use crate::ui::cli::context::Ctx;
use crate::ui::cli::output::print_json;
use swarm::error::{Error, Result};
use swarm_config::agents::{Catalog, Definition};
use swarm_util::error::Base as _;

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// List the agent types in reach: built-in, project (.claude/agents) and user (~/.claude/agents)
    List {
        /// Look for project definitions from this directory [default: the current one]
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
}

pub fn run(ctx: &Ctx, cmd: AgentsCommand) -> Result<()> {
    match cmd {
        AgentsCommand::List { cwd } => {
            let cwd = match cwd {
                Some(c) => std::path::absolute(&c).map_err(|e| Error::io("resolve", &c, e))?,
                None => std::env::current_dir().map_err(|e| Error::io("read", ".", e))?,
            };
            let catalog = Catalog::load(&cwd, &ctx.profile.settings.dirs);
            if ctx.json() {
                print_json(&entries(&catalog));
            } else {
                print_text(&catalog);
            }
            catalog.warn_invalid();
            Ok(())
        }
    }
}

fn entry(d: &Definition, status: &str) -> Value {
    json!({
        "name": d.name,
        "description": d.description,
        "source": d.source.scope(),
        "path": d.source.path(),
        "status": status,
        "model": d.model,
        "provider": d.provider.map(|p| p.as_str()),
        "baseUrl": d.base_url,
        "tools": d.tools,
        "disallowedTools": d.disallowed_tools,
        "permissionMode": d.permission_mode.map(|m| m.as_str()),
        "maxTurns": d.max_turns,
        "isolation": d.isolation.map(|i| match i {
            swarm_config::agents::Isolation::Worktree => "worktree",
            swarm_config::agents::Isolation::None => "none",
        }),
        "color": d.color,
    })
}

/// Every definition, in force first, then shadowed, then the files that were skipped.
fn entries(c: &Catalog) -> Vec<Value> {
    let mut out: Vec<Value> = c.active.iter().map(|d| entry(d, "active")).collect();
    out.extend(c.shadowed.iter().map(|d| entry(d, "shadowed")));
    out.extend(c.invalid.iter().map(|bad| {
        json!({
            "source": bad.source,
            "path": bad.path,
            "status": "invalid",
            "field": bad.field,
            "error": bad.message,
        })
    }));
    out
}

fn print_text(c: &Catalog) {
    let width = c
        .active
        .iter()
        .chain(&c.shadowed)
        .map(|d| d.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    println!("{:<width$}  {:<9} DESCRIPTION", "NAME", "SOURCE");
    for d in &c.active {
        println!(
            "{:<width$}  {:<9} {}",
            d.name,
            d.source.scope(),
            d.description
        );
        if let Some(p) = d.source.path() {
            println!("{:<width$}  {:<9} {}", "", "", p.display());
        }
    }
    for d in &c.shadowed {
        println!(
            "{:<width$}  {:<9} (shadowed) {}",
            d.name,
            d.source.scope(),
            d.source
                .path()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        );
    }
    for bad in &c.invalid {
        println!("invalid   {:<9} {bad}", bad.source);
    }
}
