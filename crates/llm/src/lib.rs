//! Talking to language models, both ways: one trait, an Anthropic Messages API client,
//! an OpenAI-compatible client, retries and the rate-limit gate a team shares, budgets, and
//! the shared conversation types. (The scripted model server that stands in for a real API
//! in tests and the demo is the `swarm-model-server` crate.)
//!
//! Knows nothing of files, teams or tmux: what a team shares (the budget ledger, the
//! rate-limit gate) comes through seams in `swarm_util::meter` that each store backend
//! implements. Uses `util`.

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
