//! An agent's conversation on disk: an append-only JSONL file the engine writes as it goes
//! (`<root>/teams/<team>/transcripts/<agent>.jsonl`, see `Root::transcript_path`), and
//! [`restore`], which replays it into the conversation the engine had at its last
//! recorded response.
//!
//! One JSON object per line, told apart by `kind`:
//! - `{"kind":"user","blocks":[..]}`: the user content blocks the engine added since the
//!   previous record (the task text, tool results, mail), replayed like `push_user`: merged
//!   into a trailing user message, else a new one;
//! - `{"kind":"response","content":[..],"usage":{..},"model":"..","cost_usd":0.0,
//!   "acked":["<mail key>",..],"time":"<iso>"}`: the assistant turn as it goes back to the
//!   model, what it cost, and the keys of the mail whose text was in the request (the host's
//!   `in_flight_keys`), so a resumed agent acknowledges them instead of reading them twice;
//! - `{"kind":"compaction","method":"summary"|"dropped"|"digest","summary":"..",
//!   "messages":[..],"before_tokens":N,"after_tokens":N,"usage":{..},"cost_usd":0.0,
//!   "model_calls":N,"time":"<iso>"}`: the whole conversation after a compaction, and the
//!   totals (usage, cost, model calls) up to and including it. An agent that starts
//!   afresh (not resumed) first writes one with method `start` and no messages
//!   ([`Transcript::mark_fresh_start`]), so what an earlier agent of the same name left
//!   in the file is not taken for its own.
//!
//! Durability: a request's `user` record and its `response` are written in one append and
//! fsynced before the engine lets the host acknowledge mail. Restore replays from the
//! last `compaction` record, which holds everything before it, so its result stays as
//! small as the compacted context; the file itself is never rewritten or rotated (an
//! append-only file is what survives a crash at any point). `user` records not followed
//! by a `response` (the request never got its answer) are left out, so the conversation
//! may end in tool calls whose results were lost: `Engine::restore` answers them
//! ([`lost_results`]) as its next user blocks, which the next record then carries. A torn last line (a
//! crash mid-write) is skipped, and cut off when the file is next opened for appending;
//! an unreadable line before the last is an error naming the file and line.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use swarm_llm::{ContentBlock, Message, Role};
use swarm_util::clock;
use swarm_util::error::{Error, Result};
use swarm_util::meter::Usage;
use swarm_util::no_symlinks;

/// An open transcript file, appended to.
pub struct Transcript {
    path: PathBuf,
    file: File,
}

/// What [`restore`] gives back: the conversation and the totals so far.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Restored {
    pub messages: Vec<Message>,
    /// Mail keys whose text is in `messages`' last requests: acknowledge, do not deliver.
    pub acked: Vec<String>,
    pub usage: Usage,
    pub cost_usd: f64,
    pub model_calls: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    User {
        blocks: Vec<ContentBlock>,
    },
    Response {
        content: Vec<ContentBlock>,
        usage: Usage,
        model: String,
        #[serde(default)]
        cost_usd: f64,
        #[serde(default)]
        acked: Vec<String>,
        #[serde(default)]
        time: String,
    },
    Compaction {
        method: String,
        summary: String,
        messages: Vec<Message>,
        #[serde(default)]
        before_tokens: u64,
        #[serde(default)]
        after_tokens: u64,
        /// Totals up to and including this compaction's own model call, if it made one.
        usage: Usage,
        #[serde(default)]
        cost_usd: f64,
        #[serde(default)]
        model_calls: u64,
        #[serde(default)]
        time: String,
    },
}

impl Transcript {
    /// Opens (creating it and its directory) the transcript at `path` for appending. A torn
    /// last line left by a crash is cut off first, so the next record starts a line.
    pub fn open(path: &Path) -> Result<Transcript> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io("create the transcript directory", dir, e))?;
        }
        // A planted symlink would make the agent append its conversation elsewhere.
        let mut file = no_symlinks::open(
            OpenOptions::new().create(true).read(true).append(true),
            "open the transcript",
            path,
        )?;
        cut_torn_tail(&mut file).map_err(|e| Error::io("repair the transcript", path, e))?;
        Ok(Transcript {
            path: path.to_owned(),
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Marks a fresh start (an agent not resumed): restore begins after this, with an
    /// empty conversation, even if an earlier agent of the same name left records here.
    pub fn mark_fresh_start(&mut self) -> Result<()> {
        self.append(&[Record::Compaction {
            method: "start".to_owned(),
            summary: String::new(),
            messages: Vec::new(),
            before_tokens: 0,
            after_tokens: 0,
            usage: Usage::default(),
            cost_usd: 0.0,
            model_calls: 0,
            time: clock::now_iso(),
        }])
    }

    /// Appends `records` in one write and fsyncs them.
    pub fn append(&mut self, records: &[Record]) -> Result<()> {
        let mut buf = Vec::new();
        for r in records {
            serde_json::to_writer(&mut buf, r).map_err(|e| {
                Error::io("encode a record for", &self.path, std::io::Error::other(e))
            })?;
            buf.push(b'\n');
        }
        self.file
            .write_all(&buf)
            .and_then(|()| self.file.sync_data())
            .map_err(|e| Error::io("append to the transcript", &self.path, e))
    }

    /// Records one request's new user blocks (if any) and its response, durably.
    pub fn record_turn(
        &mut self,
        new_user_blocks: Vec<ContentBlock>,
        response: Record,
    ) -> Result<()> {
        let mut records = Vec::with_capacity(2);
        if !new_user_blocks.is_empty() {
            records.push(Record::User {
                blocks: new_user_blocks,
            });
        }
        records.push(response);
        self.append(&records)
    }
}

/// A `response` record stamped now.
pub fn response_record(
    content: &[ContentBlock],
    usage: Usage,
    model: &str,
    cost_usd: f64,
    acked: Vec<String>,
) -> Record {
    Record::Response {
        content: content.to_vec(),
        usage,
        model: model.to_owned(),
        cost_usd,
        acked,
        time: clock::now_iso(),
    }
}

/// Drops a last line that has no newline (a write cut short).
fn cut_torn_tail(file: &mut File) -> std::io::Result<()> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(());
    }
    let mut last = [0u8; 1];
    file.seek(SeekFrom::End(-1))?;
    file.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(());
    }
    // Find the last newline, reading backwards in blocks.
    let mut end = len;
    let mut keep = 0;
    let mut block = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let n = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block[..n])?;
        if let Some(i) = block[..n].iter().rposition(|b| *b == b'\n') {
            keep = start + i as u64 + 1;
            break;
        }
        end = start;
    }
    file.set_len(keep)?;
    file.sync_data()
}

/// Replays the transcript at `path`; `None` when there is none.
pub fn restore(path: &Path) -> Result<Option<Restored>> {
    let Some(bytes) = no_symlinks::read(path)? else {
        return Ok(None);
    };
    // A torn write may end inside a character: that line is skipped like any torn one.
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Restored::default();
    // User blocks wait for the response that answered them.
    let mut pending: Vec<Vec<ContentBlock>> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: Record = match serde_json::from_str(line) {
            Ok(r) => r,
            Err(_) if i + 1 == lines.len() => break, // torn by a crash mid-write
            Err(e) => {
                return Err(Error::Corrupt {
                    path: path.to_owned(),
                    reason: format!(
                        "line {} is not a transcript record ({e}); move the file aside to start the agent afresh",
                        i + 1
                    ),
                });
            }
        };
        match record {
            Record::User { blocks } => pending.push(blocks),
            Record::Response {
                content,
                usage,
                cost_usd,
                acked,
                ..
            } => {
                for blocks in pending.drain(..) {
                    push_user(&mut out.messages, blocks);
                }
                if !content.is_empty() {
                    out.messages.push(Message {
                        role: Role::Assistant,
                        content,
                    });
                }
                out.usage.add(&usage);
                out.cost_usd += cost_usd;
                out.model_calls += 1;
                out.acked.extend(acked);
            }
            Record::Compaction {
                messages,
                usage,
                cost_usd,
                model_calls,
                ..
            } => {
                pending.clear();
                out.messages = messages;
                out.usage = usage;
                out.cost_usd = cost_usd;
                out.model_calls = model_calls;
                // Mail before a compaction was acknowledged before it began.
                out.acked.clear();
            }
        }
    }
    Ok(Some(out))
}

/// Appends a user message, merging into a trailing user message so roles alternate.
pub fn push_user(messages: &mut Vec<Message>, blocks: Vec<ContentBlock>) {
    match messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.extend(blocks),
        _ => messages.push(Message {
            role: Role::User,
            content: blocks,
        }),
    }
}

/// A conversation restored after its last response may end in tool calls whose results
/// were lost with the process: the answers that keep the next user message valid.
pub fn lost_results(messages: &[Message]) -> Vec<ContentBlock> {
    let Some(last) = messages.last().filter(|m| m.role == Role::Assistant) else {
        return Vec::new();
    };
    last.tool_uses()
        .map(|(id, _, _)| ContentBlock::ToolResult {
            tool_use_id: id.to_owned(),
            content: "The agent stopped before this call's result was recorded. It may or may not have run: check its effect before repeating it.".to_owned(),
            is_error: true,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> ContentBlock {
        ContentBlock::Text { text: t.into() }
    }

    fn response(t: &str, acked: &[&str]) -> Record {
        response_record(
            &[text(t)],
            Usage {
                input_tokens: 10,
                output_tokens: 2,
                ..Usage::default()
            },
            "scripted",
            0.5,
            acked.iter().map(|s| s.to_string()).collect(),
        )
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_cut_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t/bob.jsonl");
        let mut t = Transcript::open(&path).unwrap();
        t.record_turn(vec![text("task")], response("done", &["k1"]))
            .unwrap();
        // A crash mid-write: the next turn's records are cut short.
        let mut torn = serde_json::to_string(&Record::User {
            blocks: vec![text("more")],
        })
        .unwrap();
        torn.push('\n');
        torn.push_str(&serde_json::to_string(&response("second", &["k2"])).unwrap()[..20]);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(torn.as_bytes())
            .unwrap();
        let r = restore(&path).unwrap().unwrap();
        assert_eq!(
            r.messages,
            vec![Message::user_text("task"), assistant("done")],
            "the user record without its response is left out too"
        );
        assert_eq!(r.acked, vec!["k1".to_owned()]);
        assert_eq!(r.model_calls, 1);
        assert_eq!(r.usage.input_tokens, 10);
        // Reopening cuts the torn line, so the next record is not glued to it.
        let mut t = Transcript::open(&path).unwrap();
        t.record_turn(vec![text("again")], response("third", &[]))
            .unwrap();
        let r = restore(&path).unwrap().unwrap();
        assert_eq!(r.messages.len(), 4, "{:?}", r.messages);
        assert_eq!(r.messages[3], assistant("third"));
    }

    #[test]
    fn a_corrupt_middle_line_is_an_error_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bob.jsonl");
        let mut t = Transcript::open(&path).unwrap();
        t.record_turn(vec![text("task")], response("done", &[]))
            .unwrap();
        t.file.write_all(b"{not json\n").unwrap();
        t.record_turn(vec![text("more")], response("again", &[]))
            .unwrap();
        let err = restore(&path).unwrap_err().to_string();
        assert!(err.contains("bob.jsonl") && err.contains("line 3"), "{err}");
    }

    #[test]
    fn restore_starts_from_the_last_compaction_and_open_calls_get_answers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bob.jsonl");
        assert_eq!(restore(&path).unwrap(), None);
        let mut t = Transcript::open(&path).unwrap();
        t.record_turn(vec![text("old")], response("old answer", &["k0"]))
            .unwrap();
        t.append(&[Record::Compaction {
            method: "summary".into(),
            summary: "s".into(),
            messages: vec![Message::user_text("summary + task")],
            before_tokens: 100,
            after_tokens: 10,
            usage: Usage {
                input_tokens: 99,
                ..Usage::default()
            },
            cost_usd: 1.0,
            model_calls: 2,
            time: String::new(),
        }])
        .unwrap();
        let call = ContentBlock::ToolUse {
            id: "toolu_1".into(),
            name: "Bash".into(),
            input: serde_json::json!({"command": "ls"}),
        };
        t.record_turn(
            vec![],
            response_record(&[call], Usage::default(), "m", 0.0, vec!["k1".into()]),
        )
        .unwrap();
        let r = restore(&path).unwrap().unwrap();
        assert_eq!(r.messages[0], Message::user_text("summary + task"));
        assert_eq!(r.messages.len(), 2);
        assert!(matches!(
            &lost_results(&r.messages)[..],
            [ContentBlock::ToolResult { tool_use_id, is_error: true, .. }] if tool_use_id == "toolu_1"
        ));
        assert_eq!((r.model_calls, r.usage.input_tokens), (3, 99));
        assert_eq!(r.acked, vec!["k1".to_owned()]);
    }

    fn assistant(t: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![text(t)],
        }
    }
}
