//! What every command needs, resolved once: the root, the team, the output mode, the
//! settings from the environment, who is acting, and where this process sits in tmux.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::ui::cli::identity::Actor;
use crate::ui::cli::options::{EngineOpts, ModelOpts};
use swarm::error::{Error, Result};
use swarm_config::permissions::PermissionMode;
use swarm_config::profile::Profile;
use swarm_llm::LlmConfig;
use swarm_store::layout::Root;
use swarm_store::{Store, Teams};
use swarm_team::spawn::inherit::LeadSettings;
use swarm_team::spawn::launch::{LaunchSettings, Launcher};
use swarm_team::spawn::window;
use swarm_tmux::{Caller, Tmux};
use swarm_util::environment::Environment;
use swarm_util::error::Base as _;
use swarm_util::names::TeamName;
use swarm_util::vars;

#[derive(Debug, Clone, Args)]
pub struct GlobalOpts {
    /// Directory holding teams/ and tasks/ [default: $SWARM_ROOT, else $CLAUDE_CONFIG_DIR, else ~/.claude]
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// The team to act on [default: the only team, if there is exactly one]
    #[arg(long, global = true, env = vars::SWARM_TEAM, value_name = "TEAM")]
    pub team: Option<String>,

    /// Print machine-readable JSON instead of text
    #[arg(long, global = true)]
    pub json: bool,

    /// The tmux server to use, by socket name (tmux -L) [default: the team's, else the one you are in, else the default]
    #[arg(long, global = true, env = vars::SWARM_TMUX_SOCKET, value_name = "NAME")]
    pub tmux_socket: Option<String>,

    /// Whether the command's --permission-mode was given (flag or environment), set after
    /// parsing: only then does it win over the settings files' `permissions.defaultMode`.
    #[arg(skip)]
    pub permission_mode_given: bool,
}

pub struct Ctx {
    /// The teams under the root, with how to open them: the command's one way to a team.
    pub teams: Teams,
    pub global: GlobalOpts,
    /// The environment's settings and Claude Code's settings files, read once.
    pub profile: Profile,
    /// Where this process sits in tmux.
    pub caller: Caller,
    /// A person, or the agent in whose environment this runs.
    pub actor: Actor,
}

impl Ctx {
    pub fn new(global: GlobalOpts, env: Environment) -> Result<Ctx> {
        let profile = Profile::load(env, std::env::current_dir().ok());
        let settings = &profile.settings;
        // A team on PostgreSQL is opened through its pointer (`swarm_store::backends`).
        let opener = swarm_store_pg::PgOpener::new(settings.env.clone());
        let root = Root::resolve(global.root.as_deref(), &settings.env)?
            .with_store_settings(settings.lock_timeout, settings.durable)
            .with_heartbeat_timeout(settings.heartbeat_timeout)
            .with_outage_wait(settings.outage_wait);
        let teams = Teams::new(root).with_servers(std::sync::Arc::new(opener));
        Ok(Ctx {
            teams,
            global,
            caller: Caller::from_env(&settings.env),
            actor: Actor::from_env(&settings.env)?,
            profile,
        })
    }

    /// The permission mode: `--permission-mode` or `$SWARM_PERMISSION_MODE` when given,
    /// else the settings files' `permissions.defaultMode`, else `flag` (its default).
    pub fn permission_mode(&self, flag: PermissionMode) -> PermissionMode {
        self.profile
            .permission_mode(flag, self.global.permission_mode_given)
    }

    pub fn json(&self) -> bool {
        self.global.json
    }

    pub fn env(&self) -> &Environment {
        self.profile.env()
    }

    /// The team named on the command line, else `--team`/`SWARM_TEAM`, else the only team,
    /// opened: the command's one handle on it, passed down to everything it does. Refused
    /// when it is not the acting agent's own. A team on a database server is reached now,
    /// so an unreachable server is this command's one-line error before it acts.
    pub fn team_or(&self, explicit: Option<&str>) -> Result<Store> {
        let team = self.find_team(explicit)?;
        self.actor.check_team(&team)?;
        Ok(self.teams.connect(&team)?)
    }

    fn find_team(&self, explicit: Option<&str>) -> Result<TeamName> {
        if let Some(t) = explicit.or(self.global.team.as_deref()) {
            return Ok(TeamName::new(t)?);
        }
        let teams = self.teams.list()?;
        match teams.as_slice() {
            [only] => Ok(TeamName::new(&only.name)?),
            [] => Err(Error::not_found(format!(
                "no team exists under {}; create one with `swarm team create NAME`",
                self.teams.root().path().display()
            ))),
            many => Err(Error::usage(format!(
                "several teams exist ({}); pick one with --team NAME or SWARM_TEAM",
                many.iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    pub fn team(&self) -> Result<Store> {
        self.team_or(None)
    }

    /// A working directory given on the command line (else the current one), absolute and
    /// with symlinks resolved; an error naming it if it does not exist.
    pub fn working_dir(&self, given: Option<&Path>) -> Result<PathBuf> {
        Ok(self.profile.working_dir(given)?)
    }

    /// This process's own tmux pane, if it runs in one.
    pub fn own_pane(&self) -> Option<String> {
        self.caller.pane.map(|p| p.to_string())
    }

    /// The tmux server holding the panes of the team `store` holds.
    pub fn team_tmux(&self, store: &Store) -> Result<Tmux> {
        Ok(window::server_for(
            store,
            self.global.tmux_socket.as_deref(),
            self.env(),
        )?)
    }

    /// The settings a lead started from this command line passes on, with nothing chosen
    /// yet: this binary, this root, this tmux server, the provider's defaults.
    pub fn lead_settings(&self) -> Result<LeadSettings> {
        let exe =
            std::env::current_exe().map_err(|e| Error::io("find", "the swarm executable", e))?;
        Ok(LeadSettings::new(
            exe,
            self.teams.root().path().to_path_buf(),
            self.global.tmux_socket.clone(),
        ))
    }

    /// `lead` made to start teammates with `opts`' engine: for Claude Code, with the client
    /// found now, so a missing one is refused before anything is made.
    pub fn with_engine(&self, lead: LeadSettings, opts: &EngineOpts) -> Result<LeadSettings> {
        Ok(lead.with_engine(
            &self.profile.settings,
            opts.engine,
            opts.claude_bin.as_deref(),
        )?)
    }

    /// How to start teammates with `lead`'s settings, once there is a team; a lead it
    /// opens works in `cwd`.
    pub fn launch_settings(&self, lead: LeadSettings, cwd: PathBuf) -> LaunchSettings {
        LaunchSettings {
            caller: self.caller.clone(),
            lead,
            env: self.env().clone(),
            dirs: self.profile.settings.dirs.clone(),
            cwd,
            panes_per_window: self.profile.settings.panes_per_window,
            tmux_socket: self.global.tmux_socket.clone(),
        }
    }

    /// How to start teammates of the team `store` holds with `lead`'s settings; a lead it
    /// opens works in `cwd`.
    pub fn launcher(&self, store: &Store, lead: LeadSettings, cwd: PathBuf) -> Result<Launcher> {
        Ok(self.launch_settings(lead, cwd).for_team(store.clone())?)
    }

    /// The model to talk to, from the model flags and the environment.
    pub fn llm_config(&self, opts: &ModelOpts) -> Result<LlmConfig> {
        Ok(self.profile.llm_config(&opts.flags())?)
    }
}

/// Where a lead opened by this command works: here, or `/` when here is gone.
pub fn lead_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}
