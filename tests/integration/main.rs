//! swarm's integration tests: the real binaries, real files, real tmux, real HTTP on
//! loopback. One test binary; each module covers one capability.

mod harness;

mod agents;
mod approvals;

mod concurrency;
mod engine;
mod hooks;
mod layers;
mod llm;
mod main_job;
mod store_cli;
mod team_tmux;
mod teammate;
mod tmux;
mod watch;
mod worktrees;
