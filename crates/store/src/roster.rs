//! The team roster, `teams/<team>/config.json`, in Claude Code's schema.
//!
//! The lead (`team-lead`) is always `members[0]`. Member names are unique within a team,
//! compared without regard to case, as Claude Code does. Fields swarm does not know are kept
//! byte for byte (`extra`), so a roster shared with Claude Code loses nothing when swarm
//! rewrites it. Reads take no lock (writes replace the file atomically); a read that fails
//! to parse is retried briefly, and for as long as Claude Code's lock of the file is held,
//! since Claude Code 2.1.328 rewrites the file in place under that lock (it writes, then
//! truncates, so a reader can find the new text with the old one's tail after it).
//!
//! Whoever takes a member off (`remove_member`) returns its open tasks to pending, so
//! no task stays owned by a name nobody answers to. The roster is written first: a crash
//! in between, or another program removing a member, leaves tasks whose owner is gone,
//! and the lead's reconcile loop returns those.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::files;
use crate::layout::Root;
use crate::tasks::{Task, TaskList};
use swarm_util::clock;
use swarm_util::error::{Base as _, IoContext};
use swarm_util::json;
use swarm_util::names::{AgentName, LEAD, TeamName, agent_id};

/// Claude Code's palette, handed out round-robin; the lead takes the first (red).
pub const PALETTE: [&str; 8] = [
    "red", "blue", "green", "yellow", "purple", "orange", "pink", "cyan",
];

/// Refuses a colour that is not one of the palette's names.
pub fn check_colour(colour: &str) -> Result<()> {
    if PALETTE.contains(&colour) {
        return Ok(());
    }
    Err(Error::usage(format!(
        "unknown colour '{colour}'; use one of: {}",
        PALETTE.join(", ")
    )))
}

/// The tmux colour for a palette name (Claude Code's mapping).
pub fn tmux_colour(color: &str) -> &str {
    match color {
        "purple" => "magenta",
        "orange" => "colour208",
        "pink" => "colour205",
        other => other,
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamConfig {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub created_at: i64,
    pub lead_agent_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_session_id: Option<String>,
    pub members: Vec<Member>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The member field naming the database role of the host a member is placed on (swarm's):
/// the database's row-level security reads it (`swarm_store_pg`'s rights), and a host
/// cannot change it.
pub const DB_ROLE_FIELD: &str = "dbRole";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub agent_id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_mode_required: Option<bool>,
    #[serde(default)]
    pub joined_at: i64,
    #[serde(default)]
    pub tmux_pane_id: String,
    #[serde(default)]
    pub cwd: String,
    #[serde(default)]
    pub subscriptions: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_active: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree_path: Option<String>,
    /// swarm: the teammate's process id, written by the teammate when it starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// swarm: what runs this member, as swarm started it: `swarm` (its own agent loop) or
    /// `claude` (a Claude Code process). Absent for members swarm did not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Member {
    /// Whether the roster says this member may be running somewhere swarm cannot see: it
    /// has a pane id, a backend or an `isActive`, which Claude Code writes for a teammate
    /// and `swarm team add` never does. swarm's own teammates also write a pid.
    pub fn may_run_unseen(&self) -> bool {
        !self.tmux_pane_id.is_empty() || self.backend_type.is_some() || self.is_active.is_some()
    }
}

impl TeamConfig {
    pub fn member(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }

    pub fn member_mut(&mut self, name: &str) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.name == name)
    }

    /// The member named `name`, or an error listing who is in the team.
    pub fn require(&self, name: &str) -> Result<&Member> {
        self.member(name).ok_or_else(|| self.unknown_member(name))
    }

    pub fn unknown_member(&self, name: &str) -> Error {
        let names: Vec<&str> = self.members.iter().map(|m| m.name.as_str()).collect();
        Error::not_found(format!(
            "no member named '{name}' in team '{}' (members: {}); check the name with `swarm team show {}`",
            self.name,
            names.join(", "),
            self.name
        ))
    }

    pub fn teammates(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|m| m.name != LEAD)
    }

    /// The next colour of the palette: the lead took the first, teammates follow in order.
    pub fn next_color(&self) -> &'static str {
        PALETTE[self.members.len() % PALETTE.len()]
    }
}

#[derive(Debug, Clone)]
pub struct NewMember {
    pub name: AgentName,
    pub color: Option<String>,
    pub agent_type: Option<String>,
    pub model: Option<String>,
    pub prompt: Option<String>,
    pub plan_mode_required: bool,
    pub cwd: String,
}

/// Creates a team: roster with the lead as its only member, inbox and task directories.
pub(crate) fn create(
    root: &Root,
    team: &TeamName,
    description: Option<String>,
    cwd: &Path,
) -> Result<TeamConfig> {
    let dir = root.team_dir(team);
    let path = root.roster_path(team);
    std::fs::create_dir_all(root.inbox_dir(team)).ctx("create directory", root.inbox_dir(team))?;
    // Made with the team, so whoever waits for an agent's state can watch it from the start.
    std::fs::create_dir_all(root.state_dir(team)).ctx("create directory", root.state_dir(team))?;
    let tasks = root.tasks_dir(team);
    std::fs::create_dir_all(&tasks).ctx("create directory", &tasks)?;
    let _guard = files::lock(root, &path)?;
    if path.exists() {
        return Err(Error::conflict(format!(
            "team '{team}' already exists at {}; pick another name or delete it with `swarm team delete {team}`",
            dir.display()
        )));
    }
    let config = initial_config(team, description, cwd);
    files::write(root, &path, &json::to_pretty(&config))?;
    // Claude Code's list-lock anchor, so its own writers find what they expect.
    let anchor = root.task_list_lock_anchor(team);
    if !anchor.exists() {
        files::write(root, &anchor, b"")?;
    }
    Ok(config)
}

/// A new team's roster: the lead as its only member. Every backend starts a team with it.
pub fn initial_config(team: &TeamName, description: Option<String>, cwd: &Path) -> TeamConfig {
    let now = clock::now_ms();
    TeamConfig {
        name: team.to_string(),
        description,
        created_at: now,
        lead_agent_id: agent_id(&AgentName::lead(), team),
        lead_session_id: Some(uuid::Uuid::new_v4().to_string()),
        members: vec![Member {
            agent_id: agent_id(&AgentName::lead(), team),
            name: LEAD.to_owned(),
            agent_type: Some(LEAD.to_owned()),
            joined_at: now,
            cwd: cwd.display().to_string(),
            ..Member::default()
        }],
        extra: Map::new(),
    }
}

/// How long a roster that does not parse is read again while Claude Code's lock of it is
/// held (a writer descheduled between its write and its truncate, on a loaded machine).
const TORN_READ_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// Reads a team's roster.
pub(crate) fn load(root: &Root, team: &TeamName) -> Result<TeamConfig> {
    let path = root.roster_path(team);
    let started = std::time::Instant::now();
    let mut attempt = 0;
    loop {
        let Some(bytes) = files::read(root, &path)? else {
            return Err(Error::not_found(format!(
                "no team named '{team}' under {}; create it with `swarm team create {team}` or list teams with `swarm team list`",
                root.path().display()
            )));
        };
        match json::parse::<TeamConfig>(&bytes) {
            Ok(c) => return Ok(c),
            Err(_)
                if attempt < 5
                    || (files::claude_lock_held(&path)
                        && started.elapsed() < TORN_READ_PATIENCE) =>
            {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => {
                return Err(swarm_util::error::Error::Corrupt {
                    path,
                    reason: format!(
                        "{e}; fix or remove the file by hand (swarm never rewrites a roster it cannot read)"
                    ),
                }
                .into());
            }
        }
    }
}

/// Locked read-modify-write of the roster. `f` may fail, in which case nothing is written.
pub(crate) fn update<T>(
    root: &Root,
    team: &TeamName,
    f: impl FnOnce(&mut TeamConfig) -> Result<T>,
) -> Result<T> {
    let path = root.roster_path(team);
    let _guard = files::lock(root, &path)?;
    let mut config = load(root, team)?;
    let out = f(&mut config)?;
    // Claude Code appends keys (`isActive` after `pid`); a rewrite leaves them where they are.
    let old = files::read(root, &path)?;
    files::write(
        root,
        &path,
        &json::to_pretty_keeping_order(&config, old.as_deref()),
    )?;
    Ok(out)
}

/// Adds a teammate; refuses a name already taken (in any letter case).
pub(crate) fn add_member(root: &Root, team: &TeamName, new: NewMember) -> Result<Member> {
    add_members(root, team, vec![new])?
        .pop()
        .expect("one result per new member")
}

/// Adds several teammates in one write, in order, each on its own: a name already taken
/// (in any letter case, by a member or by one added before it here) or a bad colour
/// refuses that one only. The outer error is the write's: then none was added.
pub(crate) fn add_members(
    root: &Root,
    team: &TeamName,
    new: Vec<NewMember>,
) -> Result<Vec<Result<Member>>> {
    let mut results = Vec::new();
    let mut nothing_added = false;
    let written = update(root, team, |config| {
        results = new
            .into_iter()
            .map(|new| add_to(config, team, new))
            .collect();
        nothing_added = results.iter().all(Result::is_err);
        if nothing_added {
            // Nothing to write: leave the file alone.
            return Err(Error::usage("no member to add"));
        }
        Ok(())
    });
    match written {
        Err(_) if nothing_added => Ok(results),
        Err(e) => Err(e),
        Ok(()) => Ok(results),
    }
}

/// Adds `new` to `config`, or refuses it (a name taken in any letter case, a bad colour).
/// Every backend adds members by this rule.
pub fn add_to(config: &mut TeamConfig, team: &TeamName, new: NewMember) -> Result<Member> {
    if let Some(existing) = config
        .members
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(new.name.as_str()))
    {
        return Err(Error::conflict(format!(
            "team '{team}' already has a member named '{}'; names are unique within a team, pick another",
            existing.name
        )));
    }
    if let Some(c) = &new.color {
        check_colour(c)?;
    }
    let member = Member {
        agent_id: agent_id(&new.name, team),
        name: new.name.to_string(),
        agent_type: Some(
            new.agent_type
                .unwrap_or_else(|| "general-purpose".to_owned()),
        ),
        model: new.model,
        prompt: new.prompt,
        color: Some(new.color.unwrap_or_else(|| config.next_color().to_owned())),
        plan_mode_required: new.plan_mode_required.then_some(true),
        joined_at: clock::now_ms(),
        tmux_pane_id: String::new(),
        cwd: new.cwd,
        subscriptions: Vec::new(),
        ..Member::default()
    };
    config.members.push(member.clone());
    Ok(member)
}

/// A member taken off the roster, and its open tasks, now pending with no owner.
#[derive(Debug, Clone)]
pub struct Removed {
    pub member: Member,
    pub released: Vec<Task>,
}

/// Removes a teammate from the roster (the lead cannot be removed) and returns its open
/// tasks to pending. Whether it may still be running is the caller's to settle first.
pub(crate) fn remove_member(root: &Root, team: &TeamName, name: &str) -> Result<Removed> {
    if name == LEAD {
        return Err(Error::usage(
            "the lead cannot be removed from its team; delete the team with `swarm team delete`",
        ));
    }
    let member = update(root, team, |config| {
        let idx = config
            .members
            .iter()
            .position(|m| m.name == name)
            .ok_or_else(|| config.unknown_member(name))?;
        Ok(config.members.remove(idx))
    })?;
    swarm_util::fault::point("roster.removed");
    let released = TaskList::new(root, team).release(&member.name)?;
    Ok(Removed { member, released })
}

/// Every team under the root whose directory name is a valid team name and has a roster.
pub(crate) fn list(root: &Root) -> Result<Vec<TeamConfig>> {
    let dir = root.teams_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read directory", &dir, e)),
    };
    let mut teams = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Ok(team) = TeamName::new(&name.to_string_lossy()) else {
            continue;
        };
        if !root.roster_path(&team).exists() {
            continue;
        }
        match load(root, &team) {
            Ok(c) => teams.push(c),
            Err(e) => tracing::warn!("skipping team '{team}': {e}"),
        }
    }
    teams.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(teams)
}

/// Removes a team's directories (roster, inboxes, state) and its task list.
pub fn delete_files(root: &Root, team: &TeamName) -> Result<()> {
    for dir in [root.team_dir(team), root.tasks_dir(team)] {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("remove", &dir, e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Claude Code rewrites the roster in place under its lock: write, then truncate. A
    /// read between the two finds the new text with the old one's tail; it waits for the
    /// writer, however long it is descheduled, instead of calling the roster corrupt.
    #[test]
    fn a_roster_caught_mid_rewrite_by_claude_code_is_read_once_it_is_done() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let team = TeamName::new("t").unwrap();
        create(&root, &team, None, dir.path()).unwrap();
        let path = root.roster_path(&team);
        let whole = std::fs::read(&path).unwrap();
        let lock = dir.path().join("teams/t/config.json.lock");
        std::fs::create_dir(&lock).unwrap();
        let mut torn = whole.clone();
        torn.extend_from_slice(b"\n  ]\n}");
        std::fs::write(&path, &torn).unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            std::fs::write(&path, &whole).unwrap();
            std::fs::remove_dir(&lock).unwrap();
        });
        assert_eq!(load(&root, &team).unwrap().name, "t");
        writer.join().unwrap();
    }

    #[test]
    fn a_roster_that_does_not_parse_with_no_writer_at_work_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let team = TeamName::new("t").unwrap();
        create(&root, &team, None, dir.path()).unwrap();
        let path = root.roster_path(&team);
        let mut torn = std::fs::read(&path).unwrap();
        torn.extend_from_slice(b"\n}");
        std::fs::write(&path, &torn).unwrap();
        assert!(matches!(
            load(&root, &team),
            Err(Error::Base(swarm_util::error::Error::Corrupt { .. }))
        ));
    }
}
