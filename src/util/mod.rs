//! The bottom layer: what every other layer needs and nothing swarm-specific. The one
//! error type and its exit codes, the environment read once, replacing a file atomically,
//! cross-process locks, JSON as JavaScript writes it, the clock, facts about processes,
//! named fault points for tests,
//! watching directories, and others' text made safe for a terminal.
//!
//! Uses nothing else of swarm's.

pub mod atomic;
pub mod clock;
pub mod environment;
pub mod error;
pub mod fault;
pub mod json;
pub mod lock;
pub mod process;
pub mod text;
pub mod watcher;
