//! A lock held for a process's life that others can look at without taking it.
//!
//! An open-file-description lock (`F_OFD_SETLK`, a write lock on the whole file), taken
//! on a file opened close-on-exec: no child inherits it, and the kernel frees it when the
//! holder's process closes its files on the way out, before it becomes a zombie. So once a
//! look finds it free, its last holder has written all it ever will. A look
//! (`F_OFD_GETLK`) only asks the kernel whether a lock would conflict: unlike a `flock`
//! probe, it never holds the lock, so it never makes a holder that starts at that moment
//! fail. OFD locks are independent of `flock`, which the store's write locks use.

use std::fs::File;
use std::path::Path;

use nix::fcntl::{FcntlArg, fcntl};
use nix::libc;

use crate::error::{Error, Result};

/// A whole-file write lock description, for setting or for asking.
fn whole_file(kind: libc::c_short) -> libc::flock {
    libc::flock {
        l_type: kind,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    }
}

/// Takes the lock on `file` if nobody holds it: `Ok(false)` when someone does.
pub fn try_hold(file: &File, path: &Path) -> Result<bool> {
    let lock = whole_file(libc::F_WRLCK as libc::c_short);
    match fcntl(file, FcntlArg::F_OFD_SETLK(&lock)) {
        Ok(_) => Ok(true),
        Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EACCES) => Ok(false),
        Err(e) => Err(Error::io("lock", path, std::io::Error::from(e))),
    }
}

/// Whether any open file description holds the lock on the file at `path` (a missing
/// file is held by nobody). Takes nothing.
pub fn is_held(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut probe = whole_file(libc::F_WRLCK as libc::c_short);
    match fcntl(&file, FcntlArg::F_OFD_GETLK(&mut probe)) {
        Ok(_) => probe.l_type != libc::F_UNLCK as libc::c_short,
        Err(e) => {
            tracing::warn!("failed to look at the lock on {}: {e}", path.display());
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &Path) -> File {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .unwrap()
    }

    #[test]
    fn a_held_lock_is_seen_and_excludes_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lead.flock");
        assert!(!is_held(&path), "a missing file is held by nobody");
        let holder = open(&path);
        assert!(try_hold(&holder, &path).unwrap());
        assert!(is_held(&path));
        assert!(
            !try_hold(&open(&path), &path).unwrap(),
            "two holders at once"
        );
        drop(holder);
        assert!(!is_held(&path));
        assert!(try_hold(&open(&path), &path).unwrap());
    }

    #[test]
    fn looking_never_makes_a_starting_holder_fail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lead.flock");
        open(&path);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let looker = {
            let (stop, path) = (stop.clone(), path.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    is_held(&path);
                }
            })
        };
        let refused = (0..5000)
            .filter(|_| !try_hold(&open(&path), &path).unwrap())
            .count();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        looker.join().unwrap();
        assert_eq!(refused, 0, "a look took the lock from a starting holder");
    }
}
