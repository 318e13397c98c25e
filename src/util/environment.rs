//! The process environment, read once.
//!
//! The front end captures it at start-up ([`Environment::capture`], the only place swarm
//! reads its environment) and passes it down: settings are resolved from it at the edge,
//! and a teammate's environment is built from it. Tests build one from pairs, so nothing
//! they run depends on the environment of the process running the tests.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<String, String>,
}

impl Environment {
    /// This process's environment. A variable whose name or value is not UTF-8 is left
    /// out: none of swarm's settings can hold one, and a child never needs it from us.
    pub fn capture() -> Environment {
        Environment {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }

    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Environment {
        Environment {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// A variable's value; an empty value counts as unset, as it does for every setting.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Every variable, for building a child's environment.
    pub fn vars(&self) -> &BTreeMap<String, String> {
        &self.vars
    }
}
