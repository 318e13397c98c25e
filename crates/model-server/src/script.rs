//! The script a model server answers from, as data: the serde types of its JSON format,
//! reading it (from JSON with `//` line comments, or a file) and writing it back, and its
//! validation. Scripts are built in Rust with the methods in [`builder`](super::builder)
//! and answered by a [`Matcher`](super::matcher::Matcher).
//!
//! Invariants:
//! - Every struct refuses unknown fields, so a misspelt key is an error, not a silent no-op.
//! - [`Script::from_json`] and [`Matcher::new`](super::matcher::Matcher::new) run the same
//!   validation, so a script that parses is one the server accepts; its errors name the
//!   rule (`rule <name or rules[i]>: ...`) or `default`.
//! - Writing omits unset fields, so [`Script::to_json`] parses back to an equal script.
//! - [`Raw::chunks`] splits a body the same way on every run for a given seed.
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
//!     {"name": "cut off", "user_contains": "flaky", "fault": {"drop_after_frames": 4}},
//!     {"name": "overloaded now and then", "chance": 0.01, "burst_ms": 2000,
//!      "fault": {"status": 529, "retry_after": "1"}}
//!   ],
//!   "default": {"text": "Nothing to do."},
//!   "seed": 7
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
//! A compaction's summary request (see `agent::compaction`) is an ordinary request whose
//! latest user turn ends with a text starting `[swarm compaction]`, so a rule with
//! `"user_contains": "[swarm compaction]"` (placed above rules that would also match it,
//! such as `no_tool_result: false`) answers it with the summary.
//!
//! **Selection.** Rules are tried in file order; the first whose conditions all hold and
//! whose `times` (default unlimited) is not used up fires, and each firing uses one time,
//! whether it replies or injects a fault. So "529 once, then succeed" is two rules: a fault
//! rule with `times: 1` above the reply rule.
//!
//! **Chance and bursts.** `chance` (0 to 1, default 1) lets a rule whose conditions hold
//! fire only with that probability, drawn per request; when it does not fire, the next
//! rules are tried. `burst_ms` keeps a rule firing, once it has fired, for every request its
//! conditions match during that many milliseconds, with no chance drawn: with a small
//! `chance`, a fault rule gives occasional bursts of errors, as an overloaded API does.
//! The draws (these and `delay_ms` ranges) come from one generator seeded by the script's
//! `seed` (default: a random seed), so a given seed and request order repeat them. When no rule fires, `default` answers; without
//! a default the server answers HTTP 500 with `x-should-retry: false` (so clients do not
//! retry), an error message naming the agent and the user text, and records the request as
//! unmatched.
//!
//! **Reply** (`reply`): `text`, `thinking` (`{"thinking", "signature"}`), `tool_calls`
//! (`[{"name", "input", "id"?}]`; ids default to a fresh `toolu_<random>`), `stop_reason`
//! (default `tool_use` when there are tool calls, else `end_turn`), `usage`
//! (`{"input_tokens", "output_tokens"}`: reported instead of the estimate, request bytes / 4
//! and reply bytes / 4, so a test can count spend exactly). Every string in the
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
//! it counts against the client's idle timeout: a number of milliseconds, or `[min, max]`
//! for a delay drawn anew (uniformly, both ends included) for each request the rule answers.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Reply>,
    /// Seeds the random draws (`chance`, `delay_ms` ranges); default: a random seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
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
    pub chance: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<Delay>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<Reply>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
}

/// How long a rule waits before it answers, in milliseconds: always the same, or drawn
/// anew for each request from `[min, max]` (both included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "delay_ms as a number of milliseconds or [min, max]"
)]
pub enum Delay {
    Fixed(u64),
    Range([u64; 2]),
}

impl Delay {
    /// The wait for one request.
    pub fn draw(self, rng: &mut fastrand::Rng) -> Duration {
        Duration::from_millis(match self {
            Delay::Fixed(ms) => ms,
            Delay::Range([min, max]) => rng.u64(min..=max.max(min)),
        })
    }
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
    /// The usage to report instead of the estimate from the sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<FixedUsage>,
}

/// A reply's reported token counts, fixed by the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixedUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
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

/// What validating a script yields, rule by rule: its compiled `user_regex` and its
/// fault's kind.
pub(super) struct Compiled {
    pub(super) regexes: Vec<Option<regex::Regex>>,
    pub(super) faults: Vec<Option<FaultKind>>,
}

impl Script {
    /// Parses and validates a script; `//` line comments are allowed.
    pub fn from_json(text: &str) -> std::result::Result<Script, String> {
        let script: Script =
            serde_json::from_str(&strip_line_comments(text)).map_err(|e| e.to_string())?;
        script.compile()?;
        Ok(script)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a script always serialises")
    }

    /// Validates the script; errors name the rule.
    pub(super) fn compile(&self) -> std::result::Result<Compiled, String> {
        let mut regexes = Vec::new();
        let mut faults = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
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
            if let Some(c) = rule.chance
                && !(0.0..=1.0).contains(&c)
            {
                return Err(at(format!("chance {c} must be between 0 and 1")));
            }
            if let Some(Delay::Range([min, max])) = rule.delay_ms
                && min > max
            {
                return Err(at(format!(
                    "delay_ms [{min}, {max}] must satisfy min <= max"
                )));
            }
        }
        if let Some(d) = &self.default {
            d.validate().map_err(|e| format!("default: {e}"))?;
        }
        Ok(Compiled { regexes, faults })
    }
}

impl Rule {
    /// How logs and recorded requests name the rule: its name, or its position.
    pub fn label(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("rules[{index}]"))
    }
}

impl Reply {
    fn validate(&self) -> std::result::Result<(), String> {
        if let Some(raw) = &self.raw {
            if self.text.is_some()
                || self.thinking.is_some()
                || !self.tool_calls.is_empty()
                || self.stop_reason.is_some()
                || self.usage.is_some()
            {
                return Err(
                    "a raw reply cannot also have text, thinking, tool_calls, stop_reason or usage"
                        .into(),
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
}

impl Raw {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(script.rules.len(), 4);
        assert_eq!(script.rules[3].chance, Some(0.01));
        assert_eq!(script.seed, Some(7));
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
        assert!(
            err(r#"{"rules": [{"name": "p", "chance": 1.5}]}"#)
                .starts_with("rule p: chance 1.5 must be between 0 and 1")
        );
        assert!(err(r#"{"rules": [{"delay_ms": [500, 10]}]}"#).contains("min <= max"));
        assert!(err(r#"{"rules": [{"delay_ms": [1, 2, 3]}]}"#).contains("delay_ms"));
    }

    #[test]
    fn a_delay_is_a_number_or_a_range() {
        let script = Script::from_json(
            r#"{"rules": [{"name": "a", "delay_ms": 5}, {"name": "b", "delay_ms": [10, 500]}]}"#,
        )
        .unwrap();
        assert_eq!(script.rules[0].delay_ms, Some(Delay::Fixed(5)));
        assert_eq!(script.rules[1].delay_ms, Some(Delay::Range([10, 500])));
        assert_eq!(Script::from_json(&script.to_json()).unwrap(), script);
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
            .rule(
                Rule::new("burst")
                    .chance(0.25)
                    .burst_ms(1500)
                    .delay_between_ms(10, 500)
                    .fault(Fault::status(429).retry_after("1")),
            )
            .seed(9)
            .default_reply(Reply::raw(
                Raw::new("data: 1\n\n").chunk_bytes(1, 2).end(RawEnd::Hang),
            ));
        assert_eq!(Script::from_json(&script.to_json()).unwrap(), script);
    }
}
