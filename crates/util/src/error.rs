//! The one error type every command returns, and the exit codes it maps to.
//!
//! Messages are lowercase, one line, name the path or command involved, and where the user
//! can do something about it, say what. The exit codes are documented in the README and are
//! a stable interface: scripts branch on them.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Documented process exit codes.
pub mod exit {
    pub const SUCCESS: u8 = 0;
    /// Anything not covered below: I/O failure, a corrupt file we could not move aside.
    pub const FAILURE: u8 = 1;
    /// Bad arguments or input: an invalid name, an oversized message, a bad flag value.
    pub const USAGE: u8 = 2;
    /// A team, member, task, request or file that does not exist.
    pub const NOT_FOUND: u8 = 3;
    /// The operation conflicts with current state: already claimed, blocked, busy,
    /// already exists, teammates still alive, branches the merge queue holds, a process
    /// declared dead writing (fenced).
    pub const CONFLICT: u8 = 4;
    /// A lock could not be taken within the wait limit, or the team's database (a team on
    /// PostgreSQL) could not be reached or refused swarm.
    pub const LOCK_TIMEOUT: u8 = 5;
    /// tmux is missing, its server is gone, or a pane could not be made.
    pub const TMUX: u8 = 6;
    /// The model API failed after retries, or refused the request.
    pub const MODEL: u8 = 7;
    /// A job ran but its check failed (the demo's test command).
    pub const CHECK_FAILED: u8 = 8;
    /// A budget (`--budget-usd`, `--budget-tokens`) ran out: no new model call started, and
    /// the agent or run stopped cleanly with its open tasks back to pending.
    pub const BUDGET: u8 = 9;
    /// `swarm task next` found no task ready to claim: nothing went wrong, there is just
    /// nothing to take now (a script's loop ends or waits on it).
    pub const NO_READY_TASK: u8 = 10;
    /// Interrupted by a signal (Ctrl-C).
    pub const INTERRUPTED: u8 = 130;
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),

    #[error("invalid {kind} name {name:?}: {rule}")]
    InvalidName {
        kind: &'static str,
        name: String,
        rule: String,
    },

    #[error("{0}")]
    NotFound(String),

    #[error("{0}")]
    Conflict(String),

    #[error(
        "failed to lock {path}: still held by another process after {waited:?}; retry, or raise SWARM_LOCK_TIMEOUT_MS"
    )]
    LockTimeout { path: PathBuf, waited: Duration },

    #[error(
        "failed to send: the message was taken for delivery into {path} by a process that has held its lock for {waited:?} since; it will arrive if that process goes on, so do not send it again"
    )]
    SendInDoubt { path: PathBuf, waited: Duration },

    #[error(
        "refusing to go through {path}: it is a symlink, and swarm never reads or writes through one inside its root; replace it with the real file or directory"
    )]
    Symlink { path: PathBuf },

    #[error("failed to {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error("{path} is not valid: {reason}")]
    Corrupt { path: PathBuf, reason: String },

    /// The team's database could not be reached, refused the connection, or is not one
    /// swarm can use (a schema version it does not know). The message names the server,
    /// never a password.
    #[error("{0}")]
    Unavailable(String),

    /// This process of an agent was declared dead (its heartbeat stopped, or a newer
    /// process of the same agent started): the store refuses its writes, and it stops.
    #[error("{0}")]
    Fenced(String),

    #[error("{0}")]
    Tmux(String),

    #[error("{0}")]
    Model(String),

    #[error("{0}")]
    CheckFailed(String),

    #[error("{0}")]
    Budget(String),

    #[error("interrupted")]
    Interrupted,

    #[error("{0}")]
    Other(String),
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::InvalidName { .. } => exit::USAGE,
            Error::NotFound(_) => exit::NOT_FOUND,
            Error::Conflict(_) | Error::Fenced(_) => exit::CONFLICT,
            Error::LockTimeout { .. } | Error::SendInDoubt { .. } | Error::Unavailable(_) => {
                exit::LOCK_TIMEOUT
            }
            Error::Tmux(_) => exit::TMUX,
            Error::Model(_) => exit::MODEL,
            Error::CheckFailed(_) => exit::CHECK_FAILED,
            Error::Budget(_) => exit::BUDGET,
            Error::Interrupted => exit::INTERRUPTED,
            Error::Io { .. } | Error::Corrupt { .. } | Error::Symlink { .. } | Error::Other(_) => {
                exit::FAILURE
            }
        }
    }

    /// The same failure for another caller that shared it (one write failing several
    /// requests): the same message and exit code.
    pub fn copy(&self) -> Error {
        match self {
            Error::Usage(m) => Error::Usage(m.clone()),
            Error::InvalidName { kind, name, rule } => Error::InvalidName {
                kind,
                name: name.clone(),
                rule: rule.clone(),
            },
            Error::NotFound(m) => Error::NotFound(m.clone()),
            Error::Conflict(m) => Error::Conflict(m.clone()),
            Error::LockTimeout { path, waited } => Error::LockTimeout {
                path: path.clone(),
                waited: *waited,
            },
            Error::SendInDoubt { path, waited } => Error::SendInDoubt {
                path: path.clone(),
                waited: *waited,
            },
            Error::Unavailable(m) => Error::Unavailable(m.clone()),
            Error::Fenced(m) => Error::Fenced(m.clone()),
            Error::Tmux(m) => Error::Tmux(m.clone()),
            Error::Model(m) => Error::Model(m.clone()),
            Error::CheckFailed(m) => Error::CheckFailed(m.clone()),
            Error::Budget(m) => Error::Budget(m.clone()),
            Error::Interrupted => Error::Interrupted,
            other => Error::Other(other.to_string()),
        }
    }

    /// An I/O error with the action ("read", "create", ...) and the path it concerned.
    pub fn io(action: &'static str, path: impl AsRef<Path>, source: io::Error) -> Error {
        Error::Io {
            action,
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    pub fn usage(msg: impl Into<String>) -> Error {
        Error::Usage(msg.into())
    }

    pub fn not_found(msg: impl Into<String>) -> Error {
        Error::NotFound(msg.into())
    }

    pub fn conflict(msg: impl Into<String>) -> Error {
        Error::Conflict(msg.into())
    }
}

/// Attaches an action and a path to `std::io::Result`s.
pub trait IoContext<T> {
    fn ctx(self, action: &'static str, path: impl AsRef<Path>) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn ctx(self, action: &'static str, path: impl AsRef<Path>) -> Result<T> {
        self.map_err(|e| Error::io(action, path, e))
    }
}
