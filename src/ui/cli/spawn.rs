//! `swarm spawn`: a teammate in its own pane (several names, several teammates, spawned
//! together), or with `--dry-run` what that would run.

use std::collections::BTreeMap;

use serde_json::json;

use crate::ui::cli::args::SpawnArgs;
use crate::ui::cli::context::{Ctx, lead_dir, working_dir};
use crate::ui::cli::input::{Limit, Source, read_text};
use crate::ui::cli::message::MESSAGE;
use crate::ui::cli::output::print_json;
use swarm_store::mailbox;
use swarm_store::names::{AgentName, TeamName};
use swarm_team::launch::{SpawnRequest, Spawned};
use swarm_util::error::{Error, Result};

/// Returns the exit code: with several names, each failure is said on its own line and the
/// first one's code is the exit code.
pub fn run(ctx: &Ctx, args: SpawnArgs) -> Result<u8> {
    let team = ctx.team()?;
    let prompt = match (&args.prompt, &args.prompt_file) {
        (_, Some(f)) => Some(read_text(
            Source::File(f),
            Limit {
                what: "the prompt",
                ..MESSAGE
            },
        )?),
        (p, None) => p.clone(),
    };
    if let Some(p) = &prompt {
        mailbox::check_text(p)?;
    }
    if args.dry_run && args.names.len() > 1 {
        return Err(Error::usage(
            "--dry-run shows one spawn: give one name (each of several would go where the one before it went)",
        ));
    }
    let cwd = working_dir(args.cwd.as_deref())?;
    let reqs = args
        .names
        .iter()
        .map(|name| {
            Ok(SpawnRequest {
                name: AgentName::new(name)?,
                prompt: prompt.clone(),
                agent_type: args.agent_type.clone(),
                model: args.model.clone(),
                permission_mode: args.permission_mode,
                plan_mode_required: args.plan_mode_required,
                cwd: cwd.clone(),
                color: args.color.clone(),
                isolation: args.isolation,
                engine: Some(args.engine.engine),
                budget: args.budget.limits(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut lead = ctx.lead_settings()?;
    lead.provider = args.api.provider.map(|p| p.to_string());
    lead.base_url = args.api.base_url.clone();
    lead.anthropic_version = args.api.anthropic_version.clone();
    lead.rate_limit_wait = args.api.rate_limit_wait;
    lead.model = args.lead_model.clone().filter(|m| !m.is_empty());
    lead.permission_mode = ctx.permission_mode(args.lead_permission_mode);
    lead.allow = args.allow.iter().map(ToString::to_string).collect();
    lead.max_turns = args.max_turns;
    lead.context_window = args.context_window;
    // The engine is this teammate's (in `req`), not the lead's that a first spawn opens.
    lead.claude_bin = ctx.claude_bin(&args.engine)?;
    let launcher = ctx.launcher(&team, lead, lead_dir())?;
    let worktree_json = |path: &std::path::Path, branch: &str, base: &str| json!({"path": path, "branch": branch, "base": base});
    if args.dry_run {
        let req = &reqs[0];
        let dry = launcher.dry_run(req)?;
        let cmd = &dry.command;
        if ctx.json() {
            let redacted = cmd
                .secret_env
                .iter()
                .map(|(k, _)| (k.clone(), "<redacted>".to_owned()));
            print_json(&json!({
                "commands": dry.tmux,
                "cwd": cmd.cwd,
                "engine": req.engine.map(|e| e.to_string()),
                "argv": cmd.argv,
                "env": cmd.env.iter().cloned().chain(redacted).collect::<BTreeMap<_, _>>(),
                "worktree": dry.worktree.as_ref().map(|w| worktree_json(&w.path, &w.branch, &w.base)),
            }));
        } else {
            for line in &dry.tmux {
                println!("{line}");
            }
            if let Some(w) = &dry.worktree {
                println!(
                    "(would first create worktree {} on new branch {} from {})",
                    w.path.display(),
                    w.branch,
                    &w.base[..12.min(w.base.len())]
                );
            }
        }
        return Ok(swarm_util::error::exit::SUCCESS);
    }
    let mut first_error: Option<u8> = None;
    let mut spawned_json = Vec::new();
    for (req, result) in reqs.iter().zip(launcher.spawn_many(&reqs)) {
        let spawned = match result {
            Ok(s) => s,
            Err(e) if reqs.len() > 1 => {
                eprintln!("swarm: error: failed to spawn {}: {e}", req.name);
                first_error.get_or_insert(e.exit_code());
                continue;
            }
            Err(e) => return Err(e),
        };
        if let Some(model) = &spawned.model {
            crate::ui::cli::run::warn_unpriced(&req.budget, model);
        }
        if ctx.json() {
            spawned_json.push(json!({
                "name": spawned.name,
                "pane": spawned.pane,
                "color": spawned.color,
                "openedWindow": spawned.opened_window,
                "model": spawned.model,
                "engine": req.engine.map(|e| e.to_string()),
                "worktree": spawned.worktree.as_ref().map(|w| worktree_json(&w.path, &w.branch, &w.base)),
            }));
        } else {
            print_spawned(&team, &spawned);
        }
    }
    if ctx.json() {
        // One name, one object (as ever); several, an array of those that started.
        match <[_; 1]>::try_from(spawned_json) {
            Ok([one]) => print_json(&one),
            Err(many) => print_json(&many),
        }
    }
    Ok(first_error.unwrap_or(swarm_util::error::exit::SUCCESS))
}

fn print_spawned(team: &TeamName, spawned: &Spawned) {
    println!(
        "spawned {} in pane {}{}",
        spawned.name,
        spawned.pane,
        if spawned.opened_window {
            format!(" (opened the team window; see it with `swarm attach {team}`)")
        } else {
            String::new()
        }
    );
    if let Some(w) = &spawned.worktree {
        println!(
            "{} works in worktree {} on branch {}",
            spawned.name,
            w.path.display(),
            w.branch
        );
    }
}
