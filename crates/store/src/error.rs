//! What can go wrong with a team's shared state, whatever its backend: the shared failures
//! of files, locks and names ([`Error::Base`]), and what only the store fails at: a send
//! whose fate is in another process's hands, the team's database away, this process
//! declared dead, a pointer or a lead key that cannot be read.
//!
//! Callers decide on these cases: an agent's loop waits out [`Error::Unavailable`] and
//! stops on [`Error::Fenced`]; a sender never sends again after [`Error::SendInDoubt`].

use std::path::PathBuf;
use std::time::Duration;

use swarm_util::error::Error as BaseError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A failure every layer shares (bad input, not found, conflict, a lock not taken in
    /// time, I/O, a file that does not parse).
    #[error("{0}")]
    Base(#[from] swarm_util::error::Error),

    /// The message was taken for delivery by a process that still holds the inbox's lock:
    /// it arrives if that process goes on, so it must not be sent again.
    #[error(
        "failed to send: the message was taken for delivery into {path} by a process that has held its lock for {waited:?} since; it will arrive if that process goes on, so do not send it again"
    )]
    SendInDoubt { path: PathBuf, waited: Duration },

    /// The team's database could not be reached, refused the connection, or is not one
    /// swarm can use (a schema version it does not know, missing rights). The message names
    /// the server, never a password.
    #[error("{0}")]
    Unavailable(String),

    /// A lock in the team's database stayed held longer than the wait limit: like
    /// [`swarm_util::error::Error::LockTimeout`] for a file, and, like an outage, something an
    /// agent's loop waits out.
    #[error("{0}")]
    Busy(String),

    /// The team's database refused an operation for another reason than being away: it
    /// rolled the transaction back, or holds what this swarm cannot read.
    #[error("{0}")]
    Database(String),

    /// This process of an agent was declared dead (its heartbeat stopped, or a newer
    /// process of the same agent started): the store refuses its writes, and it stops.
    #[error("{0}")]
    Fenced(String),

    /// A team's pointer to its database server does not parse.
    #[error(
        "failed to read the team's store pointer {path}: {reason}; write {{\"url\": \"postgres://…\"}} or delete the team"
    )]
    Pointer { path: PathBuf, reason: String },

    /// A team on a database server, opened by a program that was given no way to open one.
    #[error(
        "failed to open team '{team}': it is stored on a database server ({pointer}), which this program cannot open; use the swarm binary"
    )]
    NoServers { team: String, pointer: PathBuf },

    /// The team's lead key could not be made or read.
    #[error("{0}")]
    LeadKey(String),
}

impl Error {
    /// The shared failure this is, if it is one.
    pub fn base(&self) -> Option<&swarm_util::error::Error> {
        match self {
            Error::Base(e) => Some(e),
            _ => None,
        }
    }

    /// Why the team's database cannot serve now, when it is away or busy: an agent's loop
    /// waits for it rather than failing.
    pub fn away(&self) -> Option<&str> {
        match self {
            Error::Unavailable(why) | Error::Busy(why) => Some(why),
            _ => None,
        }
    }

    /// Whether what was asked for does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Base(BaseError::NotFound(_)))
    }

    /// Whether the input was refused (a bad name, value or request).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::Base(BaseError::Usage(_) | BaseError::InvalidName { .. })
        )
    }

    /// Whether it conflicts with the state things are in (taken, decided, exists, fenced).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Base(BaseError::Conflict(_)) | Error::Fenced(_))
    }

    /// The same failure for another caller that shared it (one write failing several
    /// requests): the same message and kind.
    pub fn copy(&self) -> Error {
        match self {
            Error::Base(e) => Error::Base(e.copy()),
            Error::SendInDoubt { path, waited } => Error::SendInDoubt {
                path: path.clone(),
                waited: *waited,
            },
            Error::Unavailable(m) => Error::Unavailable(m.clone()),
            Error::Busy(m) => Error::Busy(m.clone()),
            Error::Database(m) => Error::Database(m.clone()),
            Error::Fenced(m) => Error::Fenced(m.clone()),
            Error::Pointer { path, reason } => Error::Pointer {
                path: path.clone(),
                reason: reason.clone(),
            },
            Error::NoServers { team, pointer } => Error::NoServers {
                team: team.clone(),
                pointer: pointer.clone(),
            },
            Error::LeadKey(m) => Error::LeadKey(m.clone()),
        }
    }
}
