//! Talking to language models: one trait, an Anthropic Messages API client, an
//! OpenAI-compatible client, retries, and the shared conversation types.

pub mod sse;
pub mod types;

pub use types::*;
