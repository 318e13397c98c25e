//! What can go wrong with the demo: what fails underneath (the shared failures, the team
//! and its store, git), the job's own git or check failing, and this process's own parts.

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Base(#[from] swarm_util::error::Error),

    #[error("{0}")]
    Store(#[from] swarm_store::error::Error),

    #[error("{0}")]
    Team(#[from] swarm_team::error::Error),

    #[error("{0}")]
    Git(#[from] swarm_git::error::Error),

    /// The job ran, and its check did not pass.
    #[error("{0}")]
    CheckFailed(String),

    /// Making the job's repository failed (a git command it runs refused).
    #[error("{0}")]
    Job(String),

    /// This process could not do its own part: read its built-in script, start its async
    /// runtime.
    #[error("{0}")]
    Runtime(String),
}
