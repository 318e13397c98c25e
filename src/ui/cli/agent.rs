//! `swarm agent -p` and `swarm teammate`: running an agent in this process. A Claude Code
//! lead's teammate is a `swarm teammate` too (see `claude_argv`).
// The doc comments here are clap's help text, where `<team>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::Args;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::options::{BudgetOpts, ModelOpts, PermissionOpts};
use swarm::error::{Error, Result};
use swarm::exit::exit_code;
use swarm_roles::lead_sig::LeadKey;
use swarm_roles::solo::{self, SoloOptions};
use swarm_roles::teammate::{self, TeammateFlags};

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
    /// Started by swarm's lead: only its signatures for this teammate (lead_sig_to) count
    #[arg(long, hide = true, requires = "lead_verify_key")]
    pub bound_lead_sig: bool,
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
    Ok(LeadKey::parse(value)?)
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Runtime(format!("failed to start the async runtime: {e}")))
}

pub fn solo(ctx: &Ctx, args: AgentArgs) -> Result<u8> {
    let opts = SoloOptions {
        prompt: args.prompt,
        llm: ctx.llm_config(&args.model)?,
        mode: ctx.permission_mode(args.permissions.permission_mode),
        allow: ctx.profile.rules(&args.permissions.allow),
        env: ctx.profile.settings_env(),
        max_turns: args.permissions.max_turns,
        cwd: ctx.working_dir(args.cwd.as_deref())?,
        timings: ctx.profile.settings.timings.clone(),
        context_window: args.model.context_window,
    };
    Ok(runtime()?.block_on(solo::run(opts))?)
}

pub fn teammate(ctx: &Ctx, args: TeammateArgs) -> Result<u8> {
    let (profile, pane) = (&ctx.profile, ctx.own_pane());
    Ok(teammate::start(
        args.flags(),
        &ctx.teams,
        profile,
        pane,
        exit_code,
    )?)
}

impl TeammateArgs {
    /// What the command line says, for the teammate to resolve its options from.
    fn flags(self) -> TeammateFlags {
        TeammateFlags {
            resume: self.resume,
            agent_id: self.agent_id,
            agent_name: self.agent_name,
            team_name: self.team_name,
            color: self.agent_color,
            plan_mode_required: self.plan_mode_required,
            agent_type: self.agent_type,
            cwd: self.cwd,
            lead_key: self.lead_verify_key,
            bound_lead_sig: self.bound_lead_sig,
            claude_agent_type: self.claude_agent_type,
            claude_model: self.claude_model,
            claude_flags: self.claude_flag,
            model: self.model.flags(),
            permissions: self
                .permissions
                .flags(self.mode_given, self.max_turns_given),
            budget: self.budget.limits(),
        }
    }
}
