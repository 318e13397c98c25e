//! Every environment variable swarm reads or sets, named once, with its default and what
//! it does: the one table the README's environment section is checked against.
//!
//! Code names a variable through its constant here, never by a string of its own, so a
//! rename is one edit and a variable nobody documented cannot be read. Which of them hold
//! a credential is decided by [`crate::environment::is_secret`], not here. The values are
//! read once, at the edge (the front end captures the environment and resolves settings
//! from it); below it, a variable is only ever named (to pass it on to a teammate, or in
//! an error message that says which one to set).

/// One environment variable: its name, its default as a user would write it (empty when
/// it has none, or when the default depends on something else, said in `doc`), and its
/// documentation line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var {
    pub name: &'static str,
    pub default: &'static str,
    pub doc: &'static str,
    /// Set by swarm for each teammate it starts (a user does not set it).
    pub set_for_teammates: bool,
}

macro_rules! vars {
    ($($(#[$attr:meta])* $id:ident = $default:literal, $doc:literal $(, $set:ident)?;)*) => {
        $($(#[$attr])* pub const $id: &str = stringify!($id);)*
        /// Every variable, in the README's order.
        pub const ALL: &[Var] = &[$(Var {
            name: stringify!($id),
            default: $default,
            doc: $doc,
            set_for_teammates: vars!(@set $($set)?),
        }),*];
    };
    (@set) => { false };
    (@set teammates) => { true };
}

vars! {
    ANTHROPIC_API_KEY = "", "the Anthropic API key (never in a command line; teammates get it through their environment)";
    ANTHROPIC_AUTH_TOKEN = "", "a bearer token instead of the API key (a proxy in front of the API)";
    ANTHROPIC_BASE_URL = "https://api.anthropic.com", "the Anthropic API's address";
    ANTHROPIC_VERSION = "2023-06-01", "the `anthropic-version` header (or `--anthropic-version`; teammates inherit it)";
    OPENAI_API_KEY = "", "the OpenAI API key (optional for a local server)";
    OPENAI_BASE_URL = "https://api.openai.com/v1", "an OpenAI-compatible server's address";
    SWARM_PROVIDER = "anthropic", "`anthropic`, `openai` or `scripted` (or `--provider`)";
    SWARM_MODEL = "", "the model id (or `--model`); default: the provider's";
    SWARM_BASE_URL = "", "the API address for whichever provider (or `--base-url`)";
    SWARM_RATE_LIMIT_WAIT = "900", "seconds one model call may wait out rate limits in all (or `--rate-limit-wait`)";
    SWARM_PERMISSION_MODE = "default", "`default`, `acceptEdits`, `bypassPermissions` or `plan` (or `--permission-mode`)";
    SWARM_SUBAGENT_MODEL = "", "the model of the subagents an agent starts; default: its own (`inherit` says so)";
    CLAUDE_CODE_SUBAGENT_MODEL = "", "read when `SWARM_SUBAGENT_MODEL` is unset, as Claude Code does";
    SWARM_ROOT = "~/.claude", "where teams and tasks live (or `--root`)";
    CLAUDE_CONFIG_DIR = "~/.claude", "read when `SWARM_ROOT` is unset, as Claude Code does";
    SWARM_TEAM = "", "the team a command acts on (or `--team`); default: the only team (swarm sets it for each teammate)";
    SWARM_TMUX_SOCKET = "", "the tmux server (or `--tmux-socket`); default: the team's, else the one you are in";
    SWARM_PANES_PER_WINDOW = "6", "panes in a team's window before it opens another (at least 2)";
    SWARM_CLAUDE_BIN = "claude", "the Claude Code client for `--engine claude` (or `--claude-bin`); default: `claude` on `PATH`";
    SWARM_LOCK_TIMEOUT_MS = "15000", "how long a shared file's lock is waited for before the write fails";
    SWARM_HEARTBEAT_TIMEOUT_MS = "10000", "how long a teammate on a PostgreSQL team may go without a heartbeat before it is declared dead (at least 3000; each beats every second)";
    SWARM_DURABLE = "1", "`0` skips fsyncs (atomicity never depends on them)";
    SWARM_STORE_URL = "", "a PostgreSQL URL (no password) where `swarm team create`, `run` and `demo` make new teams (or `--store`); default: files";
    SWARM_SSH_CONFIG = "", "an ssh config file swarm gives `ssh` (`-F`) to reach hosts; default: ssh's own (`~/.ssh/config`)";
    SWARM_LOG = "", "what to log, an env-filter such as `swarm=debug`; teammates log to `teams/<team>/logs/<agent>.log`";
    SWARM_TIMINGS = "", "a file to append each command's timings to, as JSON lines (for `scripts/bench`)";
    SWARM_FAULT = "", "a fault to inject at a named point, for the fault campaign (`scripts/bench faults`)";
    PGHOST = "/var/run/postgresql", "a PostgreSQL store's host or socket directory, when its URL names none (as `psql` reads it)";
    PGPORT = "5432", "its port, likewise";
    PGUSER = "", "its user, likewise; default: the login name (`USER`, else `LOGNAME`)";
    PGDATABASE = "", "its database, likewise; default: the user's name";
    PGPASSWORD = "", "its password, when the URL has none (never in a file of swarm's, an argv or a log)";
    PGPASSFILE = "~/.pgpass", "the password file read when neither the URL nor `PGPASSWORD` has one (ignored unless 0600)";
    PGSSLMODE = "prefer", "a PostgreSQL store's TLS when its URL says nothing: `disable`, `prefer`, `require`, `verify-ca` or `verify-full`";
    PGSSLROOTCERT = "~/.postgresql/root.crt", "the root certificate the `verify-*` modes check the server's against";
    PGCONNECT_TIMEOUT = "5", "seconds to wait for the database server, when the URL says nothing";
    USER = "", "the login name: a PostgreSQL store's default user";
    LOGNAME = "", "read when `USER` is unset";
    NO_COLOR = "", "any value turns colour off on a terminal";
    HOME = "", "where `~/.claude` is, when neither `SWARM_ROOT` nor `CLAUDE_CONFIG_DIR` is set";
    TMUX = "", "set by tmux: the server you are in, used when nothing else names one";
    TMUX_PANE = "", "set by tmux: the pane you are in";
    SWARM_AGENT_ID = "", "`<name>@<team>` of the agent a process runs as", teammates;
    SWARM_AGENT_NAME = "", "the agent's name: where it is set, `swarm` acts as that agent only", teammates;
    SWARM_PROJECT_DIR = "", "where agent definitions and hooks are read, also from a worktree", teammates;
}

/// The README's environment section for [`ALL`]: one row per variable.
pub fn markdown_table() -> String {
    let mut out = String::from("| variable | default | what it does |\n|---|---|---|\n");
    for var in ALL {
        let default = match var.default {
            "" if var.set_for_teammates => "set by swarm".to_owned(),
            "" => String::new(),
            d => format!("`{d}`"),
        };
        out.push_str(&format!("| `{}` | {default} | {} |\n", var.name, var.doc));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variable_is_listed_once_under_its_own_name() {
        let mut names: Vec<_> = ALL.iter().map(|v| v.name).collect();
        assert_eq!(SWARM_LOCK_TIMEOUT_MS, "SWARM_LOCK_TIMEOUT_MS");
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before);
    }
}
