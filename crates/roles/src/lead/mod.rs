//! `swarm lead`: the dispatcher loop that owns a team's live state, and the lead agent
//! that turns a goal into tasks and teammates.

pub mod agent;
pub mod dispatcher;
mod ending;
mod merging;
pub mod start;
