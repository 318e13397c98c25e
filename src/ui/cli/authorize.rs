//! What an agent at the command line may run, decided from the parsed [`Command`] before it
//! runs (see `identity` for who the actor is and why): an agent acts only as itself, a
//! teammate process runs only in its own team, and what only the lead may do (decide
//! requests, shut teammates down, spawn, change the roster, start teams, open the views
//! that decide requests) is refused to teammates. A person may run anything.
//!
//! It sits above the command files (it reads their arguments), so `identity`, which they
//! use, stays below them.

use crate::ui::cli::command::Command;
use crate::ui::cli::identity::Actor;
use crate::ui::cli::task::TaskCommand;
use crate::ui::cli::team::TeamCommand;
use swarm::error::{Error, Result};
use swarm_util::error::Base as _;
use swarm_util::names::LEAD;

/// Refuses a command `actor` may not run (see the module comment).
pub fn authorize(actor: &Actor, command: &Command) -> Result<()> {
    let Actor::Agent { name, team } = actor else {
        return Ok(());
    };
    if let Some((other, how)) = acts_as(command)
        && other != name.as_str()
    {
        return Err(Error::usage(format!(
            "you are {name} (SWARM_AGENT_NAME) and cannot act as {other} ({how}); act only as {name}"
        )));
    }
    if let (Command::Teammate(args), Some(own)) = (command, team)
        && args.team_name != own.as_str()
    {
        return Err(Error::usage(format!(
            "you are {name} of team {own} (SWARM_AGENT_NAME, SWARM_TEAM) and cannot run in team {}",
            args.team_name
        )));
    }
    match lead_only(command) {
        Some(what) if !name.is_lead() => Err(Error::usage(format!(
            "only {LEAD} may {what}; you are {name} (SWARM_AGENT_NAME): ask {LEAD} with SendMessage"
        ))),
        _ => Ok(()),
    }
}

/// The member a command speaks or acts for, and the argument that names it.
fn acts_as(command: &Command) -> Option<(&str, &'static str)> {
    match command {
        Command::Send(args) => Some((args.body.from.as_deref()?, "--from")),
        Command::Broadcast(args) => Some((args.body.from.as_deref()?, "--from")),
        Command::Inbox(args) if args.ack => Some((&args.agent, "inbox --ack")),
        Command::Task(
            TaskCommand::Claim { agent, .. }
            | TaskCommand::Next { agent }
            | TaskCommand::Release { agent },
        ) => Some((agent, "--as")),
        Command::Teammate(args) => Some((&args.agent_name, "--agent-name")),
        _ => None,
    }
}

/// What a command does that only the lead may, in words for the refusal.
fn lead_only(command: &Command) -> Option<&'static str> {
    Some(match command {
        Command::Approve(_) | Command::Reject(_) => "decide plan and permission requests",
        Command::Shutdown(_) => "shut teammates down",
        Command::Merge(args) if !args.status => "merge teammates' branches",
        Command::Spawn(_) => "spawn teammates",
        Command::Team(
            TeamCommand::Create { .. }
            | TeamCommand::Add { .. }
            | TeamCommand::Remove { .. }
            | TeamCommand::Delete { .. },
        ) => "create, change or delete teams",
        Command::Lead(_) => "run a team's lead",
        Command::Run(_) | Command::Demo(_) | Command::Resume(_) => "start a team",
        Command::Watch(args) if !args.once => "open the dashboard, which decides requests",
        Command::Serve(_) => "serve the team's web view, which decides requests",
        _ => return None,
    })
}
