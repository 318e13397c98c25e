//! Which backend holds a team: the file store by default, or a database server named by
//! the team's pointer, `teams/<team>/store.json` (`{"url": "postgres://…"}`), written when
//! the team was made there and read by every later open, in every process of the team.
//!
//! This crate knows no database: an [`Opener`] follows pointers, and the edge gives it to
//! the [`crate::teams::Teams`] it makes, as a value (a `Teams` without one, a test's or a
//! tool's, opens file teams only and refuses a team with a pointer).
//!
//! Invariants:
//! - the pointer is written after the team exists on its server, atomically, so a pointer
//!   never names a team that was not made; a team has a roster file or a pointer, never
//!   both (each kind of create refuses the other);
//! - the pointer holds no password: an [`Opener`] refuses a URL with one before anything
//!   is made (passwords come from `PGPASSWORD`, `~/.pgpass` or the server's own trust);
//! - the file store's files are untouched by all of this: a team without a pointer is
//!   byte for byte what Claude Code reads.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::layout::Root;
use crate::roster::TeamConfig;
use crate::seam::Store;
use swarm_util::atomic;
use swarm_util::error::{Base as _, IoContext};
use swarm_util::names::TeamName;

/// Where the URL given to [`Opener::open`] comes from, which says what a server found away
/// means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlSource {
    /// The team's pointer: the team was made there, so a server there refusing connections,
    /// starting up or shutting down is restarting, and is waited for (a bounded time, the
    /// opener's) as one the process reached before would be.
    Pointer,
    /// A person (a link's URL, a team being made): nothing says a server runs there, so one
    /// that cannot be reached is a wrong URL or a server not started, said at once.
    Given,
}

/// Opens teams on database servers, by URL: given to [`crate::teams::Teams`] at the edge.
pub trait Opener: Send + Sync {
    /// `team` at `url`, which comes from `from`. With `now`, connects now, so an
    /// unreachable server is this call's error; without it, a server that cannot be reached
    /// yet gives a handle whose every operation fails with `Error::Unavailable` until the
    /// server returns.
    fn open(
        &self,
        url: &str,
        from: UrlSource,
        root: &Root,
        team: &TeamName,
        now: bool,
    ) -> Result<Store>;
    /// Makes `team` at `url` (refusing a URL that holds a password, and a team that exists
    /// there).
    fn create(
        &self,
        url: &str,
        root: &Root,
        team: &TeamName,
        description: Option<String>,
        cwd: &Path,
    ) -> Result<TeamConfig>;
}

/// The pointer's document.
#[derive(Debug, Serialize, Deserialize)]
struct Pointer {
    url: String,
}

impl Root {
    /// The URL of the server holding `team`, from its pointer; `None` for a file team.
    pub fn store_url(&self, team: &TeamName) -> Result<Option<String>> {
        let path = self.store_pointer_path(team);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("read", &path, e)),
        };
        let pointer: Pointer = serde_json::from_slice(&bytes).map_err(|e| Error::Pointer {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        Ok(Some(pointer.url))
    }

    /// Writes `team`'s pointer to `url`, atomically.
    pub(crate) fn write_pointer(&self, team: &TeamName, url: &str) -> Result<()> {
        let dir = self.team_dir(team);
        std::fs::create_dir_all(&dir).ctx("create directory", &dir)?;
        let bytes = swarm_util::json::to_pretty(&Pointer {
            url: url.to_owned(),
        });
        Ok(atomic::write(
            &self.store_pointer_path(team),
            &bytes,
            self.durable(),
        )?)
    }
}
