//! The client for a configuration: the one place that knows which client speaks for each
//! provider. The scripted model server speaks the Anthropic protocol.

use crate::anthropic::AnthropicClient;
use crate::config::{LlmConfig, Provider};
use crate::openai::OpenAiClient;
use crate::types::{LlmClient, LlmError};

/// The client for a configuration.
pub fn build_client(config: &LlmConfig) -> Result<Box<dyn LlmClient>, LlmError> {
    Ok(match config.provider {
        Provider::Anthropic | Provider::Scripted => Box::new(AnthropicClient::new(config)?),
        Provider::OpenAi => Box::new(OpenAiClient::new(config)?),
    })
}
