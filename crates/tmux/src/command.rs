//! What swarm asks tmux to do: [`PaneSpec`] (the program a pane runs, its directory and
//! environment), [`NewSession`] (what `new-session` needs), the argument types
//! [`Direction`], [`Size`] and [`Layout`], and [`TmuxCommand`], one tmux command built
//! argument by argument together with its display form; `batch_args` joins several into
//! one invocation.
//!
//! Invariants: every argument of a [`TmuxCommand`] has passed [`escape_arg`], and every
//! value tmux expands as a format has passed [`escape_format`] too, so the only unescaped
//! `;` is the one `batch_args` puts between two commands. `-t` built by `target` takes only
//! a [`Target`], an id. The display form is one line and hides `-e` values (they may hold
//! secrets). A [`PaneSpec`] is validated before a command that starts it is built, and the
//! words after `--` are never exactly one (tmux would hand a single word to `sh -c`).

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::error::TmuxError;
use crate::escape::{SEP, config_quote, escape_arg, escape_format};
use crate::ids::{PaneId, SessionId, Target, WindowId};

/// What a new pane runs: a working directory, extra environment, and the argv exec'd as the
/// pane's own process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneSpec {
    /// Absolute; tmux would resolve a relative one against the server's directory.
    pub cwd: PathBuf,
    /// Passed with `-e K=V`: the pane gets the server's global environment plus these, not
    /// the caller's environment.
    pub env: Vec<(String, String)>,
    /// Program and arguments. Name the program by absolute path: tmux searches the
    /// server's PATH, not the caller's. argv and env are visible to every local user
    /// (`/proc/*/cmdline`, `#{pane_start_command}`), so no secrets in argv; and tmux limits
    /// one command to about 16 KB in all.
    pub argv: Vec<String>,
    /// Environment that must not appear in any argv, the tmux client's included (API
    /// keys): handed to tmux on stdin ([`Tmux::set_session_environment_quietly`]) for the
    /// moment the pane starts, then removed from the session again.
    ///
    /// [`Tmux::set_session_environment_quietly`]: crate::Tmux::set_session_environment_quietly
    pub secret_env: Vec<(String, String)>,
}

impl PaneSpec {
    pub fn new(cwd: impl Into<PathBuf>, argv: impl IntoIterator<Item = impl Into<String>>) -> Self {
        PaneSpec {
            cwd: cwd.into(),
            env: Vec::new(),
            argv: argv.into_iter().map(Into::into).collect(),
            secret_env: Vec::new(),
        }
    }

    pub fn secret_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.secret_env.push((key.into(), value.into()));
        self
    }

    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Refuses what tmux could not run literally: no program, NUL bytes, bad env names,
    /// a relative directory, a one-word argv that `env` would read as an assignment.
    pub fn validate(&self) -> Result<(), TmuxError> {
        let bad = |why: String| Err(TmuxError::InvalidSpec(why));
        if self.argv.is_empty() {
            return bad("argv is empty".to_owned());
        }
        if self.argv.iter().any(|a| a.contains('\0')) {
            return bad("an argument contains a NUL byte".to_owned());
        }
        if let [only] = self.argv.as_slice()
            && (only.contains('=') || only.is_empty())
        {
            return bad(format!(
                "a one-word argv must be a program name without '=', got {only:?}"
            ));
        }
        for (k, v) in &self.env {
            if k.is_empty() || k.contains('=') || k.contains('\0') || v.contains('\0') {
                return bad(format!("invalid environment entry {k:?}"));
            }
        }
        for (k, v) in &self.secret_env {
            let name_ok = k
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !name_ok || config_quote(v).is_none() {
                return bad(format!(
                    "cannot pass {k:?} to tmux safely: a secret needs a plain variable name and a value without control characters"
                ));
            }
        }
        if !self.cwd.is_absolute() {
            return bad(format!(
                "working directory {} is not absolute",
                self.cwd.display()
            ));
        }
        if self.cwd.as_os_str().as_bytes().contains(&0) {
            return bad("working directory contains a NUL byte".to_owned());
        }
        Ok(())
    }

    /// The words after `--`: never exactly one, which tmux would give to `sh -c`.
    pub fn exec_argv(&self) -> Vec<&str> {
        match self.argv.as_slice() {
            [only] => vec!["/usr/bin/env", "--", only],
            many => many.iter().map(String::as_str).collect(),
        }
    }
}

/// What `new-session` needs.
#[derive(Debug, Clone)]
pub struct NewSession<'a> {
    pub name: &'a str,
    pub window_name: Option<&'a str>,
    /// Columns and rows; a detached session is otherwise 80x24. Later windows of the
    /// session get the same size (tmux sets the session's `default-size`).
    pub size: Option<(u16, u16)>,
    pub spec: &'a PaneSpec,
}

/// A pane split direction: `Horizontal` puts the new pane beside the target (`-h`),
/// `Vertical` below it (`-v`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Horizontal,
    Vertical,
}

/// A pane size in cells or in percent of the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    Cells(u16),
    Percent(u8),
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Size::Cells(n) => write!(f, "{n}"),
            Size::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// tmux's preset layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    EvenHorizontal,
    EvenVertical,
    MainHorizontal,
    /// The window's first pane on the left at `main-pane-width`, the rest stacked right.
    MainVertical,
    Tiled,
}

impl Layout {
    pub fn as_str(self) -> &'static str {
        match self {
            Layout::EvenHorizontal => "even-horizontal",
            Layout::EvenVertical => "even-vertical",
            Layout::MainHorizontal => "main-horizontal",
            Layout::MainVertical => "main-vertical",
            Layout::Tiled => "tiled",
        }
    }
}

/// One tmux command, its arguments already escaped. Run it alone with [`Tmux::run`], or
/// several in one tmux invocation with [`Tmux::run_batch`]: the server runs a batch without
/// interleaving anything else, and stops at the first command that fails.
///
/// [`Tmux::run`]: crate::Tmux::run
/// [`Tmux::run_batch`]: crate::Tmux::run_batch
#[derive(Debug, Clone)]
pub struct TmuxCommand {
    args: Vec<OsString>,
    /// The display form, with `-e` values hidden (they may hold secrets).
    shown: Vec<String>,
}

impl TmuxCommand {
    pub(super) fn new(name: &str) -> Self {
        TmuxCommand {
            args: vec![name.into()],
            shown: vec![name.to_owned()],
        }
    }

    /// A literal flag or keyword swarm wrote itself.
    pub(super) fn flag(mut self, flag: &str) -> Self {
        debug_assert!(!flag.ends_with(';'));
        self.args.push(flag.into());
        self.shown.push(flag.to_owned());
        self
    }

    pub(super) fn arg(mut self, value: impl AsRef<OsStr>) -> Self {
        let value = value.as_ref();
        self.args.push(escape_arg(value));
        self.shown.push(show(value));
        self
    }

    /// A value tmux expands as a format.
    pub(super) fn format_arg(mut self, value: impl AsRef<OsStr>) -> Self {
        let value = value.as_ref();
        self.args.push(escape_arg(&escape_format(value)));
        self.shown.push(show(value));
        self
    }

    pub(super) fn target(self, target: &impl Target) -> Self {
        self.flag("-t").flag(&target.to_string())
    }

    /// `-c CWD -e K=V … -- argv…` for the commands that start a program.
    pub(super) fn program(mut self, spec: &PaneSpec) -> Self {
        self = self.flag("-c").format_arg(&spec.cwd);
        for (k, v) in &spec.env {
            self.args.push("-e".into());
            self.args.push(escape_arg(OsStr::new(&format!("{k}={v}"))));
            self.shown.push("-e".to_owned());
            self.shown.push(format!("{}=…", show(OsStr::new(k))));
        }
        self = self.flag("--");
        for word in spec.exec_argv() {
            self = self.arg(word);
        }
        self
    }

    /// Starts a detached session running `s.spec`, printing the new session, window and
    /// pane ids (see `new_pane_format`).
    pub fn new_session(s: &NewSession<'_>) -> Result<Self, TmuxError> {
        s.spec.validate()?;
        let mut cmd = TmuxCommand::new("new-session")
            .flag("-d")
            .flag("-P")
            .flag("-F")
            .arg(new_pane_format())
            .flag("-s")
            .format_arg(s.name);
        if let Some(w) = s.window_name {
            cmd = cmd.flag("-n").format_arg(w);
        }
        if let Some((x, y)) = s.size {
            cmd = cmd
                .flag("-x")
                .flag(&x.to_string())
                .flag("-y")
                .flag(&y.to_string());
        }
        Ok(cmd.program(s.spec))
    }

    /// Opens a window at the next free index of `session` running `spec`, without switching
    /// to it, printing the new ids (see `new_pane_format`).
    pub fn new_window(
        session: SessionId,
        name: Option<&str>,
        spec: &PaneSpec,
    ) -> Result<Self, TmuxError> {
        spec.validate()?;
        let mut cmd = TmuxCommand::new("new-window")
            .flag("-d")
            .flag("-P")
            .flag("-F")
            .arg(new_pane_format())
            .target(&session);
        if let Some(n) = name {
            cmd = cmd.flag("-n").format_arg(n);
        }
        Ok(cmd.program(spec))
    }

    /// Splits `target` (always `-d`: focus stays where it was) with a pane running `spec`,
    /// printing the new ids (see `new_pane_format`). The new pane comes after the target
    /// in the window's pane order.
    pub fn split_window(
        target: PaneId,
        direction: Direction,
        size: Option<Size>,
        spec: &PaneSpec,
    ) -> Result<Self, TmuxError> {
        spec.validate()?;
        let mut cmd = TmuxCommand::new("split-window")
            .flag("-d")
            .flag(match direction {
                Direction::Horizontal => "-h",
                Direction::Vertical => "-v",
            });
        if let Some(size) = size {
            cmd = cmd.flag("-l").flag(&size.to_string());
        }
        Ok(cmd
            .target(&target)
            .flag("-P")
            .flag("-F")
            .arg(new_pane_format())
            .program(spec))
    }

    pub fn set_pane_option(pane: PaneId, name: &str, value: &str) -> Self {
        TmuxCommand::new("set-option")
            .flag("-p")
            .target(&pane)
            .arg(name)
            .arg(value)
    }

    pub fn set_window_option(window: WindowId, name: &str, value: &str) -> Self {
        TmuxCommand::new("set-option")
            .flag("-w")
            .target(&window)
            .arg(name)
            .arg(value)
    }

    pub fn set_session_option(session: SessionId, name: &str, value: &str) -> Self {
        TmuxCommand::new("set-option")
            .target(&session)
            .arg(name)
            .arg(value)
    }

    /// Sets the pane title (the text `#{pane_title}` shows); focus does not move.
    pub fn set_pane_title(pane: PaneId, title: &str) -> Self {
        TmuxCommand::new("select-pane")
            .target(&pane)
            .flag("-T")
            .format_arg(title)
    }

    pub fn select_layout(window: WindowId, layout: Layout) -> Self {
        TmuxCommand::new("select-layout")
            .target(&window)
            .flag(layout.as_str())
    }

    pub fn resize_pane(pane: PaneId, width: Option<Size>, height: Option<Size>) -> Self {
        let mut cmd = TmuxCommand::new("resize-pane").target(&pane);
        if let Some(w) = width {
            cmd = cmd.flag("-x").flag(&w.to_string());
        }
        if let Some(h) = height {
            cmd = cmd.flag("-y").flag(&h.to_string());
        }
        cmd
    }

    /// Kills the pane's process (tmux sends SIGHUP) and starts `spec` in the same pane,
    /// which keeps its id.
    pub fn respawn_pane(pane: PaneId, spec: &PaneSpec) -> Result<Self, TmuxError> {
        spec.validate()?;
        Ok(TmuxCommand::new("respawn-pane")
            .flag("-k")
            .target(&pane)
            .program(spec))
    }

    pub fn kill_pane(pane: PaneId) -> Self {
        TmuxCommand::new("kill-pane").target(&pane)
    }

    pub fn kill_window(window: WindowId) -> Self {
        TmuxCommand::new("kill-window").target(&window)
    }

    /// Detaches every client showing `session`.
    pub fn detach_clients(session: SessionId) -> Self {
        TmuxCommand::new("detach-client")
            .flag("-s")
            .flag(&session.to_string())
    }

    pub fn kill_session(session: SessionId) -> Self {
        TmuxCommand::new("kill-session").target(&session)
    }

    /// Blocks until `channel` is signalled ([`TmuxCommand::signal_channel`]): a readiness
    /// handshake between processes. Bounded by the [`Tmux`] call's time limit.
    ///
    /// [`Tmux`]: crate::Tmux
    pub fn wait_for(channel: &str) -> Self {
        TmuxCommand::new("wait-for").arg(channel)
    }

    /// Wakes every client waiting on `channel`.
    pub fn signal_channel(channel: &str) -> Self {
        TmuxCommand::new("wait-for").flag("-S").arg(channel)
    }

    /// The command as a one-line string for messages and logs.
    pub fn shown(&self) -> String {
        self.shown.join(" ")
    }
}

/// One argument for display: bare when harmless, else quoted and escaped onto one line.
pub(super) fn show(value: &OsStr) -> String {
    let s = value.to_string_lossy();
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@%$_+=:,./-".contains(&b));
    if plain {
        s.into_owned()
    } else {
        format!("{s:?}")
    }
}

/// What a command that makes a pane prints: its session, window and pane ids, separated.
pub(super) fn new_pane_format() -> String {
    ["#{session_id}", "#{window_id}", "#{pane_id}"].join(&SEP.to_string())
}

/// The arguments of a batch and its display form.
pub(super) fn batch_args(cmds: &[TmuxCommand]) -> (Vec<OsString>, String) {
    let mut args = Vec::new();
    let mut shown = Vec::new();
    for (i, c) in cmds.iter().enumerate() {
        if i > 0 {
            // The only unescaped `;`: every argument went through escape_arg.
            args.push(OsString::from(";"));
            shown.push("\\;".to_owned());
        }
        args.extend(c.args.iter().cloned());
        shown.push(c.shown());
    }
    (args, shown.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_is_never_one_word() {
        let spec = PaneSpec::new("/", ["prog"]);
        assert_eq!(spec.exec_argv(), ["/usr/bin/env", "--", "prog"]);
        let spec = PaneSpec::new("/", ["prog", "x"]);
        assert_eq!(spec.exec_argv(), ["prog", "x"]);
        assert!(PaneSpec::new("/", ["A=b"]).validate().is_err());
        assert!(PaneSpec::new("/", Vec::<String>::new()).validate().is_err());
        assert!(PaneSpec::new("rel", ["a", "b"]).validate().is_err());
        assert!(
            PaneSpec::new("/", ["a", "b"])
                .env("K=", "v")
                .validate()
                .is_err()
        );
        assert!(PaneSpec::new("/", ["a", "b\0"]).validate().is_err());
        assert!(
            PaneSpec::new("/", ["a", "b"])
                .env("K", "x;")
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn commands_escape_args_and_hide_env_values() {
        let spec = PaneSpec::new("/w/#x", ["prog", "a;", "-n"]).env("API_KEY", "secret;");
        let cmd = TmuxCommand::respawn_pane(PaneId(3), &spec).unwrap();
        let args: Vec<&str> = cmd.args.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            args,
            [
                "respawn-pane",
                "-k",
                "-t",
                "%3",
                "-c",
                "/w/##x",
                "-e",
                "API_KEY=secret\\;",
                "--",
                "prog",
                "a\\;",
                "-n"
            ]
        );
        let shown = cmd.shown();
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("API_KEY=…"), "{shown}");
    }

    #[test]
    fn titles_are_format_escaped() {
        let cmd = TmuxCommand::set_pane_title(PaneId(1), "#(id);");
        let last = cmd.args.last().unwrap();
        assert_eq!(last, OsStr::new("##(id)\\;"));
    }
    #[test]
    fn batches_join_commands_with_the_only_bare_semicolons() {
        let cmds = [
            TmuxCommand::set_pane_option(PaneId(1), "@x", ";"),
            TmuxCommand::set_pane_title(PaneId(1), "a;"),
            TmuxCommand::kill_pane(PaneId(2)),
        ];
        let (args, shown) = batch_args(&cmds);
        // tmux ends a command at an argument ending in `;` unless it ends in `\;`.
        let ends: Vec<usize> = args
            .iter()
            .enumerate()
            .filter(|(_, a)| a.as_bytes().ends_with(b";") && !a.as_bytes().ends_with(b"\\;"))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(ends.len(), 2, "{args:?}");
        assert!(ends.iter().all(|&i| args[i] == ";"));
        assert_eq!(
            shown,
            "set-option -p -t %1 @x \";\" \\; select-pane -t %1 -T \"a;\" \\; kill-pane -t %2"
        );
    }

    #[test]
    fn shown_commands_are_one_line() {
        assert_eq!(show(OsStr::new("%3")), "%3");
        assert_eq!(show(OsStr::new("a\nb")), "\"a\\nb\"");
        assert_eq!(show(OsStr::new("")), "\"\"");
    }
}
