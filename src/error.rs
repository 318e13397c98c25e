//! What a command can fail with: every layer's error, carried as it is (each keeps its
//! message and its kind), and what only the front end fails at: a check that ran and did
//! not pass, and this process's own parts (its runtime, its terminal, its output). The
//! exit code each ends the process with is [`crate::exit`]'s to say.

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Base(#[from] swarm_util::error::Error),

    #[error("{0}")]
    Store(#[from] swarm_store::error::Error),

    #[error("{0}")]
    Model(#[from] swarm_llm::LlmError),

    #[error("{0}")]
    Tmux(#[from] swarm_tmux::TmuxError),

    #[error("{0}")]
    Host(#[from] swarm_hosts::error::Error),

    #[error("{0}")]
    Git(#[from] swarm_git::error::Error),

    #[error("{0}")]
    Team(#[from] swarm_team::error::Error),

    #[error("{0}")]
    Role(#[from] swarm_roles::error::Error),

    #[error("{0}")]
    Demo(#[from] swarm_demo::error::Error),

    #[error("{0}")]
    Web(#[from] swarm_web::error::Error),

    /// A check that ran, and did not pass (`swarm host check`).
    #[error("{0}")]
    CheckFailed(String),

    /// The team's database could not be reached (`swarm store check`).
    #[error("{0}")]
    Unreachable(String),

    /// This process could not do its own part: start its async runtime, set up the
    /// terminal, read the keyboard, print.
    #[error("{0}")]
    Runtime(String),
}
