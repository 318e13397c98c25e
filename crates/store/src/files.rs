//! How the store writes and locks its files: the one place where a root's settings (its
//! lock timeout and durability, resolved at the edge) meet `util`'s primitives. Every
//! write replaces its file atomically and, unless the root says otherwise or the file is
//! not worth it, durably; every lock is bounded by the root's timeout; no write, lock or
//! read here goes through a symlink below the root (see `util::no_symlinks`). (The lead
//! lock, `store::lead`, and the merge queue's run lock are held for a process's life or a
//! run rather than around a write, and are taken there, on a file opened by
//! [`open_lock_file`].)

use std::path::Path;

use crate::layout::Root;
use swarm_util::error::Result;
use swarm_util::lock::Locked;
use swarm_util::{atomic, lock, no_symlinks};

/// Atomically replaces `path` with `bytes`, fsynced unless the root says not to.
pub(super) fn write(root: &Root, path: &Path, bytes: &[u8]) -> Result<()> {
    check(root, path)?;
    atomic::write(path, bytes, root.durable())
}

/// Atomically replaces each `(path, bytes)` as one group (see [`atomic::write_all`]),
/// fsynced unless the root says not to. Results in order.
pub(super) fn write_all(root: &Root, items: &[(&Path, &[u8])]) -> Vec<Result<()>> {
    let checked: Vec<Result<()>> = items.iter().map(|(p, _)| check(root, p)).collect();
    let ok: Vec<(&Path, &[u8])> = items
        .iter()
        .zip(&checked)
        .filter(|(_, c)| c.is_ok())
        .map(|(item, _)| *item)
        .collect();
    let mut written = atomic::write_all(&ok, root.durable()).into_iter();
    checked
        .into_iter()
        .map(|c| c.and_then(|()| written.next().expect("one result per write")))
        .collect()
}

/// Atomically replaces `path` with `bytes`, never fsynced: for files whose loss in a power
/// cut costs nothing (an agent's state, which describes a present the power cut ends; a
/// spool file, which its sender waits on until a durable commit carries it).
pub(super) fn write_unsynced(root: &Root, path: &Path, bytes: &[u8]) -> Result<()> {
    check(root, path)?;
    atomic::write(path, bytes, false)
}

/// The whole of `path`, or `None` if it does not exist.
pub(super) fn read(root: &Root, path: &Path) -> Result<Option<Vec<u8>>> {
    check(root, path)?;
    no_symlinks::read(path)
}

/// Whether Claude Code's lock of `path`, the directory `<path>.lock/`, exists now. Claude
/// Code rewrites some files in place under it (write, then truncate), so while it is held a
/// reader without the lock may find such a file half-rewritten.
pub(super) fn claude_lock_held(path: &Path) -> bool {
    let mut lock = path.as_os_str().to_owned();
    lock.push(".lock");
    std::fs::symlink_metadata(lock).is_ok_and(|m| m.is_dir())
}

/// Opens (making it if need be) the file an flock held for longer than a write is taken
/// on.
pub(super) fn open_lock_file(root: &Root, path: &Path) -> Result<std::fs::File> {
    check(root, path)?;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| swarm_util::error::Error::io("open", path, e))
}

/// Fails naming the symlink, if any component of `path` below the root is one.
pub(super) fn check(root: &Root, path: &Path) -> Result<()> {
    no_symlinks::check(root.path(), path)
}

/// Makes directory entries (a rename, a removal) durable, unless the root says not to.
pub(super) fn sync_dir(root: &Root, dir: &Path) -> Result<()> {
    if root.durable() {
        atomic::sync_dir(dir)?;
    }
    Ok(())
}

/// Both locks of the shared file `anchor` (see [`lock::lock`]).
pub(super) fn lock(root: &Root, anchor: &Path) -> Result<Locked> {
    check(root, anchor)?;
    lock::lock(anchor, root.lock_timeout())
}

/// Both locks of `anchor`, only if no other swarm process holds it right now.
pub(super) fn try_lock(root: &Root, anchor: &Path) -> Result<Option<Locked>> {
    check(root, anchor)?;
    lock::try_lock(anchor, root.lock_timeout())
}

/// Only the flock of `anchor`'s sidecar (see [`lock::lock_sidecar_only`]).
pub(super) fn lock_sidecar_only(root: &Root, anchor: &Path) -> Result<Locked> {
    check(root, anchor)?;
    lock::lock_sidecar_only(anchor, root.lock_timeout())
}
