//! Every environment variable swarm reads or sets, named once, with its default and what
//! it does: the one table the README's environment section is checked against.
//!
//! Code names a variable through its constant here, never by a string of its own, so a
//! rename is one edit and a variable nobody documented cannot be read. Each row also says
//! who reads the variable and how it reaches the processes swarm starts, here and on other
//! hosts ([`Travel`]): a pane's environment and a host's are derived from this table
//! (`swarm_team::spawn::inherit`), never from a list of their own, and what travels as a
//! secret is what the table marks so. The values are read once, at the edge (the front end
//! captures the environment and resolves settings from it); below it, a variable is only
//! ever named (to pass it on to a teammate, or in an error message that says which one to
//! set).

/// Who reads a variable: the processes of a team and the programs they start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// A `swarm` command a person (or a script) runs, `swarm serve` included.
    Cli,
    /// `swarm lead`, in the team window's first pane.
    Lead,
    /// A swarm teammate in a pane on this machine.
    Teammate,
    /// A swarm teammate on another host, started there over ssh.
    HostTeammate,
    /// A Claude Code client as a teammate (`--engine claude`).
    Claude,
    /// A hook command an agent runs (it gets the agent's environment).
    Hook,
}

/// How a variable's value reaches a process swarm starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Travel {
    /// Not passed on: read where it is set (the caller's own, or set there by tmux).
    Here,
    /// Copied into the process's environment.
    Env,
    /// Copied as a secret: given to the process's pane for the moment of its start (on
    /// ssh's stdin for a host), never on an argv, in a file of swarm's, in tmux's
    /// environment after the start, or in a log.
    Secret,
    /// Set by swarm for each process it starts (who it is, its root, its tmux server).
    Swarm,
    /// On another host, the host's own value: the lead's is never sent there.
    HostOwn,
    /// Written into the database URL a host is given (never its password); the host's
    /// own variable is not overridden.
    InUrl,
}

/// One environment variable: its name, its default as a user would write it (empty when
/// it has none, or when the default depends on something else, said in `doc`), what it
/// does, who reads it, and how it reaches the processes swarm starts here (`panes`: the
/// lead, teammates and Claude Code teammates in this machine's panes, and their hooks) and
/// on other hosts (`hosts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var {
    pub name: &'static str,
    pub default: &'static str,
    pub doc: &'static str,
    pub read_by: &'static [Reader],
    pub panes: Travel,
    pub hosts: Travel,
    /// What replaces it for one teammate, if anything (a flag of the spawn, a definition).
    pub replaced_by: &'static str,
    /// A person sets it; `false` for the variables only swarm sets.
    pub user_set: bool,
}

/// What a row leaves unsaid: read by swarm's own processes, passed on as it is.
const ROW: Var = Var {
    name: "",
    default: "",
    doc: "",
    read_by: SWARM,
    panes: Travel::Env,
    hosts: Travel::Env,
    replaced_by: "",
    user_set: true,
};

use Reader::{Claude, Cli, Hook, HostTeammate, Lead, Teammate};

/// Every swarm process.
const SWARM: &[Reader] = &[Cli, Lead, Teammate, HostTeammate];
/// The processes that call a model through swarm's client.
const MODEL: &[Reader] = &[Cli, Lead, Teammate, HostTeammate];
/// Those, and a Claude Code teammate, which calls Anthropic's API itself.
const MODEL_AND_CLAUDE: &[Reader] = &[Cli, Lead, Teammate, HostTeammate, Claude];
/// The processes that start teammates.
const SPAWNERS: &[Reader] = &[Cli, Lead];
/// Everything a pane runs: swarm, the Claude Code client, their hooks.
const EVERYONE: &[Reader] = &[Cli, Lead, Teammate, HostTeammate, Claude, Hook];

macro_rules! vars {
    ($($(#[$attr:meta])* $id:ident { $($field:ident : $value:expr),* $(,)? })*) => {
        $($(#[$attr])* pub const $id: &str = stringify!($id);)*
        /// Every variable, in the README's order.
        pub const ALL: &[Var] = &[$(Var {
            name: stringify!($id),
            $($field: $value,)*
            ..ROW
        }),*];
    };
}

vars! {
    ANTHROPIC_API_KEY { read_by: MODEL_AND_CLAUDE, panes: Travel::Secret, hosts: Travel::Secret,
        doc: "the Anthropic API key (never in a command line)" }
    ANTHROPIC_AUTH_TOKEN { read_by: MODEL_AND_CLAUDE, panes: Travel::Secret, hosts: Travel::Secret,
        doc: "a bearer token instead of the API key (a proxy in front of the API)" }
    ANTHROPIC_BASE_URL { default: "https://api.anthropic.com", read_by: MODEL_AND_CLAUDE,
        doc: "the Anthropic API's address" }
    ANTHROPIC_VERSION { default: "2023-06-01", read_by: MODEL,
        doc: "the `anthropic-version` header (or `--anthropic-version`)" }
    OPENAI_API_KEY { read_by: MODEL, panes: Travel::Secret, hosts: Travel::Secret,
        doc: "the OpenAI API key (optional for a local server)" }
    OPENAI_BASE_URL { default: "https://api.openai.com/v1", read_by: MODEL,
        doc: "an OpenAI-compatible server's address" }
    SWARM_PROVIDER { default: "anthropic", read_by: MODEL,
        replaced_by: "a spawn's `--provider`, a definition's `provider`",
        doc: "`anthropic`, `openai` or `scripted` (or `--provider`)" }
    SWARM_MODEL { read_by: MODEL,
        replaced_by: "a spawn's `--model`, a definition's `model`, its own API",
        doc: "the model id (or `--model`); default: the provider's" }
    SWARM_BASE_URL { read_by: MODEL,
        replaced_by: "a spawn's `--base-url` or `--provider`, a definition's",
        doc: "the API address for whichever provider (or `--base-url`)" }
    SWARM_RATE_LIMIT_WAIT { default: "900", read_by: MODEL,
        doc: "seconds one model call may wait out rate limits in all (or `--rate-limit-wait`)" }
    SWARM_PERMISSION_MODE { default: "default", read_by: SWARM,
        replaced_by: "a spawn's `--permission-mode`, a definition's, a required plan",
        doc: "`default`, `acceptEdits`, `bypassPermissions` or `plan` (or `--permission-mode`)" }
    SWARM_SUBAGENT_MODEL { read_by: SPAWNERS,
        doc: "the model of the subagents an agent starts; default: its own (`inherit` says so)" }
    CLAUDE_CODE_SUBAGENT_MODEL { read_by: &[Cli, Lead, Claude],
        doc: "read when `SWARM_SUBAGENT_MODEL` is unset, as Claude Code does" }
    SWARM_ROOT { default: "~/.claude", read_by: EVERYONE, panes: Travel::Swarm, hosts: Travel::Swarm,
        doc: "where teams and tasks live (or `--root`)" }
    CLAUDE_CONFIG_DIR { default: "~/.claude", read_by: &[Cli, Claude], hosts: Travel::HostOwn,
        doc: "read when `SWARM_ROOT` is unset, as Claude Code does" }
    SWARM_TEAM { read_by: EVERYONE, panes: Travel::Swarm, hosts: Travel::Swarm,
        doc: "the team a command acts on (or `--team`); default: the only team" }
    SWARM_TMUX_SOCKET { read_by: SWARM, panes: Travel::Swarm, hosts: Travel::Swarm,
        doc: "the tmux server (or `--tmux-socket`); default: the team's, else the one you are in" }
    SWARM_PANES_PER_WINDOW { default: "6", read_by: SPAWNERS,
        doc: "panes in a team's window before it opens another (at least 2)" }
    SWARM_CLAUDE_BIN { default: "claude", read_by: SPAWNERS, hosts: Travel::HostOwn,
        doc: "the Claude Code client for `--engine claude` (or `--claude-bin`); default: `claude` on `PATH`" }
    SWARM_LOCK_TIMEOUT_MS { default: "15000",
        doc: "how long a shared file's lock is waited for before the write fails" }
    SWARM_HEARTBEAT_TIMEOUT_MS { default: "10000",
        doc: "how long a teammate on a PostgreSQL team may go without a heartbeat before it is declared dead (at least 3000; each beats every second)" }
    SWARM_OUTAGE_WAIT_MS { default: "10000",
        doc: "how long a call on a PostgreSQL team waits for its server to come back (a restart, a failover) before it fails" }
    SWARM_DURABLE { default: "1", doc: "`0` skips fsyncs (atomicity never depends on them)" }
    SWARM_STORE_URL { read_by: &[Cli], hosts: Travel::HostOwn,
        doc: "a PostgreSQL URL (no password) where `swarm team create`, `run` and `demo` make new teams (or `--store`); default: files" }
    SWARM_SSH_CONFIG { read_by: SPAWNERS, hosts: Travel::HostOwn,
        doc: "an ssh config file swarm gives `ssh` (`-F`) to reach hosts; default: ssh's own (`~/.ssh/config`)" }
    SWARM_LOG { doc: "what to log, an env-filter such as `swarm=debug`; teammates log to `teams/<team>/logs/<agent>.log`" }
    SWARM_TIMINGS { read_by: &[Cli, Lead, Teammate], hosts: Travel::Here,
        doc: "a file to append each command's timings to, as JSON lines (for `scripts/bench`)" }
    SWARM_FAULT { doc: "a fault to inject at a named point, for the fault campaign (`scripts/bench faults`)" }
    PGHOST { default: "/var/run/postgresql", hosts: Travel::InUrl,
        doc: "a PostgreSQL store's host or socket directory, when its URL names none (as `psql` reads it)" }
    PGPORT { default: "5432", hosts: Travel::InUrl, doc: "its port, likewise" }
    PGUSER { hosts: Travel::InUrl,
        doc: "its user, likewise; default: the login name (`USER`, else `LOGNAME`)" }
    PGDATABASE { hosts: Travel::InUrl, doc: "its database, likewise; default: the user's name" }
    PGPASSWORD { panes: Travel::Secret, hosts: Travel::HostOwn,
        doc: "its password, when the URL has none (never in a file of swarm's, an argv or a log)" }
    PGPASSFILE { default: "~/.pgpass", hosts: Travel::HostOwn,
        doc: "the password file read when neither the URL nor `PGPASSWORD` has one (ignored unless 0600)" }
    PGSSLMODE { default: "prefer", hosts: Travel::InUrl,
        doc: "a PostgreSQL store's TLS when its URL says nothing: `disable`, `prefer`, `require`, `verify-ca` or `verify-full`" }
    PGSSLROOTCERT { default: "~/.postgresql/root.crt", hosts: Travel::HostOwn,
        doc: "the root certificate the `verify-*` modes check the server's against" }
    PGCONNECT_TIMEOUT { default: "5", hosts: Travel::InUrl,
        doc: "seconds to wait for the database server, when the URL says nothing" }
    USER { read_by: EVERYONE, hosts: Travel::HostOwn, doc: "the login name: a PostgreSQL store's default user" }
    LOGNAME { read_by: EVERYONE, hosts: Travel::HostOwn, doc: "read when `USER` is unset" }
    NO_COLOR { doc: "any value turns colour off on a terminal" }
    HOME { read_by: EVERYONE, hosts: Travel::HostOwn,
        doc: "where `~/.claude` is, when neither `SWARM_ROOT` nor `CLAUDE_CONFIG_DIR` is set" }
    PATH { read_by: EVERYONE, hosts: Travel::HostOwn,
        doc: "where tmux, git, the Claude Code client and the tools agents run are found" }
    LANG { read_by: EVERYONE, hosts: Travel::HostOwn, doc: "the locale of the tools agents run" }
    LC_ALL { read_by: EVERYONE, hosts: Travel::HostOwn, doc: "likewise, over `LANG`" }
    HTTPS_PROXY { read_by: MODEL_AND_CLAUDE, panes: Travel::Secret, hosts: Travel::HostOwn,
        doc: "a proxy for the model API (may hold a password, so it travels as a secret); also `https_proxy`, `HTTP_PROXY`, `http_proxy`, `ALL_PROXY`, `all_proxy`" }
    #[allow(non_upper_case_globals)]
    https_proxy { read_by: MODEL_AND_CLAUDE, panes: Travel::Secret, hosts: Travel::HostOwn, doc: "see `HTTPS_PROXY`" }
    HTTP_PROXY { read_by: MODEL_AND_CLAUDE, panes: Travel::Secret, hosts: Travel::HostOwn, doc: "see `HTTPS_PROXY`" }
    #[allow(non_upper_case_globals)]
    http_proxy { read_by: MODEL_AND_CLAUDE, panes: Travel::Secret, hosts: Travel::HostOwn, doc: "see `HTTPS_PROXY`" }
    ALL_PROXY { read_by: MODEL_AND_CLAUDE, panes: Travel::Secret, hosts: Travel::HostOwn, doc: "see `HTTPS_PROXY`" }
    #[allow(non_upper_case_globals)]
    all_proxy { read_by: MODEL_AND_CLAUDE, panes: Travel::Secret, hosts: Travel::HostOwn, doc: "see `HTTPS_PROXY`" }
    NO_PROXY { read_by: MODEL_AND_CLAUDE, panes: Travel::Secret, hosts: Travel::HostOwn, doc: "addresses reached without the proxy; also `no_proxy`" }
    #[allow(non_upper_case_globals)]
    no_proxy { read_by: MODEL_AND_CLAUDE, panes: Travel::Secret, hosts: Travel::HostOwn, doc: "see `NO_PROXY`" }
    SSL_CERT_FILE { read_by: MODEL_AND_CLAUDE, hosts: Travel::HostOwn,
        doc: "a file of root certificates to trust, for a proxy or server that needs them; also `SSL_CERT_DIR`" }
    SSL_CERT_DIR { read_by: MODEL_AND_CLAUDE, hosts: Travel::HostOwn, doc: "see `SSL_CERT_FILE`" }
    NODE_EXTRA_CA_CERTS { read_by: &[Claude], hosts: Travel::HostOwn,
        doc: "more root certificates, for a Claude Code teammate (Node)" }
    REQUESTS_CA_BUNDLE { read_by: &[Hook], hosts: Travel::HostOwn, doc: "root certificates, for Python tools agents run" }
    CURL_CA_BUNDLE { read_by: &[Hook], hosts: Travel::HostOwn, doc: "root certificates, for curl" }
    TMUX { read_by: &[Cli, Lead, Teammate], panes: Travel::Here, hosts: Travel::Here,
        doc: "set by tmux: the server you are in, used when nothing else names one" }
    TMUX_PANE { read_by: &[Cli, Lead, Teammate], panes: Travel::Here, hosts: Travel::Here,
        doc: "set by tmux: the pane you are in" }
    SWARM_AGENT_ID { read_by: EVERYONE, panes: Travel::Swarm, hosts: Travel::Swarm, user_set: false,
        doc: "`<name>@<team>` of the agent a process runs as" }
    SWARM_AGENT_NAME { read_by: EVERYONE, panes: Travel::Swarm, hosts: Travel::Swarm, user_set: false,
        doc: "the agent's name: where it is set, `swarm` acts as that agent only" }
    SWARM_PROJECT_DIR { read_by: &[Teammate, HostTeammate, Hook], panes: Travel::Swarm, hosts: Travel::Swarm,
        user_set: false, doc: "where agent definitions and hooks are read, also from a worktree" }
}

/// The variable named `name`, if the table has it.
pub fn find(name: &str) -> Option<&'static Var> {
    ALL.iter().find(|v| v.name == name)
}

impl Travel {
    /// Copied from the caller's environment (as it is or as a secret).
    pub fn copied(self) -> bool {
        matches!(self, Travel::Env | Travel::Secret)
    }
}

/// How `var` reaches the processes swarm starts, for people.
fn reaches(var: &Var) -> String {
    let here = match var.panes {
        Travel::Here => "not passed on",
        Travel::Env => "passed on",
        Travel::Secret => "passed on as a secret",
        Travel::Swarm | Travel::HostOwn | Travel::InUrl => "set by swarm for each process",
    };
    let hosts = match (var.panes, var.hosts) {
        (a, b) if a == b => "",
        (_, Travel::HostOwn) => "; on a host, the host's own",
        (_, Travel::InUrl) => "; a host gets it in the database URL",
        (_, Travel::Here) => "; not to hosts",
        (_, Travel::Secret) => "; to hosts as a secret",
        (_, Travel::Env) => "; to hosts",
        (_, Travel::Swarm) => "; set by swarm on hosts",
    };
    let replaced = match var.replaced_by {
        "" => String::new(),
        r => format!("; for one teammate, {r} replaces it"),
    };
    format!("{here}{hosts}{replaced}")
}

/// The README's environment section for [`ALL`]: one row per variable.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| variable | default | what it does | to what swarm starts |\n|---|---|---|---|\n",
    );
    for var in ALL {
        let default = match var.default {
            "" if !var.user_set => "set by swarm".to_owned(),
            "" => String::new(),
            d => format!("`{d}`"),
        };
        out.push_str(&format!(
            "| `{}` | {default} | {} | {} |\n",
            var.name,
            var.doc,
            reaches(var)
        ));
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

    /// A credential travels only as a secret, or not at all, wherever it goes.
    #[test]
    fn what_looks_like_a_credential_travels_as_a_secret() {
        for var in ALL {
            if crate::environment::is_secret(var.name) {
                for travel in [var.panes, var.hosts] {
                    assert_ne!(travel, Travel::Env, "{} would travel in the open", var.name);
                }
            }
        }
    }

    /// Only a host's value can be its own or come in its URL; a pane here is given or not.
    #[test]
    fn host_only_ways_are_for_hosts() {
        for var in ALL {
            assert!(
                !matches!(var.panes, Travel::HostOwn | Travel::InUrl),
                "{}",
                var.name
            );
            assert!(!var.read_by.is_empty(), "{} is read by nobody", var.name);
        }
    }
}
