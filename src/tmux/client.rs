//! A thin, synchronous layer over the tmux binary: one [`Tmux`] value per server, typed ids,
//! typed errors. Callers in async code run it under `spawn_blocking`.
//!
//! Invariants (each one closes a pitfall measured on tmux 3.3a, `reliability-notes.md` §2):
//! * Every command names its server: `-L NAME`, `-S PATH`, or (only when neither is known)
//!   the default server. `$TMUX` never picks the server behind our back.
//! * Objects are addressed only by id (`$N`, `@N`, `%N`) captured with `-P -F`; names are
//!   looked up by exact comparison, because `-t alpha` prefix-matches `alpha-lead` and
//!   indexes renumber when a pane is killed.
//! * Programs start from argv after `--` and never through a shell: tmux execs two or more
//!   words directly but hands a single word to `sh -c`, so a one-word argv is run as
//!   `/usr/bin/env -- WORD`. `send-keys` is never used.
//! * Every argument passes [`escape_arg`]: tmux's argument parser treats a trailing `;` as
//!   the end of the command, even after `--`. Every value tmux expands as a format (`-c`,
//!   `-s`, `-n`, `-T`) also passes [`escape_format`], since `#(…)` there runs a shell command.
//!   Option values and `-e` values are not expanded and stay literal.
//! * Errors are classified from tmux's stderr into [`TmuxError`]; every tmux call has a
//!   time limit, so a hung server fails a call instead of hanging swarm.
//! * Panes swarm owns carry the pane options `@swarm-team`, `@swarm-agent` and `@swarm-pane`
//!   (the pane's own id). User options are inherited from window, session and global
//!   scope, so in a listing a tag only counts when `@swarm-pane` equals the pane's id: a
//!   `set -g @swarm-team …` or a tagged window cannot make a user's pane look like ours.
//!   Before killing, callers also read the pane-scope value ([`Tmux::own_pane_options`]),
//!   which nothing inherited can fake.
//! * `display-message` runs its format through strftime; [`Tmux::display`] escapes `%`.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::sync::mpsc;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::util::error::Error;

/// The environment variable naming swarm's tmux socket (`-L NAME`).
pub const SOCKET_ENV: &str = "SWARM_TMUX_SOCKET";
/// Pane option: the team a pane belongs to.
pub const TEAM_OPTION: &str = "@swarm-team";
/// Pane option: the agent running in a pane.
pub const AGENT_OPTION: &str = "@swarm-agent";
/// Pane option: the pane's own id, proof that the two tags above were set on this pane and
/// not inherited from its window, session or the global options.
pub const PANE_OPTION: &str = "@swarm-pane";

/// Field separator of batched queries: a control character tmux refuses in titles and
/// escapes in session names; free-text fields are rewritten by the format to exclude it.
const SEP: char = '\x1f';
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest command shown in an error message; argv can carry a long prompt.
const SHOWN_MAX: usize = 300;

// ---------------------------------------------------------------------------------------
// Ids

/// A string that is not a tmux id of the expected kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid tmux {kind} id {text:?}")]
pub struct InvalidId {
    pub kind: &'static str,
    pub text: String,
}

macro_rules! tmux_id {
    ($(#[$doc:meta])* $name:ident, $sigil:literal, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(u32);

        impl $name {
            /// The number after the sigil; ids only grow within one server's life.
            pub fn number(self) -> u32 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", $sigil, self.0)
            }
        }

        impl FromStr for $name {
            type Err = InvalidId;

            fn from_str(s: &str) -> Result<$name, InvalidId> {
                s.strip_prefix($sigil)
                    .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|d| d.parse().ok())
                    .map($name)
                    .ok_or_else(|| InvalidId {
                        kind: $kind,
                        text: s.to_owned(),
                    })
            }
        }

        impl Target for $name {}
    };
}

/// Something a tmux `-t` flag can name: only ids, never names or indexes.
pub trait Target: fmt::Display {}

tmux_id!(
    /// A session id, `$N`.
    SessionId,
    "$",
    "session"
);
tmux_id!(
    /// A window id, `@N`.
    WindowId,
    "@",
    "window"
);
tmux_id!(
    /// A pane id, `%N`: unique across all sessions of one server, never reused by it.
    PaneId,
    "%",
    "pane"
);

// ---------------------------------------------------------------------------------------
// Errors

/// What went wrong talking to tmux, classified from its exit and stderr.
#[derive(Debug, thiserror::Error)]
pub enum TmuxError {
    #[error("tmux is not installed or not on PATH")]
    NotInstalled,

    /// The server is not running: its socket is missing (`error connecting to`), refuses
    /// connections because the server died or was killed (`no server running on`), or it
    /// died while the command ran (`server exited unexpectedly`).
    #[error("`{command}`: no tmux server is running on {server}: {stderr}")]
    NoServer {
        command: String,
        server: String,
        stderr: String,
    },

    /// The pane, window or session named by id no longer exists.
    #[error("`{command}`: {stderr}")]
    TargetGone { command: String, stderr: String },

    /// No room to split: `no space for new pane`, `pane too small`.
    #[error("`{command}`: {stderr}")]
    TooSmall { command: String, stderr: String },

    /// `new-session -s NAME` found a session with that exact name.
    #[error("a tmux session named {name:?} already exists")]
    SessionExists { name: String },

    #[error("`{command}`: {stderr}")]
    Failed { command: String, stderr: String },

    #[error("`{command}` did not finish within {after:?}")]
    Timeout { command: String, after: Duration },

    #[error("failed to run `{command}`: {source}")]
    Io {
        command: String,
        #[source]
        source: io::Error,
    },

    #[error("`{command}` printed unexpected output {output:?}")]
    BadOutput { command: String, output: String },

    /// A [`PaneSpec`] that cannot be started safely.
    #[error("invalid pane command: {0}")]
    InvalidSpec(String),
}

impl TmuxError {
    pub fn is_no_server(&self) -> bool {
        matches!(self, TmuxError::NoServer { .. })
    }

    /// No tmux to ask: no server, or no tmux at all. Either way, no panes exist.
    pub fn is_absent(&self) -> bool {
        matches!(self, TmuxError::NoServer { .. } | TmuxError::NotInstalled)
    }

    pub fn is_target_gone(&self) -> bool {
        matches!(self, TmuxError::TargetGone { .. })
    }
}

const NO_SERVER: [&str; 3] = [
    "error connecting to",
    "no server running on",
    "server exited unexpectedly",
];
const GONE: [&str; 7] = [
    // A server with no session left (exiting, or kept up by `exit-empty off`) resolves
    // no target at all.
    "no current target",
    "can't find pane",
    "can't find window",
    "can't find session",
    "no such pane",
    "no such window",
    "no such session",
];
const TOO_SMALL: [&str; 2] = ["no space for new pane", "too small"];

/// Classifies a failed tmux command from its stderr. `command` and `server` are for display.
pub fn classify(command: &str, stderr: &str, server: &str) -> TmuxError {
    let stderr = stderr.trim().replace('\n', "; ");
    let has = |needles: &[&str]| needles.iter().any(|n| stderr.contains(n));
    let command = command.to_owned();
    if has(&NO_SERVER) {
        TmuxError::NoServer {
            command,
            server: server.to_owned(),
            stderr,
        }
    } else if let Some(name) = stderr.strip_prefix("duplicate session: ") {
        TmuxError::SessionExists {
            name: name.to_owned(),
        }
    } else if has(&GONE) {
        TmuxError::TargetGone { command, stderr }
    } else if has(&TOO_SMALL) {
        TmuxError::TooSmall { command, stderr }
    } else {
        TmuxError::Failed { command, stderr }
    }
}

impl From<TmuxError> for Error {
    fn from(e: TmuxError) -> Error {
        match e {
            TmuxError::NotInstalled => Error::Tmux(
                "failed to run tmux: it is not installed or not on PATH; install tmux 3.2 or newer (e.g. `apt install tmux`)"
                    .to_owned(),
            ),
            TmuxError::NoServer {
                command, server, ..
            } => Error::Tmux(format!(
                "failed to `{command}`: no tmux server is running on {server} (it exited or was killed); start the team again"
            )),
            TmuxError::TargetGone { command, stderr } => Error::Tmux(format!(
                "failed to `{command}`: {stderr}; it was closed or killed, list the team's panes again"
            )),
            TmuxError::TooSmall { command, stderr } => Error::Tmux(format!(
                "failed to `{command}`: {stderr}; make the terminal larger, or put fewer panes in each window"
            )),
            TmuxError::SessionExists { name } => Error::conflict(format!(
                "failed to create tmux session {name:?}: a session with that name already exists; attach to it, or end it with `tmux kill-session -t ={name}`"
            )),
            TmuxError::Failed { command, stderr } => {
                Error::Tmux(format!("failed to `{command}`: {stderr}"))
            }
            TmuxError::Timeout { command, after } => Error::Tmux(format!(
                "failed to `{command}`: tmux did not answer within {}s; the tmux server may be hung, end it with kill-server",
                after.as_secs()
            )),
            TmuxError::Io { command, source } => {
                Error::Tmux(format!("failed to run `{command}`: {source}"))
            }
            TmuxError::BadOutput { command, output } => Error::Tmux(format!(
                "failed to `{command}`: unexpected output {output:?}; swarm needs tmux 3.2 or newer"
            )),
            TmuxError::InvalidSpec(reason) => {
                Error::usage(format!("invalid pane command: {reason}"))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Escaping

/// Escapes one argument for tmux's argument parser, which ends a command at an argument
/// ending in `;` (even after `--`) and turns a final `\;` into `;`: so a final `;` is sent
/// as `\;`, which tmux turns back into exactly the original bytes.
pub fn escape_arg(arg: &OsStr) -> OsString {
    let bytes = arg.as_bytes();
    match bytes.split_last() {
        Some((b';', head)) => {
            let mut out = Vec::with_capacity(bytes.len() + 1);
            out.extend_from_slice(head);
            out.extend_from_slice(b"\\;");
            OsString::from_vec(out)
        }
        _ => arg.to_owned(),
    }
}

/// Escapes a value that tmux expands as a format (`-c`, `-s`, `-n`, `-T`): `#` becomes `##`,
/// so `#(cmd)` and `#{var}` stay literal.
pub fn escape_format(value: &OsStr) -> OsString {
    let mut out = Vec::with_capacity(value.len());
    for &b in value.as_bytes() {
        if b == b'#' {
            out.push(b'#');
        }
        out.push(b);
    }
    OsString::from_vec(out)
}

/// A format that prints `var` with the separators of batched queries replaced by `_`.
fn sanitized(var: &str) -> String {
    format!("#{{s/[{SEP}\n]/_/:{var}}}")
}

// ---------------------------------------------------------------------------------------
// Commands

/// A value quoted for tmux's configuration language (what `source-file` reads): single
/// quotes keep everything literal; a value with a single quote goes in double quotes with
/// `\\`, `\"` and `\$` escaped. `None` for what cannot be quoted safely: control
/// characters, or a double-quoted value starting with `~` (tmux expands it even there).
pub fn config_quote(value: &str) -> Option<String> {
    if value.chars().any(char::is_control) {
        return None;
    }
    if !value.contains('\'') {
        return Some(format!("'{value}'"));
    }
    if value.starts_with('~') {
        return None;
    }
    Some(format!(
        "\"{}\"",
        value
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('$', "\\$")
    ))
}

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
#[derive(Debug, Clone)]
pub struct TmuxCommand {
    args: Vec<OsString>,
    /// The display form, with `-e` values hidden (they may hold secrets).
    shown: Vec<String>,
}

impl TmuxCommand {
    fn new(name: &str) -> Self {
        TmuxCommand {
            args: vec![name.into()],
            shown: vec![name.to_owned()],
        }
    }

    /// A literal flag or keyword swarm wrote itself.
    fn flag(mut self, flag: &str) -> Self {
        debug_assert!(!flag.ends_with(';'));
        self.args.push(flag.into());
        self.shown.push(flag.to_owned());
        self
    }

    fn arg(mut self, value: impl AsRef<OsStr>) -> Self {
        let value = value.as_ref();
        self.args.push(escape_arg(value));
        self.shown.push(show(value));
        self
    }

    /// A value tmux expands as a format.
    fn format_arg(mut self, value: impl AsRef<OsStr>) -> Self {
        let value = value.as_ref();
        self.args.push(escape_arg(&escape_format(value)));
        self.shown.push(show(value));
        self
    }

    fn target(self, target: &impl Target) -> Self {
        self.flag("-t").flag(&target.to_string())
    }

    /// `-c CWD -e K=V … -- argv…` for the commands that start a program.
    fn program(mut self, spec: &PaneSpec) -> Self {
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

    pub fn kill_session(session: SessionId) -> Self {
        TmuxCommand::new("kill-session").target(&session)
    }

    /// Blocks until `channel` is signalled ([`TmuxCommand::signal_channel`]): a readiness
    /// handshake between processes. Bounded by the [`Tmux`] call's time limit.
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
fn show(value: &OsStr) -> String {
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

// ---------------------------------------------------------------------------------------
// Records

/// One pane, as reported by the batched [`Tmux::list_panes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneRecord {
    pub pane: PaneId,
    /// Position in its window; changes when other panes go. Display only.
    pub index: u32,
    /// The pane's first process (still reported after it died).
    pub pid: i32,
    /// The process exited and the pane stayed (`remain-on-exit`).
    pub dead: bool,
    /// Exit code of a dead pane's process, if it exited normally. This can lag `dead` by a
    /// moment (tmux sees the pty close before it reaps the process): `dead` with neither
    /// status nor signal means "not known yet", so look again.
    pub dead_status: Option<i32>,
    /// Signal that killed a dead pane's process (same lag as `dead_status`).
    pub dead_signal: Option<i32>,
    pub width: u16,
    pub height: u16,
    pub left: u16,
    pub top: u16,
    pub window: WindowId,
    pub session: SessionId,
    /// The tmux server's process id.
    pub server_pid: i32,
    pub session_name: String,
    pub title: String,
    pub current_command: String,
    /// `@swarm-team`, only when `@swarm-pane` names this pane (see the module notes). That
    /// rules out inherited tags, not a window option someone set to this very pane's id;
    /// destructive callers check [`Tmux::own_pane_options`] as well.
    pub team: Option<String>,
    /// `@swarm-agent`, only when set on this pane itself.
    pub agent: Option<String>,
}

impl PaneRecord {
    /// True if swarm tagged this pane as one of `team`'s.
    pub fn belongs_to(&self, team: &str) -> bool {
        self.team.as_deref() == Some(team)
    }
}

/// The fields of [`PaneRecord`] in query order; free text comes through [`sanitized`].
fn pane_format() -> String {
    let fields: Vec<String> = [
        "pane_id",
        "pane_index",
        "pane_pid",
        "pane_dead",
        "pane_dead_status",
        "pane_dead_signal",
        "pane_width",
        "pane_height",
        "pane_left",
        "pane_top",
        "window_id",
        "session_id",
        "pid",
    ]
    .iter()
    .map(|f| format!("#{{{f}}}"))
    .chain(
        [
            PANE_OPTION,
            TEAM_OPTION,
            AGENT_OPTION,
            "session_name",
            "pane_title",
            "pane_current_command",
        ]
        .iter()
        .map(|f| sanitized(f)),
    )
    .collect();
    fields.join(&SEP.to_string())
}

const PANE_FIELDS: usize = 19;

/// Parses `list-panes -F pane_format()` output.
pub fn parse_panes(output: &str) -> Result<Vec<PaneRecord>, String> {
    output
        .lines()
        .filter(|l| !l.is_empty())
        .map(parse_pane)
        .collect()
}

fn parse_pane(line: &str) -> Result<PaneRecord, String> {
    let f: Vec<&str> = line.split(SEP).collect();
    if f.len() != PANE_FIELDS {
        return Err(format!(
            "expected {PANE_FIELDS} fields, got {} in {line:?}",
            f.len()
        ));
    }
    fn num<T: FromStr>(s: &str, what: &str) -> Result<T, String> {
        s.parse().map_err(|_| format!("bad {what} {s:?}"))
    }
    fn opt_num(s: &str, what: &str) -> Result<Option<i32>, String> {
        if s.is_empty() {
            Ok(None)
        } else {
            num(s, what).map(Some)
        }
    }
    let pane: PaneId = f[0].parse().map_err(|e: InvalidId| e.to_string())?;
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let own = f[13] == pane.to_string();
    Ok(PaneRecord {
        pane,
        index: num(f[1], "pane_index")?,
        pid: num(f[2], "pane_pid")?,
        dead: f[3] == "1",
        dead_status: opt_num(f[4], "pane_dead_status")?,
        dead_signal: opt_num(f[5], "pane_dead_signal")?,
        width: num(f[6], "pane_width")?,
        height: num(f[7], "pane_height")?,
        left: num(f[8], "pane_left")?,
        top: num(f[9], "pane_top")?,
        window: f[10].parse().map_err(|e: InvalidId| e.to_string())?,
        session: f[11].parse().map_err(|e: InvalidId| e.to_string())?,
        server_pid: num(f[12], "pid")?,
        team: if own { opt(f[14]) } else { None },
        agent: if own { opt(f[15]) } else { None },
        session_name: f[16].to_owned(),
        title: f[17].to_owned(),
        current_command: f[18].to_owned(),
    })
}

/// A session: its id and its name as tmux stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    pub id: SessionId,
    pub name: String,
}

/// The ids of a freshly created session or window and its only pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewPane {
    pub session: SessionId,
    pub window: WindowId,
    pub pane: PaneId,
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

// ---------------------------------------------------------------------------------------
// The server handle

/// Which tmux server a [`Tmux`] talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Server {
    /// `-L NAME`: a socket named NAME in tmux's socket directory.
    Name(String),
    /// `-S PATH`: the server at this socket path (the one a user inside tmux is in).
    Path(PathBuf),
    /// No flag: the user's default server.
    Default,
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Server::Name(n) => write!(f, "socket {n:?} (-L)"),
            Server::Path(p) => write!(f, "{} (-S)", p.display()),
            Server::Default => write!(f, "the default socket"),
        }
    }
}

/// A handle on one tmux server. Cheap to clone; holds no connection.
#[derive(Debug, Clone)]
pub struct Tmux {
    server: Server,
    config_file: Option<PathBuf>,
    timeout: Duration,
}

impl Tmux {
    /// The server swarm should use: `-L NAME` from `flag` or `$SWARM_TMUX_SOCKET`; else the
    /// server the caller is inside (`-S`, the socket path from `$TMUX`); else the default
    /// server. A user's server keeps the user's configuration.
    pub fn resolve(flag: Option<&str>) -> Result<Tmux, Error> {
        resolve_from(flag, |k| std::env::var_os(k))
    }

    pub fn with_server(server: Server) -> Tmux {
        Tmux {
            server,
            config_file: None,
            timeout: DEFAULT_TIMEOUT,
        }
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
        let child = Command::new("tmux")
            .arg("-u")
            .args(self.global_args())
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(TmuxError::NotInstalled),
            Err(source) => {
                return Err(TmuxError::Io {
                    command: shown,
                    source,
                });
            }
        };
        let mut child = child;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            use std::io::Write as _;
            // Small (a few lines); a failed write shows up as tmux's own error.
            let _ = stdin.write_all(bytes);
        }
        let pid = child.id() as i32;
        // A thread collects the output so the wait can have a time limit. The pid stays
        // ours until that thread reaps it, so killing it by pid cannot hit a stranger.
        let (tx, rx) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("tmux-wait".to_owned())
            .spawn(move || {
                let _ = tx.send(child.wait_with_output());
            })
            .map_err(|source| TmuxError::Io {
                command: shown.clone(),
                source,
            })?;
        let output = match rx.recv_timeout(self.timeout) {
            Ok(result) => result.map_err(|source| TmuxError::Io {
                command: shown.clone(),
                source,
            })?,
            Err(_) => {
                crate::util::process::signal(pid, Signal::SIGKILL);
                let _ = rx.recv();
                return Err(TmuxError::Timeout {
                    command: shown,
                    after: self.timeout,
                });
            }
        };
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

    fn created(&self, cmd: TmuxCommand) -> Result<NewPane, TmuxError> {
        let shown = cmd.shown();
        let out = self.run(&cmd)?;
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

    fn new_pane_format() -> String {
        ["#{session_id}", "#{window_id}", "#{pane_id}"].join(&SEP.to_string())
    }

    /// Starts a detached session running `spec` (starting the server if needed).
    pub fn new_session(&self, s: &NewSession<'_>) -> Result<NewPane, TmuxError> {
        s.spec.validate()?;
        let mut cmd = TmuxCommand::new("new-session")
            .flag("-d")
            .flag("-P")
            .flag("-F")
            .arg(Tmux::new_pane_format())
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
        self.created(cmd.program(s.spec))
    }

    /// Opens a new window at the next free index of `session`, without switching to it.
    pub fn new_window(
        &self,
        session: SessionId,
        name: Option<&str>,
        spec: &PaneSpec,
    ) -> Result<NewPane, TmuxError> {
        spec.validate()?;
        let mut cmd = TmuxCommand::new("new-window")
            .flag("-d")
            .flag("-P")
            .flag("-F")
            .arg(Tmux::new_pane_format())
            .target(&session);
        if let Some(n) = name {
            cmd = cmd.flag("-n").format_arg(n);
        }
        self.created(cmd.program(spec))
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
        let cmd = cmd
            .target(&target)
            .flag("-P")
            .flag("-F")
            .arg("#{pane_id}")
            .program(spec);
        let shown = cmd.shown();
        let out = self.run(&cmd)?;
        out.trim().parse().map_err(|_| TmuxError::BadOutput {
            command: shown,
            output: out,
        })
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
            Some(p) if crate::util::process::signal(p.server_pid, Signal::SIGCHLD) => {
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

    /// `tmux attach-session -t TARGET` for this server, with `$TMUX` removed: for a caller
    /// that wants to `exec` it or run it itself. Stdio is inherited.
    pub fn attach_command(&self, target: &impl Target) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.args(self.global_args())
            .arg("attach-session")
            .arg("-t")
            .arg(target.to_string())
            .env_remove("TMUX");
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

/// The arguments of a batch and its display form.
fn batch_args(cmds: &[TmuxCommand]) -> (Vec<OsString>, String) {
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

/// [`Tmux::resolve`] with the environment passed in, so it can be tested without mutating
/// the process environment.
fn resolve_from(flag: Option<&str>, env: impl Fn(&str) -> Option<OsString>) -> Result<Tmux, Error> {
    let named = match flag {
        Some(f) => Some(f.to_owned()),
        None => env(SOCKET_ENV)
            .filter(|v| !v.is_empty())
            .map(|v| v.to_string_lossy().into_owned()),
    };
    if let Some(name) = named {
        if name.is_empty() || name.contains('/') || name.contains('\0') {
            return Err(Error::usage(format!(
                "invalid tmux socket name {name:?}: use a plain name (it lives in tmux's socket directory), without '/'"
            )));
        }
        return Ok(Tmux::with_socket_name(name));
    }
    if let Some(tmux) = env("TMUX").filter(|v| !v.is_empty())
        && let Some(path) = socket_of(&tmux)
    {
        return Ok(Tmux::with_server(Server::Path(path)));
    }
    Ok(Tmux::with_server(Server::Default))
}

/// The socket path in a `$TMUX` value, `PATH,SERVER_PID,SESSION`.
pub fn socket_of(tmux_env: &OsStr) -> Option<PathBuf> {
    let bytes = tmux_env.as_bytes();
    // The path is everything before the last two fields, so a comma in it survives.
    let mut fields = bytes.rsplitn(3, |&b| b == b',');
    let (_, _, path) = (fields.next(), fields.next(), fields.next());
    let path = path.unwrap_or(bytes);
    (!path.is_empty()).then(|| PathBuf::from(OsStr::from_bytes(path)))
}

/// Where `$TMUX` says the caller's server is, if the caller is inside tmux.
pub fn caller_socket() -> Option<PathBuf> {
    std::env::var_os("TMUX")
        .filter(|v| !v.is_empty())
        .and_then(|v| socket_of(&v))
}

/// The caller's own pane (`$TMUX_PANE`), if it is inside tmux.
pub fn caller_pane() -> Option<PaneId> {
    std::env::var("TMUX_PANE").ok()?.parse().ok()
}

/// True if `path` is the socket of `tmux`'s server (both sides taken literally).
pub fn is_server_path(tmux: &Tmux, path: &Path) -> bool {
    matches!(tmux.server(), Server::Path(p) if p == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| {
            pairs
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.into())
        }
    }

    #[test]
    fn resolve_prefers_flag_then_env_then_caller_then_default() {
        let all = env_of(&[
            (SOCKET_ENV, "from-env"),
            ("TMUX", "/tmp/tmux-1000/default,123,0"),
        ]);
        let t = resolve_from(Some("flag"), &all).unwrap();
        assert_eq!(t.server(), &Server::Name("flag".into()));
        let t = resolve_from(None, &all).unwrap();
        assert_eq!(t.server(), &Server::Name("from-env".into()));
        let inside = env_of(&[(SOCKET_ENV, ""), ("TMUX", "/tmp/tmux-1000/default,123,0")]);
        let t = resolve_from(None, &inside).unwrap();
        assert_eq!(t.server(), &Server::Path("/tmp/tmux-1000/default".into()));
        assert_eq!(t.global_args(), ["-S", "/tmp/tmux-1000/default"]);
        let t = resolve_from(None, env_of(&[("TMUX", "")])).unwrap();
        assert_eq!(t.server(), &Server::Default);
        assert!(t.global_args().is_empty());
        assert!(resolve_from(Some("a/b"), env_of(&[])).is_err());
    }

    #[test]
    fn socket_path_keeps_commas() {
        assert_eq!(
            socket_of(OsStr::new("/tmp/a,b/sock,42,3")),
            Some(PathBuf::from("/tmp/a,b/sock"))
        );
        assert_eq!(
            socket_of(OsStr::new("/tmp/sock")),
            Some(PathBuf::from("/tmp/sock"))
        );
        assert_eq!(socket_of(OsStr::new(",1,2")), None);
    }

    #[test]
    fn config_file_is_only_passed_when_set() {
        let t = Tmux::with_socket_name("s");
        assert_eq!(t.global_args(), ["-L", "s"]);
        let t = t.config_file("/dev/null");
        assert_eq!(t.global_args(), ["-L", "s", "-f", "/dev/null"]);
    }

    #[test]
    fn classifies_every_no_server_variant() {
        for stderr in [
            "error connecting to /tmp/tmux-0/x (No such file or directory)\n",
            "no server running on /tmp/tmux-0/x\n",
            "server exited unexpectedly\n",
        ] {
            assert!(
                classify("c", stderr, "s").is_no_server(),
                "{stderr:?} should be NoServer"
            );
        }
    }

    #[test]
    fn classifies_gone_small_duplicate_and_other() {
        for stderr in [
            "can't find pane: %3",
            "can't find window: @9",
            "can't find session: $4",
            "no such pane: %99",
            "no such window: @99",
            "no such session: $99",
            "no current target",
        ] {
            assert!(classify("c", stderr, "s").is_target_gone(), "{stderr}");
        }
        for stderr in [
            "no space for new pane",
            "create pane failed: pane too small",
        ] {
            assert!(matches!(
                classify("c", stderr, "s"),
                TmuxError::TooSmall { .. }
            ));
        }
        assert!(matches!(
            classify("c", "duplicate session: swarm-a\n", "s"),
            TmuxError::SessionExists { name } if name == "swarm-a"
        ));
        assert!(matches!(
            classify("c", "command too long", "s"),
            TmuxError::Failed { .. }
        ));
    }

    #[test]
    fn errors_map_to_exit_code_6_with_advice() {
        let e: Error = classify("tmux -L s list-panes -a", "no server running on /x", "s").into();
        assert_eq!(e.exit_code(), crate::util::error::exit::TMUX);
        let msg = e.to_string();
        assert!(
            msg.starts_with("failed to `tmux -L s list-panes -a`"),
            "{msg}"
        );
        assert!(msg.contains("start the team again"), "{msg}");
        assert!(!msg.contains('\n'));
        let e: Error = TmuxError::NotInstalled.into();
        assert!(e.to_string().contains("install tmux"));
        let e: Error = classify("c", "no space for new pane", "s").into();
        assert_eq!(e.exit_code(), crate::util::error::exit::TMUX);
        let e: Error = classify("c", "duplicate session: x", "s").into();
        assert_eq!(e.exit_code(), crate::util::error::exit::CONFLICT);
        let e: Error = TmuxError::InvalidSpec("argv is empty".into()).into();
        assert_eq!(e.exit_code(), crate::util::error::exit::USAGE);
    }

    #[test]
    fn trailing_semicolons_are_escaped_and_nothing_else_changes() {
        let cases = [
            ("x;", "x\\;"),
            (";", "\\;"),
            ("a\\;", "a\\\\;"),
            ("a;b", "a;b"),
            ("", ""),
            ("$(id) `x` 'q' \"d\"", "$(id) `x` 'q' \"d\""),
        ];
        for (input, want) in cases {
            assert_eq!(escape_arg(OsStr::new(input)), OsStr::new(want), "{input:?}");
        }
    }

    #[test]
    fn format_values_double_every_hash() {
        assert_eq!(
            escape_format(OsStr::new("/a/#(touch x)/#{pane_id}/##")),
            OsStr::new("/a/##(touch x)/##{pane_id}/####")
        );
    }

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
    fn ids_parse_and_print() {
        assert_eq!("%12".parse::<PaneId>().unwrap().to_string(), "%12");
        assert_eq!("@0".parse::<WindowId>().unwrap().number(), 0);
        assert_eq!("$7".parse::<SessionId>().unwrap().to_string(), "$7");
        for bad in ["", "%", "12", "@1", "%1a", "% 1", "%-1"] {
            assert!(bad.parse::<PaneId>().is_err(), "{bad:?}");
        }
    }

    fn line(fields: &[&str]) -> String {
        fields.join(&SEP.to_string())
    }

    #[test]
    fn parses_pane_records() {
        let out = [
            line(&[
                "%3", "1", "4242", "1", "3", "", "60", "50", "0", "0", "@1", "$0", "77", "%3", "t",
                "alice", "swarm-t", "alice", "python3",
            ]),
            line(&[
                "%4", "2", "4243", "1", "", "9", "139", "24", "61", "0", "@1", "$0", "77", "", "",
                "", "swarm-t", "vm", "sleep",
            ]),
            // Tags inherited from the window (no @swarm-pane of its own) do not count.
            line(&[
                "%5", "0", "4244", "0", "", "", "80", "24", "0", "0", "@2", "$1", "77", "%3", "t",
                "bob", "user", "", "bash",
            ]),
        ]
        .join("\n")
            + "\n";
        let panes = parse_panes(&out).unwrap();
        assert_eq!(panes.len(), 3);
        let a = &panes[0];
        assert_eq!(a.pane, PaneId(3));
        assert_eq!(
            (a.pid, a.dead, a.dead_status, a.dead_signal),
            (4242, true, Some(3), None)
        );
        assert_eq!((a.width, a.height, a.left, a.top), (60, 50, 0, 0));
        assert_eq!((a.window, a.session), (WindowId(1), SessionId(0)));
        assert_eq!(a.server_pid, 77);
        assert_eq!(a.team.as_deref(), Some("t"));
        assert_eq!(a.agent.as_deref(), Some("alice"));
        assert!(a.belongs_to("t"));
        let b = &panes[1];
        assert_eq!((b.dead_status, b.dead_signal), (None, Some(9)));
        assert_eq!((b.team.as_deref(), b.agent.as_deref()), (None, None));
        let c = &panes[2];
        assert!(!c.belongs_to("t"));
        assert_eq!(c.title, "");
    }

    #[test]
    fn rejects_malformed_pane_lines() {
        assert!(parse_panes("%1\x1f2\n").is_err());
        let mut fields = vec!["x"; PANE_FIELDS];
        fields[0] = "%1";
        assert!(parse_panes(&line(&fields)).is_err());
        assert_eq!(parse_panes("").unwrap(), vec![]);
    }

    #[test]
    fn pane_format_has_one_field_per_record_field() {
        // Each of the six sanitised fields also has the separator inside its regex.
        assert_eq!(pane_format().split(SEP).count(), PANE_FIELDS + 6);
        assert!(pane_format().contains("#{s/[\x1f\n]/_/:pane_current_command}"));
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
