//! The handle on one tmux server: [`Tmux`], every call swarm makes to it. Which server it
//! is and how swarm picks it are in [`crate::server`].
//!
//! Invariants: every tmux invocation carries the handle's [`Tmux::global_args`], so it names
//! its server (`-L`, `-S`, or no flag for the default server) and passes `-f` only when one
//! was set; `$TMUX` is read only to choose a server, and [`Tmux::attach_command`] removes
//! it. Every call has a time limit (30 s unless set with [`Tmux::timeout`]): a tmux that
//! does not answer is killed and reaped, and the call fails with [`TmuxError::Timeout`];
//! other failures are classified by [`classify`]. Calls that start a program validate its
//! [`PaneSpec`] first, and secret environment reaches tmux only on stdin. No tmux process
//! swarm starts has the caller's secrets in its own environment ([`Tmux::hide_env`], which
//! [`Tmux::resolve`] applies): a client that starts the server hands it its whole
//! environment, which becomes tmux's global environment and so every later pane's, and
//! every client sends its environment to the server. The command shown in logs and errors
//! is cut at `SHOWN_MAX` bytes.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::command::{
    Direction, Layout, NewSession, PaneSpec, Size, TmuxCommand, batch_args, show,
};
use crate::error::{TmuxError, classify};
use crate::escape::{SEP, config_quote, sanitized, shell_word};
use crate::ids::{PaneId, SessionId, Target, WindowId};
use crate::pane::{NewPane, PaneRecord, SessionRecord, pane_format, parse_panes};
use crate::server::{Server, choose};
use swarm_util::environment::Environment;
use swarm_util::error::Error;
use swarm_util::process::RunFailed;
use swarm_util::vars;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest command shown in an error message; argv can carry a long prompt.
const SHOWN_MAX: usize = 300;

/// A handle on one tmux server. Cheap to clone; holds no connection.
#[derive(Debug, Clone)]
pub struct Tmux {
    server: Server,
    config_file: Option<PathBuf>,
    timeout: Duration,
    /// Removed from the environment of every tmux process this handle starts.
    hidden_env: Vec<OsString>,
    /// The server is on another host: every tmux command runs through this argv (`ssh`,
    /// its options and the destination), its words quoted once for the remote shell.
    remote: Option<Vec<String>>,
}

impl Tmux {
    /// The server swarm should use: `-L NAME` from `flag` or `$SWARM_TMUX_SOCKET`; else the
    /// server the caller is inside (`-S`, the socket path from `$TMUX`); else the default
    /// server. A user's server keeps the user's configuration. The secrets of `env` are
    /// hidden from every tmux process ([`Tmux::hide_env`]).
    pub fn resolve(flag: Option<&str>, env: &Environment) -> Result<Tmux, Error> {
        let server = choose(flag, |k| env.get(k).map(OsString::from))?;
        Ok(Tmux::with_server(server).hide_env(env.secret_names()))
    }

    /// A handle on `server` that hides nothing: for a caller whose environment holds no
    /// secrets, or that hides them with [`Tmux::hide_env`].
    pub fn with_server(server: Server) -> Tmux {
        Tmux {
            server,
            config_file: None,
            timeout: DEFAULT_TIMEOUT,
            hidden_env: Vec::new(),
            remote: None,
        }
    }

    /// This handle's server on another host, reached by `through` (`ssh`, its options and
    /// the destination, as `swarm_hosts::Ssh::prefix` gives it): each tmux command becomes
    /// one remote line of its words, each quoted once; input still goes on stdin, so a
    /// secret never reaches a command line there either.
    pub fn on_host(mut self, through: Vec<String>) -> Tmux {
        self.remote = Some(through);
        self
    }

    /// Whether the server is on another host.
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// `-L NAME`; tests pair it with `.config_file("/dev/null")`.
    pub fn with_socket_name(name: impl Into<String>) -> Tmux {
        Tmux::with_server(Server::Name(name.into()))
    }

    /// `-f FILE` on every command: the configuration read when a command starts the server.
    /// Only for servers swarm owns (tests use `/dev/null`); a user's server keeps theirs.
    pub fn config_file(mut self, path: impl Into<PathBuf>) -> Tmux {
        self.config_file = Some(path.into());
        self
    }

    /// Removes `names` from the environment of every tmux process this handle starts (on
    /// top of any hidden already). swarm passes the names of its secrets
    /// ([`Environment::secret_names`]): they reach a teammate only through
    /// [`Tmux::set_session_environment_quietly`], for as long as its pane takes to start.
    pub fn hide_env(mut self, names: impl IntoIterator<Item = OsString>) -> Tmux {
        self.hidden_env.extend(names);
        self
    }

    /// The limit for one tmux call (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Tmux {
        self.timeout = timeout;
        self
    }

    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The flags that select the server (and configuration), for tmux commands run elsewhere.
    pub fn global_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = Vec::new();
        match &self.server {
            Server::Name(n) => args.extend(["-L".into(), n.into()]),
            Server::Path(p) => args.extend(["-S".into(), p.into()]),
            Server::Default => {}
        }
        if let Some(f) = &self.config_file {
            args.extend(["-f".into(), f.into()]);
        }
        args
    }

    fn prefix(&self) -> String {
        match &self.server {
            Server::Name(n) => format!("tmux -L {} ", show(OsStr::new(n))),
            Server::Path(p) => format!("tmux -S {} ", show(p.as_os_str())),
            Server::Default => "tmux ".to_owned(),
        }
    }

    /// Runs one command; returns its stdout.
    pub fn run(&self, cmd: &TmuxCommand) -> Result<String, TmuxError> {
        self.run_batch(std::slice::from_ref(cmd))
    }

    /// Runs several commands in one tmux invocation (separated by `;`), atomically with
    /// respect to other clients; stops at the first failure.
    pub fn run_batch(&self, cmds: &[TmuxCommand]) -> Result<String, TmuxError> {
        let (args, shown) = batch_args(cmds);
        self.exec(&args, &shown)
    }

    /// Sets session environment variables by writing `set-environment` commands to tmux on
    /// stdin (`source-file -`), so the values never appear in a command line, not even the
    /// tmux client's. New panes of the session inherit them.
    pub fn set_session_environment_quietly(
        &self,
        session: SessionId,
        vars: &[(String, String)],
    ) -> Result<(), TmuxError> {
        if vars.is_empty() {
            return Ok(());
        }
        let mut script = String::new();
        for (k, v) in vars {
            let quoted = config_quote(v).ok_or_else(|| {
                TmuxError::InvalidSpec(format!("the value of {k} cannot be quoted for tmux"))
            })?;
            // Quoted: `$3` unquoted would be read as a variable.
            script.push_str(&format!("set-environment -t '{session}' {k} {quoted}\n"));
        }
        let names: Vec<&str> = vars.iter().map(|(k, _)| k.as_str()).collect();
        let shown = format!(
            "source-file - (set-environment {} <hidden>)",
            names.join(" ")
        );
        self.exec_with_input(
            &["source-file".into(), "-".into()],
            &shown,
            Some(script.as_bytes()),
        )
        .map(|_| ())
    }

    /// Removes variables from a session's environment.
    pub fn unset_session_environment(
        &self,
        session: SessionId,
        names: &[&str],
    ) -> Result<(), TmuxError> {
        let batch: Vec<TmuxCommand> = names
            .iter()
            .map(|n| {
                TmuxCommand::new("set-environment")
                    .flag("-u")
                    .flag("-t")
                    .arg(session.to_string())
                    .arg(*n)
            })
            .collect();
        if batch.is_empty() {
            return Ok(());
        }
        self.run_batch(&batch).map(|_| ())
    }

    /// The process that runs tmux with `words` (its arguments), without the hidden
    /// variables: `tmux` here, or on another host the remote line through `ssh`.
    fn tmux_command(&self, words: &[OsString]) -> Command {
        let mut cmd = match &self.remote {
            None => {
                let mut cmd = Command::new("tmux");
                cmd.args(words);
                cmd
            }
            Some(through) => {
                let line: Vec<String> = std::iter::once("tmux".into())
                    .chain(words.iter().map(|w| w.to_string_lossy().into_owned()))
                    .map(|w| shell_escape::unix::escape(w.into()).into_owned())
                    .collect();
                let mut cmd = Command::new(&through[0]);
                cmd.args(&through[1..]).arg(line.join(" "));
                cmd
            }
        };
        for name in &self.hidden_env {
            cmd.env_remove(name);
        }
        cmd
    }

    fn exec(&self, args: &[OsString], shown: &str) -> Result<String, TmuxError> {
        self.exec_with_input(args, shown, None)
    }

    fn exec_with_input(
        &self,
        args: &[OsString],
        shown: &str,
        input: Option<&[u8]>,
    ) -> Result<String, TmuxError> {
        let mut shown = format!("{}{shown}", self.prefix());
        if shown.len() > SHOWN_MAX {
            let cut = shown.floor_char_boundary(SHOWN_MAX);
            shown.truncate(cut);
            shown.push('…');
        }
        tracing::debug!(command = %shown, "tmux");
        // `-u`: outside tmux with a non-UTF-8 locale, tmux would print the field separator of
        // batched queries as `_`. (Not for attach, which must respect the user's terminal.)
        let mut words: Vec<OsString> = vec!["-u".into()];
        words.extend(self.global_args());
        words.extend(args.iter().cloned());
        let ran =
            swarm_util::process::run_within(&mut self.tmux_command(&words), input, self.timeout);
        let output = ran.map_err(|e| match e {
            RunFailed::Spawn(e) if e.kind() == io::ErrorKind::NotFound => TmuxError::NotInstalled,
            RunFailed::Spawn(source) | RunFailed::Wait(source) => TmuxError::Io {
                command: shown.clone(),
                source,
            },
            RunFailed::TimedOut => TmuxError::Timeout {
                command: shown.clone(),
                after: self.timeout,
            },
        })?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            let mut stderr = String::from_utf8_lossy(&output.stderr).into_owned();
            if stderr.trim().is_empty() {
                stderr = format!("tmux exited with {}", output.status);
            }
            Err(classify(&shown, &stderr, &self.server.to_string()))
        }
    }

    /// `tmux -V`, e.g. `tmux 3.3a`.
    pub fn version(&self) -> Result<String, TmuxError> {
        self.exec(&["-V".into()], "-V").map(|s| s.trim().to_owned())
    }

    /// Runs a command that makes a pane (`new-session`, `new-window`, `split-window`, as
    /// [`TmuxCommand`] builds them) and returns the ids it printed.
    pub fn create(&self, cmd: &TmuxCommand) -> Result<NewPane, TmuxError> {
        let shown = cmd.shown();
        let out = self.run(cmd)?;
        let bad = || TmuxError::BadOutput {
            command: shown.clone(),
            output: out.clone(),
        };
        let mut f = out.trim_end_matches('\n').split(SEP);
        let mut next = || f.next().ok_or_else(bad);
        let (s, w, p) = (next()?, next()?, next()?);
        Ok(NewPane {
            session: s.parse().map_err(|_| bad())?,
            window: w.parse().map_err(|_| bad())?,
            pane: p.parse().map_err(|_| bad())?,
        })
    }

    /// Starts a detached session running `spec` (starting the server if needed).
    pub fn new_session(&self, s: &NewSession<'_>) -> Result<NewPane, TmuxError> {
        self.create(&TmuxCommand::new_session(s)?)
    }

    /// Opens a new window at the next free index of `session`, without switching to it.
    pub fn new_window(
        &self,
        session: SessionId,
        name: Option<&str>,
        spec: &PaneSpec,
    ) -> Result<NewPane, TmuxError> {
        self.create(&TmuxCommand::new_window(session, name, spec)?)
    }

    /// Splits `target` (always `-d`: focus stays where it was); the new pane comes after
    /// the target in the window's pane order.
    pub fn split_window(
        &self,
        target: PaneId,
        direction: Direction,
        size: Option<Size>,
        spec: &PaneSpec,
    ) -> Result<PaneId, TmuxError> {
        Ok(self
            .create(&TmuxCommand::split_window(target, direction, size, spec)?)?
            .pane)
    }

    /// The tmux invocation that runs `cmds` as one batch on this server, as a line a
    /// person can paste into a shell: the very arguments [`Tmux::run_batch`] passes.
    /// Environment values are shown: secrets never travel in a command line.
    pub fn command_line(&self, cmds: &[TmuxCommand]) -> String {
        let (args, _) = batch_args(cmds);
        std::iter::once(OsString::from("tmux"))
            .chain(self.global_args())
            .chain(args)
            .map(|a| shell_word(&a.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn respawn_pane(&self, pane: PaneId, spec: &PaneSpec) -> Result<(), TmuxError> {
        self.run(&TmuxCommand::respawn_pane(pane, spec)?).map(drop)
    }

    /// Every pane of the server in one call.
    ///
    /// A pane that is dead without an exit status normally gets it a moment later. But
    /// tmux before 3.5 can lose a SIGCHLD (tmux#2679, #311) and then leaves the process a
    /// zombie and the status unknown until some other child exits. So when a listing shows
    /// such a pane, the server is sent SIGCHLD (harmless: it only makes tmux reap) and
    /// asked once more.
    pub fn list_panes(&self) -> Result<Vec<PaneRecord>, TmuxError> {
        let panes = self.list_panes_once()?;
        let unsettled =
            |p: &PaneRecord| p.dead && p.dead_status.is_none() && p.dead_signal.is_none();
        match panes.iter().find(|p| unsettled(p)) {
            Some(p) if swarm_util::process::signal(p.server_pid, Signal::SIGCHLD) => {
                self.list_panes_once()
            }
            _ => Ok(panes),
        }
    }

    fn list_panes_once(&self) -> Result<Vec<PaneRecord>, TmuxError> {
        let cmd = TmuxCommand::new("list-panes")
            .flag("-a")
            .flag("-F")
            .arg(pane_format());
        let out = match self.run(&cmd) {
            Ok(out) => out,
            // No session left, so no panes.
            Err(e) if e.is_target_gone() => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        parse_panes(&out).map_err(|why| TmuxError::BadOutput {
            command: cmd.shown(),
            output: why,
        })
    }

    pub fn list_sessions(&self) -> Result<Vec<SessionRecord>, TmuxError> {
        let cmd = TmuxCommand::new("list-sessions")
            .flag("-F")
            .arg(format!("#{{session_id}}{SEP}{}", sanitized("session_name")));
        let out = self.run(&cmd)?;
        out.lines()
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (id, name) = l.split_once(SEP).unwrap_or((l, ""));
                Ok(SessionRecord {
                    id: id.parse().map_err(|_| TmuxError::BadOutput {
                        command: cmd.shown(),
                        output: l.to_owned(),
                    })?,
                    name: name.to_owned(),
                })
            })
            .collect()
    }

    /// The session with exactly this name; `None` also when no server runs.
    pub fn session_by_name(&self, name: &str) -> Result<Option<SessionId>, TmuxError> {
        match self.list_sessions() {
            Ok(all) => Ok(all.into_iter().find(|s| s.name == name).map(|s| s.id)),
            Err(e) if e.is_no_server() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether a session with exactly this name exists (`has-session -t =NAME`); false
    /// when no server runs.
    pub fn has_session(&self, name: &str) -> Result<bool, TmuxError> {
        let cmd = TmuxCommand::new("has-session")
            .flag("-t")
            .arg(format!("={name}"));
        match self.run(&cmd) {
            Ok(_) => Ok(true),
            Err(e) if e.is_no_server() || e.is_target_gone() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The value of option `name` set on each pane itself, ignoring what the pane would
    /// inherit from its window, session or the global options (`show-options -p`); `None`
    /// where unset or where the pane is gone. One tmux call for all panes.
    pub fn own_pane_options(
        &self,
        panes: &[PaneId],
        name: &str,
    ) -> Result<Vec<Option<String>>, TmuxError> {
        if panes.is_empty() {
            return Ok(Vec::new());
        }
        // A literal marker line (the pane's position; display-message would run a `%` in
        // it through strftime) before each answer keeps them apart: `show-options -q`
        // prints nothing for an unset option or a missing pane.
        const MARK: char = '\x1e';
        let batch: Vec<TmuxCommand> = panes
            .iter()
            .enumerate()
            .flat_map(|(i, &p)| {
                [
                    TmuxCommand::new("display-message")
                        .flag("-p")
                        .target(&p)
                        .arg(format!("{MARK}{i}")),
                    TmuxCommand::new("show-options")
                        .flag("-p")
                        .flag("-q")
                        .flag("-v")
                        .target(&p)
                        .arg(name),
                ]
            })
            .collect();
        let out = self.run_batch(&batch)?;
        let mut values: Vec<Option<String>> = vec![None; panes.len()];
        let mut current: Option<usize> = None;
        for line in out.lines() {
            if let Some(i) = line.strip_prefix(MARK) {
                current = i.parse().ok().filter(|&i| i < panes.len());
            } else if let Some(i) = current.take() {
                values[i] = Some(line.to_owned());
            }
        }
        Ok(values)
    }

    pub fn set_pane_option(&self, pane: PaneId, name: &str, value: &str) -> Result<(), TmuxError> {
        self.run(&TmuxCommand::set_pane_option(pane, name, value))
            .map(drop)
    }

    pub fn set_window_option(
        &self,
        window: WindowId,
        name: &str,
        value: &str,
    ) -> Result<(), TmuxError> {
        self.run(&TmuxCommand::set_window_option(window, name, value))
            .map(drop)
    }

    pub fn set_session_option(
        &self,
        session: SessionId,
        name: &str,
        value: &str,
    ) -> Result<(), TmuxError> {
        self.run(&TmuxCommand::set_session_option(session, name, value))
            .map(drop)
    }

    pub fn set_pane_title(&self, pane: PaneId, title: &str) -> Result<(), TmuxError> {
        self.run(&TmuxCommand::set_pane_title(pane, title))
            .map(drop)
    }

    pub fn select_layout(&self, window: WindowId, layout: Layout) -> Result<(), TmuxError> {
        self.run(&TmuxCommand::select_layout(window, layout))
            .map(drop)
    }

    pub fn resize_pane(
        &self,
        pane: PaneId,
        width: Option<Size>,
        height: Option<Size>,
    ) -> Result<(), TmuxError> {
        self.run(&TmuxCommand::resize_pane(pane, width, height))
            .map(drop)
    }

    pub fn kill_pane(&self, pane: PaneId) -> Result<(), TmuxError> {
        self.run(&TmuxCommand::kill_pane(pane)).map(drop)
    }

    pub fn kill_window(&self, window: WindowId) -> Result<(), TmuxError> {
        self.run(&TmuxCommand::kill_window(window)).map(drop)
    }

    pub fn detach_clients(&self, session: SessionId) -> Result<(), TmuxError> {
        self.run(&TmuxCommand::detach_clients(session)).map(drop)
    }

    /// Kills the session named exactly `name` (its panes' processes get SIGHUP).
    pub fn kill_session_named(&self, name: &str) -> Result<(), TmuxError> {
        self.run(
            &TmuxCommand::new("kill-session")
                .flag("-t")
                .arg(format!("={name}")),
        )
        .map(drop)
    }

    pub fn kill_session(&self, session: SessionId) -> Result<(), TmuxError> {
        self.run(&TmuxCommand::kill_session(session)).map(drop)
    }

    /// Ends the server and everything in it; succeeds if none was running.
    pub fn kill_server(&self) -> Result<(), TmuxError> {
        match self.run(&TmuxCommand::new("kill-server")) {
            Err(e) if e.is_no_server() => Ok(()),
            other => other.map(drop),
        }
    }

    /// Expands `format` against `target` (`display-message -p`). A missing target is
    /// [`TmuxError::TargetGone`]; plain `display-message` would print an empty line. A `%`
    /// in `format` is literal (display-message would otherwise run it through strftime).
    pub fn display(&self, target: &impl Target, format: &str) -> Result<String, TmuxError> {
        let cmd = TmuxCommand::new("display-message")
            .flag("-p")
            .target(target)
            .arg(format!("#{{pane_id}}{SEP}{}", format.replace('%', "%%")));
        let out = self.run(&cmd)?;
        let out = out.strip_suffix('\n').unwrap_or(&out);
        match out.split_once(SEP) {
            Some((pane, value)) if !pane.is_empty() => Ok(value.to_owned()),
            _ => Err(TmuxError::TargetGone {
                command: cmd.shown(),
                stderr: format!("can't find {target}"),
            }),
        }
    }

    /// The pane's text with wrapped lines joined (`capture-pane -p -J`); `start` is the
    /// first line (negative: into the history, bounded by `history-limit`).
    pub fn capture_pane(&self, pane: PaneId, start: Option<i64>) -> Result<String, TmuxError> {
        let mut cmd = TmuxCommand::new("capture-pane")
            .flag("-p")
            .flag("-J")
            .target(&pane);
        if let Some(s) = start {
            cmd = cmd.flag("-S").flag(&s.to_string());
        }
        self.run(&cmd)
    }

    /// Several panes' text in one tmux invocation: each pane's [`Tmux::capture_pane`] from
    /// line `start`, in the order given. tmux stops a batch at its first failure, so a pane
    /// that is gone fails the whole call (the caller asks again without it).
    pub fn capture_panes(
        &self,
        panes: &[PaneId],
        start: Option<i64>,
    ) -> Result<Vec<(PaneId, String)>, TmuxError> {
        if panes.is_empty() {
            return Ok(Vec::new());
        }
        let mut cmds = Vec::with_capacity(panes.len() * 2);
        for pane in panes {
            // A line of its own before each capture: `SEP` never is in a pane's text (a
            // terminal takes control characters as controls, not as cells).
            cmds.push(
                TmuxCommand::new("display-message")
                    .flag("-p")
                    .target(pane)
                    .arg(format!("{SEP}#{{pane_id}}{SEP}")),
            );
            let mut capture = TmuxCommand::new("capture-pane")
                .flag("-p")
                .flag("-J")
                .target(pane);
            if let Some(s) = start {
                capture = capture.flag("-S").flag(&s.to_string());
            }
            cmds.push(capture);
        }
        let out = self.run_batch(&cmds)?;
        let mut captured: Vec<(PaneId, String)> = Vec::with_capacity(panes.len());
        for line in out.split_inclusive('\n') {
            let marker = line
                .trim_end_matches('\n')
                .strip_prefix(SEP)
                .and_then(|l| l.strip_suffix(SEP));
            match (marker, captured.last_mut()) {
                (Some(id), _) => {
                    let pane = id.parse().map_err(|_| TmuxError::BadOutput {
                        command: "capture-pane (batched)".to_owned(),
                        output: id.to_owned(),
                    })?;
                    captured.push((pane, String::new()));
                }
                (None, Some((_, text))) => text.push_str(line),
                (None, None) => {}
            }
        }
        Ok(captured)
    }

    /// `tmux attach-session -t TARGET` for this server, with `$TMUX` removed: for a caller
    /// that wants to `exec` it or run it itself. Stdio is inherited.
    pub fn attach_command(&self, target: &impl Target) -> Command {
        let mut words = self.global_args();
        words.extend([
            "attach-session".into(),
            "-t".into(),
            target.to_string().into(),
        ]);
        let mut cmd = self.tmux_command(&words);
        cmd.env_remove(vars::TMUX);
        cmd
    }

    /// Shows `target` (a pane's or window's id selects that window too). Inside tmux this
    /// switches the caller's client (`switch-client`). Outside it runs `tmux attach` in the
    /// foreground on the caller's terminal and returns when the user detaches.
    pub fn attach(&self, target: &impl Target, inside_tmux: bool) -> Result<(), TmuxError> {
        if inside_tmux {
            return self
                .run(&TmuxCommand::new("switch-client").target(target))
                .map(drop);
        }
        let mut cmd = self.attach_command(target);
        let shown = format!("{}attach-session -t {target}", self.prefix());
        let status = cmd.status().map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => TmuxError::NotInstalled,
            _ => TmuxError::Io {
                command: shown.clone(),
                source,
            },
        })?;
        if status.success() {
            Ok(())
        } else {
            Err(TmuxError::Failed {
                command: shown,
                stderr: format!("tmux exited with {status} (its message is above)"),
            })
        }
    }
}

/// True if `path` is the socket of `tmux`'s server (both sides taken literally).
pub fn is_server_path(tmux: &Tmux, path: &Path) -> bool {
    matches!(tmux.server(), Server::Path(p) if p == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_is_what_a_shell_reads_back() {
        let t = Tmux::with_socket_name("s");
        let spec = PaneSpec::new("/w d", ["prog", "it's", "a;", "$(id)"]);
        let batch = [
            TmuxCommand::split_window(PaneId(3), Direction::Vertical, None, &spec).unwrap(),
            TmuxCommand::kill_pane(PaneId(4)),
        ];
        let line = t.command_line(&batch);
        assert!(
            line.starts_with("tmux -L s split-window -d -v -t '%3' -P -F $'#{session_id}\\x1f")
        );
        // A shell hands tmux exactly the arguments run_batch passes.
        let words = line.strip_prefix("tmux ").unwrap();
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("printf '%s\\0' {words}"))
            .output()
            .unwrap();
        let read: Vec<&[u8]> = out
            .stdout
            .split(|b| *b == 0)
            .filter(|w| !w.is_empty())
            .collect();
        let (args, _) = batch_args(&batch);
        let expected: Vec<Vec<u8>> = t
            .global_args()
            .into_iter()
            .chain(args)
            .map(|a| a.into_encoded_bytes())
            .collect();
        assert_eq!(read, expected.iter().map(Vec::as_slice).collect::<Vec<_>>());
    }

    #[test]
    fn config_file_is_only_passed_when_set() {
        let t = Tmux::with_socket_name("s");
        assert_eq!(t.global_args(), ["-L", "s"]);
        let t = t.config_file("/dev/null");
        assert_eq!(t.global_args(), ["-L", "s", "-f", "/dev/null"]);
    }
    #[test]
    fn attach_runs_tmux_attach_on_the_same_server_without_tmux_env() {
        let t = Tmux::with_socket_name("s").config_file("/dev/null");
        let cmd = t.attach_command(&PaneId(3));
        assert_eq!(cmd.get_program(), "tmux");
        let args: Vec<_> = cmd.get_args().collect();
        assert_eq!(
            args,
            ["-L", "s", "-f", "/dev/null", "attach-session", "-t", "%3"]
        );
        assert!(cmd.get_envs().any(|(k, v)| k == "TMUX" && v.is_none()));
    }

    #[test]
    fn a_resolved_handle_hides_the_callers_secrets_from_tmux() {
        let env = Environment::from_pairs([
            ("SWARM_TMUX_SOCKET", "s"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("PATH", "/bin"),
        ]);
        let t = Tmux::resolve(None, &env).unwrap();
        assert_eq!(t.hidden_env, ["ANTHROPIC_API_KEY"]);
        let removed: Vec<_> = t
            .attach_command(&PaneId(1))
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.to_owned())
            .collect();
        assert!(
            removed.contains(&OsString::from("ANTHROPIC_API_KEY")),
            "{removed:?}"
        );
        assert!(!removed.contains(&OsString::from("PATH")));
    }
}
