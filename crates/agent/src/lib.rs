//! An agent: the model loop and its host trait, the general tools (Bash, Read, Write,
//! Edit, Glob, Grep), prompts and what a pane shows.
//!
//! Knows nothing of teams or tmux: team tools plug into the engine from `team`. Uses
//! `config`, `llm` and `util`.

pub mod bash;
pub mod compaction;
pub mod display;
pub mod engine;
pub mod fs_tools;
pub mod prompt;
pub mod tool_context;
pub mod tools;
pub mod transcript;
