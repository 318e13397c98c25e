//! `swarm agent -p` and `swarm teammate`: running an agent in this process. A Claude Code
//! lead's teammate is a `swarm teammate` too (see `claude_argv`).
// The doc comments here are clap's help text, where `<team>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::Args;

use crate::ui::cli::context::{Ctx, working_dir};
use crate::ui::cli::options::{BudgetOpts, ModelOpts, PermissionOpts};
use swarm_llm::Provider;
use swarm_roles::lead_sig::LeadKey;
use swarm_roles::solo::{self, SoloOptions};
use swarm_roles::teammate::options::{self, DefinedApi, Given};
use swarm_roles::teammate::{self, TeammateOptions};
use swarm_store::Store;
use swarm_store::names::{AgentName, TeamName, agent_id};
use swarm_util::error::{Error, Result};
use swarm_util::vars;

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The task
    #[arg(long, short = 'p', value_name = "PROMPT")]
    pub prompt: String,
    /// Working directory [default: the current one]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelOpts,
    #[command(flatten)]
    pub permissions: PermissionOpts,
}

#[derive(Debug, Args)]
pub struct TeammateArgs {
    /// Restore its conversation and continue its work (started by a resumed lead)
    #[arg(long, hide = true)]
    pub resume: bool,
    /// <name>@<team>
    #[arg(long)]
    pub agent_id: String,
    /// Its name in the team's roster
    #[arg(long)]
    pub agent_name: String,
    /// Its team
    #[arg(long)]
    pub team_name: String,
    /// The colour its pane and messages are shown in
    #[arg(long)]
    pub agent_color: Option<String>,
    /// The lead's session id (for correlation only)
    #[arg(long)]
    pub parent_session_id: Option<String>,
    /// Start in plan mode; leave it only when team-lead approves a plan
    #[arg(long)]
    pub plan_mode_required: bool,
    /// Load this agent definition: its instructions, tools, permission mode and turn limit apply
    #[arg(long)]
    pub agent_type: Option<String>,
    /// Working directory [default: the current one]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// The lead's Ed25519 public key, <epoch ms>.<base64url SPKI DER>: mail in the lead's name counts only when signed with it (lead_sig)
    #[arg(long, value_name = "KEY", value_parser = lead_key)]
    pub lead_verify_key: Option<LeadKey>,
    /// The agent type a Claude Code lead chose (its --agent-type): loaded when defined here, else a warning and none
    #[arg(long, hide = true, value_name = "TYPE")]
    pub claude_agent_type: Option<String>,
    /// The model a Claude Code lead chose (its --model): used with the anthropic provider when neither --model nor SWARM_MODEL names one
    #[arg(long, hide = true, value_name = "MODEL")]
    pub claude_model: Option<String>,
    /// A Claude Code teammate flag swarm has no use for, kept for the log
    #[arg(long, hide = true, value_name = "FLAG", allow_hyphen_values = true)]
    pub claude_flag: Vec<String>,
    #[command(flatten)]
    pub model: ModelOpts,
    #[command(flatten)]
    pub permissions: PermissionOpts,
    /// This teammate's own budget
    #[command(flatten)]
    pub budget: BudgetOpts,
    /// Whether --permission-mode was given (flag or environment), set after parsing.
    #[arg(skip)]
    pub mode_given: bool,
    /// Whether --max-turns was given, set after parsing.
    #[arg(skip)]
    pub max_turns_given: bool,
}

fn lead_key(value: &str) -> Result<LeadKey> {
    LeadKey::parse(value)
}

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
    // The teammate's one handle on its team, for all it does.
    let store = ctx.teams.open(&team)?;
    start_teammate(ctx, args, &store, &name).inspect_err(|e| {
        teammate::lifecycle::record_start_failure(&store, &name, e);
    })
}

fn start_teammate(ctx: &Ctx, args: TeammateArgs, store: &Store, name: &AgentName) -> Result<u8> {
    let (team, name) = (store.team().clone(), name.clone());
    if !args.claude_flag.is_empty() {
        tracing::info!(
            "ignoring Claude Code flags swarm has no use for: {}",
            args.claude_flag.join(" ")
        );
    }
    // Its commands act as itself (`identity`), whoever started it.
    let mut env = ctx.settings_env();
    env.insert(vars::SWARM_AGENT_ID.to_owned(), agent_id(&name, &team));
    env.insert(vars::SWARM_AGENT_NAME.to_owned(), name.to_string());
    env.insert(vars::SWARM_TEAM.to_owned(), team.to_string());
    let cwd = working_dir(args.cwd.as_deref())?;
    let project = ctx.settings.dirs.teammate_project_dir(&cwd, ctx.env());
    let given = Given {
        mode: args.mode_given,
        max_turns: args.max_turns_given,
    };
    let agent_type = args.agent_type.clone().or_else(|| {
        let t = args.claude_agent_type.as_deref()?;
        options::defined_type(&project, &ctx.settings.dirs, t)
    });
    let from_project = options::from_project(
        &project,
        &ctx.settings.dirs,
        agent_type.as_deref(),
        ctx.permission_mode(args.permissions.permission_mode),
        args.permissions.max_turns,
        given,
    )?;
    let model = teammate_model(&args, &from_project.api);
    let opts = TeammateOptions {
        store: store.clone(),
        name,
        color: args.agent_color,
        plan_mode_required: args.plan_mode_required,
        agent_type,
        custom_instructions: from_project.custom_instructions,
        llm: ctx.llm_config(&model)?,
        mode: from_project.mode,
        allow: ctx.rules(&args.permissions.allow),
        env,
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
        lead_key: args.lead_verify_key,
    };
    let code = runtime()?.block_on(teammate::run(opts))?;
    Ok(u8::try_from(code).unwrap_or(1))
}

/// The teammate's model and API: its flags, then its agent definition's (a Claude Code
/// lead passes only `--agent-type`), then a Claude Code lead's `--model`, which names a
/// Claude model and so stands only on Anthropic's API when nothing of swarm's names one.
fn teammate_model(args: &TeammateArgs, defined: &DefinedApi) -> ModelOpts {
    let mut model = args.model.clone();
    let api = &mut model.api;
    // The definition's URL goes with its provider (as for a spawn: inherit::resolve_api).
    if api.base_url.is_none() && api.provider.is_none_or(|p| Some(p) == defined.provider) {
        api.base_url = defined.base_url.clone();
    }
    api.provider = api.provider.or(defined.provider);
    model.model = model.model.or_else(|| defined.model.clone());
    if model.model.is_none() && matches!(model.api.provider, None | Some(Provider::Anthropic)) {
        model.model = args.claude_model.clone();
    }
    model
}
