//! The process environment, read once.
//!
//! The front end captures it at start-up ([`Environment::capture`], the only place swarm
//! reads its environment) and passes it down: settings are resolved from it at the edge,
//! and a teammate's environment is built from it. Tests build one from pairs, so nothing
//! they run depends on the environment of the process running the tests.
//!
//! Which variables may hold a credential is decided here, by [`is_secret`], once for every
//! layer: a teammate gets those only the documented way (never in a command line), and no
//! tmux process swarm starts gets them at all.
//!
//! Whether a test runs in CI ([`in_ci`]: `CI` set to a true value) is decided here too,
//! once for every test gate (a test that cannot run for want of a tool fails in CI, and
//! elsewhere says SKIPPED).

use std::collections::BTreeMap;
use std::ffi::OsString;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<String, String>,
    /// The names of secret variables left out of `vars` (not UTF-8): a child that inherits
    /// this process's environment would still get them.
    unreadable_secrets: Vec<OsString>,
}

/// Whether an environment variable may carry a credential: a name with KEY, TOKEN,
/// SECRET, PASSWORD or AUTH in it (but not the ssh agent's socket), or a proxy URL (which
/// may hold a password).
pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    // The ssh agent's socket is a path, not a credential, and `git push` from a pane needs it
    // (tmux itself refreshes it on attach by default).
    if upper == "SSH_AUTH_SOCK" {
        return false;
    }
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH"]
        .iter()
        .any(|w| upper.contains(w))
        || upper.ends_with("_PROXY")
}

impl Environment {
    /// This process's environment. A variable whose name or value is not UTF-8 is left
    /// out: none of swarm's settings can hold one, and a child never needs it from us.
    pub fn capture() -> Environment {
        let mut env = Environment::default();
        for (k, v) in std::env::vars_os() {
            match (k.to_str(), v.to_str()) {
                (Some(name), Some(value)) => {
                    env.vars.insert(name.to_owned(), value.to_owned());
                }
                _ if is_secret(&k.to_string_lossy()) => env.unreadable_secrets.push(k),
                _ => {}
            }
        }
        env
    }

    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Environment {
        Environment {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            unreadable_secrets: Vec::new(),
        }
    }

    /// A variable's value; an empty value counts as unset, as it does for every setting.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// This environment with `defaults` added where a variable is unset (or empty): what a
    /// settings file's `env` gives, under whatever the process was started with.
    pub fn with_defaults(
        mut self,
        defaults: impl IntoIterator<Item = (String, String)>,
    ) -> Environment {
        for (k, v) in defaults {
            if self.get(&k).is_none() {
                self.vars.insert(k, v);
            }
        }
        self
    }

    /// Every variable, for building a child's environment.
    pub fn vars(&self) -> &BTreeMap<String, String> {
        &self.vars
    }

    /// Whether this environment is CI's: `CI` holds a true value (`1`, `true` or `yes`, in
    /// any case), as CI services set it. `CI=false`, `CI=0` or an empty `CI` is not.
    pub fn in_ci(&self) -> bool {
        self.get("CI").is_some_and(|v| {
            ["1", "true", "yes"]
                .iter()
                .any(|t| v.trim().eq_ignore_ascii_case(t))
        })
    }

    /// The name of every variable [`is_secret`] matches, set or empty, readable or not:
    /// what a child that must not see a credential has removed from its environment.
    pub fn secret_names(&self) -> Vec<OsString> {
        self.vars
            .keys()
            .filter(|k| is_secret(k))
            .map(OsString::from)
            .chain(self.unreadable_secrets.iter().cloned())
            .collect()
    }
}

/// Whether this process runs in CI ([`Environment::in_ci`] of its environment): the one
/// rule of every test gate, where nothing may be skipped.
pub fn in_ci() -> bool {
    Environment::capture().in_ci()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_is_a_true_value_of_ci_in_any_case() {
        for value in ["1", "true", "TRUE", "True", "yes", "YES", " true "] {
            let env = Environment::from_pairs([("CI", value)]);
            assert!(env.in_ci(), "{value:?}");
        }
        for value in ["", "0", "false", "no", "off", "maybe"] {
            let env = Environment::from_pairs([("CI", value)]);
            assert!(!env.in_ci(), "{value:?}");
        }
        assert!(!Environment::from_pairs([("PATH", "/bin")]).in_ci());
    }

    #[test]
    fn secrets_are_named_by_rule() {
        for name in [
            "ANTHROPIC_API_KEY",
            "openai_api_key",
            "GH_TOKEN",
            "HTTPS_PROXY",
            "DB_PASSWORD",
        ] {
            assert!(is_secret(name), "{name}");
        }
        for name in ["PATH", "HOME", "SWARM_ROOT", "NO_PROXY_LIST"] {
            assert!(!is_secret(name), "{name}");
        }
        let env = Environment::from_pairs([
            ("PATH", "/bin"),
            ("ANTHROPIC_API_KEY", "k"),
            ("X_TOKEN", ""),
        ]);
        assert_eq!(env.secret_names(), ["ANTHROPIC_API_KEY", "X_TOKEN"]);
    }
}
