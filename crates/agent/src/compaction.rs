//! Keeping a conversation inside the model's context window: when to compact, the summary
//! request, and the conversation that replaces the older turns.
//!
//! - **When**: before a model request, when the estimated size of the request reaches 80 %
//!   of the context window ([`threshold`]). The estimate ([`Estimate`]) is the last
//!   response's input tokens (plain, cache read and cache creation) plus its output tokens,
//!   plus a quarter of the bytes added since; before any response, a quarter of the whole
//!   request's bytes. At most once between two responses, so it never loops.
//! - **Summary**: a request with the same system prompt and tools and the conversation so
//!   far (so the provider's cache prefix is reused), whose last user text starts with
//!   [`MARKER`] and asks for a summary of the work so far.
//! - **Replacement** ([`rebuild`]): one user message (the summary in `<summary>` tags, the
//!   host's context such as the lead's team state, the current task text verbatim, and the
//!   unanswered mail verbatim), then, mid-turn, the last assistant turn and its tool
//!   results, so every `tool_use` keeps its `tool_result`. If the summary request fails,
//!   [`drop_oldest`] cuts the older half of the turns instead.
//! - A teammate starting a new task starts from a [`digest`] of its earlier tasks, built
//!   here without a model call, as a user turn of its own followed by a fixed
//!   acknowledgement, so the new task is still the latest user turn by itself.

use swarm_llm::{ContentBlock, Message, Request, Role};
use swarm_util::meter::Usage;

/// How a summary request starts its last user text, so scripts and logs can tell it apart.
pub const MARKER: &str = "[swarm compaction]";

/// The question the summary request ends with.
pub fn summary_prompt() -> String {
    format!(
        "{MARKER} Your context is nearly full, so the conversation so far will be replaced by your summary of it. \
         Write that summary now, as text, without calling tools: the goal and the current task, the files you read \
         or changed and how, the decisions made and why, what is done, what is left to do, and open questions. \
         Keep names, paths, ids and numbers exact."
    )
}

/// The most a summary or a digest entry may add to the compacted context.
const SUMMARY_CAP: usize = 16 * 1024;
/// The most of each earlier task's report a teammate's digest keeps.
const REPORT_CAP: usize = 1024;

/// 80 % of the window.
pub fn threshold(context_window: u64) -> u64 {
    context_window.saturating_mul(8) / 10
}

/// Where the last response left the size of the conversation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Estimate {
    /// Tokens of the last request and its response, as the API reported them, and the
    /// bytes of the messages then; `None` before any response (or right after compaction).
    pub basis: Option<(u64, usize)>,
}

impl Estimate {
    pub fn after_response(&mut self, usage: &Usage, messages: &[Message]) {
        let tokens = usage.input_tokens
            + usage.cache_read_input_tokens
            + usage.cache_creation_input_tokens
            + usage.output_tokens;
        self.basis = Some((tokens, bytes(messages)));
    }

    /// The estimated tokens of `request`.
    pub fn tokens(&self, request: &Request) -> u64 {
        match self.basis {
            Some((tokens, was)) => {
                tokens + (bytes(&request.messages).saturating_sub(was) / 4) as u64
            }
            None => request_tokens(request),
        }
    }
}

/// A quarter of the request's bytes (system, tools, messages).
pub fn request_tokens(request: &Request) -> u64 {
    let tools: usize = request
        .tools
        .iter()
        .map(|t| serde_json::to_vec(t).map_or(0, |v| v.len()))
        .sum();
    ((request.system.len() + tools + bytes(&request.messages)) / 4) as u64
}

fn bytes(messages: &[Message]) -> usize {
    serde_json::to_vec(messages).map_or(0, |v| v.len())
}

/// The summary request: `messages` with the summary question appended to the last user
/// message (a request always ends with one), everything else as `base` has it.
pub fn summary_request(base: &Request) -> Request {
    let mut request = base.clone();
    crate::transcript::push_user(
        &mut request.messages,
        vec![ContentBlock::Text {
            text: summary_prompt(),
        }],
    );
    request
}

/// How many messages at the end are kept verbatim: mid-turn, the last assistant turn and
/// the user message carrying its tool results; otherwise none (the last user message's
/// text is carried into the new first message).
fn kept_tail(messages: &[Message]) -> usize {
    let n = messages.len();
    let mid_turn = n >= 2
        && messages[n - 1].role == Role::User
        && messages[n - 2].role == Role::Assistant
        && messages[n - 1]
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult { .. }));
    if mid_turn { 2 } else { 0 }
}

/// Whether compacting would replace anything: there are older turns besides what is kept.
pub fn worth_it(messages: &[Message]) -> bool {
    messages.len().saturating_sub(kept_tail(messages)) >= 2
}

/// The compacted conversation (see the module comment).
pub fn rebuild(
    messages: &[Message],
    summary: &str,
    context: Option<&str>,
    task: &str,
) -> Vec<Message> {
    let tail = kept_tail(messages);
    let mut first = vec![ContentBlock::Text {
        text: format!(
            "<summary of the conversation so far>\n{}\n</summary>",
            cap(summary.trim(), SUMMARY_CAP)
        ),
    }];
    if let Some(context) = context {
        first.push(ContentBlock::Text {
            text: context.to_owned(),
        });
    }
    if !task.is_empty() {
        first.push(ContentBlock::Text {
            text: task.to_owned(),
        });
    }
    if tail == 0 {
        // A fresh turn: the last user message is not answered yet; keep its text (new mail).
        if let Some(last) = messages.last().filter(|m| m.role == Role::User) {
            first.extend(
                last.content
                    .iter()
                    .filter(|b| !matches!(b, ContentBlock::Text { text } if text == task))
                    .filter(|b| !matches!(b, ContentBlock::ToolResult { .. }))
                    .cloned(),
            );
        }
    }
    let mut out = vec![Message {
        role: Role::User,
        content: first,
    }];
    out.extend_from_slice(&messages[messages.len() - tail..]);
    out
}

/// The fallback when no summary could be had: the older half of the turns goes, and the
/// rest (from an assistant turn, so pairing stays valid) follows a note and the task.
pub fn drop_oldest(messages: &[Message], context: Option<&str>, task: &str) -> Vec<Message> {
    let half = messages.len() / 2;
    let Some(cut) = (half.max(1)..messages.len()).find(|i| messages[*i].role == Role::Assistant)
    else {
        return messages.to_vec();
    };
    let mut first = vec![ContentBlock::Text {
        text: format!(
            "(The conversation grew too long and no summary of it could be made, so its first {cut} messages were dropped.)"
        ),
    }];
    if let Some(context) = context {
        first.push(ContentBlock::Text {
            text: context.to_owned(),
        });
    }
    if !task.is_empty() {
        first.push(ContentBlock::Text {
            text: task.to_owned(),
        });
    }
    let mut out = vec![Message {
        role: Role::User,
        content: first,
    }];
    out.extend_from_slice(&messages[cut..]);
    out
}

/// One earlier task, for a teammate's digest.
#[derive(Debug, Clone, PartialEq)]
pub struct DoneTask {
    pub id: String,
    pub subject: String,
    pub outcome: String,
    pub report: String,
}

/// What a teammate starting a new task keeps of its history: its first instructions, its
/// earlier tasks with their reports (each capped), and the last compaction's summary if
/// there was one.
pub fn digest(first: Option<&str>, done: &[DoneTask], summary: Option<&str>) -> String {
    let mut out = String::from(
        "<earlier work>\nYou have worked in this team before; your earlier conversation was replaced by this digest.\n",
    );
    if let Some(f) = first {
        out.push_str(&format!(
            "Your first instructions:\n{}\n",
            cap(f.trim(), REPORT_CAP)
        ));
    }
    if let Some(s) = summary {
        out.push_str(&format!(
            "Summary of your earlier conversation:\n{}\n",
            cap(s.trim(), SUMMARY_CAP)
        ));
    }
    for t in done {
        out.push_str(&format!(
            "- task #{} ({}): {}\n  your report: {}\n",
            t.id,
            t.outcome,
            t.subject,
            cap(t.report.trim(), REPORT_CAP).replace('\n', "\n  ")
        ));
    }
    out.push_str("</earlier work>");
    out
}

fn cap(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let cut = text.floor_char_boundary(max);
    format!("{}… [{} more bytes cut]", &text[..cut], text.len() - cut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(t: &str) -> Message {
        Message::user_text(t)
    }
    fn assistant_call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: id.into(),
                name: "Bash".into(),
                input: json!({}),
            }],
        }
    }
    fn results(id: &str, mail: &str) -> Message {
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: id.into(),
                    content: "ok".into(),
                    is_error: false,
                },
                ContentBlock::Text { text: mail.into() },
            ],
        }
    }

    #[test]
    fn mid_turn_keeps_the_last_call_and_its_results() {
        let m = vec![
            user("task"),
            assistant_call("a"),
            results("a", ""),
            assistant_call("b"),
            results("b", "mail"),
        ];
        assert!(worth_it(&m));
        let out = rebuild(&m, "did a", Some("team"), "task");
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].role, Role::User);
        let first = out[0].text();
        assert!(first.contains("did a") && first.contains("team") && first.ends_with("task"));
        assert_eq!(out[1..], m[3..]);
    }

    #[test]
    fn a_fresh_turn_carries_its_new_mail_once() {
        let m = vec![
            user("old"),
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::Text { text: "ok".into() }],
            },
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::Text {
                        text: "task".into(),
                    },
                    ContentBlock::Text {
                        text: "mail".into(),
                    },
                ],
            },
        ];
        let out = rebuild(&m, "s", None, "task");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].content.len(), 3, "{:?}", out[0]);
        assert_eq!(out[0].text().matches("task").count(), 1);
        assert!(!worth_it(&m[2..]));
    }

    #[test]
    fn dropping_keeps_pairs_whole() {
        let m = vec![
            user("task"),
            assistant_call("a"),
            results("a", ""),
            assistant_call("b"),
            results("b", ""),
            assistant_call("c"),
            results("c", ""),
        ];
        let out = drop_oldest(&m, None, "task");
        assert_eq!(out[0].role, Role::User);
        assert_eq!(out[1].role, Role::Assistant);
        assert_eq!(out[1..], m[3..]);
    }

    #[test]
    fn threshold_is_eighty_percent() {
        assert_eq!(threshold(200_000), 160_000);
        assert_eq!(threshold(3000), 2400);
        assert_eq!(threshold(7), 5);
    }
}
