//! Sending: a message whose recipient's inbox is free is committed into it at once, with
//! whatever waits in its spool; otherwise it goes to the spool, and is committed by
//! whichever sender holds the inbox lock next, with every other message waiting there. A
//! sender therefore never starves behind the lock, and a crash leaves either a whole spool
//! file that the next commit (or read) picks up or nothing of the message at all.
//!
//! A broadcast is one durable act: the inboxes free at once are written as a group (every
//! file flushed before any is renamed into place, the inboxes' directory flushed once), so a
//! broadcast to 64 costs about what one message does, and only the copies whose inbox was
//! busy take the spool.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::files;
use crate::layout::Root;
use crate::mailbox::bell;
use crate::mailbox::envelope::{Envelope, Sent, check_text};
use crate::mailbox::inbox_file::{load_locked, parse_entries, quarantine_path};
use crate::roster::{self, TeamConfig};
use swarm_util::error::{Base as _, IoContext};
use swarm_util::names::{AgentName, TeamName};
use swarm_util::{json, lock, no_symlinks, parallel};

/// Who receives a message from `from` to `to` (a member's name, or `*` for every member
/// but the sender), checked against the roster: an unknown sender or recipient is an
/// error. Every backend decides it here.
pub fn recipients(
    config: &TeamConfig,
    team: &TeamName,
    from: &str,
    to: &str,
) -> Result<Vec<AgentName>> {
    config.require(from).map_err(|_| {
        Error::not_found(format!(
            "sender '{from}' is not a member of team '{team}'; pass --from with a member's name"
        ))
    })?;
    if to != "*" {
        config.require(to)?;
        return Ok(vec![AgentName::parse_any(to)?]);
    }
    Ok(config
        .members
        .iter()
        .filter(|m| !m.name.eq_ignore_ascii_case(from))
        .filter_map(|m| AgentName::parse_any(&m.name).ok())
        .collect())
}

/// Sends `envelope` to `to`: a member's name, or `*` for every member but the sender.
/// Recipients are checked against the roster first; nothing is written if any is unknown.
/// A broadcast's copies are delivered at once (`deliver_each`), each tried whatever
/// becomes of the others; the first failure, in roster order, is the result.
pub(crate) fn send(
    root: &Root,
    team: &TeamName,
    to: &str,
    envelope: Envelope,
) -> Result<Vec<Sent>> {
    check_text(&envelope.text)?;
    let config = roster::load(root, team)?;
    let recipients = recipients(&config, team, &envelope.from, to)?;
    let copies: Vec<(AgentName, Envelope)> = recipients
        .into_iter()
        .enumerate()
        .map(|(i, recipient)| {
            let mut copy = envelope.clone();
            if i > 0 {
                copy.msg_id = Some(uuid::Uuid::now_v7().to_string());
            }
            (recipient, copy)
        })
        .collect();
    let results = deliver_each(root, team, &copies);
    let missed: Vec<String> = copies
        .iter()
        .zip(&results)
        .filter(|(_, r)| r.is_err())
        .map(|((to, _), _)| to.to_string())
        .collect();
    if !missed.is_empty() && copies.len() > 1 {
        tracing::warn!(
            "a message from {} reached {} of {} recipients; not {}",
            envelope.from,
            copies.len() - missed.len(),
            copies.len(),
            missed.join(", ")
        );
    }
    copies
        .iter()
        .zip(results)
        .map(|((to, _), msg_id)| {
            Ok(Sent {
                to: to.to_string(),
                msg_id: msg_id?,
            })
        })
        .collect()
}

/// Most spooled deliveries of one `send` that wait at once.
const PARALLEL_DELIVERIES: usize = 64;

/// Delivers each copy to its recipient: those whose inbox is free now in one group commit
/// ([`commit_group`]), the rest through their spools, several at once. Every copy is tried
/// whatever happens to the others; results come in the order given.
fn deliver_each(
    root: &Root,
    team: &TeamName,
    copies: &[(AgentName, Envelope)],
) -> Vec<Result<String>> {
    let mut results: Vec<Option<Result<String>>> = copies.iter().map(|_| None).collect();
    let mut direct = Vec::new();
    let mut spooled = Vec::new();
    for (i, (to, envelope)) in copies.iter().enumerate() {
        match seal_and_try(root, team, to, envelope.clone()) {
            Ok(Ready::Direct(guard, commit, key)) => direct.push((i, guard, commit, key)),
            Ok(Ready::Spool(envelope)) => spooled.push((i, to, envelope)),
            Err(e) => results[i] = Some(Err(e)),
        }
    }
    for (i, result) in commit_group(root, team, direct) {
        results[i] = Some(result);
    }
    let waited = parallel::map(&spooled, PARALLEL_DELIVERIES, |(_, to, envelope)| {
        deliver_spooled(root, team, to, envelope.clone())
    });
    for ((i, _, _), result) in spooled.iter().zip(waited) {
        results[*i] = Some(result);
    }
    results
        .into_iter()
        .map(|r| r.expect("every copy has a result"))
        .collect()
}

/// Where one copy goes: straight into its inbox, whose lock is held and whose new bytes are
/// ready, or to its spool.
enum Ready {
    Direct(lock::Locked, Commit, String),
    Spool(Envelope),
}

/// Seals `envelope` for `to` and takes `to`'s inbox lock if no one holds it now, preparing
/// the inbox with the message (after whatever waits in the spool) appended.
fn seal_and_try(root: &Root, team: &TeamName, to: &AgentName, envelope: Envelope) -> Result<Ready> {
    check_text(&envelope.text)?;
    let envelope = super::lead_key::seal(root, team, to, envelope)?;
    let inbox = root.inbox_path(team, to);
    files::check(root, &inbox)?;
    let Some(guard) = files::try_lock(root, &inbox)? else {
        return Ok(Ready::Spool(envelope));
    };
    let key = envelope.key();
    let entry = serde_json::to_value(&envelope).expect("serialising plain data cannot fail");
    let commit = prepare_commit(root, team, to, &guard, Some(entry))?
        .expect("a commit carrying a message has something to write");
    Ok(Ready::Direct(guard, commit, key))
}

/// Writes every prepared commit as one group, then clears their spools and rings their
/// bells, each under its own lock; returns each copy's index with its result.
fn commit_group(
    root: &Root,
    team: &TeamName,
    direct: Vec<(usize, lock::Locked, Commit, String)>,
) -> Vec<(usize, Result<String>)> {
    let writes: Vec<(&Path, &[u8])> = direct
        .iter()
        .map(|(_, _, c, _)| (c.inbox.as_path(), c.bytes.as_slice()))
        .collect();
    let written = files::write_all(root, &writes);
    direct
        .into_iter()
        .zip(written)
        .map(|((i, guard, commit, key), w)| {
            let result = w.map(|()| {
                finish_commit(root, team, &commit);
                key
            });
            drop(guard);
            (i, result.map_err(Error::from))
        })
        .collect()
}

/// Appends `envelope` to `to`'s inbox without consulting the roster. For callers that
/// already resolved the recipient (the runtime answering a request, the lead's supervisor).
/// Returns once the message is in the inbox (durably): at once if the inbox is free, else
/// through its spool (see [`deliver_spooled`]).
///
/// The result tells the truth: `Ok` means the message is in the inbox, once; an error means
/// it is not and never will be (a sender that gives up settles its message's fate first).
pub(crate) fn deliver(
    root: &Root,
    team: &TeamName,
    to: &AgentName,
    envelope: Envelope,
) -> Result<String> {
    deliver_each(root, team, &[(to.clone(), envelope)])
        .pop()
        .expect("one result per copy")
}

/// Delivers a sealed `envelope` through `to`'s spool (`teams/<team>/spool/<agent>/`): it is
/// written there, then committed into the inbox by whichever sender holds the inbox lock
/// next, together with every other message waiting there: under contention one rewrite
/// carries many messages, and a sender never starves behind the lock, because its message
/// only needs *someone* to commit it. Returns once the message is in the inbox (durably).
fn deliver_spooled(
    root: &Root,
    team: &TeamName,
    to: &AgentName,
    envelope: Envelope,
) -> Result<String> {
    let key = envelope.key();
    let spool = root.spool_dir(team, to);
    files::check(root, &spool)?;
    if !spool.is_dir() {
        std::fs::create_dir_all(&spool).ctx("create directory", &spool)?;
    }
    let inbox = root.inbox_path(team, to);
    let queued = spool.join(format!("{}.json", uuid::Uuid::now_v7()));
    // A crash before the commit leaves a whole spool file, which the next commit picks up;
    // power-loss durability comes from the commit's fsyncs, so none are needed here.
    files::write_unsynced(root, &queued, json::to_compact(&envelope).as_bytes())?;
    let mine = Spooled {
        claimed: claimed_name(&queued),
        queued,
        key,
    };
    match wait_for_commit(root, team, to, &mine) {
        Ok(()) => Ok(mine.key),
        Err(failed) => match settle(root, &inbox, &mine, failed.1) {
            Ok(true) => Ok(mine.key),
            Ok(false) => Err(failed.0),
            Err(unsettled) => {
                tracing::warn!(path = %mine.queued.display(), "could not withdraw a message after a failed send: {unsettled}");
                Err(failed.0)
            }
        },
    }
}

/// One sender's message in the spool: under its own name until a committer claims it.
struct Spooled {
    queued: PathBuf,
    claimed: PathBuf,
    key: String,
}

/// Commits the spool whenever the inbox lock is free, until someone has committed our
/// message. A failure comes back with the lock, when we hold it.
fn wait_for_commit(
    root: &Root,
    team: &TeamName,
    to: &AgentName,
    mine: &Spooled,
) -> std::result::Result<(), Box<(Error, Option<lock::Locked>)>> {
    let inbox = root.inbox_path(team, to);
    let started = Instant::now();
    let deadline = started + root.lock_timeout();
    let mut backoff = lock::Backoff::new();
    loop {
        match files::try_lock(root, &inbox) {
            Ok(Some(guard)) => {
                if let Err(e) = commit_spool(root, team, to, &guard) {
                    return Err(Box::new((e, Some(guard))));
                }
            }
            Ok(None) => {}
            Err(e) => return Err(Box::new((e.into(), None))),
        }
        if !mine.queued.exists() && !mine.claimed.exists() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let waited = started.elapsed();
            let timeout = swarm_util::error::Error::LockTimeout {
                path: inbox,
                waited,
            };
            return Err(Box::new((timeout.into(), None)));
        }
        backoff.sleep(deadline);
    }
}

/// After a failed send: withdraws the message unless it is already in the inbox, and says
/// whether it is. Unclaimed, withdrawing it is atomic against a committer's claim; claimed,
/// only the inbox lock makes its state stand still (a committer that died or failed leaves
/// its claims for the next).
fn settle(root: &Root, inbox: &Path, mine: &Spooled, guard: Option<lock::Locked>) -> Result<bool> {
    if withdraw(&mine.queued)? {
        return Ok(false);
    }
    let _guard = match guard {
        Some(g) => g,
        None => files::lock(root, inbox).map_err(|e| match e {
            // Claimed, and whoever claimed it holds the inbox lock on and on (stopped?): it
            // may still commit it. Saying so beats a plain failure a caller would retry.
            swarm_util::error::Error::LockTimeout { path, waited } => {
                Error::SendInDoubt { path, waited }
            }
            other => other.into(),
        })?,
    };
    if withdraw(&mine.queued)? {
        return Ok(false);
    }
    if !mine.claimed.exists() {
        return Ok(true);
    }
    // Claimed by a committer that died: before or after its write reached the inbox?
    let delivered = files::read(root, inbox)?
        .and_then(|b| parse_entries(&b))
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| serde_json::from_value::<Envelope>(v).ok())
        .any(|e| e.key() == mine.key);
    withdraw(&mine.claimed)?;
    Ok(delivered)
}

/// Removes a spool file; false if it was not there.
fn withdraw(path: &Path) -> Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("remove", path, e)),
    }
}

fn claimed_name(queued: &Path) -> PathBuf {
    let mut p = queued.as_os_str().to_owned();
    p.push(".claimed");
    PathBuf::from(p)
}

/// Moves every spooled message of `to` into its inbox in one atomic rewrite, then rings its
/// bell (see [`bell`]). Caller holds the inbox lock.
pub(super) fn commit_spool(
    root: &Root,
    team: &TeamName,
    to: &AgentName,
    guard: &lock::Locked,
) -> Result<usize> {
    let Some(commit) = prepare_commit(root, team, to, guard, None)? else {
        return Ok(0);
    };
    files::write(root, &commit.inbox, &commit.bytes)?;
    finish_commit(root, team, &commit);
    Ok(commit.fresh)
}

/// One rewrite of an inbox, ready to be written: its new bytes, the spool files it carries
/// (removed once it is written) and how many messages it adds.
struct Commit {
    to: AgentName,
    inbox: PathBuf,
    bytes: Vec<u8>,
    claimed: Vec<PathBuf>,
    fresh: usize,
}

/// The rewrite of `to`'s inbox that carries every spooled message and then `extra`, if
/// any; `None` if there is nothing to carry. Caller holds the inbox lock.
///
/// Spool files are claimed by renaming them to `*.claimed` first, so a sender that gives up
/// can withdraw its file only if no committer has it. A claim is never given back: a spool
/// file only ever goes queued → claimed → gone, which is what lets a sender that sees
/// neither name know its message was committed. Claimed files left by a committer that
/// died or failed (a full disk) are committed by the next one, skipping any `msg_id` the
/// inbox already holds, unless their sender withdrew them first (see `settle`).
fn prepare_commit(
    root: &Root,
    team: &TeamName,
    to: &AgentName,
    _guard: &lock::Locked,
    extra: Option<Value>,
) -> Result<Option<Commit>> {
    let (spool, inbox) = (&root.spool_dir(team, to), &root.inbox_path(team, to));
    files::check(root, spool)?;
    let claimed = claim_spool(spool);
    let recovering = claimed.iter().any(|p| p.recovered);
    let claimed: Vec<PathBuf> = claimed.into_iter().map(|c| c.path).collect();
    let mut fresh = read_claimed(&claimed)?;
    if fresh.is_empty() && extra.is_none() {
        return Ok(None);
    }
    let existing = files::read(root, inbox)?.unwrap_or_else(|| b"[]".to_vec());
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
    fresh.extend(extra);
    let bytes = match append_entries(&existing, &fresh) {
        Some(bytes) => bytes,
        None => {
            let mut entries = load_locked(root, inbox)?;
            entries.extend(fresh.iter().cloned());
            json::to_pretty(&entries)
        }
    };
    Ok(Some(Commit {
        to: to.clone(),
        inbox: inbox.clone(),
        bytes,
        claimed,
        fresh: fresh.len(),
    }))
}

/// After a commit's write: its spool files go, then its bell rings. After the claims are
/// gone: a reader woken now finds the spool empty and reads the inbox without waiting for
/// the lock.
fn finish_commit(root: &Root, team: &TeamName, commit: &Commit) {
    for path in &commit.claimed {
        let _ = std::fs::remove_file(path);
    }
    if commit.fresh > 0 {
        bell::ring(root, team, &commit.to);
    }
}

/// A spool file this committer holds: `recovered` if a committer before it had claimed it.
struct Claim {
    path: PathBuf,
    recovered: bool,
}

/// Claims every message waiting in `spool` (renaming it to `*.claimed`) and takes over the
/// claims of committers that died or failed; in the order they were spooled.
fn claim_spool(spool: &Path) -> Vec<Claim> {
    let Ok(entries) = std::fs::read_dir(spool) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    let mut claimed = Vec::new();
    for name in names {
        let path = spool.join(&name);
        if name.ends_with(".json.claimed") {
            claimed.push(Claim {
                path,
                recovered: true,
            });
        } else if name.ends_with(".json") {
            let target = claimed_name(&path);
            if std::fs::rename(&path, &target).is_ok() {
                claimed.push(Claim {
                    path: target,
                    recovered: false,
                });
            }
        }
    }
    claimed.sort_by(|a, b| a.path.cmp(&b.path));
    claimed
}

/// The messages in claimed spool files; one that does not parse is moved aside.
fn read_claimed(claimed: &[PathBuf]) -> Result<Vec<Value>> {
    let mut fresh = Vec::with_capacity(claimed.len());
    for path in claimed {
        match no_symlinks::read(path).map(|b| b.map(|b| json::parse::<Value>(&b))) {
            Ok(Some(Ok(v))) if v.is_object() => fresh.push(v),
            Ok(None) => {}
            // Not a message: moved aside (a symlink is moved, never followed).
            Ok(Some(_)) | Err(swarm_util::error::Error::Symlink { .. }) => {
                let aside = quarantine_path(path);
                tracing::warn!(
                    "spooled message {} does not parse; moved it to {}",
                    path.display(),
                    aside.display()
                );
                let _ = std::fs::rename(path, aside);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(fresh)
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

pub(super) fn spool_has_mail(spool: &Path) -> bool {
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
}
