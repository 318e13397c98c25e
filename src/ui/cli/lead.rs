//! `swarm lead`: the process in a team window's first pane, supervising, and with a goal,
//! leading.

use std::io::IsTerminal;
use std::time::Duration;

use std::path::PathBuf;

use clap::Args;

use crate::ui::cli::context::{Ctx, working_dir};
use crate::ui::cli::input::{Limit, Source, read_text};
use crate::ui::cli::options::{EngineOpts, ModelOpts, PermissionOpts};
use swarm_config::permissions::Approver;
use swarm_roles::lead::agent::LeadAgentOptions;
use swarm_roles::lead::dispatcher::{self, LeadOptions};
use swarm_store::mailbox;
use swarm_team::shutdown::LadderOptions;
use swarm_team::tools::LeadPowers;
use swarm_util::error::{Error, Result};

#[derive(Debug, Args)]
pub struct LeadArgs {
    /// Restore the lead's conversation and restart its unfinished teammates (`swarm resume`)
    #[arg(long, hide = true)]
    pub resume: bool,
    /// Leave the teammates running when the lead stops
    #[arg(long)]
    pub keep_team: bool,
    /// Run a lead agent on the goal in this file (without it, the lead only supervises)
    #[arg(long, value_name = "FILE")]
    pub goal_file: Option<PathBuf>,
    /// Who approves plans and permissions: lead (its model) or human (swarm approve)
    #[arg(long, default_value = "lead", value_name = "WHO")]
    pub approver: Approver,
    /// The most teammates the lead agent may spawn
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub teammates: usize,
    /// The hosts new teammates go on, each on the one with the fewest (`swarm run --hosts`)
    #[arg(long, value_name = "HOST,...", value_delimiter = ',', hide = true)]
    pub hosts: Vec<String>,
    /// Where the team works [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelOpts,
    #[command(flatten)]
    pub permissions: PermissionOpts,
    #[command(flatten)]
    pub engine: EngineOpts,
}

pub fn run(ctx: &Ctx, args: LeadArgs) -> Result<u8> {
    let store = ctx.team()?;
    store.roster().load()?;
    // The team's lead key, made at the team's first start and read again on a resume: every
    // message this lead writes to an inbox is signed with it (swarm_store::lead_key).
    store.root().lead_signer(store.team())?;
    let tmux = ctx.team_tmux(&store)?;
    let agent = match &args.goal_file {
        None => None,
        Some(f) => {
            let goal = read_text(
                Source::File(f),
                Limit {
                    what: "the goal",
                    bytes: mailbox::envelope::MAX_MESSAGE_BYTES,
                    fix: "shorten it: the lead reads it as its first message",
                },
            )?;
            let cwd = working_dir(args.cwd.as_deref())?;
            let lead = ctx.with_engine(
                inherited(ctx, &args.model, &args.permissions)?,
                &args.engine,
            )?;
            Some(LeadAgentOptions {
                store: store.clone(),
                goal,
                approver: args.approver,
                llm: ctx.llm_config(&args.model)?,
                powers: LeadPowers {
                    launcher: ctx.launcher(&store, lead, cwd.clone())?,
                    max_teammates: args.teammates,
                    hosts: args.hosts.clone(),
                },
                cwd,
                resumed: args.resume,
                max_turns: args.permissions.max_turns,
                stall_after: Duration::from_secs(60),
                timings: ctx.settings.timings.clone(),
                context_window: args.model.context_window,
            })
        }
    };
    let resume = match (&agent, args.resume) {
        (_, false) => None,
        (Some(a), true) => Some(a.powers.launcher.clone()),
        (None, true) => {
            let lead = ctx.with_engine(
                inherited(ctx, &args.model, &args.permissions)?,
                &args.engine,
            )?;
            Some(ctx.launcher(&store, lead, working_dir(args.cwd.as_deref())?)?)
        }
    };
    let opts = LeadOptions {
        resume,
        store,
        tmux: Some(tmux),
        keep_team: args.keep_team,
        reconcile_every: Duration::from_millis(500),
        ladder: LadderOptions::new(ctx.settings.dirs.clone()),
        draw: std::io::stdout().is_terminal(),
        pane: ctx.own_pane(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("failed to start the async runtime: {e}")))?;
    let code = runtime.block_on(dispatcher::run(opts, agent))?;
    Ok(u8::try_from(code).unwrap_or(1))
}

/// The settings a lead passes on to its teammates, from its model and permission flags.
pub fn inherited(
    ctx: &Ctx,
    model: &ModelOpts,
    permissions: &PermissionOpts,
) -> Result<swarm_team::inherit::LeadSettings> {
    let mut lead = ctx.lead_settings()?;
    lead.provider = model.api.provider.map(|p| p.to_string());
    lead.model = ctx.model(model);
    lead.context_window = model.context_window;
    lead.base_url = model.api.base_url.clone();
    lead.anthropic_version = model.api.anthropic_version.clone();
    lead.rate_limit_wait = model.api.rate_limit_wait;
    lead.permission_mode = ctx.permission_mode(permissions.permission_mode);
    lead.allow = permissions.allow.iter().map(ToString::to_string).collect();
    lead.max_turns = Some(permissions.max_turns);
    lead.permission_timeout = Some(permissions.permission_timeout.into());
    Ok(lead)
}
