//! The `swarm` command line: the dispatcher, the table of commands (`command`), one file
//! per command group holding its clap arguments beside the code that runs them, and the
//! parts they share below them (`context`, `options`, `identity`, `input`, `output`,
//! `style`, `logging`). Each command parses, calls the library, and prints.
//!
//! `claude_argv` reads Claude Code's teammate command line as `swarm teammate`'s, before
//! parsing.
//!
//! Imports point one way: `dispatch` → `command` and `authorize` → the command files →
//! the shared parts; no file imports one that imports it back.

mod agent;
mod agents;
mod approvals;
mod authorize;
mod claude_argv;
mod command;
mod completions;
mod config;
mod context;
mod dispatch;
mod follow;
mod host;
mod identity;
mod input;
mod lead;
mod logging;
mod merge;
mod message;
mod model_server;
mod options;
mod output;
mod reap;
mod resume;
mod run;
mod run_plan;
mod serve;
mod shutdown;
mod spawn;
mod status;
mod store;
mod style;
mod task;
mod team;
mod watch;

pub use dispatch::main;
