//! [`TmuxError`], what went wrong talking to tmux, said with the advice shown to the user;
//! and [`classify`], which reads it from a failed command's stderr.
//!
//! Invariants: a failure is classified from tmux's stderr alone, against the needle tables
//! below (measured on tmux 3.3a): a dead or missing server first, then a duplicate session,
//! then a target that is gone, then no room to split; anything else is `Failed`. The stderr
//! kept in an error is trimmed and folded onto one line. The binary maps `SessionExists`
//! to a conflict's exit code, `InvalidSpec` to a usage error's, the rest to tmux's.

use std::io;
use std::time::Duration;

/// What went wrong talking to tmux, classified from its exit and stderr.
#[derive(Debug, thiserror::Error)]
pub enum TmuxError {
    #[error(
        "failed to run tmux: it is not installed or not on PATH; install tmux 3.2 or newer (e.g. `apt install tmux`)"
    )]
    NotInstalled,

    /// The server is not running: its socket is missing (`error connecting to`), refuses
    /// connections because the server died or was killed (`no server running on`), or it
    /// died while the command ran (`server exited unexpectedly`).
    #[error(
        "failed to `{command}`: no tmux server is running on {server} (it exited or was killed); start the team again"
    )]
    NoServer {
        command: String,
        server: String,
        stderr: String,
    },

    /// The pane, window or session named by id no longer exists.
    #[error(
        "failed to `{command}`: {stderr}; it was closed or killed, list the team's panes again"
    )]
    TargetGone { command: String, stderr: String },

    /// No room to split: `no space for new pane`, `pane too small`.
    #[error(
        "failed to `{command}`: {stderr}; make the terminal larger, or put fewer panes in each window"
    )]
    TooSmall { command: String, stderr: String },

    /// `new-session -s NAME` found a session with that exact name.
    #[error(
        "failed to create tmux session {name:?}: a session with that name already exists; attach to it, or end it with `tmux kill-session -t ={name}`"
    )]
    SessionExists { name: String },

    #[error("failed to `{command}`: {stderr}")]
    Failed { command: String, stderr: String },

    #[error(
        "failed to `{command}`: tmux did not answer within {}s; the tmux server may be hung, end it with kill-server",
        after.as_secs()
    )]
    Timeout { command: String, after: Duration },

    #[error("failed to run `{command}`: {source}")]
    Io {
        command: String,
        #[source]
        source: io::Error,
    },

    #[error("failed to `{command}`: unexpected output {output:?}; swarm needs tmux 3.2 or newer")]
    BadOutput { command: String, output: String },

    /// A [`PaneSpec`] that cannot be started safely.
    ///
    /// [`PaneSpec`]: crate::PaneSpec
    #[error("invalid pane command: {0}")]
    InvalidSpec(String),
}

impl TmuxError {
    /// The same failure for another caller that shared it: the same message and kind.
    pub fn copy(&self) -> TmuxError {
        match self {
            TmuxError::NotInstalled => TmuxError::NotInstalled,
            TmuxError::NoServer {
                command,
                server,
                stderr,
            } => TmuxError::NoServer {
                command: command.clone(),
                server: server.clone(),
                stderr: stderr.clone(),
            },
            TmuxError::TargetGone { command, stderr } => TmuxError::TargetGone {
                command: command.clone(),
                stderr: stderr.clone(),
            },
            TmuxError::TooSmall { command, stderr } => TmuxError::TooSmall {
                command: command.clone(),
                stderr: stderr.clone(),
            },
            TmuxError::SessionExists { name } => TmuxError::SessionExists { name: name.clone() },
            TmuxError::Failed { command, stderr } => TmuxError::Failed {
                command: command.clone(),
                stderr: stderr.clone(),
            },
            TmuxError::Timeout { command, after } => TmuxError::Timeout {
                command: command.clone(),
                after: *after,
            },
            TmuxError::Io { command, source } => TmuxError::Io {
                command: command.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            TmuxError::BadOutput { command, output } => TmuxError::BadOutput {
                command: command.clone(),
                output: output.clone(),
            },
            TmuxError::InvalidSpec(m) => TmuxError::InvalidSpec(m.clone()),
        }
    }

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
    fn errors_say_what_to_do_on_one_line() {
        let e = classify("tmux -L s list-panes -a", "no server running on /x", "s");
        let msg = e.to_string();
        assert!(
            msg.starts_with("failed to `tmux -L s list-panes -a`"),
            "{msg}"
        );
        assert!(msg.contains("start the team again"), "{msg}");
        assert!(!msg.contains('\n'));
        assert!(TmuxError::NotInstalled.to_string().contains("install tmux"));
        let e = classify("c", "no space for new pane", "s");
        assert!(e.to_string().contains("make the terminal larger"), "{e}");
    }
}
