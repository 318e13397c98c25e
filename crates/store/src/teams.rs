//! The teams under a root, and the one way to a team's [`Store`]: [`Teams`], which the
//! edge makes once from the root and the backends it may open (an [`Opener`] for teams on
//! database servers: a value, as a factory, never a process-wide registration) and passes
//! down. It creates a team (as files, or on the server it makes new teams on), opens one
//! (following its pointer, see [`crate::backends`]), lists, links and deletes them.
//!
//! Invariants:
//! - which backend holds a team is decided here, when it is opened, and nowhere else;
//! - opening never ends the process: a pointer that cannot be followed is the caller's
//!   error, carried up to the binary, which alone decides what the user sees;
//! - a file team is opened without reading anything: one that does not exist fails at its
//!   first use.

use std::path::Path;
use std::sync::Arc;

use crate::backends::{Opener, UrlSource};
use crate::error::{Error, Result};
use crate::layout::Root;
use crate::roster::{self, TeamConfig};
use crate::seam::Store;
use swarm_util::error::Base as _;
use swarm_util::names::TeamName;

/// The teams under one root, and how to open them.
#[derive(Clone)]
pub struct Teams {
    root: Root,
    /// How teams on database servers are opened; `None`: file teams only.
    servers: Option<Arc<dyn Opener>>,
    /// Where new teams are made: a server's URL, or `None` for files.
    new_teams_at: Option<String>,
}

impl std::fmt::Debug for Teams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Teams")
            .field("root", &self.root)
            .field("servers", &self.servers.is_some())
            .field("new_teams_at", &self.new_teams_at)
            .finish()
    }
}

impl Teams {
    /// The teams under `root`, as files only.
    pub fn new(root: Root) -> Teams {
        Teams {
            root,
            servers: None,
            new_teams_at: None,
        }
    }

    /// These teams, opening those on database servers through `opener`.
    pub fn with_servers(mut self, opener: Arc<dyn Opener>) -> Teams {
        self.servers = Some(opener);
        self
    }

    /// These teams, making new ones on the server at `url` (`--store`, `SWARM_STORE_URL`),
    /// or as files (`None`, the default).
    pub fn making_teams_at(mut self, url: Option<String>) -> Teams {
        self.new_teams_at = url;
        self
    }

    /// These teams, opened by a process that signs what it delivers in the lead's name
    /// (see [`Root::signing_as_lead`]).
    pub fn signing_as_lead(mut self) -> Teams {
        self.root = self.root.signing_as_lead();
        self
    }

    /// Where new teams are made: a server's URL, or `None` for files.
    pub fn new_teams_at(&self) -> Option<&str> {
        self.new_teams_at.as_deref()
    }

    pub fn root(&self) -> &Root {
        &self.root
    }

    /// `team`, opened. A team on a server is opened without waiting for its server (see
    /// [`Opener::open`]), whose calls wait a while for it if it is away (it was made there:
    /// [`UrlSource::Pointer`]); a pointer that cannot be read, or no opener to follow it, is an
    /// error: carrying on with the files would split the team's state.
    pub fn open(&self, team: &TeamName) -> Result<Store> {
        self.open_on(team, false)
    }

    /// [`Teams::open`], connecting now to a team's server: an unreachable one is an error
    /// (`Error::Unavailable`) naming it without its password, after a bounded wait if it is
    /// only away (restarting: [`UrlSource::Pointer`]). For a command, once, before it acts.
    pub fn connect(&self, team: &TeamName) -> Result<Store> {
        self.open_on(team, true)
    }

    fn open_on(&self, team: &TeamName, now: bool) -> Result<Store> {
        match self.root.store_url(team)? {
            None => Ok(Store::new(crate::file_store::FileStore::new(
                &self.root, team,
            ))),
            Some(url) => self
                .opener(team)?
                .open(&url, UrlSource::Pointer, &self.root, team, now),
        }
    }

    fn opener(&self, team: &TeamName) -> Result<&Arc<dyn Opener>> {
        self.servers.as_ref().ok_or_else(|| Error::NoServers {
            team: team.to_string(),
            pointer: self.root.store_pointer_path(team),
        })
    }

    /// Creates `team` (its roster with the lead as the only member, and its empty
    /// mailboxes and task list), as files or, when these teams are made on a server
    /// ([`Teams::making_teams_at`]), there with its pointer; refuses a team that exists.
    /// Returns it opened.
    pub fn create_team(
        &self,
        team: &TeamName,
        description: Option<String>,
        cwd: &Path,
    ) -> Result<Store> {
        if let Some(url) = self.new_teams_at() {
            self.create_team_at(url, team, description, cwd)?;
            return self.connect(team);
        }
        if self.root.store_pointer_path(team).exists() {
            return Err(Error::conflict(format!(
                "team '{team}' already exists on a database server ({}); pick another name or delete it with `swarm team delete {team}`",
                self.root.store_pointer_path(team).display()
            )));
        }
        roster::create(&self.root, team, description, cwd)?;
        self.open(team)
    }

    /// Makes `team` on the server at `url` and writes its pointer.
    fn create_team_at(
        &self,
        url: &str,
        team: &TeamName,
        description: Option<String>,
        cwd: &Path,
    ) -> Result<TeamConfig> {
        let opener = self.opener(team)?;
        if self.root.has_team(team) {
            return Err(Error::conflict(format!(
                "team '{team}' already exists at {}; pick another name or delete it with `swarm team delete {team}`",
                self.root.team_dir(team).display()
            )));
        }
        let config = opener.create(url, &self.root, team, description, cwd)?;
        let written = self.root.write_pointer(team, url);
        if written.is_err() {
            let made = opener.open(url, UrlSource::Given, &self.root, team, true);
            let _ = made.and_then(|store| store.delete_team());
        }
        written.map(|()| config)
    }

    /// Points this root at `team`, which exists on the server at `url` (a teammate's host,
    /// whose root has never seen the team): its pointer is written, and the team read
    /// through it. A file team of that name here is refused; a pointer to the same url is
    /// kept as it is.
    pub fn link_team(&self, team: &TeamName, url: &str) -> Result<TeamConfig> {
        let root = &self.root;
        match root.store_url(team)? {
            Some(there) if there == url => {}
            Some(_) => {
                return Err(Error::conflict(format!(
                    "team '{team}' here is on another database ({}); delete it with `swarm team delete {team}` first",
                    root.store_pointer_path(team).display()
                )));
            }
            None if root.has_team(team) => {
                return Err(Error::conflict(format!(
                    "team '{team}' exists here as files ({}); delete it with `swarm team delete {team}` first",
                    root.team_dir(team).display()
                )));
            }
            None => {
                // Read before the pointer is written, so a wrong url leaves nothing here.
                self.opener(team)?
                    .open(url, UrlSource::Given, root, team, true)?
                    .roster()
                    .load()?;
                root.write_pointer(team, url)?;
            }
        }
        self.connect(team)?.roster().load()
    }

    /// Every team under this root, by name: its file teams and those on servers.
    pub fn list(&self) -> Result<Vec<TeamConfig>> {
        let mut teams = roster::list(&self.root)?;
        teams.extend(self.server_teams());
        teams.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(teams)
    }

    /// The teams under this root that live on a server, with their rosters; one whose
    /// server cannot be read is skipped with a warning, as a file team whose roster does
    /// not parse is.
    fn server_teams(&self) -> Vec<TeamConfig> {
        let Ok(entries) = std::fs::read_dir(self.root.teams_dir()) else {
            return Vec::new();
        };
        let mut teams = Vec::new();
        for entry in entries.flatten() {
            let Ok(team) = TeamName::new(&entry.file_name().to_string_lossy()) else {
                continue;
            };
            if !self.root.store_pointer_path(&team).exists() {
                continue;
            }
            match self.connect(&team).and_then(|s| s.roster().load()) {
                Ok(config) => teams.push(config),
                Err(e) => tracing::warn!("skipping team '{team}': {e}"),
            }
        }
        teams
    }

    /// Removes `team`'s files (roster, mailboxes, state, task list), and for a team on a
    /// server, first all it holds there. Whether its members still run is the caller's to
    /// settle first.
    pub fn delete_team(&self, team: &TeamName) -> Result<()> {
        self.connect(team)?.delete_team()
    }

    /// Forgets `team` here, a link to a team on a database ([`Teams::link_team`]): its
    /// pointer and the files its agents kept here (logs, transcripts) go; the team itself
    /// stays on its server. A team of files here is refused: that is `delete_team`'s.
    pub fn unlink_team(&self, team: &TeamName) -> Result<()> {
        let root = &self.root;
        if root.store_url(team)?.is_none() {
            return Err(if root.has_team(team) {
                Error::usage(format!(
                    "team '{team}' here is files, not a link to a database; delete it with `swarm team delete {team}`"
                ))
            } else {
                Error::not_found(format!(
                    "no team named '{team}' under {}",
                    root.path().display()
                ))
            });
        }
        roster::delete_files(root, team)
    }
}

impl Root {
    /// Whether `team` exists under this root: it has a roster (`teams/<team>/config.json`)
    /// or a pointer to its server. Reads nothing but whether either is there.
    pub fn has_team(&self, team: &TeamName) -> bool {
        self.roster_path(team).exists() || self.store_pointer_path(team).exists()
    }

    /// Whether `team` is half made: it has a folder but no roster, as a run that failed
    /// while the team was being made leaves it.
    pub fn is_half_made(&self, team: &TeamName) -> bool {
        self.team_dir(team).is_dir() && !self.has_team(team)
    }

    /// The half-made teams under this root, by name.
    pub fn half_made_teams(&self) -> Vec<TeamName> {
        let Ok(entries) = std::fs::read_dir(self.teams_dir()) else {
            return Vec::new();
        };
        let mut teams: Vec<TeamName> = entries
            .flatten()
            .filter_map(|e| TeamName::new(&e.file_name().to_string_lossy()).ok())
            .filter(|t| self.is_half_made(t))
            .collect();
        teams.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        teams
    }
}
