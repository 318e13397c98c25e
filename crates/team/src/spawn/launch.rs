//! Starting a teammate in its own pane.
//!
//! Order matters: the agent definition named by `--agent-type` is applied (model,
//! isolation, colour, initial prompt, permission mode; an unknown type is refused), the
//! roster entry is reserved (so the name is taken), the teammate's git worktree is made
//! when it is isolated (see [`swarm_git::worktree`]), the first instructions are written to
//! its inbox, then the pane is made running the teammate directly (argv, no shell, no
//! keystrokes), and the roster gets the pane id. If anything fails after the reservation,
//! the reservation, the worktree and the inbox go again. The team window, and the lead
//! process in its first pane, are opened by the first spawn. Every pane's command is kept
//! as a launch record, for `swarm resume` (see [`crate::life::resume`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::spawn::inherit::{self, ClaudeSpawn, Engine, LeadSettings, SpawnSpec, TeammateCommand};
use crate::spawn::window::{self as team_window, Placement, TeamWindow, TeamWindowOptions};
use swarm_config::agents::{Catalog, Definition, Isolation};
use swarm_config::project::UserDirs;
use swarm_git::worktree;
use swarm_llm::config::{LlmConfig, LlmFlags, Provider};
use swarm_store::Store;
use swarm_store::mailbox::Envelope;
use swarm_store::roster::{self, NewMember, PALETTE};
use swarm_store::worktrees::Record;
use swarm_tmux::{Caller, PaneId, PaneSpec, Tmux, TmuxCommand};
use swarm_util::environment::Environment;
use swarm_util::error::Base as _;
use swarm_util::meter::Limits;
use swarm_util::names::{AgentName, LEAD, TeamName};
use swarm_util::parallel;
use swarm_util::vars;

#[derive(Debug, Clone)]
pub struct SpawnRequest {
    pub name: AgentName,
    pub prompt: Option<String>,
    pub agent_type: Option<String>,
    pub model: Option<String>,
    /// Its own provider; `None`: the agent definition's, else the lead's.
    pub provider: Option<Provider>,
    /// Its own base URL; `None`: the agent definition's, else the lead's when on the
    /// lead's provider, else the provider's (from the environment or its default).
    pub base_url: Option<String>,
    pub permission_mode: Option<swarm_config::permissions::PermissionMode>,
    pub plan_mode_required: bool,
    pub cwd: PathBuf,
    pub color: Option<String>,
    /// `None`: the agent definition's, else none.
    pub isolation: Option<Isolation>,
    /// `None`: the lead's.
    pub engine: Option<Engine>,
    /// Its own budget (swarm teammates only).
    pub budget: Limits,
    /// Its own context window (swarm teammates only); `None`: the lead's, on the lead's
    /// API, else its model's.
    pub context_window: Option<u64>,
    /// Its own `anthropic-version` header; `None`: the lead's, on the lead's API.
    pub anthropic_version: Option<String>,
}

impl SpawnRequest {
    /// A teammate called `name`, working in `cwd`, with nothing of its own: all else as
    /// its definition or the lead says.
    pub fn plain(name: AgentName, cwd: PathBuf) -> SpawnRequest {
        SpawnRequest {
            name,
            prompt: None,
            agent_type: None,
            model: None,
            provider: None,
            base_url: None,
            permission_mode: None,
            plan_mode_required: false,
            cwd,
            color: None,
            isolation: None,
            engine: None,
            budget: Limits::default(),
            context_window: None,
            anthropic_version: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Spawned {
    pub name: String,
    pub pane: String,
    pub color: String,
    /// The team window (and its lead) was opened by this spawn.
    pub opened_window: bool,
    /// The teammate's own worktree, when it is isolated.
    pub worktree: Option<Record>,
    /// The model it was given, if any was.
    pub model: Option<String>,
    /// The provider it was given, if any was.
    pub provider: Option<String>,
}

/// A spawn request that passed [`Launcher::check`].
struct Checked {
    prepared: Prepared,
    config: roster::TeamConfig,
    color: String,
    worktree: Option<worktree::Plan>,
    /// The directory it was spawned for, where its project is found (its own may become a
    /// worktree's).
    project_cwd: PathBuf,
}

/// What a spawn would do (see [`Launcher::dry_run`]).
#[derive(Debug, Clone)]
pub struct DryRun {
    /// The tmux commands, one invocation a line, as a shell would take them; secrets
    /// never appear in them.
    pub tmux: Vec<String>,
    pub command: TeammateCommand,
    pub worktree: Option<worktree::Plan>,
}

/// A spawn request with its agent definition applied.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub req: SpawnRequest,
    pub definition: Option<Definition>,
}

/// How the teammates of one team are started: where (the team's tmux server, and whether
/// the caller sits inside it) and with what (the settings and environment a lead passes
/// on, the user's configuration). One value serves `swarm spawn`, `swarm run` and the lead
/// agent's Agent tool alike.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The team, opened once by whoever made the launcher.
    pub store: Store,
    pub tmux: Tmux,
    /// Where the process starting teammates sits in tmux (a first window opens beside it).
    pub caller: Caller,
    pub lead: LeadSettings,
    /// The lead's environment, which teammates inherit from (see [`inherit`]).
    pub env: BTreeMap<String, String>,
    pub dirs: UserDirs,
    /// Where a lead started by this launcher works.
    pub cwd: PathBuf,
    /// `SWARM_PANES_PER_WINDOW`, if set.
    pub panes_per_window: Option<usize>,
}

/// How teammates will be started, before there is a team to start them in: everything
/// a [`Launcher`] holds but the team and its tmux server. The front end fills it from the
/// command line, and makes the launcher once the team is opened ([`LaunchSettings::for_team`]),
/// so a run or the demo can make its team first.
#[derive(Debug, Clone)]
pub struct LaunchSettings {
    /// Where the process starting teammates sits in tmux.
    pub caller: Caller,
    pub lead: LeadSettings,
    /// The lead's environment, which teammates inherit from, and which finds tmux.
    pub env: Environment,
    pub dirs: UserDirs,
    /// Where a lead started by the launcher works.
    pub cwd: PathBuf,
    /// `SWARM_PANES_PER_WINDOW`, if set.
    pub panes_per_window: Option<usize>,
    /// `--tmux-socket`: the tmux server by name, over the one the team's roster records.
    pub tmux_socket: Option<String>,
}

impl LaunchSettings {
    /// The launcher of the team `store` holds, on the team's tmux server (see
    /// [`team_window::server_for`]).
    pub fn for_team(self, store: Store) -> Result<Launcher> {
        let tmux = team_window::server_for(&store, self.tmux_socket.as_deref(), &self.env)?;
        Ok(Launcher {
            store,
            tmux,
            caller: self.caller,
            lead: self.lead,
            env: self.env.vars().clone(),
            dirs: self.dirs,
            cwd: self.cwd,
            panes_per_window: self.panes_per_window,
        })
    }
}

impl Launcher {
    pub fn window_options(&self) -> TeamWindowOptions {
        TeamWindowOptions::for_team(&self.store, self.panes_per_window)
    }

    /// Applies the agent definition `req.agent_type` names (from the project of `req.cwd`
    /// and the user's): its initial prompt when no prompt was given, its colour and
    /// isolation when none were. An unknown type is an error listing the known ones;
    /// invalid definition files are reported on stderr and skipped.
    pub(crate) fn prepare(&self, req: &SpawnRequest) -> Result<Prepared> {
        let mut req = req.clone();
        let definition = match &req.agent_type {
            Some(t) => {
                let catalog = Catalog::load(&req.cwd, &self.dirs);
                catalog.warn_invalid();
                Some(catalog.get(t)?.clone())
            }
            None => None,
        };
        if let Some(d) = &definition {
            if req.prompt.as_deref().is_none_or(|p| p.trim().is_empty())
                && d.initial_prompt.is_some()
            {
                req.prompt = d.initial_prompt.clone();
            }
            if req.color.is_none() {
                req.color = d.color.clone();
            }
            if req.isolation.is_none() {
                req.isolation = d.isolation;
            }
        }
        Ok(Prepared { req, definition })
    }

    /// The teammate's command for a prepared request: from the lead's settings and
    /// environment, and naming the project it was spawned for, which a teammate in a
    /// worktree would not find by walking up from its own directory.
    fn teammate_command(
        &self,
        prepared: &Prepared,
        color: &str,
        project: &Path,
    ) -> Result<TeammateCommand> {
        let config = self.store.roster().load()?;
        let mut settings = self.lead.clone();
        settings.session_id = config.lead_session_id.clone();
        let key = swarm_store::mailbox::lead_key::verify_key(self.store.root(), self.store.team())?;
        settings.lead_verify_key = key.map(|k| k.to_arg());
        let spec = spec(self.store.team(), prepared, color);
        let mut cmd = match self.engine(&prepared.req) {
            Engine::Swarm => {
                inherit::teammate_command(&settings, &self.env, &spec, inherit::Place::Here)
            }
            Engine::Claude => {
                let claude = ClaudeSpawn {
                    bin: self.claude_bin()?.to_path_buf(),
                    // A dry run shows one; the spawn writes one first (see `session_id`).
                    session_id: settings
                        .session_id
                        .clone()
                        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
                    default_root: self.dirs.home.as_ref().map(|h| h.join(".claude")),
                    as_root: nix::unistd::geteuid().is_root(),
                };
                inherit::claude_command(&settings, &self.env, &spec, &claude)
            }
        };
        cmd.env.retain(|(k, _)| k != vars::SWARM_PROJECT_DIR);
        cmd.env.push((
            vars::SWARM_PROJECT_DIR.to_owned(),
            project.display().to_string(),
        ));
        Ok(cmd)
    }

    /// What runs the teammate `req` asks for.
    pub fn engine(&self, req: &SpawnRequest) -> Engine {
        req.engine.unwrap_or(self.lead.engine)
    }

    /// The Claude Code client; resolved at the edge, so missing here only when the edge
    /// did not expect a Claude Code teammate.
    fn claude_bin(&self) -> Result<&Path> {
        self.lead.claude_bin.as_deref().ok_or_else(|| {
            Error::usage(
                "no Claude Code client to start: give its path with --claude-bin PATH or SWARM_CLAUDE_BIN",
            )
        })
    }

    /// The lead's session id, which a Claude Code teammate is started with: the roster's,
    /// made now if the roster has none (a team Claude Code did not create).
    fn session_id(&self) -> Result<()> {
        Ok(self.store.roster().update(|c| {
            if c.lead_session_id.is_none() {
                c.lead_session_id = Some(uuid::Uuid::new_v4().to_string());
            }
            Ok(())
        })?)
    }

    /// The lead pane's program: `swarm lead`, with the lead's settings, so it can spawn and
    /// supervise in turn (see [`inherit::lead_command`]).
    pub fn lead_command(&self, extra: &[String]) -> TeammateCommand {
        inherit::lead_command(&self.lead, &self.env, self.store.team(), &self.cwd, extra)
    }

    /// Opens the team's window with the lead in its first pane, unless it is open already.
    /// Returns the window and whether this call opened it.
    pub fn ensure_window(&self, lead: &TeammateCommand) -> Result<(TeamWindow, bool)> {
        if let Some(w) = TeamWindow::find(&self.tmux, self.store.team(), self.window_options())? {
            return Ok((w, false));
        }
        let placement = Placement::for_caller(&self.tmux, &self.caller)?;
        let opened = TeamWindow::open(
            &self.tmux,
            self.store.team(),
            &pane_spec(lead),
            placement,
            self.window_options(),
        );
        let window = match opened {
            Ok(window) => window,
            // Another spawn opened it between this one's look and its open (several
            // spawns at once into a team with no window): use that one.
            Err(e) if matches!(e.base(), Some(swarm_util::error::Error::Conflict(_))) => {
                match TeamWindow::find(&self.tmux, self.store.team(), self.window_options())? {
                    Some(w) => return Ok((w, false)),
                    None => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        team_window::record_server(&self.store, &window)?;
        crate::spawn::launch_record::save_launch(&self.store, LEAD, lead, self.lead.engine)?;
        let pane = window
            .lead_pane()?
            .map(|p| p.to_string())
            .unwrap_or_default();
        self.store.roster().update_member(LEAD, |m| {
            m.tmux_pane_id = pane;
            m.backend_type = Some("tmux".to_owned());
        })?;
        Ok((window, true))
    }

    /// The team window with its lead running: opened with `lead_cmd` in its first pane if
    /// it is not open, the lead restarted if it stopped there. Every spawn, here or on a
    /// host, goes through it, so no teammate joins a team nobody supervises. Returns the
    /// window and whether this call opened it.
    pub fn supervised_window(&self, lead_cmd: &TeammateCommand) -> Result<(TeamWindow, bool)> {
        let (window, opened) = self.ensure_window(lead_cmd)?;
        if !opened && let Some(pane) = self.stopped_lead(&window)? {
            window.restart_pane(pane, &pane_spec(lead_cmd))?;
        }
        Ok((window, opened))
    }

    /// The lead's pane, when the lead has stopped in it (a crash, or Ctrl-C in its pane,
    /// which `remain-on-exit` keeps open) and must start again: a teammate spawned into a
    /// team nobody supervises would go unwatched, its death unreported.
    fn stopped_lead(&self, window: &TeamWindow) -> Result<Option<PaneId>> {
        if self.store.agents().lead_running() {
            return Ok(None);
        }
        Ok(window
            .panes()?
            .into_iter()
            .find(|p| p.agent.as_deref() == Some(LEAD) && p.dead)
            .map(|p| p.pane))
    }

    /// Everything a spawn checks before it makes anything, so that a refusal leaves
    /// nothing behind and a dry run refuses what the spawn would: the working directory,
    /// the agent definition, a free name, and the worktree if one is asked for.
    fn check(&self, req: &SpawnRequest) -> Result<Checked> {
        check_cwd(&req.cwd)?;
        let claude = self.engine(req) == Engine::Claude;
        if claude {
            self.claude_bin()?;
            if !req.budget.is_none() {
                return Err(Error::usage(
                    "a budget applies to swarm teammates only (Claude Code keeps its own accounts): drop --budget-usd/--budget-tokens or use --engine swarm",
                ));
            }
            if req.context_window.is_some() {
                return Err(Error::usage(
                    "a context window applies to swarm teammates only (Claude Code sizes its own): drop --context-window or use --engine swarm",
                ));
            }
        }
        let prepared = self.prepare(req)?;
        let api = inherit::resolve_api(&self.lead, &spec(self.store.team(), &prepared, ""));
        if !claude {
            self.check_model(&req.name, &api)?;
        } else if api.provider.as_deref() == Some(Provider::OpenAi.as_str()) {
            return Err(Error::usage(format!(
                "cannot spawn {}: a Claude Code teammate talks to the Anthropic API, not openai; drop the openai provider or use --engine swarm",
                req.name
            )));
        }
        let config = self.store.roster().load()?;
        check_name_free(&config, self.store.team(), &req.name)?;
        let color = prepared
            .req
            .color
            .clone()
            .unwrap_or_else(|| config.next_color().to_owned());
        let worktree = match prepared.req.isolation {
            Some(Isolation::Worktree) => {
                Some(worktree::plan(self.store.team(), &req.name, &req.cwd)?)
            }
            _ => None,
        };
        Ok(Checked {
            prepared,
            config,
            color,
            worktree,
            project_cwd: req.cwd.clone(),
        })
    }

    /// A swarm teammate resolves its model from the flags and environment it is started
    /// with, as `swarm agent` does; one that could not (no key, a bad provider or URL)
    /// would only die in its pane, so the spawn is refused here with the reason. On its
    /// own `api`, the lead's variables do not reach it (see [`inherit`]).
    pub(crate) fn check_model(&self, name: &AgentName, api: &inherit::Api) -> Result<()> {
        let (plain, secret) = inherit::environment(&self.lead, &self.env, inherit::Place::Here);
        let given = |flag: &Option<String>, var: &str| {
            flag.clone()
                .or_else(|| plain.get(var).filter(|_| !api.own).cloned())
        };
        let provider = given(&api.provider, vars::SWARM_PROVIDER)
            .filter(|p| !p.trim().is_empty())
            .map(|p| p.parse::<Provider>())
            .transpose();
        let checked = provider.and_then(|provider| {
            let flags = LlmFlags {
                provider,
                base_url: given(&api.base_url, vars::SWARM_BASE_URL),
                anthropic_version: self.lead.anthropic_version.clone(),
                ..LlmFlags::default()
            };
            LlmConfig::resolve(&flags, |var| {
                secret.get(var).or_else(|| plain.get(var)).cloned()
            })
        });
        checked
            .map(|_| ())
            .map_err(|e| Error::usage(format!("cannot spawn {name}: {e}")))
    }

    /// What [`Launcher::spawn`] would do, with nothing created: the teammate's command,
    /// its worktree, and the tmux commands the spawn runs, from the very code that runs
    /// them (see [`TeamWindow::plan_teammate`]). Refuses what the real spawn would refuse.
    pub fn dry_run(&self, req: &SpawnRequest) -> Result<DryRun> {
        let Checked {
            mut prepared,
            color,
            worktree,
            ..
        } = self.check(req)?;
        if let Some(plan) = &worktree {
            prepared.req.cwd = plan.cwd.clone();
        }
        let project = self.dirs.project_dir(&req.cwd);
        let command = self.teammate_command(&prepared, &color, &project)?;
        let spec = pane_spec(&command);
        let lead = pane_spec(&self.lead_command(&[]));
        let tmux = match TeamWindow::find(&self.tmux, self.store.team(), self.window_options())? {
            Some(mut window) => {
                let mut lines = Vec::new();
                if let Some(pane) = self.stopped_lead(&window)? {
                    let restart = TmuxCommand::respawn_pane(pane, &lead)?;
                    lines.push(self.tmux.command_line(&[restart]));
                }
                lines.extend(window.plan_teammate(&req.name, &color, &spec)?);
                lines
            }
            None => TeamWindow::plan_open(
                &self.tmux,
                self.store.team(),
                &lead,
                Placement::for_caller(&self.tmux, &self.caller)?,
                self.window_options(),
                &req.name,
                &color,
                &spec,
            )?,
        };
        Ok(DryRun {
            tmux,
            command,
            worktree,
        })
    }

    /// Spawns one teammate.
    pub fn spawn(&self, req: &SpawnRequest) -> Result<Spawned> {
        self.spawn_many(std::slice::from_ref(req))
            .pop()
            .expect("one result per request")
    }

    /// Spawns several teammates together, each with its own fate: one that is refused or
    /// fails leaves nothing of itself behind and stops none of the others. Every check
    /// comes first; then one roster write reserves them all, their worktrees are made,
    /// their launch records and first instructions are written at once, their panes are
    /// made one after another in the team window (each teammate starts as soon as its pane
    /// is there), and one roster write records every pane. Results come in the order of
    /// `reqs`.
    pub fn spawn_many(&self, reqs: &[SpawnRequest]) -> Vec<Result<Spawned>> {
        self.spawn_many_with_lead(reqs, &self.lead_command(&[]))
    }

    /// [`Launcher::spawn_many`], where a team window this opens has `lead` in its first
    /// pane: a run's lead with its goal, which starts once its teammates are in the roster.
    pub fn spawn_many_with_lead(
        &self,
        reqs: &[SpawnRequest],
        lead: &TeammateCommand,
    ) -> Vec<Result<Spawned>> {
        let mut fates = self.check_all(reqs);
        self.reserve(&mut fates);
        self.prepare_all(&mut fates);
        let opened = self.open_panes(&mut fates, lead);
        self.record_panes(&mut fates);
        let mut first = opened;
        fates
            .into_iter()
            .map(|fate| {
                let spawned = self.settle(fate?)?;
                Ok(Spawned {
                    opened_window: std::mem::take(&mut first),
                    ..spawned
                })
            })
            .collect()
    }

    /// Whether every request would pass the checks of a spawn (see `Launcher::check`),
    /// creating nothing: the first refusal, else `Ok`. For spawning a set all or none.
    pub fn check_many(&self, reqs: &[SpawnRequest]) -> Result<()> {
        self.check_all(reqs)
            .into_iter()
            .try_for_each(|f| f.map(drop))
    }

    /// Checks each request (see [`Launcher::check`]), also against the names before it,
    /// and gives those without a colour the one each would get spawned in turn.
    fn check_all(&self, reqs: &[SpawnRequest]) -> Vec<Result<Starting>> {
        let mut taken: Vec<&str> = Vec::new();
        let mut fates: Vec<Result<Starting>> = reqs
            .iter()
            .map(|req| {
                let mut checked = self.check(req)?;
                if let Some(t) = taken
                    .iter()
                    .find(|t| t.eq_ignore_ascii_case(req.name.as_str()))
                {
                    return Err(Error::conflict(format!(
                        "'{t}' is named twice; names are unique within a team, pick another"
                    )));
                }
                if checked.prepared.req.color.is_none() {
                    let n = checked.config.members.len() + taken.len();
                    checked.color = PALETTE[n % PALETTE.len()].to_owned();
                }
                taken.push(req.name.as_str());
                let engine = self.engine(req);
                let spec = spec(self.store.team(), &checked.prepared, &checked.color);
                Ok(Starting {
                    model: inherit::resolve_model(&self.lead, &self.env, &spec),
                    provider: inherit::resolve_api(&self.lead, &spec).provider,
                    engine,
                    checked,
                    reserved: false,
                    worktree: None,
                    cmd: None,
                    pane: None,
                    pid: None,
                    failed: None,
                })
            })
            .collect();
        // A Claude Code teammate is started with the lead's session id.
        if fates
            .iter()
            .any(|f| f.as_ref().is_ok_and(|s| s.engine == Engine::Claude))
            && let Err(e) = self.session_id()
        {
            for fate in &mut fates {
                if fate.as_ref().is_ok_and(|s| s.engine == Engine::Claude) {
                    *fate = Err(e.copy());
                }
            }
        }
        fates
    }

    /// Takes each checked name on the roster, in one write.
    fn reserve(&self, fates: &mut [Result<Starting>]) {
        let new: Vec<NewMember> = fates
            .iter()
            .flatten()
            .map(|s| {
                let req = &s.checked.prepared.req;
                NewMember {
                    name: req.name.clone(),
                    color: Some(s.checked.color.clone()),
                    agent_type: req.agent_type.clone(),
                    model: s.model.clone(),
                    prompt: req.prompt.clone(),
                    plan_mode_required: req.plan_mode_required,
                    cwd: req.cwd.display().to_string(),
                }
            })
            .collect();
        if new.is_empty() {
            return;
        }
        let mut added = match self.store.roster().add_members(new) {
            Ok(added) => added.into_iter(),
            Err(e) => {
                fates.iter_mut().for_each(|f| {
                    if f.is_ok() {
                        *f = Err(e.copy().into());
                    }
                });
                return;
            }
        };
        for fate in fates.iter_mut().filter(|f| f.is_ok()) {
            match added.next().expect("one result per new member") {
                Ok(_) => fate.as_mut().expect("checked").reserved = true,
                Err(e) => *fate = Err(e.into()),
            }
        }
    }

    /// Makes each reserved teammate's worktree (one after another: they share the
    /// repository), then writes its launch record and first instructions (all at once).
    fn prepare_all(&self, fates: &mut [Result<Starting>]) {
        let store = &self.store;
        for s in live(fates) {
            let Some(plan) = s.checked.worktree.clone() else {
                continue;
            };
            let name = s.name().to_owned();
            let made = worktree::create(store, &plan).and_then(|record| {
                s.worktree = Some(record.clone());
                let cwd = worktree::working_dir(&plan);
                store.roster().update_member(&name, |m| {
                    m.cwd = cwd.display().to_string();
                    m.worktree_path = Some(record.path.display().to_string());
                    m.extra
                        .insert("worktreeBranch".into(), record.branch.clone().into());
                    m.extra
                        .insert("worktreeBaseCommit".into(), record.base.clone().into());
                })?;
                Ok(cwd)
            });
            match made {
                Ok(cwd) => s.checked.prepared.req.cwd = cwd,
                Err(e) => s.failed = Some(e.into()),
            }
        }
        let mut ready: Vec<&mut Starting> = live(fates).collect();
        let commands = parallel::map(&ready, PARALLEL_SETUPS, |s| self.write_start(s));
        for (s, cmd) in ready.iter_mut().zip(commands) {
            match cmd {
                Ok(cmd) => s.cmd = Some(cmd),
                Err(e) => s.failed = Some(e),
            }
        }
    }

    /// A reserved teammate's command, with its launch record saved and its first
    /// instructions in its inbox.
    fn write_start(&self, s: &Starting) -> Result<TeammateCommand> {
        let store = &self.store;
        let prepared = &s.checked.prepared;
        // A teammate in a worktree still reads the project's agent definitions and hooks,
        // which may be uncommitted or git-ignored (`settings.local.json`) and so absent there.
        let project = self.dirs.project_dir(&s.checked.project_cwd);
        // The team's lead key, made now if the lead has not started yet: the teammate gets it.
        swarm_store::mailbox::lead_key::signer(store.root(), store.team())?;
        let cmd = self.teammate_command(prepared, &s.checked.color, &project)?;
        crate::spawn::launch_record::save_launch(store, s.name(), &cmd, s.engine)?;
        if let Some(prompt) = prepared
            .req
            .prompt
            .as_deref()
            .filter(|p| !p.trim().is_empty())
        {
            let lead_color = s.checked.config.member(LEAD).and_then(|m| m.color.clone());
            store.mail().deliver(
                &prepared.req.name,
                Envelope::new(LEAD, prompt).with_color(lead_color),
            )?;
        }
        Ok(cmd)
    }

    /// Opens the team window if need be (restarting a stopped lead), then each ready
    /// teammate's pane, which starts it. Returns whether the window was opened here.
    fn open_panes(&self, fates: &mut [Result<Starting>], lead_cmd: &TeammateCommand) -> bool {
        if live(fates).next().is_none() {
            return false;
        }
        let (mut window, opened) = match self.supervised_window(lead_cmd) {
            Ok(w) => w,
            Err(e) => {
                live(fates).for_each(|s| s.failed = Some(e.copy()));
                return false;
            }
        };
        for s in live(fates) {
            let cmd = s.cmd.as_ref().expect("prepared");
            let made = window
                .add_teammate(
                    &s.checked.prepared.req.name,
                    &s.checked.color,
                    &pane_spec(cmd),
                )
                .and_then(|pane| {
                    s.pane = Some(pane);
                    // A Claude Code process never writes swarm's pid; its pane's process is it.
                    if s.engine == Engine::Claude {
                        s.pid = window
                            .tmux()
                            .display(&pane, "#{pane_pid}")?
                            .trim()
                            .parse::<i32>()
                            .ok();
                    }
                    Ok(())
                });
            if let Err(e) = made {
                s.failed = Some(e);
            }
        }
        opened
    }

    /// Records every pane made in the roster, in one write.
    fn record_panes(&self, fates: &mut [Result<Starting>]) {
        let started: Vec<(String, String, Engine, Option<i32>)> = live(fates)
            .filter_map(|s| {
                let pane = s.pane?;
                Some((s.name().to_owned(), pane.to_string(), s.engine, s.pid))
            })
            .collect();
        if started.is_empty() {
            return;
        }
        let written = self.store.roster().update(|c| {
            for (name, pane, engine, pid) in &started {
                let unknown = c.unknown_member(name);
                let m = c.member_mut(name).ok_or(unknown)?;
                m.tmux_pane_id = pane.clone();
                m.backend_type = Some("tmux".to_owned());
                m.engine = Some(engine.to_string());
                // No `isActive` yet: the client writes it at its first turn, and until it
                // does, a client that never gets there is looked at for a first-run dialog.
                if *engine == Engine::Claude {
                    m.pid = *pid;
                }
            }
            Ok(())
        });
        if let Err(e) = written {
            live(fates)
                .filter(|s| s.pane.is_some())
                .for_each(|s| s.failed = Some(e.copy().into()));
        }
    }

    /// What became of one teammate: spawned, or failed with what was made for it undone
    /// (its roster entry, inbox and worktree).
    fn settle(&self, mut s: Starting) -> Result<Spawned> {
        let store = &self.store;
        let Some(error) = s.failed.take() else {
            return Ok(Spawned {
                name: s.name().to_owned(),
                pane: s.pane.map(|p| p.to_string()).unwrap_or_default(),
                color: s.checked.color,
                opened_window: false,
                worktree: s.worktree,
                model: s.model,
                provider: s.provider,
            });
        };
        if s.reserved {
            let _ = store.roster().remove_member(s.name());
            let _ = store.mail().remove_inbox(&s.checked.prepared.req.name);
        }
        if let Some(record) = &s.worktree
            && let Err(e) = worktree::remove(store, record)
        {
            tracing::warn!("failed to remove the worktree of a failed spawn: {e}");
        }
        Err(error)
    }
}

/// Most teammates of one spawn whose launch records and first instructions are written at
/// once (durable writes, which share the disk's flushes).
const PARALLEL_SETUPS: usize = 32;

/// One teammate of a spawn, as far as it got: what was made for it is undone if it fails.
struct Starting {
    checked: Checked,
    engine: Engine,
    model: Option<String>,
    provider: Option<String>,
    /// On the roster.
    reserved: bool,
    worktree: Option<Record>,
    cmd: Option<TeammateCommand>,
    pane: Option<PaneId>,
    /// A Claude Code teammate's process.
    pid: Option<i32>,
    /// Why it will not start, once something failed.
    failed: Option<Error>,
}

impl Starting {
    fn name(&self) -> &str {
        self.checked.prepared.req.name.as_str()
    }
}

/// The teammates still on their way: checked, reserved, and nothing failed since.
fn live(fates: &mut [Result<Starting>]) -> impl Iterator<Item = &mut Starting> {
    fates
        .iter_mut()
        .flatten()
        .filter(|s| s.reserved && s.failed.is_none())
}

pub(crate) fn spec(team: &TeamName, prepared: &Prepared, color: &str) -> SpawnSpec {
    let req = &prepared.req;
    let def = prepared.definition.as_ref();
    SpawnSpec {
        team: team.clone(),
        name: req.name.clone(),
        color: color.to_owned(),
        agent_type: req.agent_type.clone(),
        model: req.model.clone(),
        provider: req.provider.map(|p| p.to_string()),
        base_url: req.base_url.clone(),
        permission_mode: req.permission_mode,
        plan_mode_required: req.plan_mode_required,
        cwd: req.cwd.clone(),
        definition_model: def.and_then(|d| d.model.clone()),
        definition_provider: def.and_then(|d| d.provider).map(|p| p.to_string()),
        definition_base_url: def.and_then(|d| d.base_url.clone()),
        definition_permission_mode: def.and_then(|d| d.permission_mode),
        budget: req.budget,
        context_window: req.context_window,
        anthropic_version: req.anthropic_version.clone(),
    }
}

pub(crate) fn pane_spec(cmd: &TeammateCommand) -> PaneSpec {
    PaneSpec {
        cwd: cmd.cwd.clone(),
        env: cmd.env.clone(),
        argv: cmd.argv.clone(),
        secret_env: cmd.secret_env.clone(),
    }
}

/// Names are unique within a team, ignoring case: `Bob` and `bob` would be one name to
/// the person reading the panes.
pub(crate) fn check_name_free(
    config: &roster::TeamConfig,
    team: &TeamName,
    name: &AgentName,
) -> Result<()> {
    match config
        .members
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name.as_str()))
    {
        Some(existing) => Err(Error::conflict(format!(
            "team '{team}' already has a member named '{}'; names are unique within a team, pick another (or shut that one down first)",
            existing.name
        ))),
        None => Ok(()),
    }
}

fn check_cwd(cwd: &Path) -> Result<()> {
    if !cwd.is_absolute() {
        return Err(Error::usage(format!(
            "--cwd {} must be an absolute path",
            cwd.display()
        )));
    }
    if !cwd.is_dir() {
        return Err(Error::not_found(format!(
            "working directory {} does not exist",
            cwd.display()
        )));
    }
    Ok(())
}
