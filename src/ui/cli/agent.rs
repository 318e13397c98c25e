//! `swarm agent -p` and `swarm teammate`: running an agent in this process.

use std::sync::Arc;

use crate::agent::display::Display;
use crate::agent::engine::{Engine, Finish};
use crate::agent::prompt::{self, PromptInputs};
use crate::agent::tools::ToolContext;
use crate::config::agents::Catalog;
use crate::config::hooks::Hooks;
use crate::config::permissions::{AllowRule, PermissionMode};
use crate::config::tools::ToolName;
use crate::llm::{self, LlmConfig, LlmFlags};
use crate::roles::solo::SoloHost;
use crate::roles::teammate::{self, TeammateOptions};
use crate::store::names::{AgentName, TeamName, agent_id};
use crate::ui::cli::args::{AgentArgs, ModelOpts, PermissionOpts, TeammateArgs};
use crate::ui::cli::context::{Ctx, working_dir};
use crate::util::error::{Error, Result};

pub fn llm_config(opts: &ModelOpts) -> Result<LlmConfig> {
    let provider = opts
        .provider
        .as_deref()
        .map(str::parse::<llm::Provider>)
        .transpose()?;
    Ok(LlmConfig::resolve(&LlmFlags {
        provider,
        model: opts.model.clone(),
        base_url: opts.base_url.clone(),
        anthropic_version: opts.anthropic_version.clone(),
        ..LlmFlags::default()
    })?)
}

pub fn permissions(opts: &PermissionOpts) -> Result<(PermissionMode, Vec<AllowRule>)> {
    let mode = opts.permission_mode.parse()?;
    let allow = opts
        .allow
        .iter()
        .map(|r| r.parse())
        .collect::<Result<Vec<_>>>()?;
    Ok((mode, allow))
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("failed to start the async runtime: {e}")))
}

pub fn solo(_ctx: &Ctx, args: AgentArgs) -> Result<u8> {
    let config = llm_config(&args.model)?;
    let (mode, allow) = permissions(&args.permissions)?;
    let cwd = working_dir(args.cwd.as_deref())?;
    llm::install_crypto_provider();
    let client: Arc<dyn llm::LlmClient> = Arc::from(llm::build_client(&config)?);
    let agent = AgentName::new("agent").expect("valid");
    let mut tool_ctx = ToolContext::new(cwd.clone(), agent.clone(), mode);
    tool_ctx.allow = allow;
    let system = prompt::solo(&PromptInputs {
        agent: &agent,
        team: None,
        cwd: &cwd,
        mode,
        plan_mode_required: false,
        custom: None,
    });
    let mut engine = Engine::new(
        client,
        config.model.clone(),
        system,
        ToolName::SOLO.to_vec(),
    );
    engine.max_turns = args.permissions.max_turns;
    let mut host = SoloHost {
        ctx: tool_ctx,
        display: Display::new(None),
    };
    let cancel = host.ctx.cancel.clone();
    let finish = runtime()?.block_on(async {
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        });
        engine.run(&mut host, args.prompt).await
    })?;
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
        Finish::MaxTurns => Err(Error::Model(format!(
            "stopped after {} model turns; raise --max-turns",
            args.permissions.max_turns
        ))),
        Finish::Refusal(text) => Err(Error::Model(format!("the model refused: {text}"))),
        Finish::Stopped => Err(Error::Interrupted),
    }
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
    let (mut mode, allow) = permissions(&args.permissions)?;
    let cwd = working_dir(args.cwd.as_deref())?;
    let mut max_turns = args.permissions.max_turns;
    let mut tools = ToolName::ALL.to_vec();
    let mut custom_instructions = None;
    // The definition fills in what the command line did not say.
    let project = crate::config::project::teammate_project_dir(&cwd);
    if let Some(t) = &args.agent_type {
        let catalog = Catalog::load(&project);
        catalog.warn_invalid();
        let def = catalog.get(t)?;
        let (set, unknown) = def.tool_set(&tools);
        if !unknown.is_empty() {
            eprintln!(
                "swarm: warning: agent type '{t}' ({}) names tools swarm does not have: {}",
                def.source,
                unknown.join(", ")
            );
        }
        tools = set;
        custom_instructions = def.instructions().map(str::to_owned);
        if let (Some(m), false) = (def.permission_mode, args.mode_given) {
            mode = m;
        }
        if let (Some(n), false) = (def.max_turns, args.max_turns_given) {
            max_turns = n;
        }
    }
    let config = llm_config(&args.model)?;
    let hooks = Hooks::load(&project);
    for problem in &hooks.problems {
        crate::config::hooks::report(problem);
    }
    let opts = TeammateOptions {
        root: ctx.root.clone(),
        team,
        name,
        color: args.agent_color,
        plan_mode_required: args.plan_mode_required,
        agent_type: args.agent_type,
        custom_instructions,
        llm: config,
        mode,
        allow,
        max_turns,
        permission_timeout: args.permissions.permission_timeout.into(),
        cwd,
        idle_poll: std::time::Duration::from_secs(1),
        tools,
        hooks,
    };
    let code = runtime()?.block_on(teammate::run(opts))?;
    Ok(u8::try_from(code).unwrap_or(1))
}
