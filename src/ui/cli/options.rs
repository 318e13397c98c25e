//! Flag groups several commands share (the model, the API, the engine, permissions, budget,
//! how branches land) and the value parsers behind their flags.

use std::path::PathBuf;

use clap::Args;

use swarm::error::Error;
use swarm_config::permissions::{AllowRule, PermissionMode};
use swarm_config::profile::{ModelFlags, PermissionFlags};
use swarm_config::tools::ToolName;
use swarm_llm::Provider;
use swarm_store::Teams;
use swarm_store::roster;
use swarm_team::spawn::inherit::Engine;
use swarm_util::error::Base as _;
use swarm_util::meter::Limits;
use swarm_util::vars;

/// Which model to talk to.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Model")]
pub struct ModelOpts {
    #[command(flatten)]
    pub api: ApiOpts,
    /// Model id [default: the provider's]
    #[arg(long, env = vars::SWARM_MODEL, value_name = "MODEL")]
    pub model: Option<String>,
    /// The model's context window in tokens; the conversation is compacted at 80 % of it (teammates inherit it) [default: the model's, from swarm's table]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub context_window: Option<u64>,
}

impl ModelOpts {
    /// What these flags say, as the roles take it.
    pub fn flags(&self) -> ModelFlags {
        ModelFlags {
            provider: self.api.provider,
            base_url: self.api.base_url.clone(),
            anthropic_version: self.api.anthropic_version.clone(),
            rate_limit_wait: self.api.rate_limit_wait,
            model: self.model.clone(),
            context_window: self.context_window,
        }
    }
}

/// Which API to talk to: what a lead passes on to every teammate.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Model")]
pub struct ApiOpts {
    /// anthropic, openai (any OpenAI-compatible server) or scripted (swarm's model server)
    #[arg(long, env = vars::SWARM_PROVIDER, value_name = "PROVIDER")]
    pub provider: Option<Provider>,
    /// API base URL [default: $ANTHROPIC_BASE_URL / $OPENAI_BASE_URL, else the provider's]
    #[arg(long, env = vars::SWARM_BASE_URL, value_name = "URL")]
    pub base_url: Option<String>,
    /// The anthropic-version header of the anthropic and scripted providers [default: 2023-06-01]
    #[arg(long, env = vars::ANTHROPIC_VERSION, value_name = "VERSION")]
    pub anthropic_version: Option<String>,
    /// How long one model call may wait out rate limits (429, 529) in all before it fails;
    /// a team waits together [default: 900]
    #[arg(long, env = vars::SWARM_RATE_LIMIT_WAIT, value_name = "SECS")]
    pub rate_limit_wait: Option<u64>,
}

/// What runs the teammates.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Engine")]
pub struct EngineOpts {
    /// What runs the teammates: swarm (its own agent loop) or claude (a Claude Code process in the pane)
    #[arg(long, default_value = "swarm", value_name = "ENGINE")]
    pub engine: Engine,
    /// The Claude Code client for --engine claude [default: $SWARM_CLAUDE_BIN, else claude on PATH]
    #[arg(long, value_name = "FILE")]
    pub claude_bin: Option<PathBuf>,
}

/// What an agent may do without asking.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Permissions")]
pub struct PermissionOpts {
    /// default, acceptEdits, bypassPermissions or plan
    #[arg(
        long,
        env = vars::SWARM_PERMISSION_MODE,
        default_value = "default",
        value_name = "MODE"
    )]
    pub permission_mode: PermissionMode,
    /// Allow a tool without asking, e.g. 'Bash(cargo test:*)' or 'Write(src/**)' (repeatable)
    #[arg(long = "allow", value_name = "RULE", value_parser = allow_rule)]
    pub allow: Vec<AllowRule>,
    /// Stop after this many model turns per piece of work
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub max_turns: u32,
    /// How long to wait for an answer to a permission request
    #[arg(long, default_value = "5m", value_name = "DURATION")]
    pub permission_timeout: humantime::Duration,
}

impl PermissionOpts {
    /// What these flags say, as the roles take it, with whether the mode and the turn
    /// limit were given or defaulted.
    pub fn flags(&self, mode_given: bool, max_turns_given: bool) -> PermissionFlags {
        PermissionFlags {
            mode: self.permission_mode,
            mode_given,
            allow: self.allow.clone(),
            max_turns: self.max_turns,
            max_turns_given,
            permission_timeout: self.permission_timeout.into(),
        }
    }
}

/// What may be spent on model calls. At the limit no new model call starts.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Budget")]
pub struct BudgetOpts {
    /// Stop starting model calls once this many US dollars are spent (by the price table; models without a known price are not counted)
    #[arg(long, value_name = "USD", value_parser = dollars)]
    pub budget_usd: Option<f64>,
    /// Stop starting model calls once this many tokens are spent (input + output + cache creation + cache read)
    #[arg(long, value_name = "N", value_parser = token_count)]
    pub budget_tokens: Option<u64>,
}

impl BudgetOpts {
    pub fn limits(&self) -> Limits {
        Limits {
            usd: self.budget_usd,
            tokens: self.budget_tokens,
        }
    }
}

/// How the team's worktree branches land (`swarm run` records them for the team).
#[derive(Debug, Args, Clone, Default)]
pub struct MergeOpts {
    /// The check to run after each merge, a shell command [default: the team's, else swarm.check in .claude/settings.json]
    #[arg(long, value_name = "CMD")]
    pub check: Option<String>,
    /// The branch to land on [default: the team's, else the branch the project's checkout is on]
    #[arg(long, value_name = "BRANCH")]
    pub into: Option<String>,
    /// How a branch lands: merge, rebase or squash [default: the team's, else merge]
    #[arg(long, value_name = "S")]
    pub merge_strategy: Option<swarm_git::merge::Strategy>,
}

impl MergeOpts {
    pub fn options(
        &self,
        dry_run: bool,
        dirs: &swarm_config::project::UserDirs,
    ) -> swarm_git::merge::Options {
        swarm_git::merge::Options {
            into: self.into.clone(),
            check: self.check.clone(),
            strategy: self.merge_strategy,
            dry_run,
            completed_work_only: false,
            restarts_owners: false,
            dirs: dirs.clone(),
        }
    }
}

/// Where a new team's shared state lives (`swarm team create`, `run`, `demo`).
#[derive(Debug, Args, Clone, Default)]
pub struct StoreOpts {
    /// Make the team on this PostgreSQL database instead of as files, e.g. postgres://swarm@db.example/swarm; the password comes from ~/.pgpass or PGPASSWORD, never the URL
    #[arg(long, env = vars::SWARM_STORE_URL, value_name = "URL")]
    pub store: Option<String>,
}

impl StoreOpts {
    /// `teams` making the new ones where these options say, a URL with a password refused.
    pub fn teams(&self, teams: &Teams) -> Result<Teams, Error> {
        if let Some(url) = &self.store {
            swarm_store_pg::check_url(url)?;
        }
        Ok(teams.clone().making_teams_at(self.store.clone()))
    }
}

/// A dollar amount above zero.
fn dollars(value: &str) -> Result<f64, Error> {
    match value.trim_start_matches('$').parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(Error::usage(format!(
            "invalid amount {value:?}: give US dollars above zero, e.g. --budget-usd 5 or 2.50"
        ))),
    }
}

/// A token count above zero.
fn token_count(value: &str) -> Result<u64, Error> {
    match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Error::usage(format!(
            "invalid token count {value:?}: give a whole number above zero, e.g. --budget-tokens 500000"
        ))),
    }
}

/// An allow rule for one of swarm's tools: a misspelt tool would otherwise allow nothing,
/// silently.
pub fn allow_rule(value: &str) -> Result<AllowRule, Error> {
    let rule: AllowRule = value.parse()?;
    if ToolName::parse(&rule.tool).is_some() {
        return Ok(rule);
    }
    let known: Vec<&str> = ToolName::ALL
        .into_iter()
        .chain(ToolName::LEAD)
        .map(ToolName::as_str)
        .fold(Vec::new(), |mut names, n| {
            if !names.contains(&n) {
                names.push(n);
            }
            names
        });
    Err(Error::usage(format!(
        "unknown tool '{}' in --allow '{value}'; known tools: {}",
        rule.tool,
        known.join(", ")
    )))
}

/// A palette colour, checked by the roster's own rule.
pub fn colour(value: &str) -> Result<String, Error> {
    Ok(roster::check_colour(value).map(|()| value.to_owned())?)
}
