//! swarm: teams of AI coding agents side by side in tmux, coordinating through Claude
//! Code's own on-disk formats. See CONTRIBUTING.md for the architecture.

pub mod agent;
pub mod approvals;
pub mod atomic;
pub mod cli;
pub mod clock;
pub mod demo;
pub mod error;
pub mod inherit;
pub mod json;
pub mod lead;
pub mod lead_agent;
pub mod llm;
pub mod lock;
pub mod mailbox;
pub mod model_server;
pub mod names;
pub mod process;
pub mod protocol;
pub mod report;
pub mod root;
pub mod roster;
pub mod shutdown;
pub mod spawn;
pub mod state;
pub mod status;
pub mod supervisor;
pub mod tasks;
pub mod team_window;
pub mod teammate;
pub mod tmux;
pub mod tui;
pub mod watch;
