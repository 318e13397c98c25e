//! The teammate runtime: one agent living in a team through its mailbox and the task list.
//! [`lifecycle`] is its life from start to exit, `runtime` what it holds while it lives,
//! `work` the loop that feeds it mail and tasks, `host` what it does when the agent loop
//! asks (permissions, plan approval), [`inbox`] its mailbox seen from inside, `active` its
//! `isActive` in the roster.

mod active;
mod host;
pub mod inbox;
pub mod lifecycle;
pub mod options;
mod runtime;
mod work;

pub use lifecycle::{run, start};
pub use options::{TeammateFlags, TeammateOptions};
