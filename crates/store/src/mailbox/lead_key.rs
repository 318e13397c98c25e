//! The team's lead key: the Ed25519 private key swarm's lead signs its mail with
//! ([`super::lead_sig`]), made once per team and kept in `teams/<team>/lead.key` (mode
//! 0600, created whole or not at all, never replaced) so that a resumed lead, and a
//! person's CLI acting as the lead, sign with the key the teammates were given.
//!
//! Only a root that signs as the lead ([`Root::signing_as_lead`], chosen at the edge for
//! the lead's process and a person's CLI, never for a teammate's) reads or makes the file;
//! every delivery through it in the lead's name is then signed ([`seal`]).
//! The file's bytes are `{"madeMs": <epoch ms>, "pkcs8": "<base64url PKCS#8>"}`.
//!
//! What it guards against, and what not, is in docs/design/formats.md §4.6: a 0600 file
//! keeps the key from other users and from whatever writes the mailbox without reading
//! it (a model with the team tools only, a tool on another host), not from a process that
//! runs as the same user.

use std::collections::HashMap;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::files;
use crate::layout::Root;
use crate::mailbox::envelope::Envelope;
use crate::mailbox::lead_sig::{LeadKey, LeadSigner, Recipient};
use swarm_util::error::{Base as _, IoContext};
use swarm_util::names::{AgentName, LEAD, TeamName};

/// The signers this process has read or made, by key file: the private key is read once
/// and kept in memory.
static LOADED: Mutex<Option<HashMap<PathBuf, Arc<LeadSigner>>>> = Mutex::new(None);

fn remembered(path: &Path) -> Option<Arc<LeadSigner>> {
    let loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    loaded.as_ref()?.get(path).cloned()
}

fn remember(path: &Path, signer: LeadSigner) -> Arc<LeadSigner> {
    let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    let signer = Arc::new(signer);
    loaded
        .get_or_insert_with(HashMap::new)
        .insert(path.to_path_buf(), signer.clone());
    signer
}

/// The team's lead signer, read from its key file or made (and the file written) the
/// first time; `None` unless `root` signs as the lead. The lead calls it as it starts, and
/// a spawn before it starts its teammate.
pub fn signer(root: &Root, team: &TeamName) -> Result<Option<Arc<LeadSigner>>> {
    if !root.signs_as_lead() {
        return Ok(None);
    }
    let path = root.lead_key_path(team);
    if let Some(signer) = remembered(&path) {
        return Ok(Some(signer));
    }
    Ok(Some(remember(&path, load_or_create(root, team)?)))
}

/// The public key teammates get as `--lead-verify-key`, if the team has one; `None` unless
/// `root` signs as the lead. Never makes a key (a dry run shows what is).
pub fn verify_key(root: &Root, team: &TeamName) -> Result<Option<LeadKey>> {
    if !root.signs_as_lead() {
        return Ok(None);
    }
    let path = root.lead_key_path(team);
    if let Some(signer) = remembered(&path) {
        return Ok(Some(signer.verify_key()));
    }
    Ok(load(root, &path)?.map(|s| remember(&path, s).verify_key()))
}

/// `e` signed with the team's lead key when it goes out in the lead's name and `root` signs
/// as the lead; otherwise `e` as it is. The one place the lead's signature is applied: each
/// backend calls it in the one step that puts envelopes in inboxes (the file store's
/// `mailbox::send::deliver`, PostgreSQL's `deliver_all`), whatever the write (a send, a
/// system note, an approval's answer).
/// Each copy is signed for its recipient `to` as well (`lead_sig_to`), so it holds in that
/// teammate's inbox only.
pub fn seal(root: &Root, team: &TeamName, to: &AgentName, e: Envelope) -> Result<Envelope> {
    if e.from != LEAD {
        return Ok(e);
    }
    let recipient = Recipient {
        team: team.to_string(),
        name: to.to_string(),
    };
    Ok(match signer(root, team)? {
        Some(signer) => signer.sign_for(e, &recipient),
        None => e,
    })
}

/// The team's lead signer from its key file, made first if there is none. Two processes
/// making it at once end up with the one that was written first.
pub fn load_or_create(root: &Root, team: &TeamName) -> Result<LeadSigner> {
    let path = root.lead_key_path(team);
    if let Some(signer) = load(root, &path)? {
        return Ok(signer);
    }
    let made = LeadSigner::generate()?;
    if create(root, &path, &made.to_file())? {
        return Ok(made);
    }
    load(root, &path)?.ok_or_else(|| {
        Error::LeadKey(format!(
            "failed to read the lead's key file {}: it vanished as it was made; try again",
            path.display()
        ))
    })
}

/// The signer in the key file at `path`, if there is one.
fn load(root: &Root, path: &Path) -> Result<Option<LeadSigner>> {
    let Some(bytes) = files::read(root, path)? else {
        return Ok(None);
    };
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            "the lead's key file {} can be read by others (mode {:o}); chmod 600 it",
            path.display(),
            meta.permissions().mode() & 0o777
        );
    }
    LeadSigner::from_file(&bytes).map(Some).ok_or_else(|| {
        Error::LeadKey(format!(
            "failed to read the lead's key file {}: it holds no key; move it aside and restart the team's teammates, which then get a new key",
            path.display()
        ))
    })
}

/// Writes `bytes` as the new file `path`, mode 0600, whole or not at all: a temp file,
/// fsynced, then hard-linked into place, which fails if the file exists. False if another
/// process made it first.
fn create(root: &Root, path: &Path, bytes: &[u8]) -> Result<bool> {
    files::check(root, path)?;
    // A team whose shared state is elsewhere (a database) may have no folder here yet.
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).ctx("create directory", dir)?;
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    // The name `util::atomic` gives its temp files, so its sweep removes one left by a crash.
    let tmp = path.with_file_name(format!(
        ".{name}.tmp.{}.{:08x}",
        std::process::id(),
        fastrand::u32(..)
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .ctx("create", &tmp)?;
        f.write_all(bytes).ctx("write", &tmp)?;
        f.sync_all().ctx("fsync", &tmp)?;
        match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Error::io("link into place", path, e)),
        }
    })();
    let _ = std::fs::remove_file(&tmp);
    if written? {
        if let Some(dir) = path.parent() {
            files::sync_dir(root, dir)?;
        }
        return Ok(true);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn team(dir: &Path) -> (Root, TeamName) {
        let root = Root::new(dir);
        let team = TeamName::new("t").unwrap();
        crate::roster::create(&root, &team, None, dir).unwrap();
        (root, team)
    }

    #[test]
    fn the_key_file_is_0600_and_a_resumed_lead_signs_with_the_same_key() {
        let dir = tempfile::tempdir().unwrap();
        let (root, team) = team(dir.path());
        assert!(signer(&root, &team).unwrap().is_none(), "not signing");
        let lead = root.clone().signing_as_lead();
        assert_eq!(verify_key(&lead, &team).unwrap(), None, "no key yet");
        assert!(!root.lead_key_path(&team).exists());

        let first = signer(&lead, &team).unwrap().unwrap().verify_key();
        assert_eq!(verify_key(&lead, &team).unwrap(), Some(first.clone()));
        let path = root.lead_key_path(&team);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());

        // A new process (a resumed lead, a person's CLI) reads the same key from the file.
        let resumed = load_or_create(&root, &team).unwrap();
        let signed = resumed.sign(Envelope::new(LEAD, "shut down"));
        assert_eq!(
            first.check(&signed, &HashSet::new(), None),
            Ok(signed.msg_id.as_deref().unwrap())
        );
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
                .count(),
            0
        );

        // Only the lead's mail is signed.
        let bob = AgentName::new("bob").unwrap();
        let peer = seal(&lead, &team, &bob, Envelope::new("bob", "hi")).unwrap();
        assert!(!peer.extra.contains_key("lead_sig"));
    }

    #[test]
    fn two_makers_at_once_end_with_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let (root, team) = team(dir.path());
        let keys: Vec<LeadKey> = std::thread::scope(|s| {
            let made: Vec<_> = (0..8)
                .map(|_| s.spawn(|| load_or_create(&root, &team).unwrap().verify_key()))
                .collect();
            made.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.windows(2).all(|w| w[0] == w[1]), "{keys:?}");
    }

    #[test]
    fn a_key_file_that_holds_no_key_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let (root, team) = team(dir.path());
        std::fs::write(root.lead_key_path(&team), "not a key").unwrap();
        let e = load_or_create(&root, &team).unwrap_err().to_string();
        assert!(e.starts_with("failed to read the lead's key file"), "{e}");
        assert!(e.contains("lead.key"), "{e}");
    }
}
