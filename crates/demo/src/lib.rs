//! `swarm demo`: a real team on a small real job, with the scripted model standing in for
//! an LLM.
//!
//! Uses `team`, `git`, `model-server`, `config`, `store`, `llm` and `util`.

pub mod error;
pub mod job;
pub mod run;
