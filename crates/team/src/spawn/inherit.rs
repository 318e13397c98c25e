//! What a teammate inherits from its lead: one pure function from the lead's settings and
//! environment to the teammate's argv and environment; and the lead's own command line
//! ([`lead_command`]), built from the same settings by the same rules.
//!
//! Rules, in order:
//! - identity: `--agent-id <name>@<team> --agent-name --team-name --agent-color`, also
//!   exported as `SWARM_AGENT_ID`, `SWARM_AGENT_NAME`, `SWARM_TEAM`;
//! - API ([`resolve_api`]): the provider is the spawn's `--provider`, else the agent
//!   definition's `provider`, else the lead's; the base URL the spawn's `--base-url`, else
//!   the definition's `base_url`, else the lead's, but only when the provider is the lead's
//!   too: on another provider it is that provider's own (`ANTHROPIC_BASE_URL`,
//!   `OPENAI_BASE_URL`, else its default). A teammate whose provider or base URL is not the
//!   lead's is on *its own API*: the lead's `SWARM_PROVIDER`, `SWARM_BASE_URL` and
//!   `SWARM_MODEL` are kept out of its environment, so nothing of the lead's API reaches
//!   it. Keys never come from here: each provider's is in the environment (`secret_env`);
//! - model ([`resolve_model`]), first that applies: `SWARM_SUBAGENT_MODEL` (else
//!   `CLAUDE_CODE_SUBAGENT_MODEL`) in the lead's environment, the spawn's `--model`, the
//!   agent definition's `model`, the lead's model. `inherit` on any rung means the lead's
//!   model. On its own API a teammate skips the first rung and the last (the lead's model
//!   would mean nothing there), and `inherit` means no model. With none of them, no
//!   `--model` at all, so the teammate uses the provider's default: a model the user did
//!   not choose is never forced. `anthropic-version` and how long to wait out rate limits
//!   are the lead's;
//! - permission mode: plan when a plan is required (plan mode beats bypass), else the
//!   spawn's mode, else the agent definition's `permissionMode`, else the lead's; allow
//!   rules, the turn limit and how long to wait for a permission answer are the lead's;
//!   the context window (`--context-window`) is the spawn's own, else the lead's on the
//!   lead's API (another model has its own);
//! - budget: the spawn's own (`--budget-usd`, `--budget-tokens`), never the lead's; the
//!   team's budget reaches every agent through the team's `budget.json`;
//! - root and tmux server are the lead's, so the team stays on one disk and one server;
//! - environment ([`environment`]): what the settings table (`swarm_util::vars`) says
//!   travels to the [`Place`] the process runs at, copied from the lead's: provider keys
//!   and URLs, proxies, CA bundles, swarm's settings, the `PG*` settings of a PostgreSQL
//!   team, and `PATH`, `HOME`, `LANG`, `USER` so commands run as they would for the lead.
//!   On another host, what is the host's own (`HOME`, `PATH`, `PGPASSWORD`, the password
//!   file, certificates...) stays the host's, and the database's address reaches it in the
//!   URL it is given. What the table marks secret goes to `secret_env`, which never reaches
//!   a command line; it is the only way a credential reaches a teammate, since tmux itself
//!   is never given one (see [`swarm_tmux::Tmux::hide_env`]).
//!
//! Every valued flag is written `--flag=value`, so a value starting with `-` is still a
//! value.
//!
//! A Claude Code teammate (`--engine claude`, [`claude_command`]) gets the command line
//! Claude Code's own lead gives a pane teammate: the client's argv (identity, parent
//! session, plan mode, agent type, permission flag, model by the same chain), and
//! `CLAUDECODE=1 CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1`, `CLAUDE_CONFIG_DIR` when the team's
//! root is not `~/.claude`, and the same allow-list. Its credentials are whatever the client
//! already uses (its own login, or `ANTHROPIC_API_KEY` through `secret_env`), never argv.
//! As root with bypass, `IS_SANDBOX=1`, without which the client refuses
//! `--dangerously-skip-permissions`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use swarm_config::permissions::PermissionMode;
use swarm_config::profile::{ModelFlags, PermissionFlags, Profile};
use swarm_config::settings::Settings;
use swarm_llm::Provider;
use swarm_util::environment::is_secret;
use swarm_util::meter::Limits;
use swarm_util::names::{AgentName, TeamName, agent_id};
use swarm_util::vars::{self, Travel};

/// The lead's side of the inheritance.
#[derive(Debug, Clone, PartialEq)]
pub struct LeadSettings {
    /// The swarm binary teammates run (the lead's own, by absolute path).
    pub exe: PathBuf,
    pub root: PathBuf,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub anthropic_version: Option<String>,
    /// Seconds one model call may wait out rate limits; `None` leaves the default.
    pub rate_limit_wait: Option<u64>,
    pub permission_mode: PermissionMode,
    pub allow: Vec<String>,
    pub max_turns: Option<u32>,
    /// `--context-window`, passed on as it was given.
    pub context_window: Option<u64>,
    pub permission_timeout: Option<Duration>,
    pub tmux_socket: Option<String>,
    pub session_id: Option<String>,
    /// What runs the teammates this lead spawns unless a spawn says otherwise.
    pub engine: Engine,
    /// The Claude Code client, resolved at the edge; needed only by `Engine::Claude`.
    pub claude_bin: Option<PathBuf>,
    /// The team's lead key, `<ms>.<base64url SPKI>`, passed as `--lead-verify-key` so the
    /// teammate believes mail in the lead's name only when signed with it.
    pub lead_verify_key: Option<String>,
}

/// What runs a teammate: swarm's own agent loop, or a Claude Code process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    #[default]
    Swarm,
    Claude,
}

impl Engine {
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Swarm => "swarm",
            Engine::Claude => "claude",
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Engine {
    type Err = swarm_util::error::Error;
    fn from_str(s: &str) -> Result<Engine, Self::Err> {
        match s {
            "swarm" => Ok(Engine::Swarm),
            "claude" => Ok(Engine::Claude),
            other => Err(swarm_util::error::Error::usage(format!(
                "unknown engine '{other}'; use swarm or claude"
            ))),
        }
    }
}

impl LeadSettings {
    /// A lead's settings with nothing chosen yet: the provider's defaults, permission mode
    /// `default`, no allow rules, the teammates' own turn limit and permission timeout.
    pub fn new(exe: PathBuf, root: PathBuf, tmux_socket: Option<String>) -> LeadSettings {
        LeadSettings {
            exe,
            root,
            provider: None,
            model: None,
            base_url: None,
            anthropic_version: None,
            rate_limit_wait: None,
            permission_mode: PermissionMode::Default,
            allow: Vec::new(),
            max_turns: None,
            context_window: None,
            permission_timeout: None,
            tmux_socket,
            session_id: None,
            engine: Engine::Swarm,
            claude_bin: None,
            lead_verify_key: None,
        }
    }

    /// These settings with what a lead's own model and permission flags say, resolved
    /// against `profile` as the lead's own agent resolves them: what its teammates inherit.
    pub fn inherited(
        mut self,
        profile: &Profile,
        model: &ModelFlags,
        permissions: &PermissionFlags,
    ) -> LeadSettings {
        self.provider = model.provider.map(|p| p.to_string());
        self.model = profile.model(model.model.as_deref());
        self.context_window = model.context_window;
        self.base_url = model.base_url.clone();
        self.anthropic_version = model.anthropic_version.clone();
        self.rate_limit_wait = model.rate_limit_wait;
        self.permission_mode = profile.permission_mode(permissions.mode, permissions.mode_given);
        self.allow = permissions.allow.iter().map(ToString::to_string).collect();
        self.max_turns = Some(permissions.max_turns);
        self.permission_timeout = Some(permissions.permission_timeout);
        self
    }

    /// These settings starting teammates with `engine`: for Claude Code, with the client
    /// (`claude_bin`, else the settings') found now, so a missing one is refused before
    /// anything is made.
    pub fn with_engine(
        mut self,
        settings: &Settings,
        engine: Engine,
        claude_bin: Option<&std::path::Path>,
    ) -> crate::error::Result<LeadSettings> {
        self.engine = engine;
        self.claude_bin = match engine {
            Engine::Claude => Some(settings.claude_bin(claude_bin)?),
            Engine::Swarm => None,
        };
        Ok(self)
    }
}

/// `--permission-timeout=...`, as the flag reads it back.
pub fn permission_timeout_flag(timeout: Duration) -> String {
    format!(
        "--permission-timeout={}",
        humantime::format_duration(timeout)
    )
}

/// One teammate to start.
#[derive(Debug, Clone, PartialEq)]
pub struct SpawnSpec {
    pub team: TeamName,
    pub name: AgentName,
    pub color: String,
    pub agent_type: Option<String>,
    pub model: Option<String>,
    /// Its own provider (`--provider`), when it has one.
    pub provider: Option<String>,
    /// Its own base URL (`--base-url`), when it has one.
    pub base_url: Option<String>,
    pub permission_mode: Option<PermissionMode>,
    pub plan_mode_required: bool,
    pub cwd: PathBuf,
    /// The agent definition's `model`, if it names one.
    pub definition_model: Option<String>,
    /// The agent definition's `provider`, if it names one.
    pub definition_provider: Option<String>,
    /// The agent definition's `base_url`, if it names one.
    pub definition_base_url: Option<String>,
    /// The agent definition's `permissionMode`, if it names one.
    pub definition_permission_mode: Option<PermissionMode>,
    /// Its own budget, given to a swarm teammate as `--budget-usd`/`--budget-tokens`.
    pub budget: Limits,
    /// Its own context window (`--context-window`), over the lead's.
    pub context_window: Option<u64>,
    /// Its own `anthropic-version` header (`--anthropic-version`), over the lead's.
    pub anthropic_version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeammateCommand {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub secret_env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

impl TeammateCommand {
    /// Its whole environment as a dry run shows it: each secret by name, `<redacted>`.
    pub fn shown_env(&self) -> std::collections::BTreeMap<String, String> {
        let redacted = self
            .secret_env
            .iter()
            .map(|(k, _)| (k.clone(), "<redacted>".to_owned()));
        self.env.iter().cloned().chain(redacted).collect()
    }
}

/// Where a process swarm starts runs, which decides what of the caller's environment it
/// gets (the settings table's `panes` or `hosts` column, `swarm_util::vars`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In a pane on this machine.
    Here,
    /// On another host, over ssh: what is the host's own stays the host's.
    Host,
}

/// Environment variables that choose every teammate's model, in order.
pub const SUBAGENT_MODEL_VARS: [&str; 2] =
    [vars::SWARM_SUBAGENT_MODEL, vars::CLAUDE_CODE_SUBAGENT_MODEL];

/// The variables of the lead's own API, kept from a teammate on its own API.
const LEAD_API: [&str; 3] = [
    vars::SWARM_PROVIDER,
    vars::SWARM_BASE_URL,
    vars::SWARM_MODEL,
];

/// The API a teammate talks to (see the module comment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Api {
    /// `None`: the default provider, as the lead's.
    pub provider: Option<String>,
    /// `None`: the provider's, from the environment or its default.
    pub base_url: Option<String>,
    /// The provider or base URL is not the lead's.
    pub own: bool,
}

fn chosen(value: Option<&String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The teammate's provider and base URL (see the module comment).
pub fn resolve_api(lead: &LeadSettings, spawn: &SpawnSpec) -> Api {
    let given = chosen(spawn.provider.as_ref());
    let defined = chosen(spawn.definition_provider.as_ref());
    // The definition's URL goes with its provider: a spawn naming another provider
    // does not send that provider's requests (and key) to the definition's server.
    let definitions_url = (given.is_none() || given == defined)
        .then(|| chosen(spawn.definition_base_url.as_ref()))
        .flatten();
    let provider = given.or(defined);
    let base_url = chosen(spawn.base_url.as_ref()).or(definitions_url);
    let default = || Provider::Anthropic.as_str().to_owned();
    let leads_provider = chosen(lead.provider.as_ref()).unwrap_or_else(default);
    let own_provider = provider.as_ref().is_some_and(|p| *p != leads_provider);
    let base_url = if own_provider {
        base_url
    } else {
        base_url.or_else(|| chosen(lead.base_url.as_ref()))
    };
    let own = own_provider || base_url != chosen(lead.base_url.as_ref());
    Api {
        provider: provider.or_else(|| lead.provider.clone()),
        base_url,
        own,
    }
}

/// The teammate's model (see the module comment); `None` leaves it to the provider.
pub fn resolve_model(
    lead: &LeadSettings,
    env: &BTreeMap<String, String>,
    spawn: &SpawnSpec,
) -> Option<String> {
    let own = resolve_api(lead, spawn).own;
    let leads = || lead.model.clone().filter(|_| !own);
    let from_env = SUBAGENT_MODEL_VARS
        .iter()
        .find_map(|k| chosen(env.get(*k)))
        .filter(|_| !own);
    let rungs = [
        from_env,
        chosen(spawn.model.as_ref()),
        chosen(spawn.definition_model.as_ref()),
    ];
    match rungs.into_iter().flatten().next() {
        Some(m) if m == "inherit" => leads(),
        Some(m) => Some(m),
        None => leads(),
    }
}

/// The teammate's command line and environment.
pub fn teammate_command(
    lead: &LeadSettings,
    env: &BTreeMap<String, String>,
    spawn: &SpawnSpec,
    place: Place,
) -> TeammateCommand {
    let mut argv = vec![
        lead.exe.display().to_string(),
        format!("--root={}", lead.root.display()),
        "teammate".to_owned(),
        format!("--agent-id={}", agent_id(&spawn.name, &spawn.team)),
        format!("--agent-name={}", spawn.name),
        format!("--team-name={}", spawn.team),
        format!("--agent-color={}", spawn.color),
    ];
    if let Some(sid) = &lead.session_id {
        argv.push(format!("--parent-session-id={sid}"));
    }
    if let Some(key) = &lead.lead_verify_key {
        argv.push(format!("--lead-verify-key={key}"));
        // swarm's lead signs each copy for its recipient: only those count.
        argv.push("--bound-lead-sig".to_owned());
    }
    if spawn.plan_mode_required {
        argv.push("--plan-mode-required".to_owned());
    }
    if let Some(t) = &spawn.agent_type {
        argv.push(format!("--agent-type={t}"));
    }
    argv.push(format!("--cwd={}", spawn.cwd.display()));
    let mode = if spawn.plan_mode_required {
        PermissionMode::Plan
    } else {
        spawn
            .permission_mode
            .or(spawn.definition_permission_mode)
            .unwrap_or(lead.permission_mode)
    };
    let model = resolve_model(lead, env, spawn);
    let api = resolve_api(lead, spawn);
    let own = ModelLimits {
        context_window: spawn
            .context_window
            .or(lead.context_window.filter(|_| !api.own)),
        anthropic_version: spawn
            .anthropic_version
            .clone()
            .or_else(|| lead.anthropic_version.clone().filter(|_| !api.own)),
    };
    model_and_limits(&mut argv, lead, &api, model, own, mode);
    if let Some(usd) = spawn.budget.usd {
        argv.push(format!("--budget-usd={usd}"));
    }
    if let Some(n) = spawn.budget.tokens {
        argv.push(format!("--budget-tokens={n}"));
    }

    let (mut plain, secret) = environment(lead, env, place);
    if api.own {
        plain.retain(|k, _| !LEAD_API.contains(&k.as_str()));
    }
    with_identity(argv, plain, secret, &spawn.name, &spawn.team, &spawn.cwd)
}

/// The lead's own command line and environment: `swarm lead` for `team`, with the lead's
/// settings (so it spawns and supervises in turn, with the same engine), then `extra` (a
/// run's goal, `--resume`), working in `cwd`.
pub fn lead_command(
    lead: &LeadSettings,
    env: &BTreeMap<String, String>,
    team: &TeamName,
    cwd: &Path,
    extra: &[String],
) -> TeammateCommand {
    let mut argv = vec![
        lead.exe.display().to_string(),
        format!("--root={}", lead.root.display()),
        "lead".to_owned(),
        format!("--team={team}"),
    ];
    let api = Api {
        provider: lead.provider.clone(),
        base_url: lead.base_url.clone(),
        own: false,
    };
    let own = ModelLimits {
        context_window: lead.context_window,
        anthropic_version: lead.anthropic_version.clone(),
    };
    model_and_limits(
        &mut argv,
        lead,
        &api,
        lead.model.clone(),
        own,
        lead.permission_mode,
    );
    if lead.engine == Engine::Claude {
        argv.push(format!("--engine={}", lead.engine));
        if let Some(bin) = &lead.claude_bin {
            argv.push(format!("--claude-bin={}", bin.display()));
        }
    }
    argv.extend(extra.iter().cloned());
    let (plain, secret) = environment(lead, env, Place::Here);
    with_identity(argv, plain, secret, &AgentName::lead(), team, cwd)
}

/// What of an agent's model settings is its own to have: the spawn's, else the lead's when
/// the agent is on the lead's API (the lead's model's window and API version mean nothing
/// on another).
struct ModelLimits {
    context_window: Option<u64>,
    anthropic_version: Option<String>,
}

/// The flags a `swarm` agent is started with, in the order every command line gives them:
/// the `api`'s provider, `model`, the `api`'s base URL, then the API version (not for an
/// OpenAI-compatible server, which has none), how long to wait out rate limits,
/// permission `mode`, allow rules, turn limit, context window, permission timeout.
fn model_and_limits(
    argv: &mut Vec<String>,
    lead: &LeadSettings,
    api: &Api,
    model: Option<String>,
    own: ModelLimits,
    mode: PermissionMode,
) {
    if let Some(p) = &api.provider {
        argv.push(format!("--provider={p}"));
    }
    if let Some(m) = model {
        argv.push(format!("--model={m}"));
    }
    if let Some(u) = &api.base_url {
        argv.push(format!("--base-url={u}"));
    }
    let openai = api.provider.as_deref() == Some(Provider::OpenAi.as_str());
    if let Some(v) = own.anthropic_version.filter(|_| !openai) {
        argv.push(format!("--anthropic-version={v}"));
    }
    if let Some(s) = lead.rate_limit_wait {
        argv.push(format!("--rate-limit-wait={s}"));
    }
    argv.push(format!("--permission-mode={mode}"));
    for rule in &lead.allow {
        argv.push(format!("--allow={rule}"));
    }
    if let Some(n) = lead.max_turns {
        argv.push(format!("--max-turns={n}"));
    }
    if let Some(n) = own.context_window {
        argv.push(format!("--context-window={n}"));
    }
    if let Some(t) = lead.permission_timeout {
        argv.push(permission_timeout_flag(t));
    }
}

/// Where a Claude Code teammate starts, besides what [`SpawnSpec`] says.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaudeSpawn {
    pub bin: PathBuf,
    /// The lead's session id, for `--parent-session-id`.
    pub session_id: String,
    /// `~/.claude`, the client's own default root, if there is a home.
    pub default_root: Option<PathBuf>,
    /// This process runs as root.
    pub as_root: bool,
}

/// A Claude Code teammate's command (see the module comment).
pub fn claude_command(
    lead: &LeadSettings,
    env: &BTreeMap<String, String>,
    spawn: &SpawnSpec,
    claude: &ClaudeSpawn,
) -> TeammateCommand {
    let mut argv = vec![claude.bin.display().to_string()];
    flag(&mut argv, "agent-id", &agent_id(&spawn.name, &spawn.team));
    flag(&mut argv, "agent-name", spawn.name.as_str());
    flag(&mut argv, "team-name", spawn.team.as_str());
    flag(&mut argv, "agent-color", &spawn.color);
    flag(&mut argv, "parent-session-id", &claude.session_id);
    if let Some(key) = &lead.lead_verify_key {
        flag(&mut argv, "lead-verify-key", key);
    }
    if spawn.plan_mode_required {
        argv.push("--plan-mode-required".to_owned());
    }
    if let Some(t) = &spawn.agent_type {
        flag(&mut argv, "agent-type", t);
    }
    let mode = spawn
        .permission_mode
        .or(spawn.definition_permission_mode)
        .unwrap_or(lead.permission_mode);
    let bypass = !spawn.plan_mode_required && mode == PermissionMode::BypassPermissions;
    // A required plan is the client's own business: Claude Code's lead gives it no mode.
    if bypass {
        argv.push("--dangerously-skip-permissions".to_owned());
    } else if !spawn.plan_mode_required {
        flag(&mut argv, "permission-mode", mode.as_str());
    }
    if let Some(m) = resolve_model(lead, env, spawn) {
        flag(&mut argv, "model", &m);
    }

    let (mut plain, secret) = environment(lead, env, Place::Here);
    // Claude Code's own settings variables: what the user set for the client reaches it.
    for (k, v) in env {
        if is_claude_setting(k) && !v.is_empty() && !is_secret(k) {
            plain.insert(k.clone(), v.clone());
        }
    }
    plain.insert("CLAUDECODE".to_owned(), "1".to_owned());
    plain.insert(
        "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS".to_owned(),
        "1".to_owned(),
    );
    if claude.default_root.as_deref() == Some(lead.root.as_path()) {
        plain.remove(vars::CLAUDE_CONFIG_DIR);
    } else {
        plain.insert(
            vars::CLAUDE_CONFIG_DIR.to_owned(),
            lead.root.display().to_string(),
        );
    }
    if bypass && claude.as_root {
        plain.insert("IS_SANDBOX".to_owned(), "1".to_owned());
    }
    // The client talks to Anthropic's API: swarm's own base URL, when it names one, is where.
    let api = resolve_api(lead, spawn);
    if let Some(u) = &api.base_url
        && api.provider.as_deref() != Some(Provider::OpenAi.as_str())
    {
        plain.insert(vars::ANTHROPIC_BASE_URL.to_owned(), u.clone());
    }
    with_identity(argv, plain, secret, &spawn.name, &spawn.team, &spawn.cwd)
}

/// The command, with the agent's identity added to its environment (so a `swarm` command
/// it runs acts as that agent), working in `cwd`.
fn with_identity(
    argv: Vec<String>,
    mut plain: BTreeMap<String, String>,
    secret: BTreeMap<String, String>,
    name: &AgentName,
    team: &TeamName,
    cwd: &Path,
) -> TeammateCommand {
    plain.insert(vars::SWARM_AGENT_ID.to_owned(), agent_id(name, team));
    plain.insert(vars::SWARM_AGENT_NAME.to_owned(), name.to_string());
    plain.insert(vars::SWARM_TEAM.to_owned(), team.to_string());
    TeammateCommand {
        argv,
        env: plain.into_iter().collect(),
        secret_env: secret.into_iter().collect(),
        cwd: cwd.to_path_buf(),
    }
}

/// Variables Claude Code reads as settings (`CLAUDE_CODE_*`, `DISABLE_*` such as
/// `DISABLE_AUTOUPDATER`, and a few more), passed to a Claude Code teammate.
fn is_claude_setting(name: &str) -> bool {
    name.starts_with("CLAUDE_CODE_")
        || name.starts_with("DISABLE_")
        || matches!(
            name,
            "ENABLE_TOOL_SEARCH"
                | "MAX_THINKING_TOKENS"
                | "BASH_DEFAULT_TIMEOUT_MS"
                | "BASH_MAX_TIMEOUT_MS"
                | "MCP_TIMEOUT"
        )
}

/// As Claude Code writes a valued flag: `--flag value`, unless the value could be read as
/// a flag or is a URL.
fn flag(argv: &mut Vec<String>, name: &str, value: &str) {
    if value.starts_with('-') || value.contains("://") {
        argv.push(format!("--{name}={value}"));
    } else {
        argv.push(format!("--{name}"));
        argv.push(value.to_owned());
    }
}

/// The environment a process started for the lead gets at `place`: each variable of the
/// settings table that travels there, split into plain and secret as the table says, plus
/// the lead's root and tmux server. No identity: callers add it.
pub fn environment(
    lead: &LeadSettings,
    env: &BTreeMap<String, String>,
    place: Place,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let (mut plain, secret) = carried(env, place);
    plain.insert(vars::SWARM_ROOT.to_owned(), lead.root.display().to_string());
    if let Some(s) = &lead.tmux_socket {
        plain.insert(vars::SWARM_TMUX_SOCKET.to_owned(), s.clone());
    }
    (plain, secret)
}

/// What of `env` the settings table sends to a process at `place`, as plain and secret.
pub fn carried(
    env: &BTreeMap<String, String>,
    place: Place,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let mut plain = BTreeMap::new();
    let mut secret = BTreeMap::new();
    for var in vars::ALL {
        let travel = match place {
            Place::Here => var.panes,
            Place::Host => var.hosts,
        };
        let Some(value) = env.get(var.name).filter(|v| !v.is_empty()) else {
            continue;
        };
        match travel {
            Travel::Env => plain.insert(var.name.to_owned(), value.clone()),
            Travel::Secret => secret.insert(var.name.to_owned(), value.clone()),
            Travel::Here | Travel::Swarm | Travel::HostOwn | Travel::InUrl => None,
        };
    }
    (plain, secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lead() -> LeadSettings {
        LeadSettings {
            exe: "/opt/swarm/bin/swarm".into(),
            root: "/home/u/.claude".into(),
            provider: Some("anthropic".into()),
            model: Some("claude-sonnet-4-5".into()),
            base_url: None,
            anthropic_version: Some("2023-06-01".into()),
            rate_limit_wait: Some(120),
            permission_mode: PermissionMode::BypassPermissions,
            allow: vec!["Bash(cargo test:*)".into()],
            max_turns: Some(50),
            context_window: Some(64_000),
            permission_timeout: Some(Duration::from_secs(90)),
            tmux_socket: Some("swarm-x".into()),
            session_id: Some("11111111-2222-3333-4444-555555555555".into()),
            engine: Engine::Swarm,
            claude_bin: None,
            lead_verify_key: Some("1767225600000.MCowBQYDK2VwAyEA".into()),
        }
    }

    fn spawn() -> SpawnSpec {
        SpawnSpec {
            team: TeamName::new("alpha").unwrap(),
            name: AgentName::new("bob").unwrap(),
            color: "blue".into(),
            agent_type: None,
            model: None,
            provider: None,
            base_url: None,
            permission_mode: None,
            plan_mode_required: false,
            cwd: "/work/repo".into(),
            definition_model: None,
            definition_provider: None,
            definition_base_url: None,
            definition_permission_mode: None,
            budget: Limits::default(),
            context_window: None,
            anthropic_version: None,
        }
    }

    fn env() -> BTreeMap<String, String> {
        [
            ("ANTHROPIC_API_KEY", "sk-ant-secret"),
            ("ANTHROPIC_VERSION", "2023-06-01"),
            ("HTTPS_PROXY", "http://user:pw@proxy:3128"),
            ("PATH", "/usr/bin:/bin"),
            ("SWARM_LOG", "debug"),
            ("SWARM_AGENT_NAME", "team-lead"),
            ("SWARM_TMUX_SOCKET", "ignored-lead-value"),
            ("AWS_SECRET_ACCESS_KEY", "not on the list"),
            ("EDITOR", "vim"),
            ("CLAUDE_CONFIG_DIR", "/cfg"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    #[test]
    fn golden_teammate_command() {
        let cmd = teammate_command(&lead(), &env(), &spawn(), Place::Here);
        assert_eq!(
            cmd.argv,
            [
                "/opt/swarm/bin/swarm",
                "--root=/home/u/.claude",
                "teammate",
                "--agent-id=bob@alpha",
                "--agent-name=bob",
                "--team-name=alpha",
                "--agent-color=blue",
                "--parent-session-id=11111111-2222-3333-4444-555555555555",
                "--lead-verify-key=1767225600000.MCowBQYDK2VwAyEA",
                "--bound-lead-sig",
                "--cwd=/work/repo",
                "--provider=anthropic",
                "--model=claude-sonnet-4-5",
                "--anthropic-version=2023-06-01",
                "--rate-limit-wait=120",
                "--permission-mode=bypassPermissions",
                "--allow=Bash(cargo test:*)",
                "--max-turns=50",
                "--context-window=64000",
                "--permission-timeout=1m 30s",
            ]
        );
        let env: Vec<(&str, &str)> = cmd
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            env,
            [
                ("ANTHROPIC_VERSION", "2023-06-01"),
                ("CLAUDE_CONFIG_DIR", "/cfg"),
                ("PATH", "/usr/bin:/bin"),
                ("SWARM_AGENT_ID", "bob@alpha"),
                ("SWARM_AGENT_NAME", "bob"),
                ("SWARM_LOG", "debug"),
                ("SWARM_ROOT", "/home/u/.claude"),
                ("SWARM_TEAM", "alpha"),
                ("SWARM_TMUX_SOCKET", "swarm-x"),
            ]
        );
        let secrets: Vec<&str> = cmd.secret_env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(secrets, ["ANTHROPIC_API_KEY", "HTTPS_PROXY"]);
        assert!(
            !cmd.argv.iter().any(|a| a.contains("sk-ant")),
            "a key reached argv"
        );
    }

    #[test]
    fn golden_lead_command() {
        let team = TeamName::new("alpha").unwrap();
        let extra = ["--goal-file=/g.md".to_owned()];
        let cmd = lead_command(&lead(), &env(), &team, Path::new("/work/repo"), &extra);
        assert_eq!(
            cmd.argv,
            [
                "/opt/swarm/bin/swarm",
                "--root=/home/u/.claude",
                "lead",
                "--team=alpha",
                "--provider=anthropic",
                "--model=claude-sonnet-4-5",
                "--anthropic-version=2023-06-01",
                "--rate-limit-wait=120",
                "--permission-mode=bypassPermissions",
                "--allow=Bash(cargo test:*)",
                "--max-turns=50",
                "--context-window=64000",
                "--permission-timeout=1m 30s",
                "--goal-file=/g.md",
            ]
        );
        let identity: Vec<(&str, &str)> = cmd
            .env
            .iter()
            .filter(|(k, _)| {
                [
                    vars::SWARM_AGENT_ID,
                    vars::SWARM_AGENT_NAME,
                    vars::SWARM_TEAM,
                ]
                .contains(&k.as_str())
            })
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            identity,
            [
                ("SWARM_AGENT_ID", "team-lead@alpha"),
                ("SWARM_AGENT_NAME", "team-lead"),
                ("SWARM_TEAM", "alpha"),
            ]
        );
        let secrets: Vec<&str> = cmd.secret_env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(secrets, ["ANTHROPIC_API_KEY", "HTTPS_PROXY"]);
        assert_eq!(cmd.cwd, Path::new("/work/repo"));

        let claude = LeadSettings {
            engine: Engine::Claude,
            claude_bin: Some("/bin/claude".into()),
            ..lead()
        };
        let argv = lead_command(&claude, &env(), &team, Path::new("/"), &[]).argv;
        assert_eq!(
            argv[argv.len() - 2..],
            ["--engine=claude", "--claude-bin=/bin/claude"]
        );
    }

    #[test]
    fn a_spawns_budget_reaches_the_teammates_command_line() {
        let mut s = spawn();
        s.budget = Limits {
            usd: Some(2.5),
            tokens: Some(40_000),
        };
        let argv = teammate_command(&lead(), &env(), &s, Place::Here).argv;
        assert_eq!(
            argv[argv.len() - 2..],
            ["--budget-usd=2.5", "--budget-tokens=40000"]
        );
        let argv = teammate_command(&lead(), &env(), &spawn(), Place::Here).argv;
        assert!(!argv.iter().any(|a| a.starts_with("--budget")), "{argv:?}");
    }

    #[test]
    fn plan_mode_beats_bypass_and_spawn_settings_beat_the_leads() {
        let mut s = spawn();
        s.plan_mode_required = true;
        s.permission_mode = Some(PermissionMode::AcceptEdits);
        let cmd = teammate_command(&lead(), &env(), &s, Place::Here);
        assert!(cmd.argv.contains(&"--plan-mode-required".to_owned()));
        assert!(cmd.argv.contains(&"--permission-mode=plan".to_owned()));
        assert!(!cmd.argv.iter().any(|a| a.contains("bypass")));
        let mut s = spawn();
        s.permission_mode = Some(PermissionMode::AcceptEdits);
        s.model = Some("-odd-model".into());
        let cmd = teammate_command(&lead(), &env(), &s, Place::Here);
        assert!(
            cmd.argv
                .contains(&"--permission-mode=acceptEdits".to_owned())
        );
        assert!(cmd.argv.contains(&"--model=-odd-model".to_owned()));
    }

    #[test]
    fn no_model_is_forced() {
        let mut l = lead();
        l.model = None;
        l.anthropic_version = None;
        let cmd = teammate_command(&l, &env(), &spawn(), Place::Here);
        assert!(
            !cmd.argv
                .iter()
                .any(|a| a.starts_with("--model") || a.starts_with("--anthropic-version")),
            "{:?}",
            cmd.argv
        );
    }

    fn model_of(lead: &LeadSettings, env: &BTreeMap<String, String>, s: &SpawnSpec) -> Vec<String> {
        teammate_command(lead, env, s, Place::Here)
            .argv
            .into_iter()
            .filter(|a| a.starts_with("--model"))
            .collect()
    }

    #[test]
    fn golden_model_resolution_rung_by_rung() {
        let lead = lead();
        let mut env = env();
        let mut s = spawn();
        // 4. the lead's model, when nothing else chooses.
        assert_eq!(model_of(&lead, &env, &s), ["--model=claude-sonnet-4-5"]);
        // 3. the definition's model beats the lead's.
        s.definition_model = Some("claude-haiku-4-5".into());
        assert_eq!(model_of(&lead, &env, &s), ["--model=claude-haiku-4-5"]);
        // 2. the spawn's model beats the definition's.
        s.model = Some("claude-opus-4-1".into());
        assert_eq!(model_of(&lead, &env, &s), ["--model=claude-opus-4-1"]);
        // 1. CLAUDE_CODE_SUBAGENT_MODEL beats them all, and SWARM_SUBAGENT_MODEL beats it.
        env.insert("CLAUDE_CODE_SUBAGENT_MODEL".into(), "cc-model".into());
        assert_eq!(model_of(&lead, &env, &s), ["--model=cc-model"]);
        env.insert("SWARM_SUBAGENT_MODEL".into(), "swarm-model".into());
        assert_eq!(model_of(&lead, &env, &s), ["--model=swarm-model"]);
        // An empty variable chooses nothing.
        env.insert("SWARM_SUBAGENT_MODEL".into(), " ".into());
        assert_eq!(model_of(&lead, &env, &s), ["--model=cc-model"]);
        // `inherit` on any rung is the lead's model.
        env.insert("SWARM_SUBAGENT_MODEL".into(), "inherit".into());
        assert_eq!(model_of(&lead, &env, &s), ["--model=claude-sonnet-4-5"]);
        let env = super::tests::env();
        s.model = None;
        s.definition_model = Some("inherit".into());
        assert_eq!(model_of(&lead, &env, &s), ["--model=claude-sonnet-4-5"]);
        // ...and with no lead model, `inherit` forces nothing.
        let mut bare = lead.clone();
        bare.model = None;
        assert!(model_of(&bare, &env, &s).is_empty());
        s.definition_model = None;
        assert!(model_of(&bare, &env, &s).is_empty());
        s.definition_model = Some("only-the-definition".into());
        assert_eq!(model_of(&bare, &env, &s), ["--model=only-the-definition"]);
    }

    #[test]
    fn a_teammate_on_its_own_api_gets_nothing_of_the_leads() {
        let mut lead = lead();
        lead.provider = Some("scripted".into());
        lead.base_url = Some("http://127.0.0.1:1".into());
        let mut env = env();
        env.insert("SWARM_PROVIDER".into(), "scripted".into());
        env.insert("SWARM_BASE_URL".into(), "http://127.0.0.1:1".into());
        env.insert("SWARM_MODEL".into(), "claude-sonnet-4-5".into());
        env.insert("SWARM_SUBAGENT_MODEL".into(), "lead-chosen".into());
        let flags = |s: &SpawnSpec| -> Vec<String> {
            teammate_command(&lead, &env, s, Place::Here)
                .argv
                .into_iter()
                .filter(|a| {
                    ["--provider", "--model", "--base-url"]
                        .iter()
                        .any(|f| a.starts_with(f))
                })
                .collect()
        };
        let plain = |s: &SpawnSpec| -> Vec<String> {
            teammate_command(&lead, &env, s, Place::Here)
                .env
                .into_iter()
                .map(|(k, _)| k)
                .filter(|k| LEAD_API.contains(&k.as_str()))
                .collect()
        };
        // On the lead's API: the lead's everything, and its environment too.
        let mut s = spawn();
        assert_eq!(
            flags(&s),
            [
                "--provider=scripted",
                "--model=lead-chosen",
                "--base-url=http://127.0.0.1:1"
            ]
        );
        assert_eq!(plain(&s).len(), 3);
        // Another provider: its own base URL or none, its own model or none, and none of
        // the lead's variables.
        s.provider = Some("openai".into());
        assert_eq!(flags(&s), ["--provider=openai"]);
        assert!(plain(&s).is_empty(), "{:?}", plain(&s));
        s.base_url = Some("http://127.0.0.1:2/v1".into());
        s.model = Some("qwen".into());
        assert_eq!(
            flags(&s),
            [
                "--provider=openai",
                "--model=qwen",
                "--base-url=http://127.0.0.1:2/v1"
            ]
        );
        // The same kind of provider at another URL is another API as well.
        let mut s = spawn();
        s.base_url = Some("http://127.0.0.1:3".into());
        assert_eq!(
            flags(&s),
            ["--provider=scripted", "--base-url=http://127.0.0.1:3"]
        );
        // The definition's provider and URL, under the spawn's; `inherit` means none there.
        let mut s = spawn();
        s.definition_provider = Some("openai".into());
        s.definition_base_url = Some("http://127.0.0.1:4".into());
        s.definition_model = Some("inherit".into());
        assert_eq!(
            flags(&s),
            ["--provider=openai", "--base-url=http://127.0.0.1:4"]
        );
        // Naming the lead's own provider keeps the lead's URL and model.
        let mut s = spawn();
        s.provider = Some("scripted".into());
        assert!(!resolve_api(&lead, &s).own);
        assert_eq!(flags(&s).len(), 3);
    }

    #[test]
    fn a_definitions_url_goes_with_its_provider_only() {
        let mut s = spawn();
        s.definition_provider = Some("openai".into());
        s.definition_base_url = Some("http://127.0.0.1:4/v1".into());
        let url = |s: &SpawnSpec| resolve_api(&lead(), s).base_url;
        assert_eq!(url(&s).as_deref(), Some("http://127.0.0.1:4/v1"));
        s.provider = Some("openai".into());
        assert_eq!(url(&s).as_deref(), Some("http://127.0.0.1:4/v1"));
        s.provider = Some("scripted".into());
        assert_eq!(
            url(&s),
            None,
            "another provider's requests went to the definition's URL"
        );
    }

    #[test]
    fn the_leads_api_version_and_context_window_stay_on_the_leads_api() {
        let model_flags = |s: &SpawnSpec| -> Vec<String> {
            teammate_command(&lead(), &env(), s, Place::Here)
                .argv
                .into_iter()
                .filter(|a| {
                    a.starts_with("--anthropic-version") || a.starts_with("--context-window")
                })
                .collect()
        };
        let mut s = spawn();
        assert_eq!(
            model_flags(&s),
            ["--anthropic-version=2023-06-01", "--context-window=64000"]
        );
        s.provider = Some("openai".into());
        s.model = Some("qwen".into());
        assert!(model_flags(&s).is_empty(), "{:?}", model_flags(&s));
    }

    #[test]
    fn definition_permission_mode_sits_between_the_spawns_and_the_leads() {
        let mode = |s: &SpawnSpec| {
            teammate_command(&lead(), &env(), s, Place::Here)
                .argv
                .into_iter()
                .find(|a| a.starts_with("--permission-mode="))
                .unwrap()
        };
        let mut s = spawn();
        assert_eq!(mode(&s), "--permission-mode=bypassPermissions");
        s.definition_permission_mode = Some(PermissionMode::AcceptEdits);
        assert_eq!(mode(&s), "--permission-mode=acceptEdits");
        s.permission_mode = Some(PermissionMode::Default);
        assert_eq!(mode(&s), "--permission-mode=default");
        s.plan_mode_required = true;
        assert_eq!(mode(&s), "--permission-mode=plan");
    }

    fn claude() -> ClaudeSpawn {
        ClaudeSpawn {
            bin: "/usr/local/bin/claude".into(),
            session_id: "sid-1".into(),
            default_root: Some("/home/u/.claude".into()),
            as_root: true,
        }
    }

    #[test]
    fn golden_claude_command() {
        let mut s = spawn();
        s.agent_type = Some("reviewer".into());
        let mut l = lead();
        l.root = "/srv/team-root".into();
        l.base_url = Some("http://127.0.0.1:9/".into());
        let cmd = claude_command(&l, &env(), &s, &claude());
        assert_eq!(
            cmd.argv,
            [
                "/usr/local/bin/claude",
                "--agent-id",
                "bob@alpha",
                "--agent-name",
                "bob",
                "--team-name",
                "alpha",
                "--agent-color",
                "blue",
                "--parent-session-id",
                "sid-1",
                "--lead-verify-key",
                "1767225600000.MCowBQYDK2VwAyEA",
                "--agent-type",
                "reviewer",
                "--dangerously-skip-permissions",
                "--model",
                "claude-sonnet-4-5",
            ]
        );
        let get = |k: &str| {
            cmd.env
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("CLAUDECODE"), Some("1"));
        assert_eq!(get("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"), Some("1"));
        assert_eq!(get("CLAUDE_CONFIG_DIR"), Some("/srv/team-root"));
        assert_eq!(get("IS_SANDBOX"), Some("1"));
        assert_eq!(get("ANTHROPIC_BASE_URL"), Some("http://127.0.0.1:9/"));
        let secrets: Vec<&str> = cmd.secret_env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(secrets, ["ANTHROPIC_API_KEY", "HTTPS_PROXY"]);
        assert!(!cmd.argv.iter().any(|a| a.contains("sk-ant")));

        // The default root needs no CLAUDE_CONFIG_DIR (and the lead's is not passed on);
        // no bypass, no IS_SANDBOX; a plan is the client's own, with no mode flag.
        let mut l = lead();
        l.root = "/home/u/.claude".into();
        s.plan_mode_required = true;
        s.model = Some("-odd".into());
        let cmd = claude_command(&l, &env(), &s, &claude());
        assert!(
            !cmd.env
                .iter()
                .any(|(k, _)| k == "CLAUDE_CONFIG_DIR" || k == "IS_SANDBOX")
        );
        assert!(cmd.argv.contains(&"--plan-mode-required".to_owned()));
        assert!(cmd.argv.contains(&"--model=-odd".to_owned()));
        assert!(
            !cmd.argv
                .iter()
                .any(|a| a.contains("permission") && a != "--plan-mode-required"),
            "{:?}",
            cmd.argv
        );
        s.plan_mode_required = false;
        s.permission_mode = Some(PermissionMode::Default);
        let cmd = claude_command(&l, &env(), &s, &claude());
        assert!(
            cmd.argv
                .windows(2)
                .any(|w| w == ["--permission-mode", "default"])
        );
    }
}
