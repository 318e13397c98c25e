//! The bottom layer: what every other layer needs. The error kinds every layer shares (each
//! crate adds its own; exit codes are the binary's), team and agent names, what model calls
//! cost and the seams that keep it (`meter`), the environment read once, reads with a size limit, replacing a file atomically,
//! cross-process locks, JSON as JavaScript writes it, the clock, facts about processes,
//! blocking work done for many items at once,
//! watching directories, refusing symlinks under the root, others' text made safe for a
//! terminal, text tables in colour, and named fault points for tests.
//!
//! Uses nothing else of swarm's.

pub mod atomic;
pub mod bounded;
pub mod clock;
pub mod environment;
pub mod error;
pub mod fault;
pub mod json;
pub mod life_lock;
pub mod lock;
mod lock_record;
pub mod meter;
pub mod names;
pub mod no_symlinks;
pub mod parallel;
pub mod process;
pub mod table;
pub mod text;
pub mod vars;
pub mod watcher;
