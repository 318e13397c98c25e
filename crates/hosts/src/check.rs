//! Whether a host can take teammates (`swarm host check`): ssh reaches it, it has tmux 3.2
//! or newer and git, its swarm is this swarm's version, its project directory exists, and
//! it reaches the team's database.
//!
//! Each check runs one command on the host by argv ([`Ssh::run`]); when ssh itself fails
//! the others are not tried, and say so.

use std::time::Duration;

use serde::Serialize;

use crate::error::Result;
use crate::ssh::{Ssh, last_line};

/// How long one check's command may take on the host.
const LIMIT: Duration = Duration::from_secs(30);

/// The oldest tmux swarm drives (`new-session -e`, `display -p` formats it reads).
const TMUX_MIN: (u32, u32) = (3, 2);

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub what: &'static str,
    pub ok: bool,
    pub detail: String,
}

/// The database a host's teammates would use, and the environment they would start with
/// (what the lead sends; the host's login gives the rest, as it gives theirs).
pub struct Database<'a> {
    /// A URL without a password, as a spawn gives it to the host.
    pub url: &'a str,
    pub env: &'a [(String, String)],
}

/// Runs every check on `ssh`'s host: `version` is this swarm's `--version` line, `store`
/// the database the host's teammates would use, if any, which is checked as a teammate
/// there would connect: the same user, URL and environment.
pub fn check(ssh: &Ssh, version: &str, store: Option<Database>) -> Vec<Finding> {
    let reached = ssh.run(&["true"], None, LIMIT);
    let mut found = vec![Finding {
        what: "ssh",
        ok: reached.as_ref().is_ok_and(|o| o.status.success()),
        detail: match &reached {
            Ok(_) => format!("reached {}", ssh.host().target()),
            Err(e) => e.to_string(),
        },
    }];
    if !found[0].ok {
        return found;
    }
    let host = ssh.host();
    found.push(one(
        ssh,
        "tmux",
        &["tmux", "-V"],
        |out| match tmux_version(out) {
            Some(v) if v >= TMUX_MIN => Ok(out.trim().to_owned()),
            Some(_) => Err(format!("{} is older than tmux 3.2; upgrade it", out.trim())),
            None => Err(format!("cannot read the version in {:?}", out.trim())),
        },
    ));
    found.push(one(ssh, "git", &["git", "--version"], |out| {
        Ok(out.trim().to_owned())
    }));
    found.push(one(ssh, "swarm", &[host.swarm_bin(), "--version"], |out| {
        if out.trim() == version {
            Ok(format!("{} ({})", out.trim(), host.swarm_bin()))
        } else {
            Err(format!(
                "{} is {}, and this one is {version}; install the same swarm there",
                host.swarm_bin(),
                out.trim()
            ))
        }
    }));
    if let Some(dir) = &host.dir {
        found.push(one(ssh, "project", &["test", "-d", dir], |_| {
            Ok(dir.clone())
        }));
    }
    if let Some(db) = store {
        let pairs: Vec<String> = db.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut argv = vec!["env"];
        argv.extend(pairs.iter().map(String::as_str));
        argv.extend([host.swarm_bin(), "store", "check", db.url]);
        found.push(one(ssh, "database", &argv, |out| Ok(out.trim().to_owned())));
    }
    found
}

/// Runs `argv` on the host: `judge` reads its output when it succeeded.
fn one(
    ssh: &Ssh,
    what: &'static str,
    argv: &[&str],
    judge: impl FnOnce(&str) -> std::result::Result<String, String>,
) -> Finding {
    let outcome: Result<std::result::Result<String, String>> =
        ssh.run(argv, None, LIMIT).map(|o| {
            if o.status.success() {
                judge(&String::from_utf8_lossy(&o.stdout))
            } else {
                Err(format!(
                    "`{}` failed: {}",
                    argv.join(" "),
                    last_line(&o.stderr)
                ))
            }
        });
    let (ok, detail) = match outcome {
        Ok(Ok(detail)) => (true, detail),
        Ok(Err(why)) => (false, why),
        Err(e) => (false, e.to_string()),
    };
    Finding { what, ok, detail }
}

/// `(3, 3)` from "tmux 3.3a"; `tmux next-3.4` reads as 3.4.
fn tmux_version(out: &str) -> Option<(u32, u32)> {
    let v = out.split_whitespace().nth(1)?;
    let v = v.strip_prefix("next-").unwrap_or(v);
    let (major, rest) = v.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmux_versions_are_read_with_their_letters_and_prefixes() {
        assert_eq!(tmux_version("tmux 3.3a\n"), Some((3, 3)));
        assert_eq!(tmux_version("tmux 3.2"), Some((3, 2)));
        assert_eq!(tmux_version("tmux next-3.5"), Some((3, 5)));
        assert_eq!(tmux_version("tmux master"), None);
        assert!(tmux_version("tmux 3.1c").unwrap() < TMUX_MIN);
    }
}
