//! The script a model server answers from: its JSON format, a Rust builder for it, and the
//! matching of requests to rules.
//!
//! # Format
//!
//! A JSON object (`//` line comments allowed) with a list of rules and an optional
//! default reply:
//!
//! ```json
//! {
//!   "rules": [
//!     {
//!       "name": "lead approves plans",
//!       "agent": "team-lead",
//!       "user_regex": "requestId\":\"(?P<rid>[^\"]+)",
//!       "times": 1,
//!       "reply": {
//!         "text": "I'll approve {{rid}}.",
//!         "tool_calls": [{"name": "SendMessage", "input": {"to": "bob", "request_id": "{{rid}}"}}]
//!       }
//!     },
//!     {"name": "busy once", "times": 1, "fault": {"status": 529, "retry_after": "1"}},
//!     {"name": "cut off", "user_contains": "flaky", "fault": {"drop_after_frames": 4}}
//!   ],
//!   "default": {"text": "Nothing to do."}
//! }
//! ```
//!
//! **Conditions** (all optional; a rule without any matches every request):
//! - `agent`: equals the `x-swarm-agent` header (the client's `Request::agent`).
//! - `system_contains`: a substring of the system prompt.
//! - `user_contains`: a substring of the latest user turn's text, meaning its text blocks
//!   and its `tool_result` contents, joined by newlines.
//! - `user_regex`: a regular expression (Rust `regex` syntax) searched in that same text;
//!   its named groups become placeholders.
//! - `tool_result_contains`: a substring of the latest user turn's `tool_result` contents
//!   only.
//! - `no_tool_result`: `true` requires a fresh turn (no `tool_result` in the latest user
//!   turn), `false` requires a tool result.
//!
//! **Selection.** Rules are tried in file order; the first whose conditions all hold and
//! whose `times` (default unlimited) is not used up fires, and each firing uses one time,
//! whether it replies or injects a fault. So "529 once, then succeed" is two rules: a fault
//! rule with `times: 1` above the reply rule. When no rule fires, `default` answers; without
//! a default the server answers HTTP 500 with `x-should-retry: false` (so clients do not
//! retry), an error message naming the agent and the user text, and records the request as
//! unmatched.
//!
//! **Reply** (`reply`): `text`, `thinking` (`{"thinking", "signature"}`), `tool_calls`
//! (`[{"name", "input", "id"?}]`; ids default to a fresh `toolu_<random>`), `stop_reason`
//! (default `tool_use` when there are tool calls, else `end_turn`). Every string in the
//! reply, tool names and inputs included, has `{{name}}` placeholders replaced by the
//! `user_regex` captures; `{{agent}}` is always available; unknown placeholders stay as
//! written. A rule that has neither `reply` nor `fault` answers with the default reply.
//!
//! Instead of the fields above, a reply may be `raw`: the exact response body, for tests of
//! hostile or broken streams: `{"raw": {"body": "event: ...", "status": 200,
//! "content_type": "text/event-stream", "chunk_bytes": [1, 7], "chunk_delay_ms": 0,
//! "seed": 1, "end": "close" | "hang" | "reset"}}`. The body is written in pieces of a
//! pseudo-random size within `chunk_bytes` (a fixed `seed` gives fixed splits, which may
//! fall inside a UTF-8 code point), then the connection is closed, held open, or reset.
//!
//! **Faults** (`fault`; exactly one kind per rule). A "frame" is one SSE event of the
//! rendered reply (pings included); a fault set after more frames than the reply has
//! fires just before the final frame, so it always fires.
//! - `{"status": 529, "retry_after": "1", "headers": {..}, "body": {..}}`: an HTTP error
//!   (default body: the API's error JSON for that status).
//! - `{"error_event_after_frames": 5, "error_type": "overloaded_error", "error_message": ".."}`:
//!   HTTP 200, then an `error` event, then the end of the stream.
//! - `{"stall_after_frames": 3, "stall_ms": 60000}`: silence in the middle of the stream,
//!   then the rest.
//! - `{"drop_after_frames": 10}`: the connection is reset mid-stream.
//! - `{"pings_every_ms": 100, "ping_for_ms": 2000}`: after `message_start`, only pings for
//!   a while, then the reply.
//!
//! `delay_ms` (default 0) waits before answering at all, before the response headers, so
//! it counts against the client's idle timeout.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::util::error::{Error, Result};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Reply>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_regex: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_result_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_tool_result: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<Reply>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Raw>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thinking {
    pub thinking: String,
    pub signature: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Raw {
    pub body: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The smallest and largest piece the body is written in; default: all at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_bytes: Option<[usize; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_delay_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<RawEnd>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RawEnd {
    /// Finish the body normally.
    #[default]
    Close,
    /// Keep the connection open without sending anything more.
    Hang,
    /// Abort the connection.
    Reset,
}

/// A fault to inject; exactly one kind of field group may be set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_event_after_frames: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_after_frames: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_after_frames: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pings_every_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ping_for_ms: Option<u64>,
}

/// A fault, validated into exactly one kind.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultKind {
    Http {
        status: u16,
        retry_after: Option<String>,
        headers: BTreeMap<String, String>,
        body: Option<Value>,
    },
    ErrorEvent {
        after_frames: usize,
        error_type: String,
        message: String,
    },
    Stall {
        after_frames: usize,
        stall: Duration,
    },
    Drop {
        after_frames: usize,
    },
    Pings {
        every: Duration,
        total: Duration,
    },
}

impl Fault {
    /// An HTTP error status.
    pub fn status(status: u16) -> Fault {
        Fault {
            status: Some(status),
            ..Fault::default()
        }
    }

    pub fn retry_after(mut self, value: impl Into<String>) -> Fault {
        self.retry_after = Some(value.into());
        self
    }

    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Fault {
        self.headers.insert(name.into(), value.into());
        self
    }

    pub fn body(mut self, body: Value) -> Fault {
        self.body = Some(body);
        self
    }

    /// HTTP 200, `after_frames` frames, then an `error` event of `error_type`.
    pub fn error_event(after_frames: usize, error_type: impl Into<String>) -> Fault {
        Fault {
            error_event_after_frames: Some(after_frames),
            error_type: Some(error_type.into()),
            ..Fault::default()
        }
    }

    pub fn stall(after_frames: usize, stall_ms: u64) -> Fault {
        Fault {
            stall_after_frames: Some(after_frames),
            stall_ms: Some(stall_ms),
            ..Fault::default()
        }
    }

    pub fn drop_after(frames: usize) -> Fault {
        Fault {
            drop_after_frames: Some(frames),
            ..Fault::default()
        }
    }

    pub fn pings(every_ms: u64, for_ms: u64) -> Fault {
        Fault {
            pings_every_ms: Some(every_ms),
            ping_for_ms: Some(for_ms),
            ..Fault::default()
        }
    }

    /// Checks that exactly one kind of fault is described, with only its own fields.
    pub fn kind(&self) -> std::result::Result<FaultKind, String> {
        let http = self.status.is_some()
            || self.retry_after.is_some()
            || !self.headers.is_empty()
            || self.body.is_some();
        let event = self.error_event_after_frames.is_some()
            || self.error_type.is_some()
            || self.error_message.is_some();
        let stall = self.stall_after_frames.is_some() || self.stall_ms.is_some();
        let drop = self.drop_after_frames.is_some();
        let pings = self.pings_every_ms.is_some() || self.ping_for_ms.is_some();
        let count = [http, event, stall, drop, pings]
            .iter()
            .filter(|b| **b)
            .count();
        if count != 1 {
            return Err(
                "a fault needs exactly one of: status (with retry_after, headers, body), \
                 error_event_after_frames (with error_type, error_message), \
                 stall_after_frames with stall_ms, drop_after_frames, \
                 pings_every_ms with ping_for_ms"
                    .into(),
            );
        }
        let need = |v: Option<u64>, what: &str| v.ok_or_else(|| format!("a fault with {what}"));
        Ok(if http {
            let status = self
                .status
                .ok_or("a fault with retry_after, headers or body needs a status")?;
            if !(100..=599).contains(&status) {
                return Err(format!("fault status {status} is not an HTTP status"));
            }
            FaultKind::Http {
                status,
                retry_after: self.retry_after.clone(),
                headers: self.headers.clone(),
                body: self.body.clone(),
            }
        } else if event {
            FaultKind::ErrorEvent {
                after_frames: self.error_event_after_frames.ok_or(
                    "a fault with error_type or error_message needs error_event_after_frames",
                )?,
                error_type: self
                    .error_type
                    .clone()
                    .unwrap_or_else(|| "overloaded_error".into()),
                message: self
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "Overloaded".into()),
            }
        } else if stall {
            FaultKind::Stall {
                after_frames: self
                    .stall_after_frames
                    .ok_or("a fault with stall_ms needs stall_after_frames")?,
                stall: Duration::from_millis(need(
                    self.stall_ms,
                    "stall_after_frames needs stall_ms",
                )?),
            }
        } else if drop {
            FaultKind::Drop {
                after_frames: self.drop_after_frames.unwrap_or_default(),
            }
        } else {
            let every = need(self.pings_every_ms, "ping_for_ms needs pings_every_ms")?;
            if every == 0 {
                return Err("pings_every_ms must be at least 1".into());
            }
            FaultKind::Pings {
                every: Duration::from_millis(every),
                total: Duration::from_millis(need(
                    self.ping_for_ms,
                    "pings_every_ms needs ping_for_ms",
                )?),
            }
        })
    }
}

impl Script {
    pub fn new() -> Script {
        Script::default()
    }

    pub fn rule(mut self, rule: Rule) -> Script {
        self.rules.push(rule);
        self
    }

    pub fn default_reply(mut self, reply: Reply) -> Script {
        self.default = Some(reply);
        self
    }

    /// Parses and validates a script; `//` line comments are allowed.
    pub fn from_json(text: &str) -> std::result::Result<Script, String> {
        let script: Script =
            serde_json::from_str(&strip_line_comments(text)).map_err(|e| e.to_string())?;
        Matcher::new(script.clone())?;
        Ok(script)
    }

    /// Reads a script file.
    pub fn load(path: &Path) -> Result<Script> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))?;
        Script::from_json(&text)
            .map_err(|e| Error::usage(format!("invalid script {}: {e}", path.display())))
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a script always serialises")
    }
}

impl Rule {
    pub fn new(name: impl Into<String>) -> Rule {
        Rule {
            name: Some(name.into()),
            ..Rule::default()
        }
    }

    pub fn agent(mut self, agent: impl Into<String>) -> Rule {
        self.agent = Some(agent.into());
        self
    }

    pub fn system_contains(mut self, s: impl Into<String>) -> Rule {
        self.system_contains = Some(s.into());
        self
    }

    pub fn user_contains(mut self, s: impl Into<String>) -> Rule {
        self.user_contains = Some(s.into());
        self
    }

    pub fn user_regex(mut self, re: impl Into<String>) -> Rule {
        self.user_regex = Some(re.into());
        self
    }

    pub fn tool_result_contains(mut self, s: impl Into<String>) -> Rule {
        self.tool_result_contains = Some(s.into());
        self
    }

    pub fn no_tool_result(mut self, fresh: bool) -> Rule {
        self.no_tool_result = Some(fresh);
        self
    }

    pub fn times(mut self, n: u32) -> Rule {
        self.times = Some(n);
        self
    }

    pub fn delay_ms(mut self, ms: u64) -> Rule {
        self.delay_ms = Some(ms);
        self
    }

    pub fn reply(mut self, reply: Reply) -> Rule {
        self.reply = Some(reply);
        self
    }

    pub fn fault(mut self, fault: Fault) -> Rule {
        self.fault = Some(fault);
        self
    }

    /// How logs and recorded requests name the rule: its name, or its position.
    pub fn label(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("rules[{index}]"))
    }
}

impl Reply {
    /// A reply of one text block.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply {
            text: Some(text.into()),
            ..Reply::default()
        }
    }

    /// A reply of one tool call.
    pub fn tool(name: impl Into<String>, input: Value) -> Reply {
        Reply::default().tool_call(name, input)
    }

    pub fn tool_call(mut self, name: impl Into<String>, input: Value) -> Reply {
        self.tool_calls.push(ToolCall {
            name: name.into(),
            input,
            id: None,
        });
        self
    }

    /// A tool call with a fixed id instead of a generated one.
    pub fn tool_call_with_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        input: Value,
    ) -> Reply {
        self.tool_calls.push(ToolCall {
            name: name.into(),
            input,
            id: Some(id.into()),
        });
        self
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Reply {
        self.text = Some(text.into());
        self
    }

    pub fn thinking(mut self, thinking: impl Into<String>, signature: impl Into<String>) -> Reply {
        self.thinking = Some(Thinking {
            thinking: thinking.into(),
            signature: signature.into(),
        });
        self
    }

    pub fn stop_reason(mut self, reason: impl Into<String>) -> Reply {
        self.stop_reason = Some(reason.into());
        self
    }

    /// A raw response body.
    pub fn raw(raw: Raw) -> Reply {
        Reply {
            raw: Some(raw),
            ..Reply::default()
        }
    }

    fn validate(&self) -> std::result::Result<(), String> {
        if let Some(raw) = &self.raw {
            if self.text.is_some()
                || self.thinking.is_some()
                || !self.tool_calls.is_empty()
                || self.stop_reason.is_some()
            {
                return Err(
                    "a raw reply cannot also have text, thinking, tool_calls or stop_reason".into(),
                );
            }
            if let Some([min, max]) = raw.chunk_bytes
                && (min == 0 || min > max)
            {
                return Err(format!(
                    "raw chunk_bytes [{min}, {max}] must satisfy 1 <= min <= max"
                ));
            }
        }
        for call in &self.tool_calls {
            if call.name.is_empty() {
                return Err("a tool call needs a name".into());
            }
            if !call.input.is_object() {
                return Err(format!(
                    "tool call {:?}: input must be a JSON object",
                    call.name
                ));
            }
        }
        Ok(())
    }

    /// The reply with `{{name}}` placeholders replaced in every string.
    pub fn substitute(&self, vars: &BTreeMap<String, String>) -> Reply {
        let s = |t: &String| substitute(t, vars);
        Reply {
            text: self.text.as_ref().map(s),
            thinking: self.thinking.as_ref().map(|t| Thinking {
                thinking: s(&t.thinking),
                signature: s(&t.signature),
            }),
            tool_calls: self
                .tool_calls
                .iter()
                .map(|c| ToolCall {
                    name: s(&c.name),
                    input: substitute_value(&c.input, vars),
                    id: c.id.as_ref().map(s),
                })
                .collect(),
            stop_reason: self.stop_reason.as_ref().map(s),
            raw: self.raw.clone(),
        }
    }
}

impl Raw {
    pub fn new(body: impl Into<String>) -> Raw {
        Raw {
            body: body.into(),
            ..Raw::default()
        }
    }

    pub fn chunk_bytes(mut self, min: usize, max: usize) -> Raw {
        self.chunk_bytes = Some([min, max]);
        self
    }

    pub fn chunk_delay_ms(mut self, ms: u64) -> Raw {
        self.chunk_delay_ms = Some(ms);
        self
    }

    pub fn seed(mut self, seed: u64) -> Raw {
        self.seed = Some(seed);
        self
    }

    pub fn end(mut self, end: RawEnd) -> Raw {
        self.end = Some(end);
        self
    }

    pub fn status(mut self, status: u16) -> Raw {
        self.status = Some(status);
        self
    }

    pub fn content_type(mut self, ct: impl Into<String>) -> Raw {
        self.content_type = Some(ct.into());
        self
    }

    /// The pieces the body is written in: sizes drawn from `chunk_bytes` with a seeded
    /// generator, so the same script splits the same way every run.
    pub fn chunks(&self) -> Vec<Vec<u8>> {
        let bytes = self.body.as_bytes();
        let Some([min, max]) = self.chunk_bytes else {
            return vec![bytes.to_vec()];
        };
        let mut rng = fastrand::Rng::with_seed(self.seed.unwrap_or(1));
        let mut out = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let n = rng.usize(min.max(1)..=max.max(min).max(1));
            let end = (at + n).min(bytes.len());
            out.push(bytes[at..end].to_vec());
            at = end;
        }
        out
    }
}

/// Replaces `{{name}}` (spaces inside the braces allowed) by its value; unknown names stay.
pub fn substitute(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) if vars.contains_key(after[..end].trim()) => {
                out.push_str(&vars[after[..end].trim()]);
                rest = &after[end + 2..];
            }
            _ => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn substitute_value(v: &Value, vars: &BTreeMap<String, String>) -> Value {
    match v {
        Value::String(s) => Value::String(substitute(s, vars)),
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute_value(x, vars)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (substitute(k, vars), substitute_value(x, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Removes `//` comments that start outside strings, keeping line numbers intact.
fn strip_line_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut in_string = false;
        let mut escaped = false;
        let mut cut = line.len();
        let bytes = line.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            if in_string {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_string = false,
                    _ => {}
                }
            } else if b == b'"' {
                in_string = true;
            } else if b == b'/' && bytes.get(i + 1) == Some(&b'/') {
                cut = i;
                break;
            }
        }
        out.push_str(&line[..cut]);
        if cut < line.len() && line.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// What a rule can see of a request, whichever API shape it came in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestView {
    pub agent: Option<String>,
    pub system: String,
    /// The latest user turn: text blocks and tool result contents, joined by newlines.
    pub user_text: String,
    /// The latest user turn's tool result contents only.
    pub tool_result_text: String,
    pub has_tool_result: bool,
}

/// The text of a content value that is a string or a list of blocks with `text`.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

impl RequestView {
    /// A Messages API request body.
    pub fn anthropic(body: &Value, agent: Option<&str>) -> RequestView {
        let mut view = RequestView {
            agent: agent.map(str::to_string),
            system: body.get("system").map(text_of).unwrap_or_default(),
            ..RequestView::default()
        };
        let last_user = body
            .get("messages")
            .and_then(Value::as_array)
            .and_then(|ms| {
                ms.iter()
                    .rev()
                    .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            });
        let Some(content) = last_user.and_then(|m| m.get("content")) else {
            return view;
        };
        let mut texts = Vec::new();
        let mut results = Vec::new();
        match content {
            Value::String(s) => texts.push(s.clone()),
            Value::Array(blocks) => {
                for b in blocks {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => texts.push(text_of(b.get("text").unwrap_or(&Value::Null))),
                        Some("tool_result") => {
                            let t = b.get("content").map(text_of).unwrap_or_default();
                            texts.push(t.clone());
                            results.push(t);
                            view.has_tool_result = true;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        view.user_text = texts.join("\n");
        view.tool_result_text = results.join("\n");
        view
    }

    /// A chat completions request body: the latest user turn is every `user` and `tool`
    /// message after the last `assistant` message.
    pub fn openai(body: &Value, agent: Option<&str>) -> RequestView {
        let empty = Vec::new();
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        let role = |m: &Value| {
            m.get("role")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let system = messages
            .iter()
            .filter(|m| matches!(role(m).as_str(), "system" | "developer"))
            .map(|m| text_of(m.get("content").unwrap_or(&Value::Null)))
            .collect::<Vec<_>>()
            .join("\n");
        let start = messages
            .iter()
            .rposition(|m| role(m) == "assistant")
            .map_or(0, |i| i + 1);
        let mut view = RequestView {
            agent: agent.map(str::to_string),
            system,
            ..RequestView::default()
        };
        let mut texts = Vec::new();
        let mut results = Vec::new();
        for m in &messages[start..] {
            let t = text_of(m.get("content").unwrap_or(&Value::Null));
            match role(m).as_str() {
                "user" => texts.push(t),
                "tool" => {
                    texts.push(t.clone());
                    results.push(t);
                    view.has_tool_result = true;
                }
                _ => {}
            }
        }
        view.user_text = texts.join("\n");
        view.tool_result_text = results.join("\n");
        view
    }
}

/// What the script says to do with one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub outcome: Outcome,
    /// The reply with placeholders filled in; `None` only when unmatched.
    pub reply: Option<Reply>,
    pub fault: Option<FaultKind>,
    pub delay: Duration,
}

/// Which part of the script answered a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A rule, by its label.
    Rule(String),
    Default,
    /// No rule fired and there is no default.
    Unmatched,
    /// The request body was not JSON.
    Invalid(String),
}

/// A script with its regexes compiled and its `times` counters.
#[derive(Debug)]
pub struct Matcher {
    script: Script,
    regexes: Vec<Option<regex::Regex>>,
    faults: Vec<Option<FaultKind>>,
    used: Vec<u32>,
}

impl Matcher {
    /// Validates the script; errors name the rule.
    pub fn new(script: Script) -> std::result::Result<Matcher, String> {
        let mut regexes = Vec::new();
        let mut faults = Vec::new();
        for (i, rule) in script.rules.iter().enumerate() {
            let at = |e: String| format!("rule {}: {e}", rule.label(i));
            regexes.push(
                rule.user_regex
                    .as_deref()
                    .map(regex::Regex::new)
                    .transpose()
                    .map_err(|e| at(format!("user_regex: {e}")))?,
            );
            faults.push(
                rule.fault
                    .as_ref()
                    .map(Fault::kind)
                    .transpose()
                    .map_err(at)?,
            );
            if let Some(reply) = &rule.reply {
                reply.validate().map_err(at)?;
            }
            if rule.reply.is_some() && matches!(faults[i], Some(FaultKind::Http { .. })) {
                return Err(at(
                    "an HTTP status fault sends no reply; drop the reply".into()
                ));
            }
        }
        if let Some(d) = &script.default {
            d.validate().map_err(|e| format!("default: {e}"))?;
        }
        Ok(Matcher {
            used: vec![0; script.rules.len()],
            script,
            regexes,
            faults,
        })
    }

    /// Picks the answer for a request, using up one of the chosen rule's `times`.
    pub fn select(&mut self, view: &RequestView) -> Selection {
        let mut vars = BTreeMap::new();
        vars.insert("agent".to_string(), view.agent.clone().unwrap_or_default());
        for (i, rule) in self.script.rules.iter().enumerate() {
            if rule.times.is_some_and(|t| self.used[i] >= t) {
                continue;
            }
            let Some(captures) = conditions_hold(rule, self.regexes[i].as_ref(), view) else {
                continue;
            };
            self.used[i] += 1;
            vars.extend(captures);
            let reply = rule
                .reply
                .as_ref()
                .or(self.script.default.as_ref())
                .cloned()
                .unwrap_or_else(|| Reply::text("OK."));
            return Selection {
                outcome: Outcome::Rule(rule.label(i)),
                reply: Some(reply.substitute(&vars)),
                fault: self.faults[i].clone(),
                delay: Duration::from_millis(rule.delay_ms.unwrap_or(0)),
            };
        }
        match &self.script.default {
            Some(d) => Selection {
                outcome: Outcome::Default,
                reply: Some(d.substitute(&vars)),
                fault: None,
                delay: Duration::ZERO,
            },
            None => Selection {
                outcome: Outcome::Unmatched,
                reply: None,
                fault: None,
                delay: Duration::ZERO,
            },
        }
    }
}

/// The named captures when every condition of `rule` holds.
fn conditions_hold(
    rule: &Rule,
    regex: Option<&regex::Regex>,
    view: &RequestView,
) -> Option<BTreeMap<String, String>> {
    let contains = |hay: &str, needle: &Option<String>| {
        needle.as_ref().is_none_or(|n| hay.contains(n.as_str()))
    };
    if let Some(agent) = &rule.agent
        && view.agent.as_deref() != Some(agent.as_str())
    {
        return None;
    }
    if !contains(&view.system, &rule.system_contains)
        || !contains(&view.user_text, &rule.user_contains)
        || !contains(&view.tool_result_text, &rule.tool_result_contains)
    {
        return None;
    }
    if let Some(fresh) = rule.no_tool_result
        && fresh == view.has_tool_result
    {
        return None;
    }
    let mut vars = BTreeMap::new();
    if let Some(re) = regex {
        let caps = re.captures(&view.user_text)?;
        for name in re.capture_names().flatten() {
            vars.insert(
                name.to_string(),
                caps.name(name).map_or("", |m| m.as_str()).to_string(),
            );
        }
    }
    Some(vars)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view(agent: &str, user: &str, tool: Option<&str>) -> RequestView {
        RequestView {
            agent: Some(agent.into()),
            system: "You are bob.".into(),
            user_text: match tool {
                Some(t) => format!("{t}\n{user}"),
                None => user.into(),
            },
            tool_result_text: tool.unwrap_or_default().into(),
            has_tool_result: tool.is_some(),
        }
    }

    #[test]
    fn the_documented_example_parses() {
        let doc = include_str!("script.rs");
        let start = doc.find("//! ```json\n").unwrap();
        let end = doc[start..].find("//! ```\n").unwrap() + start;
        let example: String = doc[start..end]
            .lines()
            .skip(1)
            .map(|l| l.trim_start_matches("//!").trim_start_matches(' '))
            .collect::<Vec<_>>()
            .join("\n");
        let script = Script::from_json(&example).unwrap();
        assert_eq!(script.rules.len(), 3);
        assert_eq!(script.default, Some(Reply::text("Nothing to do.")));
    }

    #[test]
    fn comments_are_stripped_outside_strings_only() {
        let script = Script::from_json(
            "{ // a comment\n \"default\": {\"text\": \"see http://x // not a comment \\\" // still\"} // end\n}",
        )
        .unwrap();
        assert_eq!(
            script.default.unwrap().text.unwrap(),
            "see http://x // not a comment \" // still"
        );
    }

    #[test]
    fn bad_scripts_are_refused_with_the_rule_named() {
        let err = |s: &str| Script::from_json(s).unwrap_err();
        assert!(
            err(r#"{"rules": [{"name": "r", "user_regex": "("}]}"#)
                .starts_with("rule r: user_regex:")
        );
        assert!(
            err(r#"{"rules": [{"fault": {"status": 529, "drop_after_frames": 2}}]}"#)
                .starts_with("rule rules[0]: a fault needs exactly one of")
        );
        assert!(err(r#"{"rules": [{"fault": {"stall_after_frames": 2}}]}"#).contains("stall_ms"));
        assert!(
            err(r#"{"rules": [{"agent": "a", "reply": {"txt": "x"}}]}"#)
                .contains("unknown field `txt`")
        );
        assert!(
            err(r#"{"default": {"raw": {"body": ""}, "text": "x"}}"#)
                .starts_with("default: a raw reply")
        );
        assert!(
            err(r#"{"rules": [{"reply": {"tool_calls": [{"name": "T", "input": 3}]}}]}"#)
                .contains("input must be a JSON object")
        );
        assert!(
            err(r#"{"rules": [{"fault": {"status": 500}, "reply": {"text": "x"}}]}"#)
                .contains("sends no reply")
        );
    }

    #[test]
    fn rules_fire_in_order_and_times_run_out() {
        let script = Script::new()
            .rule(Rule::new("busy").times(1).fault(Fault::status(529)))
            .rule(
                Rule::new("bob only")
                    .agent("bob")
                    .reply(Reply::text("hi bob")),
            )
            .default_reply(Reply::text("default for {{agent}}"));
        let mut m = Matcher::new(script).unwrap();
        let s = m.select(&view("bob", "x", None));
        assert_eq!(s.outcome, Outcome::Rule("busy".into()));
        assert!(matches!(s.fault, Some(FaultKind::Http { status: 529, .. })));
        let s = m.select(&view("bob", "x", None));
        assert_eq!(s.outcome, Outcome::Rule("bob only".into()));
        assert_eq!(s.reply.unwrap().text.unwrap(), "hi bob");
        let s = m.select(&view("alice", "x", None));
        assert_eq!(s.outcome, Outcome::Default);
        assert_eq!(s.reply.unwrap().text.unwrap(), "default for alice");
        let mut bare = Matcher::new(Script::new()).unwrap();
        assert_eq!(
            bare.select(&view("a", "b", None)).outcome,
            Outcome::Unmatched
        );
    }

    #[test]
    fn conditions_and_captures() {
        let rule = Rule::new("approve")
            .system_contains("bob")
            .user_regex(r#"requestId":"(?P<rid>[^"]+)""#)
            .reply(
                Reply::text("approving {{ rid }} for {{agent}}, {{unknown}}").tool_call(
                    "SendMessage",
                    json!({"to": "x", "message": {"request_id": "{{rid}}", "list": ["{{rid}}", 3]}}),
                ),
            );
        let mut m = Matcher::new(Script::new().rule(rule)).unwrap();
        let s = m.select(&view("lead", r#"{"requestId":"req-7"}"#, None));
        let reply = s.reply.unwrap();
        assert_eq!(reply.text.unwrap(), "approving req-7 for lead, {{unknown}}");
        assert_eq!(
            reply.tool_calls[0].input,
            json!({"to": "x", "message": {"request_id": "req-7", "list": ["req-7", 3]}})
        );
        assert_eq!(
            m.select(&view("lead", "nothing", None)).outcome,
            Outcome::Unmatched
        );

        let mut m = Matcher::new(
            Script::new()
                .rule(Rule::new("fresh").no_tool_result(true))
                .rule(Rule::new("after ls").tool_result_contains("file.txt"))
                .rule(Rule::new("after tool").no_tool_result(false)),
        )
        .unwrap();
        assert_eq!(
            m.select(&view("a", "go", None)).outcome,
            Outcome::Rule("fresh".into())
        );
        assert_eq!(
            m.select(&view("a", "go", Some("file.txt"))).outcome,
            Outcome::Rule("after ls".into())
        );
        // user_contains sees tool results too, tool_result_contains sees only them.
        assert_eq!(
            m.select(&view("a", "file.txt", Some("other"))).outcome,
            Outcome::Rule("after tool".into())
        );
    }

    #[test]
    fn views_of_both_api_shapes() {
        let anthropic = json!({
            "system": [{"type": "text", "text": "sys"}],
            "messages": [
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "res"}]},
                    {"type": "text", "text": "more"}
                ]}
            ]
        });
        let v = RequestView::anthropic(&anthropic, Some("bob"));
        assert_eq!(v.system, "sys");
        assert_eq!(v.user_text, "res\nmore");
        assert_eq!(v.tool_result_text, "res");
        assert!(v.has_tool_result);
        let openai = json!({"messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "tool", "tool_call_id": "c", "content": "res"},
            {"role": "user", "content": "more"}
        ]});
        assert_eq!(RequestView::openai(&openai, Some("bob")), v);
        let fresh = RequestView::anthropic(
            &json!({"messages": [{"role": "user", "content": "hi"}]}),
            None,
        );
        assert_eq!(fresh.user_text, "hi");
        assert!(!fresh.has_tool_result);
    }

    #[test]
    fn raw_chunks_are_seeded_and_cover_the_body() {
        let raw = Raw::new("é".repeat(50)).chunk_bytes(1, 7).seed(3);
        let chunks = raw.chunks();
        assert_eq!(chunks, raw.chunks());
        assert_eq!(chunks.concat(), "é".repeat(50).into_bytes());
        assert!(chunks.iter().all(|c| (1..=7).contains(&c.len())));
        assert!(chunks.iter().any(|c| std::str::from_utf8(c).is_err()));
        assert_eq!(Raw::new("abc").chunks(), vec![b"abc".to_vec()]);
    }

    #[test]
    fn scripts_round_trip_through_json() {
        let script = Script::new()
            .rule(
                Rule::new("r")
                    .agent("a")
                    .times(2)
                    .delay_ms(5)
                    .fault(Fault::error_event(3, "overloaded_error")),
            )
            .rule(
                Rule::new("t").reply(
                    Reply::text("x")
                        .thinking("t", "s")
                        .stop_reason("max_tokens"),
                ),
            )
            .default_reply(Reply::raw(
                Raw::new("data: 1\n\n").chunk_bytes(1, 2).end(RawEnd::Hang),
            ));
        assert_eq!(Script::from_json(&script.to_json()).unwrap(), script);
    }
}
