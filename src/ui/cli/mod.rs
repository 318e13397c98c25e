//! The `swarm` command line: argument types, the dispatcher, and one file per command
//! group. Each command parses, calls the library, and prints.

pub mod agent;
mod agents;
mod approvals;
pub mod args;
mod completions;
mod config;
mod context;
pub(crate) mod dispatch;
mod identity;
mod input;
mod lead;
mod merge;
mod message;
pub(crate) mod model_server;
mod output;
mod resume;
mod run;
mod serve;
mod shutdown;
mod spawn;
mod status;
mod style;
mod task;
mod team;
mod watch;

pub use dispatch::main;
