//! What can go wrong with a team at work: what fails underneath (the shared failures, the
//! store, tmux, a host, git), and what only a team fails at: a pane that is not what it
//! should be, a step on a teammate's host refused, a process that outlived SIGKILL, a
//! run's lead gone without finishing.

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Base(#[from] swarm_util::error::Error),

    #[error("{0}")]
    Store(#[from] swarm_store::error::Error),

    #[error("{0}")]
    Tmux(#[from] swarm_tmux::TmuxError),

    #[error("{0}")]
    Host(#[from] swarm_hosts::error::Error),

    #[error("{0}")]
    Git(#[from] swarm_git::error::Error),

    /// The team's panes are not as they should be (a pane that stays open, a window that is
    /// gone, a session tmux does not name), or one could not be shown here.
    #[error("{0}")]
    Pane(String),

    /// A step on a teammate's host ran and refused (linking the team there, forgetting it).
    #[error("{0}")]
    OnHost(String),

    /// A teammate's process outlived SIGKILL: a person has to look.
    #[error("{0}")]
    StillRunning(String),

    /// A run's lead did not start, or stopped without finishing: what its log and pane said.
    #[error("{0}")]
    LeadGone(String),

    /// Something the lead's machine would run was not written by the lead (a launch record
    /// without the lead's valid signature): it is not run.
    #[error("{0}")]
    Unsigned(String),

    /// A task hook refused a task that then could not be taken back.
    #[error("{0}")]
    Hook(String),

    /// This process could not do its own part: start its async runtime, listen for a
    /// signal, finish a step that panicked.
    #[error("{0}")]
    Runtime(String),
}

impl Error {
    /// The shared failure this is, wherever it came from, if it is one.
    pub fn base(&self) -> Option<&swarm_util::error::Error> {
        match self {
            Error::Base(e) => Some(e),
            Error::Store(e) => e.base(),
            _ => None,
        }
    }

    /// The same failure for another caller that shared it (one write failing several
    /// spawns): the same message and kind.
    pub fn copy(&self) -> Error {
        match self {
            Error::Base(e) => Error::Base(e.copy()),
            Error::Store(e) => Error::Store(e.copy()),
            Error::Tmux(e) => Error::Tmux(e.copy()),
            Error::Host(e) => Error::Host(e.copy()),
            Error::Git(e) => Error::Git(e.copy()),
            Error::Pane(m) => Error::Pane(m.clone()),
            Error::OnHost(m) => Error::OnHost(m.clone()),
            Error::StillRunning(m) => Error::StillRunning(m.clone()),
            Error::LeadGone(m) => Error::LeadGone(m.clone()),
            Error::Unsigned(m) => Error::Unsigned(m.clone()),
            Error::Hook(m) => Error::Hook(m.clone()),
            Error::Runtime(m) => Error::Runtime(m.clone()),
        }
    }
}
