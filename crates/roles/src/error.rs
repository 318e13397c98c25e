//! What can go wrong with an agent in a pane: what fails underneath (the shared failures,
//! the store, the team's machinery, the model's API), and what only a role fails at: an
//! agent that ran out of turns or that its model refused, and this process's own parts.

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How the binary maps an error to the exit code it ends with, given at the edge: a role
/// records the code its process ends with before it ends.
pub type ExitCode = fn(&(dyn std::error::Error + 'static)) -> u8;

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

    /// The model's API (or the agent's configuration of it: a missing key, a bad URL).
    #[error("{0}")]
    Model(#[from] swarm_llm::LlmError),

    /// The agent ended its work without an answer: out of turns, or its model refused.
    #[error("{0}")]
    Unfinished(String),

    /// This process could not do its own part: start its async runtime or heartbeat,
    /// listen for a signal, finish a step that panicked.
    #[error("{0}")]
    Runtime(String),
}

impl Error {
    /// The same failure for another caller that shared it: the same message and kind.
    pub fn copy(&self) -> Error {
        match self {
            Error::Base(e) => Error::Base(e.copy()),
            Error::Store(e) => Error::Store(e.copy()),
            Error::Team(e) => Error::Team(e.copy()),
            Error::Git(e) => Error::Git(e.copy()),
            Error::Model(e) => Error::Model(e.clone()),
            Error::Unfinished(m) => Error::Unfinished(m.clone()),
            Error::Runtime(m) => Error::Runtime(m.clone()),
        }
    }

    /// Why the team's database cannot serve now, when it is away or busy: what an agent's
    /// loop waits out.
    pub fn away(&self) -> Option<&str> {
        swarm_util::error::find::<swarm_store::error::Error>(self)?.away()
    }
}
