//! Text a person hands the command line in a file or on stdin: a message, a teammate's
//! first prompt, a lead's goal, a model script. Every such read goes through [`read_text`],
//! which stops one byte past its limit (`util::bounded`), so `--file /dev/zero` or an endless pipe costs a
//! few hundred KiB and a usage error, not the machine's memory, and which refuses text
//! that is not UTF-8 as the bad input it is (exit 2, as for argv).

use std::io::Read;
use std::path::Path;

use swarm::error::{Error, Result};
use swarm_util::bounded::{self, Bounded};
use swarm_util::error::Base as _;

/// Where the text comes from.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    Stdin,
    File(&'a Path),
}

/// What is read, and how much of it may be.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// What the text is, for errors: "the message", "the goal".
    pub what: &'static str,
    pub bytes: usize,
    /// What to do about text over the limit.
    pub fix: &'static str,
}

/// At most `limit.bytes` of UTF-8 text from `source`.
pub fn read_text(source: Source<'_>, limit: Limit) -> Result<String> {
    let (name, reader): (String, Box<dyn Read>) = match source {
        Source::Stdin => ("stdin".to_owned(), Box::new(std::io::stdin().lock())),
        Source::File(path) => (
            path.display().to_string(),
            Box::new(std::fs::File::open(path).map_err(|e| Error::io("read", path, e))?),
        ),
    };
    match bounded::read(reader, limit.bytes).map_err(|e| Error::io("read", &name, e))? {
        Bounded::Text(text) => Ok(text),
        Bounded::TooBig => Err(Error::usage(format!(
            "{} in {name} is over the {} limit; {}",
            limit.what,
            bounded::size(limit.bytes),
            limit.fix
        ))),
        Bounded::NotUtf8 => Err(Error::usage(format!(
            "{} in {name} is not UTF-8 text; convert it to UTF-8 first",
            limit.what
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Limit = Limit {
        what: "the note",
        bytes: 4,
        fix: "shorten it",
    };

    #[test]
    fn reads_up_to_the_limit_and_refuses_more_or_non_text() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "abcd").unwrap();
        assert_eq!(read_text(Source::File(&file), SMALL).unwrap(), "abcd");
        std::fs::write(&file, "abcde").unwrap();
        let err = read_text(Source::File(&file), SMALL).unwrap_err();
        assert_eq!(swarm::exit::exit_code(&err), 2);
        assert!(
            err.to_string()
                .ends_with("is over the 4 byte limit; shorten it"),
            "{err}"
        );
        std::fs::write(&file, b"a\xff").unwrap();
        let err = read_text(Source::File(&file), SMALL).unwrap_err();
        assert_eq!(swarm::exit::exit_code(&err), 2);
        assert!(err.to_string().contains("not UTF-8"), "{err}");
        let zero = read_text(
            Source::File(Path::new("/dev/zero")),
            Limit {
                bytes: 1 << 20,
                ..SMALL
            },
        )
        .unwrap_err();
        assert!(zero.to_string().contains("over the 1 MiB limit"), "{zero}");
    }
}
