//! `swarm spawn`: a teammate in its own pane (several names, several teammates, spawned
//! together), or with `--dry-run` what that would run.
// The doc comments here are clap's help text, where `<team>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;

use crate::ui::cli::context::{Ctx, lead_dir};
use crate::ui::cli::input::{Limit, Source, read_text};
use crate::ui::cli::message::MESSAGE;
use crate::ui::cli::options::{BudgetOpts, EngineOpts, allow_rule, colour};
use crate::ui::cli::output::print_json;
use crate::ui::cli::run::warn_unpriced;
use swarm::error::{Error, Result};
use swarm::exit::exit_code;
use swarm_config::agents::Isolation;
use swarm_config::permissions::{AllowRule, PermissionMode};
use swarm_llm::Provider;
use swarm_store::mailbox;
use swarm_team::spawn::inherit::{Engine, LeadSettings};
use swarm_team::spawn::launch::{Launcher, SpawnRequest, Spawned};
use swarm_util::error::{Base as _, exit};
use swarm_util::names::{AgentName, TeamName};
use swarm_util::vars;

#[derive(Debug, Args)]
pub struct SpawnArgs {
    /// The teammate's name (unique within the team); several names spawn several
    /// teammates together, each with the options given
    #[arg(required = true, value_name = "NAME")]
    pub names: Vec<String>,
    /// First instructions, delivered to its inbox before it starts [default: the agent definition's initialPrompt]
    #[arg(long, conflicts_with = "prompt_file")]
    pub prompt: Option<String>,
    /// Read the first instructions from a file
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// An agent definition (.claude/agents/*.md, ~/.claude/agents/*.md, or general-purpose, Explore, Plan); see `swarm agents list`
    #[arg(long, value_name = "TYPE")]
    pub agent_type: Option<String>,
    /// The teammate's model, unless $SWARM_SUBAGENT_MODEL (or $CLAUDE_CODE_SUBAGENT_MODEL) is set, which wins on the lead's API [default: the agent definition's, else the lead's ($SWARM_MODEL) on the lead's API, else the provider's]
    #[arg(long)]
    pub model: Option<String>,
    /// The teammate's provider: anthropic, openai or scripted; its key comes from the environment [default: the agent definition's, else the lead's ($SWARM_PROVIDER)]
    #[arg(long, value_name = "PROVIDER")]
    pub provider: Option<Provider>,
    /// The teammate's API base URL [default: the agent definition's, else the lead's ($SWARM_BASE_URL) on the lead's provider, else $ANTHROPIC_BASE_URL / $OPENAI_BASE_URL, else the provider's]
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The teammate's permission mode [default: the lead's ($SWARM_PERMISSION_MODE)]
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<PermissionMode>,
    /// Start in plan mode; only team-lead's approval of a plan lets it make changes
    #[arg(long)]
    pub plan_mode_required: bool,
    /// Working directory [default: the current one]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// red, blue, green, yellow, purple, orange, pink or cyan [default: the agent definition's, else next in turn]
    #[arg(long, value_parser = colour)]
    pub color: Option<String>,
    /// worktree: work in a new git worktree on branch swarm/<team>/<name>, made from HEAD; none: in --cwd [default: the agent definition's, else none]
    #[arg(long, value_name = "MODE")]
    pub isolation: Option<Isolation>,
    /// Print the tmux commands the spawn would run (secrets only by name); create nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Start it on this host (see `swarm host add`), in the host's project directory, over
    /// ssh; its team must be on PostgreSQL
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    #[command(flatten)]
    pub engine: EngineOpts,
    /// The lead's provider, which a teammate gets unless --provider or its definition
    /// says otherwise (only its environment twin is meant to be used)
    #[arg(long, env = vars::SWARM_PROVIDER, hide = true, value_name = "PROVIDER")]
    pub lead_provider: Option<Provider>,
    /// The lead's base URL (only its environment twin is meant to be used)
    #[arg(long, env = vars::SWARM_BASE_URL, hide = true, value_name = "URL")]
    pub lead_base_url: Option<String>,
    /// The anthropic-version header of the anthropic and scripted providers [default: 2023-06-01]
    #[arg(long, env = vars::ANTHROPIC_VERSION, value_name = "VERSION")]
    pub anthropic_version: Option<String>,
    /// How long one model call may wait out rate limits (429, 529) in all before it fails [default: 900]
    #[arg(long, env = vars::SWARM_RATE_LIMIT_WAIT, value_name = "SECS")]
    pub rate_limit_wait: Option<u64>,
    /// The lead's model, which a teammate gets when nothing else chooses one (only its
    /// environment twin is meant to be used)
    #[arg(long, env = vars::SWARM_MODEL, hide = true, value_name = "MODEL")]
    pub lead_model: Option<String>,
    /// The lead's permission mode, which a teammate gets unless --permission-mode or its
    /// definition says otherwise (only its environment twin is meant to be used)
    #[arg(
        long,
        env = vars::SWARM_PERMISSION_MODE,
        default_value = "default",
        value_parser = mode_or_default,
        hide = true,
        value_name = "MODE"
    )]
    pub lead_permission_mode: PermissionMode,
    /// Allow rules teammates inherit, e.g. 'Bash(cargo test:*)' (repeatable)
    #[arg(long = "allow", value_name = "RULE", value_parser = allow_rule)]
    pub allow: Vec<AllowRule>,
    /// Stop after this many model turns per piece of work [default: the agent definition's, else 200]
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// This teammate's own budget (the team's, from `swarm run`, applies too)
    #[command(flatten)]
    pub budget: BudgetOpts,
    /// The teammate's context window in tokens; compacted at 80 % of it [default: the model's, from swarm's table]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub context_window: Option<u64>,
}

/// A permission mode, where an empty value (an environment variable set to nothing) is
/// the default mode.
fn mode_or_default(value: &str) -> Result<PermissionMode, swarm_util::error::Error> {
    if value.is_empty() {
        return Ok(PermissionMode::Default);
    }
    value.parse()
}

/// Returns the exit code: with several names, each failure is said on its own line and the
/// first one's code is the exit code.
pub fn run(ctx: &Ctx, args: SpawnArgs) -> Result<u8> {
    let store = ctx.team()?;
    let team = store.team();
    let prompt = first_prompt(&args)?;
    if args.dry_run && args.names.len() > 1 {
        return Err(Error::usage(
            "--dry-run shows one spawn: give one name (each of several would go where the one before it went)",
        ));
    }
    refuse_swarm_only_flags(&args)?;
    let reqs = requests(ctx, &args, prompt)?;
    let launcher = ctx.launcher(&store, lead_settings(ctx, &args)?, lead_dir())?;
    // `--host`, else the host the agent definition names.
    let host = args.host.clone().or_else(|| {
        args.agent_type
            .as_ref()
            .and_then(|_| launcher.defined_host(&reqs[0]))
    });
    if let Some(host) = &host {
        return on_host(ctx, team, &launcher, &reqs, host, args.dry_run);
    }
    if args.dry_run {
        dry_run(ctx, &launcher, &reqs[0])?;
        return Ok(exit::SUCCESS);
    }
    spawn_all(ctx, team, &launcher, &reqs)
}

/// A Claude Code teammate keeps its own permission rules and turns (its settings files):
/// swarm's flags for them would not reach it, so giving them is refused, not dropped.
fn refuse_swarm_only_flags(args: &SpawnArgs) -> Result<()> {
    if args.engine.engine != Engine::Claude {
        return Ok(());
    }
    let given: Vec<&str> = [
        (!args.allow.is_empty(), "--allow"),
        (args.max_turns.is_some(), "--max-turns"),
    ]
    .into_iter()
    .filter_map(|(given, flag)| given.then_some(flag))
    .collect();
    if given.is_empty() {
        return Ok(());
    }
    Err(Error::usage(format!(
        "{} applies to swarm teammates only (a Claude Code teammate follows its own settings files): drop it or use --engine swarm",
        given.join(" and ")
    )))
}

/// The first instructions: `--prompt-file`'s text, else `--prompt`'s, checked as a message.
fn first_prompt(args: &SpawnArgs) -> Result<Option<String>> {
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
    Ok(prompt)
}

/// One request per name, each with the options given.
fn requests(ctx: &Ctx, args: &SpawnArgs, prompt: Option<String>) -> Result<Vec<SpawnRequest>> {
    let cwd = ctx.working_dir(args.cwd.as_deref())?;
    args.names
        .iter()
        .map(|name| {
            Ok(SpawnRequest {
                name: AgentName::new(name)?,
                prompt: prompt.clone(),
                agent_type: args.agent_type.clone(),
                model: args.model.clone(),
                provider: args.provider,
                base_url: args.base_url.clone(),
                permission_mode: args.permission_mode,
                plan_mode_required: args.plan_mode_required,
                cwd: cwd.clone(),
                color: args.color.clone(),
                isolation: args.isolation,
                engine: Some(args.engine.engine),
                budget: args.budget.limits(),
                context_window: args.context_window,
                anthropic_version: args.anthropic_version.clone(),
            })
        })
        .collect()
}

/// What the lead passes on to the teammates, from the flags (and their environment twins).
fn lead_settings(ctx: &Ctx, args: &SpawnArgs) -> Result<LeadSettings> {
    let mut lead = ctx.lead_settings()?;
    lead.provider = args.lead_provider.map(|p| p.to_string());
    lead.base_url = args.lead_base_url.clone().filter(|u| !u.is_empty());
    lead.rate_limit_wait = args.rate_limit_wait;
    lead.model = args.lead_model.clone().filter(|m| !m.is_empty());
    lead.permission_mode = ctx.permission_mode(args.lead_permission_mode);
    lead.allow = args.allow.iter().map(ToString::to_string).collect();
    lead.max_turns = args.max_turns;
    // The engine is this teammate's (in `req`), not the lead's that a first spawn opens.
    let lead = ctx.with_engine(lead, &args.engine)?;
    Ok(LeadSettings {
        engine: Engine::Swarm,
        ..lead
    })
}

/// `--dry-run`: prints what spawning `req` would run (secrets only by name).
fn dry_run(ctx: &Ctx, launcher: &Launcher, req: &SpawnRequest) -> Result<()> {
    let dry = launcher.dry_run(req)?;
    let cmd = &dry.command;
    if ctx.json() {
        print_json(&json!({
            "commands": dry.tmux,
            "cwd": cmd.cwd,
            "engine": req.engine.map(|e| e.to_string()),
            "argv": cmd.argv,
            "env": cmd.shown_env(),
            "worktree": dry.worktree.as_ref().map(|w| worktree_json(&w.path, &w.branch, &w.base)),
        }));
        return Ok(());
    }
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
    Ok(())
}

/// `--host H`: each request on that host, one after another.
fn on_host(
    ctx: &Ctx,
    team: &TeamName,
    launcher: &Launcher,
    reqs: &[SpawnRequest],
    host: &str,
    dry_run: bool,
) -> Result<u8> {
    let ssh =
        swarm_team::spawn::remote::ssh_to(ctx.teams.root(), host, &ctx.profile.settings.dirs)?;
    if dry_run {
        for line in launcher.dry_run_on_host(&reqs[0], &ssh)? {
            println!("{line}");
        }
        return Ok(exit::SUCCESS);
    }
    let mut first_error: Option<u8> = None;
    for req in reqs {
        match launcher.spawn_on_host(req, &ssh) {
            Ok(spawned) if ctx.json() => print_json(&json!({
                "name": spawned.name,
                "pane": spawned.pane,
                "host": ssh.host().name,
                "color": spawned.color,
                "model": spawned.model,
                "provider": spawned.provider,
            })),
            Ok(spawned) => print_spawned(team, &spawned),
            Err(e) if reqs.len() > 1 => {
                eprintln!("swarm: error: failed to spawn {}: {e}", req.name);
                first_error.get_or_insert(exit_code(&e));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(first_error.unwrap_or(exit::SUCCESS))
}

fn worktree_json(path: &Path, branch: &str, base: &str) -> serde_json::Value {
    json!({"path": path, "branch": branch, "base": base})
}

/// Spawns every request together and says what started; with several, a failure is said
/// and the rest go on.
fn spawn_all(ctx: &Ctx, team: &TeamName, launcher: &Launcher, reqs: &[SpawnRequest]) -> Result<u8> {
    let mut first_error: Option<u8> = None;
    let mut spawned_json = Vec::new();
    for (req, result) in reqs.iter().zip(launcher.spawn_many(reqs)) {
        let spawned = match result {
            Ok(s) => s,
            Err(e) if reqs.len() > 1 => {
                eprintln!("swarm: error: failed to spawn {}: {e}", req.name);
                first_error.get_or_insert(exit_code(&e));
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(model) = &spawned.model {
            warn_unpriced(&req.budget, model);
        }
        if ctx.json() {
            spawned_json.push(json!({
                "name": spawned.name,
                "pane": spawned.pane,
                "color": spawned.color,
                "openedWindow": spawned.opened_window,
                "model": spawned.model,
                "provider": spawned.provider,
                "engine": req.engine.map(|e| e.to_string()),
                "worktree": spawned.worktree.as_ref().map(|w| worktree_json(&w.path, &w.branch, &w.base)),
            }));
        } else {
            print_spawned(team, &spawned);
        }
    }
    if ctx.json() {
        // One name, one object (as ever); several, an array of those that started.
        match <[_; 1]>::try_from(spawned_json) {
            Ok([one]) => print_json(&one),
            Err(many) => print_json(&many),
        }
    }
    Ok(first_error.unwrap_or(exit::SUCCESS))
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
