//! Which backend holds a team: the file store by default, or a database server named by
//! the team's pointer, `teams/<team>/store.json` (`{"url": "postgres://…"}`), written when
//! the team was made there and read by every later open, in every process of the team.
//!
//! This crate knows no database: the edge registers the process's [`Opener`] once
//! ([`register`]), and a process without one (a test's, a tool's) opens file teams only,
//! refusing a team with a pointer. (It is the process's, not a [`Root`]'s: every root of
//! the process, wherever made, follows a pointer the same way.)
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
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::layout::Root;
use crate::names::TeamName;
use crate::roster::TeamConfig;
use crate::seam::Store;
use swarm_util::atomic;
use swarm_util::error::{Error, IoContext, Result};

/// Opens teams on database servers, by URL: registered at the edge ([`register`]).
pub trait Opener: Send + Sync {
    /// `team` at `url`. With `now`, connects now, so an unreachable server is this call's
    /// error; without it, a server that cannot be reached yet gives a handle whose every
    /// operation fails with `Error::Unavailable` until the server returns.
    fn open(&self, url: &str, root: &Root, team: &TeamName, now: bool) -> Result<Store>;
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
    /// Deletes `team` and all it holds at `url`.
    fn delete(&self, url: &str, root: &Root, team: &TeamName) -> Result<()>;
}

static OPENER: OnceLock<Arc<dyn Opener>> = OnceLock::new();

/// Registers how this process opens teams on database servers: once, at the edge, before
/// any team is opened; a second registration is ignored.
pub fn register(opener: Arc<dyn Opener>) {
    let _ = OPENER.set(opener);
}

/// The pointer's document.
#[derive(Debug, Serialize, Deserialize)]
struct Pointer {
    url: String,
}

impl Root {
    /// This root making its new teams on the server at `url` (`--store`, `SWARM_STORE_URL`),
    /// or as files (`None`, the default).
    pub fn making_teams_at(mut self, url: Option<String>) -> Root {
        self.new_teams_at = url;
        self
    }

    /// Where this root makes new teams: a server's URL, or `None` for files.
    pub fn new_teams_at(&self) -> Option<&str> {
        self.new_teams_at.as_deref()
    }

    /// The URL of the server holding `team`, from its pointer; `None` for a file team.
    pub fn store_url(&self, team: &TeamName) -> Result<Option<String>> {
        let path = self.store_pointer_path(team);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("read", &path, e)),
        };
        let pointer: Pointer = serde_json::from_slice(&bytes).map_err(|e| {
            Error::Other(format!(
                "failed to read the team's store pointer {}: {e}; write {{\"url\": \"postgres://…\"}} or delete the team",
                path.display()
            ))
        })?;
        Ok(Some(pointer.url))
    }

    /// The team `team` under this root. Opening a file team reads nothing: one that does not
    /// exist fails at its first use. A team on a server is opened through the registered
    /// [`Opener`], without waiting for its server (see [`Opener::open`]); a pointer that
    /// cannot be read, or no opener to follow it, ends the process with one line (exit
    /// code of the error): carrying on with the files would split the team's state.
    pub fn open(&self, team: &TeamName) -> Store {
        self.open_on(team, false).unwrap_or_else(|e| {
            eprintln!("swarm: {e}");
            std::process::exit(i32::from(e.exit_code()))
        })
    }

    /// [`Root::open`], connecting now to a team's server: an unreachable one is an error
    /// (`Error::Unavailable`, exit code 5) naming it without its password. For the front
    /// end, once per command, before it acts.
    pub fn try_open(&self, team: &TeamName) -> Result<Store> {
        self.open_on(team, true)
    }

    fn open_on(&self, team: &TeamName, now: bool) -> Result<Store> {
        match self.store_url(team)? {
            None => Ok(Store::new(crate::file_store::FileStore::new(self, team))),
            Some(url) => self.opener(team)?.open(&url, self, team, now),
        }
    }

    fn opener(&self, team: &TeamName) -> Result<&'static Arc<dyn Opener>> {
        OPENER.get().ok_or_else(|| {
            Error::Other(format!(
                "failed to open team '{team}': it is stored on a database server ({}), which this program cannot open; use the swarm binary",
                self.store_pointer_path(team).display()
            ))
        })
    }

    /// Makes `team` on the server at `url` and writes its pointer.
    pub(crate) fn create_team_at(
        &self,
        url: &str,
        team: &TeamName,
        description: Option<String>,
        cwd: &Path,
    ) -> Result<TeamConfig> {
        let opener = self.opener(team)?;
        if self.has_team(team) {
            return Err(Error::conflict(format!(
                "team '{team}' already exists at {}; pick another name or delete it with `swarm team delete {team}`",
                self.team_dir(team).display()
            )));
        }
        let config = opener.create(url, self, team, description, cwd)?;
        let written = self.write_pointer(team, url);
        if written.is_err() {
            let _ = opener.delete(url, self, team);
        }
        written.map(|()| config)
    }

    /// Points this root at `team`, which exists on the server at `url` (a teammate's host,
    /// whose root has never seen the team): its pointer is written, and the team read
    /// through it. A file team of that name here is refused; a pointer to the same url is
    /// kept as it is.
    pub fn link_team(&self, team: &TeamName, url: &str) -> Result<TeamConfig> {
        match self.store_url(team)? {
            Some(there) if there == url => {}
            Some(_) => {
                return Err(Error::conflict(format!(
                    "team '{team}' here is on another database ({}); delete it with `swarm team delete {team}` first",
                    self.store_pointer_path(team).display()
                )));
            }
            None if self.has_team(team) => {
                return Err(Error::conflict(format!(
                    "team '{team}' exists here as files ({}); delete it with `swarm team delete {team}` first",
                    self.team_dir(team).display()
                )));
            }
            None => {
                // Read before the pointer is written, so a wrong url leaves nothing here.
                self.opener(team)?
                    .open(url, self, team, true)?
                    .roster()
                    .load()?;
                self.write_pointer(team, url)?;
            }
        }
        self.try_open(team)?.roster().load()
    }

    fn write_pointer(&self, team: &TeamName, url: &str) -> Result<()> {
        let dir = self.team_dir(team);
        std::fs::create_dir_all(&dir).ctx("create directory", &dir)?;
        let bytes = swarm_util::json::to_pretty(&Pointer {
            url: url.to_owned(),
        });
        atomic::write(&self.store_pointer_path(team), &bytes, self.durable())
    }

    /// Deletes `team` from its server, when it has one; its local files are the caller's.
    pub(crate) fn delete_team_at_server(&self, team: &TeamName) -> Result<()> {
        match self.store_url(team)? {
            Some(url) => self.opener(team)?.delete(&url, self, team),
            None => Ok(()),
        }
    }

    /// The teams under this root that live on a server, with their rosters; one whose
    /// server cannot be read is skipped with a warning, as a file team whose roster does
    /// not parse is.
    pub(crate) fn server_teams(&self) -> Vec<TeamConfig> {
        let Ok(entries) = std::fs::read_dir(self.teams_dir()) else {
            return Vec::new();
        };
        let mut teams = Vec::new();
        for entry in entries.flatten() {
            let Ok(team) = TeamName::new(&entry.file_name().to_string_lossy()) else {
                continue;
            };
            if !self.store_pointer_path(&team).exists() {
                continue;
            }
            match self.try_open(&team).and_then(|s| s.roster().load()) {
                Ok(config) => teams.push(config),
                Err(e) => tracing::warn!("skipping team '{team}': {e}"),
            }
        }
        teams
    }
}
