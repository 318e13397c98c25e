//! The roster in PostgreSQL: a team's `config.json` as one `jsonb` document in `teams`,
//! changed only under its row lock. Members are added by the file store's own rule
//! (`swarm_store::roster::add_to`); a member is removed and its open tasks returned to
//! pending in one transaction (the file store needs two steps and a reconcile loop).

use std::path::Path;

use postgres::GenericClient;
use postgres::types::Json;

use crate::PgStore;
use crate::connect::{Fail, Retry};
use crate::tasks::{lock_list, release_in};
use crate::watch::{Change, notify};
use swarm_store::error::{Error, Result};
use swarm_store::roster::{self, Member, NewMember, Removed, TeamConfig};
use swarm_store::seam::Roster;
use swarm_util::error::Base as _;
use swarm_util::names::LEAD;

pub(crate) fn create(
    store: &PgStore,
    description: Option<String>,
    cwd: &Path,
) -> Result<TeamConfig> {
    let config = roster::initial_config(&store.team, description, cwd);
    let team = store.team.as_str();
    store.db.transaction(Retry::Once, &format!("create team '{team}'"), |tx| {
        let made = tx.execute(
            "INSERT INTO teams (name, config) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&team, &Json(&config)],
        )?;
        if made == 0 {
            return Err(Error::conflict(format!(
                "team '{team}' already exists in the database at {}; pick another name or delete it with `swarm team delete {team}`",
                store.db.at()
            ))
            .into());
        }
        tx.execute("INSERT INTO task_lists (team) VALUES ($1)", &[&team])?;
        notify(tx, &store.team, Change::Roster)?;
        Ok(())
    })?;
    Ok(config)
}

pub(crate) fn delete(store: &PgStore) -> Result<()> {
    let team = store.team.as_str();
    let what = format!("delete team '{team}'");
    store.db.transaction(Retry::Safe, &what, |tx| {
        tx.execute("DELETE FROM teams WHERE name = $1", &[&team])?;
        notify(tx, &store.team, Change::Roster)?;
        Ok(())
    })
}

/// The roster, locked for the rest of the transaction when `for_update`.
pub(crate) fn load_in(
    store: &PgStore,
    client: &mut impl GenericClient,
    for_update: bool,
) -> std::result::Result<TeamConfig, Fail> {
    let sql = if for_update {
        "SELECT config FROM teams WHERE name = $1 FOR UPDATE"
    } else {
        "SELECT config FROM teams WHERE name = $1"
    };
    match client.query_opt(sql, &[&store.team.as_str()])? {
        Some(row) => Ok(row.get::<_, Json<TeamConfig>>(0).0),
        None => Err(store.no_team().into()),
    }
}

/// A team made and deleted as a whole.
impl PgStore {
    /// Creates the team: its roster with the lead alone, an empty task list. Refuses a team
    /// that exists.
    pub fn create_team(&self, description: Option<String>, cwd: &Path) -> Result<TeamConfig> {
        create(self, description, cwd)
    }

    /// Deletes the team and everything it holds on its server (this host's files are the
    /// caller's). A team that does not exist is not an error.
    pub fn delete_on_server(&self) -> Result<()> {
        delete(self)
    }
}

fn store_config(
    store: &PgStore,
    client: &mut impl GenericClient,
    config: &TeamConfig,
) -> std::result::Result<(), Fail> {
    client.execute(
        "UPDATE teams SET config = $2 WHERE name = $1",
        &[&store.team.as_str(), &Json(config)],
    )?;
    notify(client, &store.team, Change::Roster)?;
    Ok(())
}

impl Roster for PgStore {
    fn load(&self) -> Result<TeamConfig> {
        let what = format!("read the roster of team '{}'", self.team);
        self.db
            .run(Retry::Safe, &what, |client| load_in(self, client, false))
    }

    fn update_with(&self, f: &mut (dyn FnMut(&mut TeamConfig) -> Result<()> + Send)) -> Result<()> {
        let what = format!("update the roster of team '{}'", self.team);
        self.db.transaction(Retry::Once, &what, |tx| {
            let mut config = load_in(self, tx, true)?;
            f(&mut config)?;
            store_config(self, tx, &config)
        })
    }

    fn add_member(&self, new: NewMember) -> Result<Member> {
        self.add_members(vec![new])?
            .pop()
            .expect("one result per new member")
    }

    fn add_members(&self, new: Vec<NewMember>) -> Result<Vec<Result<Member>>> {
        let what = format!("add members to team '{}'", self.team);
        self.db.transaction(Retry::BeforeCommit, &what, |tx| {
            let mut config = load_in(self, tx, true)?;
            let results: Vec<Result<Member>> = new
                .iter()
                .cloned()
                .map(|n| roster::add_to(&mut config, &self.team, n))
                .collect();
            if results.iter().any(Result::is_ok) {
                store_config(self, tx, &config)?;
            }
            Ok(results)
        })
    }

    fn remove_member(&self, name: &str) -> Result<Removed> {
        if name == LEAD {
            return Err(Error::usage(
                "the lead cannot be removed from its team; delete the team with `swarm team delete`",
            ));
        }
        let what = format!("remove {name} from team '{}'", self.team);
        self.db.transaction(Retry::BeforeCommit, &what, |tx| {
            let mut config = load_in(self, tx, true)?;
            let idx = config
                .members
                .iter()
                .position(|m| m.name == name)
                .ok_or_else(|| config.unknown_member(name))?;
            let member = config.members.remove(idx);
            store_config(self, tx, &config)?;
            lock_list(self, tx)?;
            let released = release_in(self, tx, &member.name)?;
            Ok(Removed { member, released })
        })
    }
}
