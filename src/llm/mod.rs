//! Talking to language models: one trait, an Anthropic Messages API client, an
//! OpenAI-compatible client, retries, and the shared conversation types.

pub mod anthropic;
pub mod config;
pub mod http;
pub mod openai;
pub mod retry;
pub mod sse;
pub mod types;

pub use config::{ApiKey, LlmConfig, LlmFlags, Provider, build_client, estimate_cost_usd};
pub use http::install_crypto_provider;
pub use types::*;
