//! The teams under a root: creating one, opening one (which is where its backend is
//! chosen), whether one exists or is half made, listing and deleting them. Everything else a team holds is reached through
//! the [`Store`] handle these return.

use std::path::Path;

use crate::file_store::FileStore;
use crate::layout::Root;
use crate::names::TeamName;
use crate::roster::{self, TeamConfig};
use crate::seam::Store;
use swarm_util::error::Result;

impl Root {
    /// The team `team` under this root. Opening reads nothing: a team that does not exist
    /// fails at its first use, naming what is missing.
    pub fn open(&self, team: &TeamName) -> Store {
        Store::new(FileStore::new(self, team))
    }

    /// Creates `team` (its roster with the lead as the only member, and its empty
    /// mailboxes and task list); refuses a team that exists. Open it to use it.
    pub fn create_team(
        &self,
        team: &TeamName,
        description: Option<String>,
        cwd: &Path,
    ) -> Result<TeamConfig> {
        roster::create(self, team, description, cwd)
    }

    /// Every team under this root, by name.
    pub fn teams(&self) -> Result<Vec<TeamConfig>> {
        roster::list(self)
    }

    /// Whether `team` exists under this root: it has a roster (`teams/<team>/config.json`).
    /// Reads nothing but whether the roster is there.
    pub fn has_team(&self, team: &TeamName) -> bool {
        self.roster_path(team).exists()
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

    /// Removes `team`'s files (roster, mailboxes, state, task list). Whether its members
    /// still run is the caller's to settle first.
    pub fn delete_team(&self, team: &TeamName) -> Result<()> {
        roster::delete_files(self, team)
    }
}
