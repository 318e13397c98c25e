//! `swarm agent -p` and `swarm teammate`: running an agent in this process.

use crate::ui::cli::args::{AgentArgs, TeammateArgs};
use crate::ui::cli::context::{Ctx, working_dir};
use swarm_roles::solo::{self, SoloOptions};
use swarm_roles::teammate::options::{self, Given};
use swarm_roles::teammate::{self, TeammateOptions};
use swarm_store::names::{AgentName, TeamName, agent_id};
use swarm_util::error::{Error, Result};

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("failed to start the async runtime: {e}")))
}

pub fn solo(ctx: &Ctx, args: AgentArgs) -> Result<u8> {
    let opts = SoloOptions {
        prompt: args.prompt,
        llm: ctx.llm_config(&args.model)?,
        mode: ctx.permission_mode(args.permissions.permission_mode),
        allow: ctx.rules(&args.permissions.allow),
        env: ctx.settings_env(),
        max_turns: args.permissions.max_turns,
        cwd: working_dir(args.cwd.as_deref())?,
        timings: ctx.settings.timings.clone(),
        context_window: args.model.context_window,
    };
    runtime()?.block_on(solo::run(opts))
}

pub fn teammate(ctx: &Ctx, args: TeammateArgs) -> Result<u8> {
    let team = TeamName::new(&args.team_name)?;
    let name = AgentName::new(&args.agent_name)?;
    let expected = agent_id(&name, &team);
    if args.agent_id != expected {
        return Err(Error::usage(format!(
            "--agent-id {} does not match --agent-name and --team-name (expected {expected})",
            args.agent_id
        )));
    }
    start_teammate(ctx, args, &team, &name).inspect_err(|e| {
        teammate::lifecycle::record_start_failure(&ctx.root, &team, &name, e);
    })
}

fn start_teammate(ctx: &Ctx, args: TeammateArgs, team: &TeamName, name: &AgentName) -> Result<u8> {
    let (team, name) = (team.clone(), name.clone());
    let cwd = working_dir(args.cwd.as_deref())?;
    let project = ctx.settings.dirs.teammate_project_dir(&cwd, ctx.env());
    let given = Given {
        mode: args.mode_given,
        max_turns: args.max_turns_given,
    };
    let from_project = options::from_project(
        &project,
        &ctx.settings.dirs,
        args.agent_type.as_deref(),
        ctx.permission_mode(args.permissions.permission_mode),
        args.permissions.max_turns,
        given,
    )?;
    let opts = TeammateOptions {
        root: ctx.root.clone(),
        team,
        name,
        color: args.agent_color,
        plan_mode_required: args.plan_mode_required,
        agent_type: args.agent_type,
        custom_instructions: from_project.custom_instructions,
        llm: ctx.llm_config(&args.model)?,
        mode: from_project.mode,
        allow: ctx.rules(&args.permissions.allow),
        env: ctx.settings_env(),
        max_turns: from_project.max_turns,
        permission_timeout: args.permissions.permission_timeout.into(),
        cwd,
        idle_poll: std::time::Duration::from_secs(1),
        tools: from_project.tools,
        hooks: from_project.hooks,
        pane: ctx.own_pane(),
        timings: ctx.settings.timings.clone(),
        budget: args.budget.limits(),
        resumed: args.resume,
        context_window: args.model.context_window,
    };
    let code = runtime()?.block_on(teammate::run(opts))?;
    Ok(u8::try_from(code).unwrap_or(1))
}
