//! Who is at this command line, and what they may do.
//!
//! An agent's model runs `swarm` through its Bash tool, in the environment its process was
//! started with: `SWARM_AGENT_NAME`, `SWARM_AGENT_ID` and `SWARM_TEAM`, which
//! `team::inherit` sets for every teammate and `team::launch` for the lead. There the CLI
//! acts as that agent and nobody else ([`Actor::Agent`]): messages go out under its name,
//! a `--from` or `--as` naming anyone else is refused, it works only in its own
//! team, and what only the lead may do (decide requests, shut teammates down, spawn,
//! change the roster, start teams) is refused to teammates (`authorize` decides that per
//! command). Decisions it makes are recorded under its name.
//!
//! Without that environment a person is at the keyboard ([`Actor::Person`]): the team is
//! theirs, they send as `team-lead` unless they say otherwise, may speak for any member
//! (tests and repairs need it), and their decisions are recorded as `human`.
//!
//! This stops a confused or prompt-injected model from speaking for someone else through
//! the CLI. It is not a sandbox: a process that clears its environment, or writes the
//! team's files itself, is not stopped here.

use swarm::error::{Error, Result};
use swarm_util::environment::Environment;
use swarm_util::error::Base as _;
use swarm_util::names::{AgentName, LEAD, TeamName};
use swarm_util::vars;

#[derive(Debug, Clone, PartialEq)]
pub enum Actor {
    /// A person at a terminal.
    Person,
    /// An agent, from the environment its process was started with; `team` is `None`
    /// only when that environment names none.
    Agent {
        name: AgentName,
        team: Option<TeamName>,
    },
}

impl Actor {
    pub fn from_env(env: &Environment) -> Result<Actor> {
        let Some(name) = env.get(vars::SWARM_AGENT_NAME) else {
            return Ok(Actor::Person);
        };
        let name = AgentName::parse_any(name).map_err(|_| {
            Error::usage(format!(
                "SWARM_AGENT_NAME={name:?} is not an agent name; unset it to act as yourself"
            ))
        })?;
        let team = env.get(vars::SWARM_TEAM).or_else(|| {
            env.get(vars::SWARM_AGENT_ID)
                .and_then(|id| id.split_once('@'))
                .map(|(_, team)| team)
        });
        Ok(Actor::Agent {
            name,
            team: team.map(TeamName::new).transpose()?,
        })
    }

    /// Whom a message is from when `--from` is not given.
    pub fn sender(&self) -> &str {
        match self {
            Actor::Person => LEAD,
            Actor::Agent { name, .. } => name.as_str(),
        }
    }

    /// Who a decision on a request is recorded as having made it (`resolvedBy`).
    pub fn decider(&self) -> String {
        match self {
            Actor::Person => "human".to_owned(),
            Actor::Agent { name, .. } => name.to_string(),
        }
    }

    /// Refuses `team` unless the actor may act on it: an agent acts only on its own.
    pub fn check_team(&self, team: &TeamName) -> Result<()> {
        match self {
            Actor::Agent {
                name,
                team: Some(own),
            } if own != team => Err(Error::usage(format!(
                "you are {name} of team {own} (SWARM_AGENT_NAME, SWARM_TEAM) and cannot act on team {team}; leave out --team"
            ))),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn the_environment_says_who_acts() {
        assert_eq!(Actor::from_env(&env(&[])).unwrap(), Actor::Person);
        assert_eq!(
            Actor::from_env(&env(&[("SWARM_AGENT_NAME", ""), ("SWARM_TEAM", "t")])).unwrap(),
            Actor::Person
        );
        let carol = Actor::from_env(&env(&[
            ("SWARM_AGENT_NAME", "carol"),
            ("SWARM_AGENT_ID", "carol@from-id"),
        ]))
        .unwrap();
        assert_eq!(
            carol,
            Actor::Agent {
                name: AgentName::new("carol").unwrap(),
                team: Some(TeamName::new("from-id").unwrap()),
            }
        );
        assert_eq!(
            (carol.sender(), carol.decider().as_str()),
            ("carol", "carol")
        );
        assert_eq!(
            (Actor::Person.sender(), Actor::Person.decider().as_str()),
            ("team-lead", "human")
        );
        let err = Actor::from_env(&env(&[("SWARM_AGENT_NAME", "../x")])).unwrap_err();
        assert_eq!(swarm::exit::exit_code(&err), 2, "{err}");
        carol
            .check_team(&TeamName::new("from-id").unwrap())
            .unwrap();
        let err = carol
            .check_team(&TeamName::new("other").unwrap())
            .unwrap_err();
        assert!(
            err.to_string().contains("cannot act on team other"),
            "{err}"
        );
        Actor::Person
            .check_team(&TeamName::new("other").unwrap())
            .unwrap();
    }
}
