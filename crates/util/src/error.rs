//! The failures every layer shares: bad input, something not found, a conflict with the
//! current state, a lock not taken in time, I/O, a file that does not parse, a signal.
//! Each crate above has an error of its own for what only it can fail at, with a variant
//! that carries one of these ([`Base`] gives it the same constructors); the binary maps
//! every error to its exit code, in one function (`ui::cli::exit`).
//!
//! Messages are lowercase, one line, name the path or command involved, and where the user
//! can do something about it, say what. The exit codes ([`exit`]) are documented in the
//! README and are a stable interface: scripts branch on them.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Documented process exit codes, one meaning each (the README's table is checked against
/// the binary's mapping of errors to them).
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
    /// A lock could not be taken within the wait limit.
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
    /// A server swarm needs could not be reached or refused it: the team's database, or a
    /// host over ssh.
    pub const UNREACHABLE: u8 = 11;
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

    #[error("interrupted")]
    Interrupted,
}

impl Error {
    /// The same failure for another caller that shared it (one write failing several
    /// requests): the same message and kind.
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
            Error::Symlink { path } => Error::Symlink { path: path.clone() },
            Error::Io {
                action,
                path,
                source,
            } => Error::Io {
                action,
                path: path.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            Error::Corrupt { path, reason } => Error::Corrupt {
                path: path.clone(),
                reason: reason.clone(),
            },
            Error::Interrupted => Error::Interrupted,
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

/// The shared failures' constructors on every error that can carry one: a crate's own
/// error says `Error::usage(…)` as the base one does (`use swarm_util::error::Base as _`).
pub trait Base: From<Error> {
    fn usage(msg: impl Into<String>) -> Self {
        Error::usage(msg).into()
    }
    fn not_found(msg: impl Into<String>) -> Self {
        Error::not_found(msg).into()
    }
    fn conflict(msg: impl Into<String>) -> Self {
        Error::conflict(msg).into()
    }
    fn io(action: &'static str, path: impl AsRef<Path>, source: io::Error) -> Self {
        Error::io(action, path, source).into()
    }
}

impl<T: From<Error>> Base for T {}

/// The first error of type `T` in `e`'s chain (`e` itself, then each source): where a
/// crate's error carries another crate's, through its wrapper variants.
pub fn find<'a, T: std::error::Error + 'static>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut at = Some(e);
    while let Some(e) = at {
        if let Some(found) = e.downcast_ref::<T>() {
            return Some(found);
        }
        at = e.source();
    }
    None
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
