//! What can go wrong reaching a host: the shared failures of the registry's file
//! ([`Error::Base`]), a host ssh cannot reach or that does not answer in time (callers
//! treat it as the host being away: [`Error::Unreachable`]), and ssh itself failing to run.

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Base(#[from] swarm_util::error::Error),

    /// The host could not be reached over ssh (ssh's own exit code 255), or a command there
    /// did not answer within its time limit.
    #[error("{0}")]
    Unreachable(String),

    /// ssh could not be started or waited for on this machine.
    #[error("{0}")]
    Ssh(String),
}

impl Error {
    /// The same failure for another caller that shared it: the same message and kind.
    pub fn copy(&self) -> Error {
        match self {
            Error::Base(e) => Error::Base(e.copy()),
            Error::Unreachable(m) => Error::Unreachable(m.clone()),
            Error::Ssh(m) => Error::Ssh(m.clone()),
        }
    }
}
