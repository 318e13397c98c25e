//! What can go wrong with a team's git: the shared failures ([`Error::Base`]), the team's
//! store and a teammate's host failing underneath, and git itself (or the project's
//! check) failing to run or refusing.

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Base(#[from] swarm_util::error::Error),

    #[error("{0}")]
    Store(#[from] swarm_store::error::Error),

    #[error("{0}")]
    Host(#[from] swarm_hosts::error::Error),

    /// git, or the project's check, could not be run or failed: the command and what it
    /// said.
    #[error("{0}")]
    Git(String),
}

impl Error {
    /// The same failure for another caller that shared it: the same message and kind.
    pub fn copy(&self) -> Error {
        match self {
            Error::Base(e) => Error::Base(e.copy()),
            Error::Store(e) => Error::Store(e.copy()),
            Error::Host(e) => Error::Host(e.copy()),
            Error::Git(m) => Error::Git(m.clone()),
        }
    }
}
