//! A run: a team made for a goal, its lead started and waited for ([`run`]), what a
//! waiting `swarm run` tells as the team works ([`progress`]), and the final report
//! ([`report`]).

pub mod progress;
pub mod report;
pub mod run;
