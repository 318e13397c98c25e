//! What can go wrong serving: what fails underneath (the shared failures, the store, the
//! team's machinery), and the server's own parts: listening, TLS, webhooks, its runtime.
//! Requests fail as [`crate::errors::ApiError`]s, which carry an HTTP status.

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Base(#[from] swarm_util::error::Error),

    #[error("{0}")]
    Store(#[from] swarm_store::error::Error),

    #[error("{0}")]
    Team(#[from] swarm_team::error::Error),

    /// The server could not listen, load its TLS certificate, build its webhook client or
    /// start its runtime.
    #[error("{0}")]
    Serve(String),
}
