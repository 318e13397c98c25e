//! What the user configured: where the project and the user's settings are, agent
//! definitions (Markdown with frontmatter), hooks, permission modes and allow rules, and
//! the names and kinds of the tools agents call.
//!
//! Uses `llm` (provider names), `store` (the colour palette) and `util`.

pub mod agents;
pub mod claude_settings;
pub mod frontmatter;
pub mod hooks;
pub mod permissions;
pub mod profile;
pub mod project;
pub mod settings;
pub mod teams;
pub mod tools;
