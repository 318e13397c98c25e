//! What this process was configured with besides its flags: the environment's settings
//! ([`Settings`]) and Claude Code's settings files ([`ClaudeSettings`]) of the project it
//! started in, read once at the edge, and the one rule by which they meet a command's
//! flags: a flag (or its variable) wins, then the settings files, then the default.
//!
//! The flags themselves are the front end's to parse; what it parsed reaches a role as the
//! plain values here ([`ModelFlags`], [`PermissionFlags`]), and each role (the teammate,
//! the lead, the web view) resolves its own options from them and the profile, in its own
//! crate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::Duration;

use crate::claude_settings::ClaudeSettings;
use crate::permissions::{AllowRule, PermissionMode};
use crate::project::UserDirs;
use crate::settings::Settings;
use swarm_llm::{LlmConfig, LlmError, LlmFlags, Provider};
use swarm_util::environment::Environment;
use swarm_util::error::{Error, Result};

/// The model flags an agent's command takes, as parsed.
#[derive(Debug, Clone, Default)]
pub struct ModelFlags {
    pub provider: Option<Provider>,
    pub base_url: Option<String>,
    pub anthropic_version: Option<String>,
    /// Seconds one call may wait out rate limits in all.
    pub rate_limit_wait: Option<u64>,
    pub model: Option<String>,
    pub context_window: Option<u64>,
}

/// The permission flags an agent's command takes, as parsed, with whether each setting was
/// given (a flag or its variable) or defaulted: only a given one wins over the settings
/// files and an agent definition.
#[derive(Debug, Clone)]
pub struct PermissionFlags {
    pub mode: PermissionMode,
    pub mode_given: bool,
    pub allow: Vec<AllowRule>,
    pub max_turns: u32,
    pub max_turns_given: bool,
    pub permission_timeout: Duration,
}

/// The process's configuration (see the module comment).
#[derive(Debug)]
pub struct Profile {
    pub settings: Settings,
    /// Claude Code's settings files of this project and user, under the flags and the
    /// environment: their `env` is already in [`Settings::env`].
    pub claude: ClaudeSettings,
    /// Where the process started (`None`: that directory is gone): its working directory
    /// unless told another.
    pub here: Option<PathBuf>,
    /// Said once, by the first command that uses the settings files.
    warned: Once,
}

impl Profile {
    /// The profile of a process started in `here` with `env`: the settings files of
    /// `here`'s project (a teammate's: the one `SWARM_PROJECT_DIR` names) fill in the
    /// variables the environment lacks.
    pub fn load(env: Environment, here: Option<PathBuf>) -> Profile {
        let dirs = UserDirs::from_env(&env);
        let start = here.clone().unwrap_or_else(|| PathBuf::from("/"));
        let claude = ClaudeSettings::load(
            &dirs.teammate_project_dir(&start, &env),
            dirs.claude.as_deref(),
        );
        let env = env.with_defaults(claude.env.iter().map(|(k, v)| (k.clone(), v.value.clone())));
        Profile {
            settings: Settings::resolve(env),
            claude,
            here,
            warned: Once::new(),
        }
    }

    pub fn env(&self) -> &Environment {
        &self.settings.env
    }

    /// The settings files' problems (a file that is not JSON, rules for tools swarm lacks),
    /// said once, and only by a command that uses them.
    pub fn warn_settings(&self) {
        self.warned.call_once(|| {
            for w in &self.claude.warnings {
                tracing::warn!("{w}");
            }
        });
    }

    /// The model: the flag (`--model`, `$SWARM_MODEL`), else the settings files' `model`.
    pub fn model(&self, flag: Option<&str>) -> Option<String> {
        self.warn_settings();
        flag.map(str::to_owned)
            .or_else(|| self.claude.model.as_ref().map(|m| m.value.clone()))
    }

    /// The permission mode: the flag when given, else the settings files'
    /// `permissions.defaultMode`, else the flag's default.
    pub fn permission_mode(&self, flag: PermissionMode, given: bool) -> PermissionMode {
        self.warn_settings();
        match &self.claude.default_mode {
            Some(m) if !given => m.value,
            _ => flag,
        }
    }

    /// The variables the settings files' `env` gives, with the environment's own value
    /// where it has one: for an agent's commands, which otherwise get this process's own.
    pub fn settings_env(&self) -> BTreeMap<String, String> {
        self.claude
            .env
            .keys()
            .filter_map(|k| Some((k.clone(), self.env().get(k)?.to_owned())))
            .collect()
    }

    /// An agent's rules: the `--allow` flags, then the settings files' allow and deny rules.
    pub fn rules(&self, flags: &[AllowRule]) -> Vec<AllowRule> {
        self.warn_settings();
        flags.iter().chain(self.claude.rules()).cloned().collect()
    }

    /// The model to talk to, from the model flags and the environment.
    pub fn llm_config(&self, flags: &ModelFlags) -> std::result::Result<LlmConfig, LlmError> {
        let flags = LlmFlags {
            provider: flags.provider,
            model: self.model(flags.model.as_deref()),
            base_url: flags.base_url.clone(),
            anthropic_version: flags.anthropic_version.clone(),
            rate_limit_wait: flags.rate_limit_wait.map(Duration::from_secs),
            ..LlmFlags::default()
        };
        LlmConfig::resolve(&flags, |name| self.env().get(name).map(str::to_owned))
    }

    /// A working directory given on the command line (else where the process started),
    /// absolute and with symlinks resolved; an error naming it if it does not exist.
    pub fn working_dir(&self, given: Option<&Path>) -> Result<PathBuf> {
        let dir = given.or(self.here.as_deref()).ok_or_else(|| {
            Error::not_found(
                "the current directory is gone; cd to one that exists, or give --cwd DIR",
            )
        })?;
        dir.canonicalize().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::not_found(format!(
                "working directory {} does not exist; create it or give another --cwd",
                dir.display()
            )),
            _ => Error::io("open working directory", dir, e),
        })
    }
}
