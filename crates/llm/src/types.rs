//! The conversation model every client speaks, shaped like the Anthropic Messages API.
//!
//! Content blocks serialise exactly as the Messages API expects them, so an assistant turn
//! can be sent back verbatim: thinking blocks keep their signature byte for byte, and block
//! types this version does not know are kept as raw JSON ([`ContentBlock::Other`]) rather
//! than dropped. The OpenAI-compatible client converts to and from this model.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// The text blocks joined by newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        is_error: bool,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    /// A block type this version does not know, kept verbatim.
    Other(Value),
}

/// The one key of a tool call's input whose arguments were not valid JSON (a call that
/// `max_tokens` cut short, a local server's slip): `{"_invalid_arguments": "<raw text>"}`.
/// Every client makes this shape, so the agent loop can answer such a call with a tool
/// error instead of running it, and a client sending the turn back can restore the text.
pub const INVALID_ARGUMENTS_KEY: &str = "_invalid_arguments";

/// A tool call's input from the raw text of its arguments: `{}` when empty, the text under
/// [`INVALID_ARGUMENTS_KEY`] when it does not parse.
pub(crate) fn parse_tool_input(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return serde_json::json!({});
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v) => v,
        Err(_) => serde_json::json!({ INVALID_ARGUMENTS_KEY: raw }),
    }
}

/// The wire shape of the known blocks; `ContentBlock` adds the verbatim fallback.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum KnownBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
}

impl Serialize for ContentBlock {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let known = match self.clone() {
            ContentBlock::Other(v) => return v.serialize(s),
            ContentBlock::Text { text } => KnownBlock::Text { text },
            ContentBlock::ToolUse { id, name, input } => KnownBlock::ToolUse { id, name, input },
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => KnownBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            },
            ContentBlock::Thinking {
                thinking,
                signature,
            } => KnownBlock::Thinking {
                thinking,
                signature,
            },
            ContentBlock::RedactedThinking { data } => KnownBlock::RedactedThinking { data },
        };
        known.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ContentBlock, D::Error> {
        let value = Value::deserialize(d)?;
        Ok(match KnownBlock::deserialize(&value) {
            Ok(KnownBlock::Text { text }) => ContentBlock::Text { text },
            Ok(KnownBlock::ToolUse { id, name, input }) => {
                ContentBlock::ToolUse { id, name, input }
            }
            Ok(KnownBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            }) => ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            },
            Ok(KnownBlock::Thinking {
                thinking,
                signature,
            }) => ContentBlock::Thinking {
                thinking,
                signature,
            },
            Ok(KnownBlock::RedactedThinking { data }) => ContentBlock::RedactedThinking { data },
            Err(_) => ContentBlock::Other(value),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub model: String,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
    /// Passed through as the `thinking` field when set.
    pub thinking: Option<Value>,
    /// The calling agent's name; sent as `x-swarm-agent` to the scripted model server only.
    pub agent: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    PauseTurn,
    Refusal,
    ModelContextWindowExceeded,
    #[serde(untagged)]
    Other(String),
}

use swarm_util::meter::Usage;

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub content: Vec<ContentBlock>,
    pub stop_reason: StopReason,
    pub usage: Usage,
    pub model: String,
    pub request_id: Option<String>,
}

/// What a streaming client reports while a response arrives, for live display.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    ThinkingDelta(String),
    ToolUseStart {
        id: String,
        name: String,
    },
    ToolInputDelta(String),
    BlockStop,
    /// A failed attempt that will be retried after `delay`.
    Retry {
        attempt: u32,
        delay: Duration,
        reason: String,
    },
    /// Waiting for the provider's rate limit (this agent's or a teammate's) until
    /// `until_ms` (epoch milliseconds) before the next attempt.
    RateLimited {
        until_ms: i64,
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// An HTTP error status, or an `error` event inside a 200 stream.
    #[error("model API error {status} {kind}: {message}{}", request_id.as_deref().map(|r| format!(" (request-id {r})")).unwrap_or_default())]
    Api {
        status: u16,
        kind: String,
        message: String,
        request_id: Option<String>,
    },
    #[error("failed to connect to the model API: {0}")]
    Connection(String),
    #[error("the model API stream went silent for {0:?}")]
    IdleTimeout(Duration),
    #[error("the model API stream was malformed: {0}")]
    Stream(String),
    #[error("the model request was cancelled")]
    Cancelled,
    #[error("{0}")]
    Config(String),
    /// A budget is spent, so the call was not made. Final: never retried.
    #[error("budget exhausted: {0}")]
    BudgetExhausted(String),
}

pub type LlmFuture<'a> = Pin<Box<dyn Future<Output = Result<Response, LlmError>> + Send + 'a>>;

/// A model behind an HTTP API. Implementations retry transient failures themselves and
/// report each retry as a [`StreamEvent::Retry`].
pub trait LlmClient: Send + Sync {
    fn complete<'a>(
        &'a self,
        request: &'a Request,
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
        cancel: &'a CancellationToken,
    ) -> LlmFuture<'a>;

    /// For logs and `swarm status`: "anthropic claude-sonnet-4-5 at https://...".
    fn describe(&self) -> String;
}

impl fmt::Debug for dyn LlmClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn invalid_tool_json_is_kept_raw() {
        assert_eq!(parse_tool_input(""), json!({}));
        assert_eq!(parse_tool_input("{\"a\":1}"), json!({"a": 1}));
        assert_eq!(
            parse_tool_input("{\"a\":"),
            json!({"_invalid_arguments": "{\"a\":"})
        );
    }

    #[test]
    fn blocks_round_trip_and_unknown_ones_are_kept() {
        let wire = json!([
            {"type": "text", "text": "hi"},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a"}},
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "bad", "is_error": true},
            {"type": "thinking", "thinking": "hmm", "signature": "c2ln"},
            {"type": "redacted_thinking", "data": "xyz"},
            {"type": "x_new", "payload": [1, 2]}
        ]);
        let blocks: Vec<ContentBlock> = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(
            blocks[6],
            ContentBlock::Other(json!({"type": "x_new", "payload": [1, 2]}))
        );
        assert_eq!(serde_json::to_value(&blocks).unwrap(), wire);
        let stop: StopReason = serde_json::from_value(json!("future_value")).unwrap();
        assert_eq!(stop, StopReason::Other("future_value".into()));
        let stop: StopReason = serde_json::from_value(json!("tool_use")).unwrap();
        assert_eq!(stop, StopReason::ToolUse);
    }
}
