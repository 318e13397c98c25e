//! Team and agent names: the only strings that become path components and tmux options.
//!
//! A name is validated once, when it enters the program, and then carried as a
//! [`TeamName`] or [`AgentName`], so no code path can build a path from an unchecked
//! string. Invalid names are refused with the rule they broke; nothing is rewritten,
//! because Claude Code's two sanitisers disagree on rewritten names (see
//! `docs/design/formats.md` §2) and a rewritten name would split one team across directories.

use std::fmt;

use crate::error::Result;

/// The lead's fixed member name.
pub const LEAD: &str = "team-lead";

/// Names no teammate may take, in any letter case.
const RESERVED: [&str; 4] = ["team-lead", "user", "system", "main"];

pub const TEAM_RULE: &str =
    "a team name is 1-64 characters of a-z, 0-9 and '-', starting with a letter or digit";
pub const AGENT_RULE: &str = "an agent name is 1-64 characters of A-Z, a-z, 0-9, '_' and '-', starting with a letter or digit";

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TeamName(String);

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentName(String);

fn valid_shape(name: &str, extra: fn(u8) -> bool, lower_only: bool) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > 64 {
        return false;
    }
    let alnum = |b: u8| {
        b.is_ascii_digit() || b.is_ascii_lowercase() || (!lower_only && b.is_ascii_uppercase())
    };
    alnum(bytes[0]) && bytes[1..].iter().all(|&b| alnum(b) || extra(b))
}

impl TeamName {
    pub fn new(name: &str) -> Result<TeamName> {
        if valid_shape(name, |b| b == b'-', true) {
            Ok(TeamName(name.to_owned()))
        } else {
            Err(crate::error::Error::InvalidName {
                kind: "team",
                name: name.to_owned(),
                rule: TEAM_RULE.to_owned(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl AgentName {
    /// A teammate name: valid shape and not reserved.
    pub fn new(name: &str) -> Result<AgentName> {
        let name_ok = AgentName::parse_any(name)?;
        if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name)) {
            return Err(crate::error::Error::InvalidName {
                kind: "agent",
                name: name.to_owned(),
                rule: format!("{} is reserved (reserved: {})", name, RESERVED.join(", ")),
            });
        }
        Ok(name_ok)
    }

    /// Any member name, including the lead's `team-lead`: for addressing existing members.
    pub fn parse_any(name: &str) -> Result<AgentName> {
        if valid_shape(name, |b| b == b'-' || b == b'_', false) {
            Ok(AgentName(name.to_owned()))
        } else {
            Err(crate::error::Error::InvalidName {
                kind: "agent",
                name: name.to_owned(),
                rule: AGENT_RULE.to_owned(),
            })
        }
    }

    pub fn lead() -> AgentName {
        AgentName(LEAD.to_owned())
    }

    pub fn is_lead(&self) -> bool {
        self.0 == LEAD
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TeamName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `<agent>@<team>`, Claude Code's agent id.
pub fn agent_id(agent: &AgentName, team: &TeamName) -> String {
    format!("{agent}@{team}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_good_names() {
        for n in ["a", "alpha", "team-1", "0abc", &"x".repeat(64)] {
            TeamName::new(n).unwrap();
        }
        for n in ["Bob", "r2_d2", "a-b", "researcher", "A"] {
            AgentName::new(n).unwrap();
        }
        assert!(AgentName::parse_any("team-lead").unwrap().is_lead());
    }

    #[test]
    fn refuses_bad_names() {
        let bad = [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            "a\\b",
            " a",
            "a b",
            "-rf",
            ".hidden",
            "a\0b",
            "team.a:b",
            "=x",
            "%1",
            "a\n",
            "é",
            "ａ",
            &"x".repeat(65),
        ];
        for n in bad {
            assert!(TeamName::new(n).is_err(), "team {n:?}");
            assert!(AgentName::new(n).is_err(), "agent {n:?}");
        }
        for n in ["Alpha", "a_b"] {
            assert!(TeamName::new(n).is_err(), "team {n:?}");
        }
        for n in ["team-lead", "TEAM-LEAD", "user", "System", "main"] {
            let err = AgentName::new(n).unwrap_err().to_string();
            assert!(err.contains("reserved"), "{err}");
        }
    }

    proptest! {
        #[test]
        fn valid_names_are_safe_path_components(s in "\\PC{0,80}") {
            if let Ok(t) = TeamName::new(&s) {
                prop_assert!(!t.as_str().contains(['/', '.', '\0', ':']));
                prop_assert!(!t.as_str().starts_with('-'));
            }
            if let Ok(a) = AgentName::parse_any(&s) {
                prop_assert!(!a.as_str().contains(['/', '.', '\0', ':', '@']));
                prop_assert!(a.as_str().len() <= 64);
            }
        }
    }
}
