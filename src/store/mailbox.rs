//! Mailboxes: one JSON array of message envelopes per agent,
//! `teams/<team>/inboxes/<agent>.json`, in Claude Code's format.
//!
//! Invariants:
//! - every mutation (send, acknowledge, quarantine) holds [`lock::lock`] on the inbox and
//!   replaces the file atomically; a reader without the lock sees a whole array;
//! - a recipient must be on the roster: an unknown name is an error, never a new inbox;
//! - a message is acknowledged by its key ([`Delivery::key`]: the `msg_id`, or a digest of
//!   `from`+`timestamp`+`text` for Claude Code 2.1.88 entries that have none), only after it
//!   was put in front of its reader; acknowledged entries are appended to
//!   `<agent>.delivered.jsonl` and then removed from the live inbox, so the inbox holds only
//!   undelivered mail however long a team runs;
//! - entries are kept as raw JSON objects when rewritten, so fields swarm does not know
//!   (and entries it cannot interpret) survive untouched;
//! - a file that is not a JSON array is moved aside as `<agent>.json.corrupt-<stamp>` with a
//!   warning, and delivery continues with an empty inbox.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::store::files;
use crate::store::layout::Root;
use crate::store::names::{AgentName, TeamName};
use crate::store::protocol::Protocol;
use crate::store::roster;
use crate::util::error::{Error, IoContext, Result};
use crate::util::{atomic, clock, json, lock};

/// The largest message text accepted.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub from: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<bool>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(rename = "msgV", default, skip_serializing_if = "Option::is_none")]
    pub msg_v: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg_id: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Envelope {
    /// A new message, stamped now, in the Claude Code 2.1.328 shape.
    pub fn new(from: &str, text: impl Into<String>) -> Envelope {
        Envelope {
            from: from.to_owned(),
            text: text.into(),
            summary: None,
            timestamp: clock::now_iso(),
            color: None,
            read: Some(false),
            kind: Some("message".to_owned()),
            msg_v: Some(1),
            msg_id: Some(uuid::Uuid::now_v7().to_string()),
            extra: Map::new(),
        }
    }

    pub fn with_summary(mut self, summary: Option<String>) -> Envelope {
        self.summary = summary;
        self
    }

    pub fn with_color(mut self, color: Option<String>) -> Envelope {
        self.color = color;
        self
    }

    /// The acknowledgement key: `msg_id`, or for entries without one (Claude Code 2.1.88) a
    /// digest of sender, time and text.
    pub fn key(&self) -> String {
        match &self.msg_id {
            Some(id) => id.clone(),
            None => {
                // FNV-1a: stable across processes and versions, unlike std's hasher.
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                for part in [&self.from, &self.timestamp, &self.text] {
                    for b in part.bytes().chain([0]) {
                        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                    }
                }
                format!("legacy-{h:016x}")
            }
        }
    }

    pub fn protocol(&self) -> Option<Protocol> {
        Protocol::parse(&self.text)
    }

    pub fn is_read(&self) -> bool {
        self.read == Some(true)
    }
}

/// A message taken from an inbox, with the key that acknowledges it.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub key: String,
    pub envelope: Envelope,
}

/// One copy of a sent message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sent {
    pub to: String,
    pub msg_id: String,
}

/// Checks the text of a message about to be sent.
pub fn check_text(text: &str) -> Result<()> {
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(Error::usage(format!(
            "message is {} bytes, over the {} byte (256 KiB) limit; write the content to a file and send its path",
            text.len(),
            MAX_MESSAGE_BYTES
        )));
    }
    if text.is_empty() {
        return Err(Error::usage("message is empty; say something"));
    }
    Ok(())
}

/// Sends `envelope` to `to`: a member's name, or `*` for every member but the sender.
/// Recipients are checked against the roster first; nothing is written if any is unknown.
pub fn send(root: &Root, team: &TeamName, to: &str, envelope: Envelope) -> Result<Vec<Sent>> {
    check_text(&envelope.text)?;
    let config = roster::load(root, team)?;
    config.require(&envelope.from).map_err(|_| {
        Error::not_found(format!(
            "sender '{}' is not a member of team '{team}'; pass --from with a member's name",
            envelope.from
        ))
    })?;
    let recipients: Vec<AgentName> = if to == "*" {
        config
            .members
            .iter()
            .filter(|m| !m.name.eq_ignore_ascii_case(&envelope.from))
            .filter_map(|m| AgentName::parse_any(&m.name).ok())
            .collect()
    } else {
        config.require(to)?;
        vec![AgentName::parse_any(to)?]
    };
    let mut sent = Vec::with_capacity(recipients.len());
    for recipient in recipients {
        let mut copy = envelope.clone();
        if !sent.is_empty() {
            copy.msg_id = Some(uuid::Uuid::now_v7().to_string());
        }
        sent.push(Sent {
            to: recipient.to_string(),
            msg_id: deliver(root, team, &recipient, copy)?,
        });
    }
    Ok(sent)
}

/// Appends `envelope` to `to`'s inbox without consulting the roster. For callers that
/// already resolved the recipient (the runtime answering a request, the lead's supervisor).
///
/// The message is first written to the recipient's spool (`teams/<team>/spool/<agent>/`),
/// then committed into the inbox by whichever sender holds the inbox lock next, together
/// with every other message waiting there: under contention one rewrite carries many
/// messages, and a sender never starves behind the lock, because its message only needs
/// *someone* to commit it. Returns once the message is in the inbox (durably).
pub fn deliver(root: &Root, team: &TeamName, to: &AgentName, envelope: Envelope) -> Result<String> {
    check_text(&envelope.text)?;
    let key = envelope.key();
    let spool = root.spool_dir(team, to);
    if !spool.is_dir() {
        std::fs::create_dir_all(&spool).ctx("create directory", &spool)?;
    }
    let queued = spool.join(format!("{}.json", uuid::Uuid::now_v7()));
    // A crash before the commit leaves a whole spool file, which the next commit picks up;
    // power-loss durability comes from the commit's fsyncs, so none are needed here.
    atomic::write(&queued, json::to_compact(&envelope).as_bytes(), false)?;
    let claimed = claimed_name(&queued);
    let inbox = root.inbox_path(team, to);
    let started = Instant::now();
    let timeout = root.lock_timeout();
    let deadline = started + timeout;
    let mut backoff = lock::Backoff::new();
    loop {
        if let Some(guard) = files::try_lock(root, &inbox)? {
            commit_spool(root, &spool, &inbox, &guard)?;
        }
        if !queued.exists() && !claimed.exists() {
            return Ok(key);
        }
        if Instant::now() >= deadline {
            // Withdraw the message unless a committer already claimed it; a claimed message
            // is committed by that committer, or by the next one if it dies.
            let withdrawn = match std::fs::remove_file(&queued) {
                Ok(()) => true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                Err(e) => return Err(Error::io("remove", &queued, e)),
            };
            if withdrawn || Instant::now() >= deadline + timeout {
                return Err(Error::LockTimeout {
                    path: inbox,
                    waited: started.elapsed(),
                });
            }
        }
        backoff.sleep(deadline + timeout);
    }
}

fn claimed_name(queued: &Path) -> PathBuf {
    let mut p = queued.as_os_str().to_owned();
    p.push(".claimed");
    PathBuf::from(p)
}

/// Moves every spooled message into the inbox in one atomic rewrite. Caller holds the lock.
///
/// Spool files are claimed by renaming them to `*.claimed` first, so a sender that gives up
/// can withdraw its file only if no committer has it. Claimed files left by a committer that
/// died are committed again, skipping any `msg_id` the inbox already holds.
fn commit_spool(root: &Root, spool: &Path, inbox: &Path, _guard: &lock::Locked) -> Result<usize> {
    let Ok(entries) = std::fs::read_dir(spool) else {
        return Ok(0);
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    if names.is_empty() {
        return Ok(0);
    }
    names.sort();
    let mut recovering = false;
    let mut claimed = Vec::new();
    for name in names {
        let path = spool.join(&name);
        if name.ends_with(".json.claimed") {
            recovering = true;
            claimed.push(path);
        } else if name.ends_with(".json") {
            let target = claimed_name(&path);
            if std::fs::rename(&path, &target).is_ok() {
                claimed.push(target);
            }
        }
    }
    claimed.sort();
    let mut fresh = Vec::with_capacity(claimed.len());
    for path in &claimed {
        match std::fs::read(path).map(|b| json::parse::<Value>(&b)) {
            Ok(Ok(v)) if v.is_object() => fresh.push(v),
            Ok(_) => {
                let aside = quarantine_path(path);
                tracing::warn!(
                    "spooled message {} does not parse; moved it to {}",
                    path.display(),
                    aside.display()
                );
                let _ = std::fs::rename(path, aside);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("read", path, e)),
        }
    }
    let existing = match std::fs::read(inbox) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => b"[]".to_vec(),
        Err(e) => return Err(Error::io("read", inbox, e)),
    };
    if recovering {
        let present: HashSet<String> = parse_entries(&existing)
            .unwrap_or_default()
            .iter()
            .filter_map(|v| v.get("msg_id").and_then(Value::as_str).map(str::to_owned))
            .collect();
        fresh.retain(|v| {
            v.get("msg_id")
                .and_then(Value::as_str)
                .is_none_or(|id| !present.contains(id))
        });
    }
    let bytes = match append_entries(&existing, &fresh) {
        Some(bytes) => bytes,
        None => {
            let mut entries = load_locked(inbox)?;
            entries.extend(fresh.iter().cloned());
            json::to_pretty(&entries)
        }
    };
    files::write(root, inbox, &bytes)?;
    for path in &claimed {
        let _ = std::fs::remove_file(path);
    }
    Ok(fresh.len())
}

/// The inbox array with `new` appended, spliced in as text so existing entries are neither
/// parsed into values nor re-serialised. The result is byte-identical to pretty-printing the
/// whole array when the file is in that form. `None` if `existing` is not a JSON array.
fn append_entries(existing: &[u8], new: &[Value]) -> Option<Vec<u8>> {
    if serde_json::from_slice::<Vec<serde::de::IgnoredAny>>(existing).is_err() {
        return None;
    }
    let end = existing.iter().rposition(|b| !b.is_ascii_whitespace())?;
    let body_end = existing[..end]
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())?;
    let mut out = Vec::with_capacity(existing.len() + new.len() * 256);
    let empty = existing[body_end] == b'[';
    out.extend_from_slice(&existing[..=body_end]);
    for (i, entry) in new.iter().enumerate() {
        out.extend_from_slice(if empty && i == 0 { b"\n" } else { b",\n" });
        for (j, line) in json::to_pretty(entry).split(|&b| b == b'\n').enumerate() {
            if j > 0 {
                out.push(b'\n');
            }
            out.extend_from_slice(b"  ");
            out.extend_from_slice(line);
        }
    }
    out.extend_from_slice(if empty && new.is_empty() {
        b"]"
    } else {
        b"\n]"
    });
    Some(out)
}

/// Every unread message in `agent`'s inbox, oldest first. Takes no lock unless the inbox
/// is corrupt and has to be moved aside.
pub fn read_unread(root: &Root, team: &TeamName, agent: &AgentName) -> Result<Vec<Delivery>> {
    Ok(read_all(root, team, agent)?
        .into_iter()
        .filter(|d| !d.envelope.is_read())
        .collect())
}

/// Every entry in the live inbox (unread, and entries a Claude Code 2.1.88 reader marked
/// read), oldest first.
pub fn read_all(root: &Root, team: &TeamName, agent: &AgentName) -> Result<Vec<Delivery>> {
    let path = root.inbox_path(team, agent);
    let spool = root.spool_dir(team, agent);
    if spool_has_mail(&spool) {
        // Left by a sender that died before its message was committed.
        let guard = lock_inbox(root, &path)?;
        commit_spool(root, &spool, &path, &guard)?;
    }
    let entries = match read_entries(&path)? {
        Some(e) => e,
        None => {
            let _guard = lock_inbox(root, &path)?;
            load_locked(&path)?
        }
    };
    Ok(entries
        .into_iter()
        .filter_map(|v| match serde_json::from_value::<Envelope>(v) {
            Ok(envelope) => Some(Delivery {
                key: envelope.key(),
                envelope,
            }),
            Err(e) => {
                tracing::warn!(path = %path.display(), "skipping an inbox entry that is not a message: {e}");
                None
            }
        })
        .collect())
}

/// Acknowledges delivered messages: appends them to the delivered log, then removes them
/// from the live inbox. Keys not in the inbox are ignored. Returns how many were removed.
pub fn ack(root: &Root, team: &TeamName, agent: &AgentName, keys: &[String]) -> Result<usize> {
    if keys.is_empty() {
        return Ok(0);
    }
    let keys: HashSet<&str> = keys.iter().map(String::as_str).collect();
    let path = root.inbox_path(team, agent);
    let guard = lock_inbox(root, &path)?;
    commit_spool(root, &root.spool_dir(team, agent), &path, &guard)?;
    let entries = load_locked(&path)?;
    let (done, keep): (Vec<Value>, Vec<Value>) = entries.into_iter().partition(|v| {
        serde_json::from_value::<Envelope>(v.clone()).is_ok_and(|e| keys.contains(e.key().as_str()))
    });
    if done.is_empty() {
        return Ok(0);
    }
    append_delivered(root, &root.delivered_log_path(team, agent), &done)?;
    files::write(root, &path, &json::to_pretty(&keep))?;
    Ok(done.len())
}

/// Removes `agent`'s inbox, when the member it was made for never started (a spawn that
/// failed after delivering the first instructions). A missing inbox is fine.
pub fn remove_inbox(root: &Root, team: &TeamName, agent: &AgentName) -> Result<()> {
    let path = root.inbox_path(team, agent);
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", &path, e)),
        _ => Ok(()),
    }
}

/// Messages already acknowledged, oldest first (the delivered log).
pub fn read_delivered(root: &Root, team: &TeamName, agent: &AgentName) -> Result<Vec<Envelope>> {
    let path = root.delivered_log_path(team, agent);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read", &path, e)),
    };
    // A torn last line (a crash mid-append) is skipped, not fatal.
    Ok(text
        .lines()
        .filter_map(|l| json::parse::<Envelope>(l.as_bytes()).ok())
        .collect())
}

fn lock_inbox(root: &Root, path: &Path) -> Result<lock::Locked> {
    if let Some(dir) = path.parent()
        && !dir.exists()
    {
        std::fs::create_dir_all(dir).ctx("create directory", dir)?;
    }
    files::lock(root, path)
}

/// Reads the array without a lock: `Ok(None)` if the file is corrupt.
fn read_entries(path: &Path) -> Result<Option<Vec<Value>>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Some(Vec::new())),
        Err(e) => return Err(Error::io("read", path, e)),
    };
    Ok(parse_entries(&bytes))
}

fn parse_entries(bytes: &[u8]) -> Option<Vec<Value>> {
    json::parse::<Vec<Value>>(bytes).ok()
}

fn spool_has_mail(spool: &Path) -> bool {
    std::fs::read_dir(spool).is_ok_and(|mut d| {
        d.any(|e| {
            e.is_ok_and(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                !name.starts_with('.')
                    && (name.ends_with(".json") || name.ends_with(".json.claimed"))
            })
        })
    })
}

/// Reads the array while holding the lock, moving a corrupt file aside.
fn load_locked(path: &Path) -> Result<Vec<Value>> {
    if let Some(entries) = read_entries(path)? {
        return Ok(entries);
    }
    let aside = quarantine_path(path);
    std::fs::rename(path, &aside).ctx("move corrupt inbox aside", path)?;
    tracing::warn!(
        "inbox {} was not a JSON array; moved it aside to {} and started a new one",
        path.display(),
        aside.display()
    );
    Ok(Vec::new())
}

fn quarantine_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(format!(".corrupt-{}", clock::compact_stamp()));
    PathBuf::from(p)
}

fn append_delivered(root: &Root, path: &Path, entries: &[Value]) -> Result<()> {
    let mut buf = Vec::new();
    for e in entries {
        buf.extend_from_slice(json::to_compact(e).as_bytes());
        buf.push(b'\n');
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .ctx("open", path)?;
    f.write_all(&buf).ctx("append to", path)?;
    if root.durable() {
        f.sync_data().ctx("fsync", path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn textual_append_matches_full_serialisation() {
        let a = json!({"from": "a", "text": "x\ny", "n": [1, {"k": []}]});
        let b = json!({"from": "b", "text": "", "o": {}});
        let mut all: Vec<Value> = Vec::new();
        let mut bytes = b"[]".to_vec();
        for v in [&a, &b, &a] {
            bytes = append_entries(&bytes, std::slice::from_ref(v)).unwrap();
            all.push(v.clone());
            assert_eq!(
                String::from_utf8(bytes.clone()).unwrap(),
                String::from_utf8(json::to_pretty(&all)).unwrap()
            );
        }
        let two = append_entries(b"[]", &[a.clone(), b.clone()]).unwrap();
        assert_eq!(two, json::to_pretty(&vec![a.clone(), b.clone()]));
        // Whatever formatting others used is kept, and the result still parses.
        let compact = append_entries(br#"[{"from":"c"}]  "#, std::slice::from_ref(&b)).unwrap();
        let parsed: Vec<Value> = serde_json::from_slice(&compact).unwrap();
        assert_eq!(parsed.len(), 2);
        assert_eq!(append_entries(b"[", std::slice::from_ref(&a)), None);
        assert_eq!(append_entries(b"{}", &[a]), None);
    }

    #[test]
    fn legacy_key_is_stable() {
        let mut e = Envelope::new("bob", "hi");
        e.msg_id = None;
        e.timestamp = "2026-02-12T05:22:25.366Z".into();
        assert_eq!(e.key(), e.clone().key());
        assert!(e.key().starts_with("legacy-"));
        let mut other = e.clone();
        other.text = "hi!".into();
        assert_ne!(e.key(), other.key());
    }
}
