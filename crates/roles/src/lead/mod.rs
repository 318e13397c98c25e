//! `swarm lead`: the dispatcher loop that owns a team's live state, and the lead agent
//! that turns a goal into tasks and teammates.

pub mod agent;
pub mod dispatcher;
mod ending;
mod host;
mod merging;
pub mod options;
mod prompt;
pub mod start;
