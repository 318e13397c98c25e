//! Talking to language models, both ways: one trait, an Anthropic Messages API client,
//! an OpenAI-compatible client, retries and the rate-limit gate a team shares, budgets, the
//! shared conversation types, and the scripted model server that stands in for a real API
//! in tests and the demo.
//!
//! Knows nothing of teams, files or tmux. Uses only `util`.

pub mod anthropic;
pub mod budget;
pub mod client;
pub mod config;
pub mod http;
pub mod models;
pub mod openai;
pub mod rate_gate;
pub mod retry;
pub mod sse;
pub mod types;

pub use client::build_client;
pub use config::{ApiKey, LlmConfig, LlmFlags, Provider, estimate_cost_usd};
pub use http::install_crypto_provider;
pub use models::context_window;
pub use types::*;
