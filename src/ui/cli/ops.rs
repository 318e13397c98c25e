//! `swarm spawn`, `status`, `shutdown`, `attach`, `lead`: the team in tmux.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Duration;

use crate::config::permissions::PermissionMode;
use crate::roles::lead::agent::LeadAgentOptions;
use crate::roles::lead::dispatcher::{self as lead, LeadOptions};
use crate::store::approvals;
use crate::store::names::{AgentName, LEAD, TeamName};
use crate::store::roster;
use crate::team::inherit::{self, LeadSettings};
use crate::team::launch::{self as spawn, Place, SpawnRequest};
use crate::team::shutdown::{self, LadderOptions, Outcome};
use crate::team::status;
use crate::team::supervisor;
use crate::team::tools::LeadPowers;
use crate::team::window::{self as team_window, TeamWindow};
use crate::tmux::Tmux;
use crate::ui::cli::args::{LeadArgs, ModelOpts, PermissionOpts, ShutdownArgs, SpawnArgs};
use crate::ui::cli::context::{Ctx, working_dir};
use crate::ui::cli::output::print_json;
use crate::util::clock;
use crate::util::error::{Error, Result};

pub fn env_map() -> BTreeMap<String, String> {
    std::env::vars().collect()
}

pub fn inside_tmux() -> bool {
    std::env::var_os("TMUX").is_some_and(|v| !v.is_empty())
}

pub fn team_tmux(ctx: &Ctx, team: &TeamName) -> Result<Tmux> {
    team_window::server_for(&ctx.root, team, ctx.global.tmux_socket.as_deref())
}

/// The settings a lead passes on, from its model and permission flags.
pub fn settings_from(
    ctx: &Ctx,
    model: &ModelOpts,
    permissions: &PermissionOpts,
) -> Result<LeadSettings> {
    let (mode, _) = crate::ui::cli::agent::permissions(permissions)?;
    let mut settings = lead_settings(
        ctx,
        model.provider.clone(),
        model.model.clone(),
        model.base_url.clone(),
        Some(mode),
        permissions.allow.clone(),
        Some(permissions.max_turns),
    )?;
    settings.anthropic_version = model.anthropic_version.clone();
    settings.permission_timeout = Some(permissions.permission_timeout.into());
    Ok(settings)
}

/// The settings a lead started from this command line passes on.
pub fn lead_settings(
    ctx: &Ctx,
    provider: Option<String>,
    model: Option<String>,
    base_url: Option<String>,
    mode: Option<PermissionMode>,
    allow: Vec<String>,
    max_turns: Option<u32>,
) -> Result<LeadSettings> {
    let mode = match mode {
        Some(m) => m,
        None => match std::env::var("SWARM_PERMISSION_MODE") {
            Ok(m) if !m.is_empty() => m.parse()?,
            _ => PermissionMode::Default,
        },
    };
    for rule in &allow {
        rule.parse::<crate::config::permissions::AllowRule>()?;
    }
    Ok(LeadSettings {
        exe: std::env::current_exe().map_err(|e| Error::io("find", "the swarm executable", e))?,
        root: ctx.root.path().to_path_buf(),
        provider,
        model: model.or_else(|| std::env::var("SWARM_MODEL").ok().filter(|m| !m.is_empty())),
        base_url,
        anthropic_version: None,
        permission_mode: mode,
        allow,
        max_turns,
        permission_timeout: None,
        tmux_socket: ctx.global.tmux_socket.clone(),
        session_id: None,
    })
}

pub fn spawn(ctx: &Ctx, args: SpawnArgs) -> Result<()> {
    let team = ctx.team()?;
    let name = AgentName::new(&args.name)?;
    let prompt = match (&args.prompt, &args.prompt_file) {
        (_, Some(f)) => Some(std::fs::read_to_string(f).map_err(|e| Error::io("read", f, e))?),
        (p, None) => p.clone(),
    };
    if let Some(p) = &prompt {
        crate::store::mailbox::check_text(p)?;
    }
    let cwd = working_dir(args.cwd.as_deref())?;
    if let Some(c) = &args.color
        && !roster::PALETTE.contains(&c.as_str())
    {
        return Err(Error::usage(format!(
            "unknown colour '{c}'; use one of: {}",
            roster::PALETTE.join(", ")
        )));
    }
    let req = SpawnRequest {
        name,
        prompt,
        agent_type: args.agent_type.clone(),
        model: args.model.clone(),
        permission_mode: args
            .permission_mode
            .as_deref()
            .map(str::parse)
            .transpose()?,
        plan_mode_required: args.plan_mode_required,
        cwd,
        color: args.color.clone(),
        isolation: args.isolation.as_deref().map(str::parse).transpose()?,
    };
    let lead = LeadSettings {
        anthropic_version: args.anthropic_version.clone(),
        ..lead_settings(
            ctx,
            args.provider.clone(),
            None,
            args.base_url.clone(),
            None,
            args.allow.clone(),
            args.max_turns,
        )?
    };
    let env = env_map();
    let tmux = team_tmux(ctx, &team)?;
    if args.dry_run {
        let config = roster::load(&ctx.root, &team)?;
        spawn::check_name_free(&config, &team, &req.name)?;
        let mut prepared = spawn::prepare(&req)?;
        let color = prepared
            .req
            .color
            .clone()
            .unwrap_or_else(|| config.next_color().to_owned());
        let worktree = match prepared.req.isolation {
            Some(crate::config::agents::Isolation::Worktree) => {
                let plan = crate::team::worktree::plan(&team, &req.name, &req.cwd)?;
                prepared.req.cwd = plan.cwd.clone();
                Some(plan)
            }
            _ => None,
        };
        let cmd = spawn::command_for(&ctx.root, &team, &lead, &env, &prepared, &color)?;
        let mut prefix: Vec<String> = vec!["tmux".to_owned()];
        prefix.extend(
            tmux.global_args()
                .iter()
                .map(|a| a.to_string_lossy().into_owned()),
        );
        prefix.extend(["split-window", "-d", "-P", "-F", "#{pane_id}"].map(str::to_owned));
        if ctx.json() {
            let redacted: Vec<(String, String)> = cmd
                .secret_env
                .iter()
                .map(|(k, _)| (k.clone(), "<redacted>".to_owned()))
                .collect();
            print_json(&serde_json::json!({
                "tmux": prefix,
                "cwd": cmd.cwd,
                "argv": cmd.argv,
                "env": cmd.env.iter().chain(redacted.iter()).cloned().collect::<BTreeMap<_, _>>(),
                "worktree": worktree.as_ref().map(|w| serde_json::json!({"path": w.path, "branch": w.branch, "base": w.base})),
            }));
        } else {
            println!("{}", inherit::display_command(&prefix, &cmd));
            if let Some(w) = &worktree {
                println!(
                    "(would first create worktree {} on new branch {} from {})",
                    w.path.display(),
                    w.branch,
                    &w.base[..12.min(w.base.len())]
                );
            }
        }
        return Ok(());
    }
    let spawned = spawn::spawn(
        &ctx.root,
        &team,
        &Place {
            tmux: &tmux,
            inside_tmux: inside_tmux(),
        },
        &lead,
        &env,
        &req,
    )?;
    if ctx.json() {
        print_json(&serde_json::json!({
            "name": spawned.name,
            "pane": spawned.pane,
            "color": spawned.color,
            "openedWindow": spawned.opened_window,
            "model": spawned.model,
            "worktree": spawned.worktree.as_ref().map(|w| serde_json::json!({"path": w.path, "branch": w.branch, "base": w.base})),
        }));
    } else {
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
    Ok(())
}

pub fn status(ctx: &Ctx) -> Result<()> {
    let team = ctx.team()?;
    let tmux = team_tmux(ctx, &team)?;
    let seen = status::observe(&ctx.root, &team, Some(&tmux))?;
    // Nobody else may be watching: whoever looks first reports what ended.
    let reported = supervisor::report_exits(&ctx.root, &team, &seen);
    let seen = if reported.is_empty() {
        seen
    } else {
        status::observe(&ctx.root, &team, Some(&tmux))?
    };
    if ctx.json() {
        print_json(&seen);
    } else {
        print!("{}", status::render(&seen, clock::now_ms()));
    }
    Ok(())
}

pub fn shutdown(ctx: &Ctx, args: ShutdownArgs) -> Result<()> {
    let team = ctx.team()?;
    let tmux = team_tmux(ctx, &team)?;
    let opts = LadderOptions {
        timeout: args.timeout.into(),
        force: args.force,
        grace: Duration::from_secs(5),
    };
    let names: Vec<String> = match &args.name {
        Some(n) => {
            let config = roster::load(&ctx.root, &team)?;
            config.require(n)?;
            if n == LEAD {
                return Err(Error::usage(
                    "the lead is not shut down this way; stop it in its pane (Ctrl-C) or delete the team",
                ));
            }
            vec![n.clone()]
        }
        None => roster::load(&ctx.root, &team)?
            .teammates()
            .map(|m| m.name.clone())
            .collect(),
    };
    let quiet = ctx.json();
    let results = shutdown::shut_down_all(&ctx.root, &team, Some(&tmux), &names, &opts, &|line| {
        if !quiet {
            println!("{line}");
        }
    });
    let mut rejected = Vec::new();
    let mut reports = Vec::new();
    for r in results {
        let r = r?;
        if let Outcome::Rejected(reason) = &r.outcome {
            rejected.push(format!("{} ({reason})", r.name));
        }
        reports.push(serde_json::json!({"name": r.name, "outcome": format!("{:?}", r.outcome), "steps": r.steps}));
    }
    if ctx.json() {
        print_json(&reports);
    }
    if rejected.is_empty() {
        Ok(())
    } else {
        Err(Error::conflict(format!(
            "refused to shut down: {}; pass --force to terminate anyway",
            rejected.join(", ")
        )))
    }
}

pub fn attach(ctx: &Ctx, team: Option<String>) -> Result<()> {
    let team = ctx.team_or(team.as_deref())?;
    let tmux = team_tmux(ctx, &team)?;
    let window = TeamWindow::find(&tmux, &team, spawn::window_options(&ctx.root, &team))?
        .ok_or_else(|| {
            Error::not_found(format!(
                "team '{team}' has no tmux window; start one with `swarm spawn` or `swarm run`"
            ))
        })?;
    if !std::io::stdout().is_terminal() && !inside_tmux() {
        return Err(Error::usage("`swarm attach` needs a terminal"));
    }
    window.attach(inside_tmux())
}

pub fn lead(ctx: &Ctx, args: LeadArgs) -> Result<u8> {
    let team = ctx.team()?;
    roster::load(&ctx.root, &team)?;
    let tmux = team_tmux(ctx, &team)?;
    let agent = match &args.goal_file {
        None => None,
        Some(f) => {
            let goal = std::fs::read_to_string(f).map_err(|e| Error::io("read", f, e))?;
            let settings = settings_from(ctx, &args.model, &args.permissions)?;
            let cwd = working_dir(args.cwd.as_deref())?;
            Some(LeadAgentOptions {
                root: ctx.root.clone(),
                team: team.clone(),
                goal,
                approver: args.approver.parse()?,
                llm: crate::ui::cli::agent::llm_config(&args.model)?,
                powers: LeadPowers {
                    settings,
                    env: env_map(),
                    tmux: tmux.clone(),
                    inside_tmux: inside_tmux(),
                    max_teammates: args.teammates,
                },
                cwd,
                max_turns: args.permissions.max_turns,
                stall_after: Duration::from_secs(60),
            })
        }
    };
    let opts = LeadOptions {
        root: ctx.root.clone(),
        team,
        tmux: Some(tmux),
        keep_team: args.keep_team,
        reconcile_every: Duration::from_millis(500),
        ladder: LadderOptions::default(),
        draw: std::io::stdout().is_terminal(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("failed to start the async runtime: {e}")))?;
    let code = runtime.block_on(lead::run(opts, agent))?;
    Ok(u8::try_from(code).unwrap_or(1))
}

pub fn approvals(ctx: &Ctx, pending: bool) -> Result<()> {
    let team = ctx.team()?;
    let all: Vec<approvals::Approval> = approvals::list(&ctx.root, &team)?
        .into_iter()
        .filter(|a| !pending || a.state == approvals::State::Pending)
        .collect();
    if ctx.json() {
        print_json(&all);
        return Ok(());
    }
    if all.is_empty() {
        println!("no {}requests", if pending { "pending " } else { "" });
    }
    let now = clock::now_ms();
    for a in &all {
        println!(
            "{:<9} {:<10} {:<12} {}  {}",
            a.state.as_str(),
            format!("{:?}", a.kind).to_lowercase(),
            a.agent,
            a.request_id,
            status::ago(a.created_ms, now)
        );
        println!("          {}", a.summary);
    }
    Ok(())
}

pub fn decide(
    ctx: &Ctx,
    id: &str,
    approve: bool,
    feedback: Option<String>,
    mode: Option<String>,
) -> Result<()> {
    let team = ctx.team()?;
    if let Some(m) = &mode {
        m.parse::<PermissionMode>()?;
    }
    let a = approvals::resolve(
        &ctx.root,
        &team,
        id,
        approvals::Decision {
            approve,
            feedback,
            mode,
            by: "human".to_owned(),
        },
    )?;
    if ctx.json() {
        print_json(&a);
    } else {
        println!(
            "{} {}'s request {}",
            a.state.as_str(),
            a.agent,
            a.request_id
        );
    }
    Ok(())
}
