//! The team window: where a team's agents run, one pane each, in a window of their own.
//!
//! A team never splits the user's window. Inside tmux its first window opens in the user's
//! current session ([`Placement::InSession`]); outside, a detached session `swarm-<team>`
//! holds it ([`Placement::Detached`]). The first pane runs the lead, on the left at
//! `lead_percent` of the width (`main-vertical`, lead as the main pane); teammates stack
//! beside it and the window switches to `tiled` past `main_vertical_max` teammates. A window
//! holds at most `panes_per_window` panes (the lead counts in the first), after which the
//! team gets another window in the same session, laid out `tiled`.
//!
//! Invariants:
//! * Every pane this module makes is tagged (`@swarm-team`, `@swarm-agent`, and
//!   `@swarm-pane` as proof the tags are its own; see [`swarm_tmux`]), has
//!   `remain-on-exit on` (a crashed agent's pane stays, with its exit status), and shows the
//!   agent's name in its top border in the agent's colour (`@swarm-colour`, read by the
//!   window's border styles). All of this is set while the pane runs a placeholder; only
//!   then is the agent started in it with `respawn-pane`, so an agent that dies at once
//!   still leaves a tagged, dead pane behind, never an orphan.
//! * Nothing here kills a pane that is not tagged with this team on the pane itself:
//!   [`TeamWindow::kill_pane`] refuses it, and [`TeamWindow::close`] kills tagged panes by
//!   id, never a window or session that might also hold a user's pane. Windows and the
//!   session go away by themselves with their last pane.
//! * State lives in tmux, not here: every call re-reads the panes, so a fresh process can
//!   [`TeamWindow::find`] the window and add to it.
//! * Changes are serialised across processes by an exclusive `flock` on the sidecar of
//!   [`TeamWindowOptions::lock_anchor`], which the caller names (one per team, never renamed
//!   or deleted). It is held only for the few tmux calls of one change, and std opens it
//!   close-on-exec, so a tmux server started meanwhile cannot inherit it.
//! * Splits use `-d` and windows open detached: focus never moves unless [`TeamWindow::attach`]
//!   is called.
//!
//! All calls block on tmux; async callers use `spawn_blocking`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::spawn::layout::{
    PaneGeometry, Slot, WindowLoad, border_colour, choose_slot, home_session, layout_for,
    session_name, team_windows, window_name,
};
use swarm_store::Store;
use swarm_store::roster::PALETTE;
use swarm_tmux::{
    AGENT_OPTION, Caller, NewSession, PANE_OPTION, PaneId, PaneRecord, PaneSpec, SessionId,
    TEAM_OPTION, Tmux, TmuxCommand, TmuxError, WindowId, is_server_path,
};
use swarm_util::environment::Environment;
use swarm_util::error::{Base as _, IoContext};
use swarm_util::lock::{self, Locked};
use swarm_util::names::{AgentName, LEAD, TeamName};

/// Pane option: the tmux colour of the pane's agent, read by the window's border styles.
pub const COLOUR_OPTION: &str = "@swarm-colour";

/// How a team window is sized and split. Build with [`TeamWindowOptions::new`].
#[derive(Debug, Clone)]
pub struct TeamWindowOptions {
    /// Locked (the flock on `<lock_anchor>.flock`) around every change to the team's
    /// panes; one per team.
    pub lock_anchor: PathBuf,
    /// How long to wait for that lock.
    pub lock_timeout: Duration,
    /// Columns and rows of a detached session until a client attaches (tmux then resizes
    /// to the client).
    pub size: (u16, u16),
    /// Most panes in one window, the lead included in the first. At least 1.
    pub panes_per_window: usize,
    /// Most teammates beside the lead in `main-vertical` before its window goes `tiled`.
    pub main_vertical_max: usize,
    /// Width of the lead's pane in percent of its window.
    pub lead_percent: u8,
    /// The lead's palette colour.
    pub lead_colour: String,
}

/// Most panes in one window when `SWARM_PANES_PER_WINDOW` does not say.
pub const DEFAULT_PANES_PER_WINDOW: usize = 6;

impl TeamWindowOptions {
    pub fn new(lock_anchor: impl Into<PathBuf>) -> TeamWindowOptions {
        TeamWindowOptions {
            lock_anchor: lock_anchor.into(),
            lock_timeout: lock::DEFAULT_TIMEOUT,
            size: (200, 50),
            panes_per_window: DEFAULT_PANES_PER_WINDOW,
            main_vertical_max: 4,
            lead_percent: 30,
            lead_colour: PALETTE[0].to_owned(),
        }
    }

    /// The options of `team`'s window under `root`: its lock, and how many panes a window
    /// holds (`panes_per_window`, else the default).
    pub fn for_team(store: &Store, panes_per_window: Option<usize>) -> TeamWindowOptions {
        let mut opts = TeamWindowOptions::new(store.root().window_lock_anchor(store.team()));
        opts.lock_timeout = store.root().lock_timeout();
        if let Some(n) = panes_per_window {
            opts.panes_per_window = n;
        }
        opts
    }
}

/// Where a team's first window goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A new detached session `swarm-<team>`.
    Detached,
    /// A new window in this (the user's) session.
    InSession(SessionId),
}

impl Placement {
    /// The caller's own session when it runs inside tmux and `tmux` addresses the caller's
    /// server, else a detached session. A caller inside tmux that was pointed at another
    /// server (`SWARM_TMUX_SOCKET`) gets a detached session on that server.
    pub fn for_caller(tmux: &Tmux, caller: &Caller) -> Result<Placement> {
        let (Some(socket), Some(pane)) = (&caller.socket, caller.pane) else {
            return Ok(Placement::Detached);
        };
        if !is_server_path(tmux, socket) {
            return Ok(Placement::Detached);
        }
        Placement::beside(tmux, pane)
    }

    /// A new window in the session that holds `pane`.
    pub fn beside(tmux: &Tmux, pane: PaneId) -> Result<Placement> {
        let id = tmux.display(&pane, "#{session_id}")?;
        let session = id.trim().parse().map_err(|_| {
            Error::Pane(format!(
                "failed to find the tmux session of pane {pane}: got {id:?}"
            ))
        })?;
        Ok(Placement::InSession(session))
    }
}

/// A team's panes in tmux. Holds ids and options only; tmux holds the state.
#[derive(Debug, Clone)]
pub struct TeamWindow {
    tmux: Tmux,
    team: TeamName,
    session: SessionId,
    opts: TeamWindowOptions,
}

impl TeamWindow {
    /// Opens the team's window with the lead's pane running `lead`, tagged as
    /// [`LEAD`] in `opts.lead_colour`. Fails with a conflict if the team already has
    /// panes on this server, or (detached) if a session `swarm-<team>` already exists.
    pub fn open(
        tmux: &Tmux,
        team: &TeamName,
        lead: &PaneSpec,
        placement: Placement,
        opts: TeamWindowOptions,
    ) -> Result<TeamWindow> {
        lead.validate()?;
        let colour = border_colour(&opts.lead_colour)?.to_owned();
        let _lock = window_lock(&opts)?;
        let all = panes_or_none(tmux)?;
        if let Some(p) = all.iter().find(|p| p.belongs_to(team.as_str())) {
            return Err(Error::conflict(format!(
                "team '{team}' already has tmux panes (pane {} in session {:?}); add teammates to it or close it first",
                p.pane, p.session_name
            )));
        }
        let created = match placement {
            Placement::Detached => tmux.new_session(&NewSession {
                name: &session_name(team),
                window_name: Some(&window_name(team, 1)),
                size: Some(opts.size),
                spec: &placeholder(&lead.cwd),
            })?,
            Placement::InSession(session) => tmux.new_window(
                session,
                Some(&window_name(team, 1)),
                &placeholder(&lead.cwd),
            )?,
        };
        let tw = TeamWindow {
            tmux: tmux.clone(),
            team: team.clone(),
            session: created.session,
            opts,
        };
        let batch = tw.lead_setup(created.window, created.pane, &colour, lead)?;
        tw.start_with_secrets(created.session, &batch, created.pane, lead)?;
        Ok(tw)
    }

    /// The team's window as tmux has it now, found from its tagged panes; `None` if the
    /// team has no pane (or no server runs).
    pub fn find(
        tmux: &Tmux,
        team: &TeamName,
        opts: TeamWindowOptions,
    ) -> Result<Option<TeamWindow>> {
        let all = panes_or_none(tmux)?;
        let Some(session) = home_session(&all, team) else {
            return Ok(None);
        };
        Ok(Some(TeamWindow {
            tmux: tmux.clone(),
            team: team.clone(),
            session,
            opts,
        }))
    }

    pub fn team(&self) -> &TeamName {
        &self.team
    }

    pub fn tmux(&self) -> &Tmux {
        &self.tmux
    }

    /// The session holding the team's windows (as of the last call that looked).
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// Starts `agent` in a new pane, tagged and coloured (`colour` is a palette name such as
    /// `purple`, or a tmux colour), in the first team window with room, else in a new
    /// window. Refuses an agent that already has a pane, alive or dead: kill that first.
    pub fn add_teammate(
        &mut self,
        agent: &AgentName,
        colour: &str,
        spec: &PaneSpec,
    ) -> Result<PaneId> {
        spec.validate()?;
        let colour = border_colour(colour)?.to_owned();
        let _lock = window_lock(&self.opts)?;
        let windows = self.windows_for(agent)?;
        let holder = placeholder(&spec.cwd);
        let (make, _) = self.pane_maker(&windows, &holder)?;
        let made = match self.tmux.create(&make) {
            Ok(made) => made,
            // The window has room by count but not by size: the next window has both.
            Err(TmuxError::TooSmall { .. }) => {
                self.tmux.create(&self.new_window(&windows, &holder)?)?
            }
            Err(e) => return Err(e.into()),
        };
        let fresh = !windows.iter().any(|w| w.window == made.window);
        let batch = self.teammate_setup(
            &windows,
            made.window,
            fresh,
            made.pane,
            agent,
            &colour,
            spec,
        )?;
        self.start_with_secrets(self.session, &batch, made.pane, spec)?;
        Ok(made.pane)
    }

    /// What [`TeamWindow::add_teammate`] would run now, nothing changed: one tmux invocation
    /// per line, each made by the same code the real call runs, ids tmux has not made yet
    /// shown as `%new` and `@new`. Refuses what the real call would refuse.
    pub fn plan_teammate(
        &mut self,
        agent: &AgentName,
        colour: &str,
        spec: &PaneSpec,
    ) -> Result<Vec<String>> {
        spec.validate()?;
        let colour = border_colour(colour)?.to_owned();
        let windows = self.windows_for(agent)?;
        self.plan_pane(&windows, agent, &colour, spec)
    }

    /// What [`TeamWindow::open`] would run, and then [`TeamWindow::plan_teammate`] for the
    /// first teammate beside the lead: the same lines a real spawn into a team with no
    /// window runs.
    #[expect(clippy::too_many_arguments, reason = "both calls' arguments")]
    pub fn plan_open(
        tmux: &Tmux,
        team: &TeamName,
        lead: &PaneSpec,
        placement: Placement,
        opts: TeamWindowOptions,
        agent: &AgentName,
        colour: &str,
        spec: &PaneSpec,
    ) -> Result<Vec<String>> {
        lead.validate()?;
        spec.validate()?;
        let lead_colour = border_colour(&opts.lead_colour)?.to_owned();
        let colour = border_colour(colour)?.to_owned();
        let holder = placeholder(&lead.cwd);
        let (make, session) = match placement {
            Placement::Detached => (
                TmuxCommand::new_session(&NewSession {
                    name: &session_name(team),
                    window_name: Some(&window_name(team, 1)),
                    size: Some(opts.size),
                    spec: &holder,
                })?,
                unmade::session(),
            ),
            Placement::InSession(session) => (
                TmuxCommand::new_window(session, Some(&window_name(team, 1)), &holder)?,
                session,
            ),
        };
        let size = opts.size;
        let tw = TeamWindow {
            tmux: tmux.clone(),
            team: team.clone(),
            session,
            opts,
        };
        let (window, lead_pane) = (unmade::window(), unmade::lead_pane());
        let batch = tw.lead_setup(window, lead_pane, &lead_colour, lead)?;
        let mut lines = tw.plan_lines(&make, &batch, lead);
        let windows = [WindowLoad {
            window,
            panes: vec![PaneGeometry {
                pane: lead_pane,
                width: size.0,
                height: size.1,
            }],
            has_lead: true,
        }];
        lines.extend(tw.plan_pane(&windows, agent, &colour, spec)?);
        Ok(lines)
    }

    /// The windows of the team, for a new pane of `agent`: refuses a team with no pane left
    /// and an agent that already has one.
    fn windows_for(&mut self, agent: &AgentName) -> Result<Vec<WindowLoad>> {
        let all = self.tmux.list_panes().map_err(|e| self.gone_or(e))?;
        let Some(session) = home_session(&all, &self.team) else {
            return Err(self.no_window());
        };
        self.session = session;
        if let Some(p) = all.iter().find(|p| {
            p.belongs_to(self.team.as_str()) && p.agent.as_deref() == Some(agent.as_str())
        }) {
            return Err(Error::conflict(format!(
                "agent '{agent}' of team '{}' already has tmux pane {}{}; kill that pane first",
                self.team,
                p.pane,
                if p.dead { " (dead)" } else { "" }
            )));
        }
        Ok(team_windows(&all, self.team.as_str()))
    }

    /// The command that makes the next pane, running `holder`, and the window it goes in:
    /// the largest pane of the first window with room is split; with none, `None`, and the
    /// command opens a window.
    fn pane_maker(
        &self,
        windows: &[WindowLoad],
        holder: &PaneSpec,
    ) -> Result<(TmuxCommand, Option<WindowId>)> {
        Ok(match choose_slot(windows, self.opts.panes_per_window) {
            Slot::Split {
                window,
                target,
                direction,
            } => (
                TmuxCommand::split_window(target, direction, None, holder)?,
                Some(window),
            ),
            Slot::NewWindow => (self.new_window(windows, holder)?, None),
        })
    }

    /// A new window for the team in its session, running `holder`.
    fn new_window(&self, windows: &[WindowLoad], holder: &PaneSpec) -> Result<TmuxCommand> {
        let name = window_name(&self.team, windows.len() + 1);
        Ok(TmuxCommand::new_window(self.session, Some(&name), holder)?)
    }

    /// The lines that make and start `agent`'s pane among `windows`.
    fn plan_pane(
        &self,
        windows: &[WindowLoad],
        agent: &AgentName,
        colour: &str,
        spec: &PaneSpec,
    ) -> Result<Vec<String>> {
        let holder = placeholder(&spec.cwd);
        let (make, window) = self.pane_maker(windows, &holder)?;
        let window = window.unwrap_or_else(unmade::window);
        let fresh = !windows.iter().any(|w| w.window == window);
        let batch =
            self.teammate_setup(windows, window, fresh, unmade::pane(), agent, colour, spec)?;
        Ok(self.plan_lines(&make, &batch, spec))
    }

    /// `make`, then `batch` with `spec`'s secrets in the session's environment meanwhile
    /// (see [`TeamWindow::start_with_secrets`]), as shell lines.
    fn plan_lines(
        &self,
        make: &TmuxCommand,
        batch: &[TmuxCommand],
        spec: &PaneSpec,
    ) -> Vec<String> {
        let mut lines = vec![self.tmux.command_line(std::slice::from_ref(make))];
        if !spec.secret_env.is_empty() {
            let names: Vec<String> = spec
                .secret_env
                .iter()
                .map(|(k, _)| format!("{k}=<redacted>"))
                .collect();
            lines.push(format!(
                "# while the next line runs, session {} holds {} (set from stdin, never in a command line)",
                self.session,
                names.join(" ")
            ));
        }
        lines.push(self.tmux.command_line(batch));
        lines.iter().map(|l| unmade::shown(l)).collect()
    }

    /// The team's panes (tagged with this team), ordered by window and position.
    pub fn panes(&self) -> Result<Vec<PaneRecord>> {
        let mut mine: Vec<PaneRecord> = panes_or_none(&self.tmux)?
            .into_iter()
            .filter(|p| p.belongs_to(self.team.as_str()))
            .collect();
        mine.sort_by_key(|p| (p.window, p.index));
        Ok(mine)
    }

    /// The lead's pane, if it is still there.
    pub fn lead_pane(&self) -> Result<Option<PaneId>> {
        Ok(self
            .panes()?
            .into_iter()
            .find(|p| p.agent.as_deref() == Some(LEAD))
            .map(|p| p.pane))
    }

    /// Kills one of the team's panes (tmux sends its process SIGHUP) and re-lays out its
    /// window. Refuses a pane not tagged with this team; a pane already gone is fine.
    pub fn kill_pane(&self, pane: PaneId) -> Result<()> {
        let _lock = window_lock(&self.opts)?;
        let all = panes_or_none(&self.tmux)?;
        let Some(record) = all.iter().find(|p| p.pane == pane) else {
            return Ok(());
        };
        if !record.belongs_to(self.team.as_str()) || !self.own_tags(&[pane])?[0] {
            return Err(Error::conflict(format!(
                "refusing to kill tmux pane {pane}: it is not a pane of team '{}'",
                self.team
            )));
        }
        let mut batch = vec![TmuxCommand::kill_pane(pane)];
        let windows = team_windows(&all, self.team.as_str());
        if let Some(w) = windows.iter().find(|w| w.window == record.window) {
            let left = w.panes.len() - 1;
            let has_lead = w.has_lead && record.agent.as_deref() != Some(LEAD);
            if let Some(layout) = layout_for(has_lead, left, self.opts.main_vertical_max) {
                batch.push(TmuxCommand::select_layout(w.window, layout));
            }
        }
        match self.tmux.run_batch(&batch) {
            Ok(_) => Ok(()),
            Err(e) if e.is_target_gone() || e.is_no_server() => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Kills every pane of the team, the lead's last (the caller may be running in it, and
    /// then ends with it). Untagged panes are left alone, so a window or session that also
    /// holds a user's pane survives. Returns how many panes were killed.
    pub fn close(&self) -> Result<usize> {
        let _lock = window_lock(&self.opts)?;
        let mut mine: Vec<PaneRecord> = panes_or_none(&self.tmux)?
            .into_iter()
            .filter(|p| p.belongs_to(self.team.as_str()))
            .collect();
        let ids: Vec<PaneId> = mine.iter().map(|p| p.pane).collect();
        let own = self.own_tags(&ids)?;
        let mut own = own.into_iter();
        mine.retain(|_| own.next().unwrap_or(false));
        mine.sort_by_key(|p| (p.agent.as_deref() == Some(LEAD), p.pane));
        let batch: Vec<TmuxCommand> = mine
            .iter()
            .map(|p| TmuxCommand::kill_pane(p.pane))
            .collect();
        if batch.is_empty() {
            return Ok(0);
        }
        match self.tmux.run_batch(&batch) {
            Ok(_) => return Ok(mine.len()),
            Err(e) if e.is_no_server() => return Ok(mine.len()),
            Err(e) if e.is_target_gone() => {}
            Err(e) => return Err(e.into()),
        }
        // One pane vanished meanwhile and stopped the batch: finish one by one.
        for p in &mine {
            match self.tmux.kill_pane(p.pane) {
                Ok(()) => {}
                Err(e) if e.is_target_gone() || e.is_no_server() => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(mine.len())
    }

    /// Shows the team's window: `switch-client` inside tmux (on another server, where
    /// there is no client to switch, as outside), else `tmux attach` in the foreground,
    /// returning when the user detaches.
    pub fn attach(&self, inside_tmux: bool) -> Result<()> {
        let panes = self.panes()?;
        let target = panes
            .iter()
            .find(|p| p.agent.as_deref() == Some(LEAD))
            .or(panes.first())
            .ok_or_else(|| self.no_window())?;
        match self.tmux.attach(&target.pane, inside_tmux) {
            // Inside another server's pane this server has no client to switch: show it
            // on the terminal instead.
            Err(e) if inside_tmux && e.is_no_client() => {
                Ok(self.tmux.attach(&target.pane, false)?)
            }
            r => Ok(r?),
        }
    }

    /// Before killing: whether each pane carries this team's tag on itself. The listing's
    /// `@swarm-pane` proof already rules out tags inherited by accident; this also rules
    /// out a window-level `@swarm-pane` someone set to one pane's id.
    fn own_tags(&self, panes: &[PaneId]) -> Result<Vec<bool>> {
        let values = match self.tmux.own_pane_options(panes, TEAM_OPTION) {
            Ok(v) => v,
            Err(e) if e.is_no_server() => vec![None; panes.len()],
            Err(e) => return Err(e.into()),
        };
        Ok(values
            .iter()
            .map(|v| v.as_deref() == Some(self.team.as_str()))
            .collect())
    }

    /// What starts the lead in the first pane of a fresh window: the window's options, the
    /// pane's tags, then the lead itself.
    fn lead_setup(
        &self,
        window: WindowId,
        pane: PaneId,
        colour: &str,
        lead: &PaneSpec,
    ) -> Result<Vec<TmuxCommand>> {
        let mut batch = self.window_setup(window);
        batch.extend(self.pane_setup(pane, &AgentName::parse_any(LEAD)?, colour));
        batch.push(TmuxCommand::respawn_pane(pane, lead)?);
        Ok(batch)
    }

    /// What starts `agent` in `pane`, just made in `window` (`fresh` when the window is
    /// new too): the window's options if fresh, the pane's tags, the window's layout for
    /// its new pane count, then the agent itself.
    #[expect(
        clippy::too_many_arguments,
        reason = "one batch, described by all of them"
    )]
    fn teammate_setup(
        &self,
        windows: &[WindowLoad],
        window: WindowId,
        fresh: bool,
        pane: PaneId,
        agent: &AgentName,
        colour: &str,
        spec: &PaneSpec,
    ) -> Result<Vec<TmuxCommand>> {
        let mut batch = if fresh {
            self.window_setup(window)
        } else {
            Vec::new()
        };
        batch.extend(self.pane_setup(pane, agent, colour));
        let load = windows.iter().find(|w| w.window == window);
        let has_lead = load.is_some_and(|w| w.has_lead);
        let count = load.map_or(0, |w| w.panes.len()) + 1;
        if let Some(layout) = layout_for(has_lead, count, self.opts.main_vertical_max) {
            batch.push(TmuxCommand::select_layout(window, layout));
        }
        batch.push(TmuxCommand::respawn_pane(pane, spec)?);
        Ok(batch)
    }

    /// Window options of a window this module made. Border styles are window options in
    /// tmux 3.3 (`set-option -p` quietly sets them on the window, so the last pane's colour
    /// would win); as formats they are expanded per pane, each with its own `@swarm-colour`.
    /// A pane without one (a user's) keeps the default look.
    fn window_setup(&self, window: WindowId) -> Vec<TmuxCommand> {
        let c = COLOUR_OPTION;
        vec![
            TmuxCommand::set_window_option(window, "pane-border-status", "top"),
            TmuxCommand::set_window_option(
                window,
                "pane-border-style",
                &format!("#{{?{c},fg=#{{{c}}},default}}"),
            ),
            TmuxCommand::set_window_option(
                window,
                "pane-active-border-style",
                &format!("#{{?{c},fg=#{{{c}}}#,bold,fg=green}}"),
            ),
            TmuxCommand::set_window_option(
                window,
                "main-pane-width",
                &format!("{}%", self.opts.lead_percent),
            ),
        ]
    }

    /// Tags, keeps dead, titles and colours one pane.
    fn pane_setup(&self, pane: PaneId, agent: &AgentName, colour: &str) -> Vec<TmuxCommand> {
        let set = |name: &str, value: &str| TmuxCommand::set_pane_option(pane, name, value);
        vec![
            set(PANE_OPTION, &pane.to_string()),
            set(TEAM_OPTION, self.team.as_str()),
            set(AGENT_OPTION, agent.as_str()),
            set("remain-on-exit", "on"),
            set(COLOUR_OPTION, colour),
            // The name comes from our own tag, which the program in the pane cannot
            // overwrite the way it can overwrite the pane title.
            set(
                "pane-border-format",
                &format!("#[fg={colour},bold] #{{{AGENT_OPTION}}} #[default]"),
            ),
            TmuxCommand::set_pane_title(pane, agent.as_str()),
        ]
    }

    /// Runs a pane's setup; on failure removes the half-made pane so no untagged
    /// placeholder is left behind.
    /// Starts `spec` again in `pane`, a dead pane of this window (a stopped lead's), its
    /// secrets handed over as for a new pane: a bare `respawn-pane` would start it without
    /// them. On failure the pane stays as it was.
    pub fn restart_pane(&self, pane: PaneId, spec: &PaneSpec) -> Result<()> {
        let restart = TmuxCommand::respawn_pane(pane, spec)?;
        let names: Vec<&str> = spec.secret_env.iter().map(|(k, _)| k.as_str()).collect();
        if !names.is_empty() {
            self.tmux
                .set_session_environment_quietly(self.session, &spec.secret_env)?;
        }
        let result = self.tmux.run_batch(&[restart]);
        if !names.is_empty()
            && let Err(e) = self.tmux.unset_session_environment(self.session, &names)
        {
            tracing::warn!(
                "failed to remove secrets from tmux session {}: {e}",
                self.session
            );
        }
        Ok(result.map(drop)?)
    }

    fn run_or_discard(&self, batch: &[TmuxCommand], pane: PaneId) -> Result<()> {
        if let Err(e) = self.tmux.run_batch(batch) {
            let _ = self.tmux.kill_pane(pane);
            return Err(e.into());
        }
        Ok(())
    }

    /// Runs `batch` (which ends by starting `spec` in `pane`) with `spec`'s secrets in the
    /// session environment only for as long as that takes. The team lock is held, so no
    /// other pane of ours starts meanwhile.
    fn start_with_secrets(
        &self,
        session: SessionId,
        batch: &[TmuxCommand],
        pane: PaneId,
        spec: &PaneSpec,
    ) -> Result<()> {
        if spec.secret_env.is_empty() {
            return self.run_or_discard(batch, pane);
        }
        if let Err(e) = self
            .tmux
            .set_session_environment_quietly(session, &spec.secret_env)
        {
            let _ = self.tmux.kill_pane(pane);
            return Err(e.into());
        }
        let result = self.run_or_discard(batch, pane);
        let names: Vec<&str> = spec.secret_env.iter().map(|(k, _)| k.as_str()).collect();
        if let Err(e) = self.tmux.unset_session_environment(session, &names) {
            tracing::warn!("failed to remove secrets from tmux session {session}: {e}");
        }
        result
    }

    fn no_window(&self) -> Error {
        Error::not_found(format!(
            "team '{}' has no tmux panes any more; open its window again",
            self.team
        ))
    }

    fn gone_or(&self, e: TmuxError) -> Error {
        if e.is_no_server() {
            self.no_window()
        } else {
            e.into()
        }
    }
}

/// The team's window lock, held for the few tmux calls of one change.
fn window_lock(opts: &TeamWindowOptions) -> Result<Locked> {
    if let Some(dir) = opts
        .lock_anchor
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir).ctx("create directory", dir)?;
    }
    Ok(lock::lock_sidecar_only(
        &opts.lock_anchor,
        opts.lock_timeout,
    )?)
}

/// What a pane runs until its agent is started in it: a process that waits, started
/// without a shell (two words).
fn placeholder(cwd: &Path) -> PaneSpec {
    PaneSpec::new(cwd, ["sleep", "2147483647"])
}

/// All panes, or none when no server runs.
fn panes_or_none(tmux: &Tmux) -> Result<Vec<PaneRecord>> {
    match tmux.list_panes() {
        Ok(all) => Ok(all),
        Err(e) if e.is_absent() => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// The roster field where swarm records the socket of the tmux server holding a team's
/// panes, so later commands (from any shell) find them.
const SERVER_FIELD: &str = "swarmTmuxSocket";

/// The tmux server of `team`: an explicit socket name (`--tmux-socket`,
/// `$SWARM_TMUX_SOCKET`) first, else the one recorded when its window opened, else the
/// caller's own (`$TMUX`) or the default.
pub fn server_for(store: &Store, explicit: Option<&str>, env: &Environment) -> Result<Tmux> {
    if explicit.is_some() {
        return Ok(Tmux::resolve(explicit, env)?);
    }
    let recorded = store.roster().load().ok().and_then(|c| {
        c.extra
            .get(SERVER_FIELD)
            .and_then(|v| v.as_str())
            .map(PathBuf::from)
    });
    match recorded {
        // A recorded server may be gone, and the next command start it anew.
        Some(path) => {
            Ok(Tmux::with_server(swarm_tmux::Server::Path(path)).hide_env(env.secret_names()))
        }
        None => Ok(Tmux::resolve(None, env)?),
    }
}

/// Records the socket of the server holding `window` in the team's roster.
pub fn record_server(store: &Store, window: &TeamWindow) -> Result<()> {
    let socket = window.tmux.display(&window.session, "#{socket_path}")?;
    let socket = socket.trim().to_owned();
    Ok(store.roster().update(|c| {
        c.extra
            .insert(SERVER_FIELD.to_owned(), serde_json::Value::String(socket));
        Ok(())
    })?)
}

/// Ids tmux has not made yet, for a plan: a dry run builds its commands with these and
/// shows them by name, so it runs the very code a real spawn does.
mod unmade {
    use swarm_tmux::{PaneId, SessionId, WindowId};

    const PANE: &str = "%4294967295";
    const LEAD_PANE: &str = "%4294967294";
    const WINDOW: &str = "@4294967295";
    const SESSION: &str = "$4294967295";

    pub(super) fn pane() -> PaneId {
        PANE.parse().expect("a pane id")
    }

    pub(super) fn lead_pane() -> PaneId {
        LEAD_PANE.parse().expect("a pane id")
    }

    pub(super) fn window() -> WindowId {
        WINDOW.parse().expect("a window id")
    }

    pub(super) fn session() -> SessionId {
        SESSION.parse().expect("a session id")
    }

    /// `line` with the stand-ins named.
    pub(super) fn shown(line: &str) -> String {
        line.replace(PANE, "%new")
            .replace(LEAD_PANE, "%new-lead")
            .replace(WINDOW, "@new")
            .replace(SESSION, "$new")
    }
}
