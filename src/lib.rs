//! swarm: teams of AI coding agents side by side in tmux, coordinating through Claude
//! Code's own on-disk formats.
//!
//! Each module is a layer and uses only the layers below it: the picture is in
//! CONTRIBUTING.md (bottom up: util, llm, store, config, agent, tmux, team, roles, demo,
//! ui), and `tests/integration/layers.rs` checks it.

pub mod agent;
pub mod config;
pub mod demo;
pub mod llm;
pub mod roles;
pub mod store;
pub mod team;
pub mod tmux;
pub mod ui;
pub mod util;
