//! `swarm demo`: a real team on a small real job, with the scripted model standing in for
//! an LLM.
//!
//! Uses `roles`, `team` and everything below.

pub mod job;
pub mod run;
