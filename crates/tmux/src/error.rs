//! [`TmuxError`], what went wrong talking to tmux; [`classify`], which reads it from a failed
//! command's stderr; and its conversion into swarm's [`Error`], with the advice shown to the
//! user.
//!
//! Invariants: a failure is classified from tmux's stderr alone, against the needle tables
//! below (measured on tmux 3.3a): a dead or missing server first, then a duplicate session,
//! then a target that is gone, then no room to split; anything else is `Failed`. The stderr
//! kept in an error is trimmed and folded onto one line. Every variant maps to one exit
//! code: `SessionExists` is a conflict, `InvalidSpec` a usage error, the rest are tmux
//! errors.

use std::io;
use std::time::Duration;

use swarm_util::error::Error;

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
    ///
    /// [`PaneSpec`]: crate::PaneSpec
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

    /// `switch-client` (or another command that needs one) found no client of the server
    /// to act on: nobody is attached to it, as in a session a script started.
    pub fn is_no_client(&self) -> bool {
        matches!(self, TmuxError::Failed { stderr, .. } if stderr.contains("no current client"))
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(e.exit_code(), swarm_util::error::exit::TMUX);
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
        assert_eq!(e.exit_code(), swarm_util::error::exit::TMUX);
        let e: Error = classify("c", "duplicate session: x", "s").into();
        assert_eq!(e.exit_code(), swarm_util::error::exit::CONFLICT);
        let e: Error = TmuxError::InvalidSpec("argv is empty".into()).into();
        assert_eq!(e.exit_code(), swarm_util::error::exit::USAGE);
    }
}
