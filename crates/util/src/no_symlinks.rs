//! Refusing symlinks inside swarm's root.
//!
//! Everything under the root is swarm's or Claude Code's own, made by them as plain files
//! and directories. A symlink there was planted, by mistake or by someone who wants swarm
//! to overwrite, delete or read a file elsewhere, so swarm never goes through one: below
//! the root, every existing component of a path it is about to lock, write, read or delete
//! must be a real file or directory ([`check`]), and the files it opens in place are opened
//! with `O_NOFOLLOW` ([`open`], [`read`]), which closes the gap between a check and an open.
//! The root itself may be a symlink (a `~/.claude` kept with one's dotfiles is common).

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::{Error, Result};

/// Fails naming the first symlink among the existing components of `path` below `base`.
/// A `path` outside `base` is not checked: only the root is swarm's to police.
pub fn check(base: &Path, path: &Path) -> Result<()> {
    let Ok(below) = path.strip_prefix(base) else {
        return Ok(());
    };
    let mut at = base.to_path_buf();
    for part in below.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(Error::Symlink { path: at }),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(())
}

/// Opens `path` with `options`, refusing to follow a symlink at its last component.
pub fn open(options: &mut OpenOptions, action: &'static str, path: &Path) -> Result<File> {
    options
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| error(action, path, e))
}

/// The whole of `path`, or `None` if it does not exist; a symlink is refused.
pub fn read(path: &Path) -> Result<Option<Vec<u8>>> {
    let mut file = match open(OpenOptions::new().read(true), "read", path) {
        Ok(f) => f,
        Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", path, e))?;
    Ok(Some(bytes))
}

/// An error from an `O_NOFOLLOW` open: `ELOOP` means the path is a symlink.
pub fn error(action: &'static str, path: &Path, e: io::Error) -> Error {
    if e.raw_os_error() == Some(nix::libc::ELOOP) {
        Error::Symlink {
            path: path.to_path_buf(),
        }
    } else {
        Error::io(action, path, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_below_the_base_are_named_and_the_base_itself_may_be_one() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir_all(real.join("teams/t")).unwrap();
        let base = dir.path().join("base");
        std::os::unix::fs::symlink(&real, &base).unwrap();
        check(&base, &base.join("teams/t/inboxes/bob.json")).unwrap();
        std::os::unix::fs::symlink(dir.path(), real.join("teams/u")).unwrap();
        let err = check(&base, &base.join("teams/u/inboxes/bob.json")).unwrap_err();
        assert!(
            matches!(&err, Error::Symlink { path } if path.ends_with("teams/u")),
            "{err}"
        );
        std::fs::write(real.join("f"), b"x").unwrap();
        std::os::unix::fs::symlink(real.join("f"), real.join("g")).unwrap();
        assert_eq!(read(&real.join("f")).unwrap().unwrap(), b"x");
        assert!(read(&real.join("missing")).unwrap().is_none());
        assert!(matches!(read(&real.join("g")), Err(Error::Symlink { .. })));
    }
}
