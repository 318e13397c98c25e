//! The teammate runtime: one agent living in a team through its mailbox and the task list.

pub mod inbox;
pub mod runtime;

pub use runtime::{TeammateOptions, run};
