//! What a teammate is started with: its identity, model, permissions, tools and hooks,
//! from its command line and, where the command line is silent, its agent definition.
//!
//! The front end only parses `swarm teammate`'s command line ([`TeammateFlags`]); the
//! teammate resolves its options here, from the flags, the process's [`Profile`] and its
//! project ([`TeammateOptions::resolve`]), with its team opened once by whoever starts it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, ExitCode, Result};
use crate::lead_sig::LeadKey;
use swarm_config::agents::Catalog;
use swarm_config::hooks::{self, Hooks};
use swarm_config::permissions::{AllowRule, PermissionMode};
use swarm_config::profile::{ModelFlags, PermissionFlags, Profile};
use swarm_config::project::UserDirs;
use swarm_config::tools::ToolName;
use swarm_llm::{LlmConfig, Provider};
use swarm_store::Store;
use swarm_util::error::Base as _;
use swarm_util::meter::Limits;
use swarm_util::names::{AgentName, TeamName, agent_id};
use swarm_util::vars;

#[derive(Debug, Clone)]
pub struct TeammateOptions {
    /// Its team, opened once where the process starts.
    pub store: Store,
    pub name: AgentName,
    pub color: Option<String>,
    pub plan_mode_required: bool,
    pub agent_type: Option<String>,
    pub custom_instructions: Option<String>,
    pub llm: LlmConfig,
    pub mode: PermissionMode,
    pub allow: Vec<AllowRule>,
    /// What the teammate's commands get on top of this process's environment.
    pub env: std::collections::BTreeMap<String, String>,
    pub max_turns: u32,
    pub permission_timeout: Duration,
    pub cwd: PathBuf,
    /// How often an idle teammate looks for ready tasks without being woken.
    pub idle_poll: Duration,
    /// The model's tools (its agent definition may restrict them).
    pub tools: Vec<ToolName>,
    pub hooks: Hooks,
    /// Its own tmux pane (`$TMUX_PANE`), recorded in the roster and its `shutdown_approved`.
    pub pane: Option<String>,
    /// Where each model turn appends its timings, for `scripts/bench`.
    pub timings: Option<PathBuf>,
    /// Its own budget (`swarm spawn --budget-usd/--budget-tokens`); the team's applies too.
    pub budget: Limits,
    /// Restarted by a resumed lead: restore the conversation, continue the task it holds.
    pub resumed: bool,
    /// `--context-window`: overrides the model's window from the table.
    pub context_window: Option<u64>,
    /// `--lead-verify-key`: mail in the lead's name counts only when signed with it.
    pub lead_key: Option<LeadKey>,
    /// `--bound-lead-sig`: started by swarm's lead, so only a signature for this teammate
    /// of this team counts (`lead_sig_to`).
    pub bound_lead_sig: bool,
    /// The exit code an error ends the teammate with (the binary's mapping).
    pub exit_code: ExitCode,
}

/// `swarm teammate`'s command line, as parsed: who it is, and what it was told.
#[derive(Debug, Clone)]
pub struct TeammateFlags {
    /// Restarted by a resumed lead.
    pub resume: bool,
    pub agent_id: String,
    pub agent_name: String,
    pub team_name: String,
    pub color: Option<String>,
    pub plan_mode_required: bool,
    pub agent_type: Option<String>,
    pub cwd: Option<PathBuf>,
    pub lead_key: Option<LeadKey>,
    pub bound_lead_sig: bool,
    /// The agent type a Claude Code lead chose: loaded when defined here.
    pub claude_agent_type: Option<String>,
    /// The model a Claude Code lead chose.
    pub claude_model: Option<String>,
    /// Claude Code teammate flags swarm has no use for, kept for the log.
    pub claude_flags: Vec<String>,
    pub model: ModelFlags,
    pub permissions: PermissionFlags,
    pub budget: Limits,
}

impl TeammateFlags {
    /// The team and name these flags give, checked against `--agent-id`.
    pub fn identity(&self) -> Result<(TeamName, AgentName)> {
        let team = TeamName::new(&self.team_name)?;
        let name = AgentName::new(&self.agent_name)?;
        let expected = agent_id(&name, &team);
        if self.agent_id != expected {
            return Err(Error::usage(format!(
                "--agent-id {} does not match --agent-name and --team-name (expected {expected})",
                self.agent_id
            )));
        }
        Ok((team, name))
    }
}

impl TeammateOptions {
    /// The options of the teammate `flags` describe, in the team `store` holds (opened
    /// once, where the process starts): its project's agent definition and hooks, the
    /// settings files and the environment fill in what the flags leave out. `pane` is its
    /// own tmux pane.
    pub fn resolve(
        flags: TeammateFlags,
        store: Store,
        profile: &Profile,
        pane: Option<String>,
        exit_code: ExitCode,
    ) -> Result<TeammateOptions> {
        let (_, name) = flags.identity()?;
        if !flags.claude_flags.is_empty() {
            tracing::info!(
                "ignoring Claude Code flags swarm has no use for: {}",
                flags.claude_flags.join(" ")
            );
        }
        // Its commands act as itself (`identity`), whoever started it.
        let mut env = profile.settings_env();
        env.insert(
            vars::SWARM_AGENT_ID.to_owned(),
            agent_id(&name, store.team()),
        );
        env.insert(vars::SWARM_AGENT_NAME.to_owned(), name.to_string());
        env.insert(vars::SWARM_TEAM.to_owned(), store.team().to_string());
        let cwd = profile.working_dir(flags.cwd.as_deref())?;
        let dirs = &profile.settings.dirs;
        let project = dirs.teammate_project_dir(&cwd, profile.env());
        let agent_type = flags.agent_type.clone().or_else(|| {
            let t = flags.claude_agent_type.as_deref()?;
            defined_type(&project, dirs, t)
        });
        let perms = &flags.permissions;
        let given = Given {
            mode: perms.mode_given,
            max_turns: perms.max_turns_given,
        };
        let mode = profile.permission_mode(perms.mode, perms.mode_given);
        let from_project = from_project(
            &project,
            dirs,
            agent_type.as_deref(),
            mode,
            perms.max_turns,
            given,
        )?;
        let model = teammate_model(&flags, &from_project.api);
        Ok(TeammateOptions {
            store,
            name,
            color: flags.color,
            plan_mode_required: flags.plan_mode_required,
            agent_type,
            custom_instructions: from_project.custom_instructions,
            llm: profile.llm_config(&model)?,
            mode: from_project.mode,
            allow: profile.rules(&perms.allow),
            env,
            max_turns: from_project.max_turns,
            permission_timeout: perms.permission_timeout,
            cwd,
            idle_poll: Duration::from_secs(1),
            tools: from_project.tools,
            hooks: from_project.hooks,
            pane,
            timings: profile.settings.timings.clone(),
            budget: flags.budget,
            resumed: flags.resume,
            context_window: flags.model.context_window,
            lead_key: flags.lead_key,
            bound_lead_sig: flags.bound_lead_sig,
            exit_code,
        })
    }
}

/// The teammate's model and API: its flags, then its agent definition's (a Claude Code
/// lead passes only `--agent-type`), then a Claude Code lead's `--model`, which names a
/// Claude model and so stands only on Anthropic's API when nothing of swarm's names one.
fn teammate_model(flags: &TeammateFlags, defined: &DefinedApi) -> ModelFlags {
    let mut model = flags.model.clone();
    // The definition's URL goes with its provider (as for a spawn: inherit::resolve_api).
    if model.base_url.is_none() && model.provider.is_none_or(|p| Some(p) == defined.provider) {
        model.base_url = defined.base_url.clone();
    }
    model.provider = model.provider.or(defined.provider);
    model.model = model.model.or_else(|| defined.model.clone());
    if model.model.is_none() && matches!(model.provider, None | Some(Provider::Anthropic)) {
        model.model = flags.claude_model.clone();
    }
    model
}

/// Which settings the command line gave (a flag or its environment twin), so that an
/// agent definition fills in only the others.
#[derive(Debug, Clone, Copy, Default)]
pub struct Given {
    pub mode: bool,
    pub max_turns: bool,
}

/// What the teammate's project adds to its command line.
#[derive(Debug, Clone)]
pub struct FromProject {
    pub tools: Vec<ToolName>,
    pub custom_instructions: Option<String>,
    pub mode: PermissionMode,
    pub max_turns: u32,
    pub hooks: Hooks,
    /// The definition's `provider:`, `base_url:` and `model:`: the API a Claude Code lead's
    /// teammate talks to, since that lead passes only `--agent-type` and `--model` (swarm's
    /// own lead passes them as flags, which win).
    pub api: DefinedApi,
}

/// An agent definition's choice of model and where it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DefinedApi {
    pub provider: Option<Provider>,
    pub base_url: Option<String>,
    /// `None` also for `inherit`.
    pub model: Option<String>,
}

/// `agent_type` if the project (or the user) defines it; otherwise a warning in the
/// teammate's log and `None`: a Claude Code lead may name types swarm cannot load
/// (a plugin's), and its teammate runs on rather than failing to start.
pub fn defined_type(project: &Path, dirs: &UserDirs, agent_type: &str) -> Option<String> {
    match Catalog::load(project, dirs).get(agent_type) {
        Ok(_) => Some(agent_type.to_owned()),
        Err(e) => {
            tracing::warn!("running without the lead's agent type: {e}");
            None
        }
    }
}

/// Reads what the teammate's project says: the agent definition `agent_type` names (its
/// tools, its instructions, its API, and unless the command line gave them, its permission
/// mode and turn limit; an unknown type is an error listing the known ones) and the hooks.
/// Problems with the files are reported on stderr and do not stop the teammate.
pub fn from_project(
    project: &Path,
    dirs: &UserDirs,
    agent_type: Option<&str>,
    mode: PermissionMode,
    max_turns: u32,
    given: Given,
) -> Result<FromProject> {
    let mut out = FromProject {
        tools: ToolName::ALL.to_vec(),
        custom_instructions: None,
        mode,
        max_turns,
        hooks: Hooks::default(),
        api: DefinedApi::default(),
    };
    if let Some(t) = agent_type {
        let catalog = Catalog::load(project, dirs);
        catalog.warn_invalid();
        let def = catalog.get(t)?;
        let (set, unknown) = def.tool_set(&out.tools);
        if !unknown.is_empty() {
            eprintln!(
                "swarm: warning: agent type '{t}' ({}) names tools swarm does not have: {}",
                def.source,
                unknown.join(", ")
            );
        }
        out.tools = set;
        out.custom_instructions = def.instructions().map(str::to_owned);
        if let (Some(m), false) = (def.permission_mode, given.mode) {
            out.mode = m;
        }
        if let (Some(n), false) = (def.max_turns, given.max_turns) {
            out.max_turns = n;
        }
        out.api = DefinedApi {
            provider: def.provider,
            base_url: def.base_url.clone(),
            model: def.model.clone().filter(|m| m != "inherit"),
        };
    }
    out.hooks = Hooks::load(project, dirs);
    for problem in &out.hooks.problems {
        hooks::report(problem);
    }
    Ok(out)
}
