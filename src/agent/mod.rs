//! An agent: the model loop, its tools, permissions, prompts and display.

pub mod bash;
pub mod display;
pub mod engine;
pub mod fs_tools;
pub mod permissions;
pub mod prompt;
pub mod solo;
pub mod team_tools;
pub mod tools;
