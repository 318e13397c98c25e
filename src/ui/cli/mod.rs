//! The `swarm` command line: argument types, the dispatcher, and one file per command group.

pub mod agent;
mod agents;
pub mod args;
mod context;
mod dispatch;
mod message;
mod model_server;
mod ops;
mod output;
mod run;
mod task;
mod team;
mod watch;

pub use dispatch::main;
