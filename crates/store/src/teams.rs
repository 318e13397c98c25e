//! The teams under a root: creating one (as files, or on the root's database server),
//! whether one exists or is half made, listing and deleting them. Opening one, where its
//! backend is chosen, is `backends`'. Everything else a team holds is reached through the
//! [`Store`] handle `Root::open` returns.

use std::path::Path;

use crate::layout::Root;
use crate::names::TeamName;
use crate::roster::{self, TeamConfig};
#[cfg(doc)]
use crate::seam::Store;
use swarm_util::error::{Error, Result};

impl Root {
    /// Creates `team` (its roster with the lead as the only member, and its empty
    /// mailboxes and task list), as files or, when this root makes its teams on a server
    /// ([`Root::making_teams_at`]), there with its pointer; refuses a team that exists.
    /// Open it to use it.
    pub fn create_team(
        &self,
        team: &TeamName,
        description: Option<String>,
        cwd: &Path,
    ) -> Result<TeamConfig> {
        if let Some(url) = self.new_teams_at() {
            return self.create_team_at(url, team, description, cwd);
        }
        if self.store_pointer_path(team).exists() {
            return Err(Error::conflict(format!(
                "team '{team}' already exists on a database server ({}); pick another name or delete it with `swarm team delete {team}`",
                self.store_pointer_path(team).display()
            )));
        }
        roster::create(self, team, description, cwd)
    }

    /// Every team under this root, by name: its file teams and those on servers.
    pub fn teams(&self) -> Result<Vec<TeamConfig>> {
        let mut teams = roster::list(self)?;
        teams.extend(self.server_teams());
        teams.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(teams)
    }

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

    /// Removes `team`'s files (roster, mailboxes, state, task list), and for a team on a
    /// server, first all it holds there. Whether its members still run is the caller's to
    /// settle first.
    pub fn delete_team(&self, team: &TeamName) -> Result<()> {
        self.delete_team_at_server(team)?;
        roster::delete_files(self, team)
    }

    /// Forgets `team` here, a link to a team on a database (`link_team`): its pointer and
    /// the files its agents kept here (logs, transcripts) go; the team itself stays on its
    /// server. A team of files here is refused: that is `delete_team`'s.
    pub fn unlink_team(&self, team: &TeamName) -> Result<()> {
        if self.store_url(team)?.is_none() {
            return Err(if self.has_team(team) {
                Error::usage(format!(
                    "team '{team}' here is files, not a link to a database; delete it with `swarm team delete {team}`"
                ))
            } else {
                Error::not_found(format!(
                    "no team named '{team}' under {}",
                    self.path().display()
                ))
            });
        }
        roster::delete_files(self, team)
    }
}
