//! Reads with a size limit: text from a file or a stream, stopping one byte past the
//! limit, so a file far too big (or endless: `/dev/zero`, a pipe) costs at most the limit
//! and a clear error naming it, never the machine's memory. What a person or another
//! program writes for swarm to read comes through here: messages, goals and scripts
//! (`ui::cli::input`), and the configuration shared with Claude Code (settings files and
//! the hooks in them, agent definitions).

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};

/// The most a configuration file (a settings file, an agent definition) may hold: far more
/// than any real one, far less than would hurt.
pub const CONFIG_LIMIT: usize = 1 << 20;

/// What a bounded read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bounded {
    Text(String),
    /// More than the limit: only the limit and one byte were read.
    TooBig,
    NotUtf8,
}

/// At most `limit` bytes of UTF-8 text from `reader`.
pub fn read(reader: impl Read, limit: usize) -> std::io::Result<Bounded> {
    let mut bytes = Vec::new();
    reader.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > limit {
        return Ok(Bounded::TooBig);
    }
    Ok(String::from_utf8(bytes).map_or(Bounded::NotUtf8, Bounded::Text))
}

/// A configuration file's text, or `None` when there is no such file. Too big or not
/// text is an error naming the file and what to do.
pub fn config_file(path: &Path) -> Result<Option<String>> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("read", path, e)),
    };
    match read(file, CONFIG_LIMIT).map_err(|e| Error::io("read", path, e))? {
        Bounded::Text(text) => Ok(Some(text)),
        Bounded::TooBig => Err(Error::usage(format!(
            "failed to read {}: it is over the {} limit of a configuration file; make it smaller",
            path.display(),
            size(CONFIG_LIMIT)
        ))),
        Bounded::NotUtf8 => Err(Error::usage(format!(
            "failed to read {}: it is not UTF-8 text; convert it to UTF-8",
            path.display()
        ))),
    }
}

/// `256 KiB`, `16 MiB`, else bytes.
pub fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} byte"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_file_is_read_up_to_the_limit_and_named_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        assert_eq!(config_file(&file).unwrap(), None);
        std::fs::write(&file, "x".repeat(CONFIG_LIMIT)).unwrap();
        assert_eq!(config_file(&file).unwrap().unwrap().len(), CONFIG_LIMIT);
        std::fs::write(&file, "x".repeat(CONFIG_LIMIT + 1)).unwrap();
        let err = config_file(&file).unwrap_err();
        assert!(matches!(err, crate::error::Error::Usage(_)), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "failed to read {}: it is over the 1 MiB limit of a configuration file; make it smaller",
                file.display()
            )
        );
        let zero = config_file(Path::new("/dev/zero")).unwrap_err();
        assert!(zero.to_string().contains("over the 1 MiB limit"), "{zero}");
    }
}
