//! swarm: teams of AI coding agents side by side in tmux, coordinating through Claude
//! Code's own on-disk formats.
//!
//! The modules are layers, listed here from the bottom up; each uses only the ones above
//! it in this list (CONTRIBUTING.md has the picture, and `tests/integration/layers.rs`
//! checks it).

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
