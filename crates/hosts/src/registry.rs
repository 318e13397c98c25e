//! The hosts a user has named, `<root>/hosts.json`: what `swarm host add` records and
//! every later command reads.
//!
//! Per user, not per team: a host is a machine the user reaches with their own keys, and
//! any of their teams may place teammates there (a team on PostgreSQL; a file team's
//! state is on one disk).
//!
//! Invariants:
//! - a name is unique (case-sensitive, as agents' names are not: hosts are the user's own
//!   labels) and a valid [`Host::name`]: letters, digits, `-`, `_`, `.`;
//! - every change is a read-modify-write under the file's lock, written atomically;
//! - nothing secret is kept: an address, a user, a port, and where swarm and the project
//!   are on the host.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use swarm_util::error::{Error, IoContext, Result};
use swarm_util::{atomic, json, lock};

/// One host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Host {
    pub name: String,
    /// The login; `None`: ssh's choice (its config, else the local user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// A name ssh resolves (an alias of `~/.ssh/config` too) or an address.
    pub address: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The swarm binary on the host; `None`: `swarm` on its `PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swarm_bin: Option<String>,
    /// The project's directory on the host, where its teammates work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// The database role its teammates connect as (a member of `swarm_host`, which may
    /// change only its own agents' rows); `None`: the lead's role, which may change all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_role: Option<String>,
}

impl Host {
    /// A host named `name` at `target`, `[user@]address[:port]` (an IPv6 address in
    /// brackets: `[::1]:2222`).
    pub fn parse(name: &str, target: &str) -> Result<Host> {
        check_name(name)?;
        let bad = |why: &str| {
            Error::usage(format!(
                "invalid host {target:?}: {why}; give it as user@address or user@address:port"
            ))
        };
        let (user, rest) = match target.rsplit_once('@') {
            Some((u, r)) if !u.is_empty() => (Some(u.to_owned()), r),
            Some(_) => return Err(bad("the user before @ is empty")),
            None => (None, target),
        };
        let (address, port) = if let Some(inner) = rest.strip_prefix('[') {
            let (addr, after) = inner.split_once(']').ok_or_else(|| bad("no closing ]"))?;
            (addr, after.strip_prefix(':'))
        } else if rest.matches(':').count() == 1 {
            let (a, p) = rest.split_once(':').expect("one colon");
            (a, Some(p))
        } else {
            (rest, None)
        };
        if address.is_empty() || address.starts_with('-') || address.contains(char::is_whitespace) {
            return Err(bad("no address"));
        }
        let port = match port {
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?,
            ),
            None => None,
        };
        if user
            .as_deref()
            .is_some_and(|u| u.starts_with('-') || u.contains(char::is_whitespace))
        {
            return Err(bad("the user is not a login name"));
        }
        Ok(Host {
            name: name.to_owned(),
            user,
            address: address.to_owned(),
            port,
            swarm_bin: None,
            dir: None,
            db_role: None,
        })
    }

    /// Sets the database role its teammates connect as: a plain PostgreSQL name
    /// (lowercase letters, digits and `_`, not starting with a digit, at most 63).
    pub fn with_db_role(mut self, role: &str) -> Result<Host> {
        let ok = (1..=63).contains(&role.len())
            && !role.starts_with(|c: char| c.is_ascii_digit())
            && role
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && !role.starts_with("pg_")
            && role != "swarm_host";
        if !ok {
            return Err(Error::InvalidName {
                kind: "database role",
                name: role.to_owned(),
                rule: "use lowercase letters, digits and '_' (at most 63, not starting with a digit or pg_, not swarm_host itself)".to_owned(),
            });
        }
        self.db_role = Some(role.to_owned());
        Ok(self)
    }

    /// The database URL its teammates get: `for_hosts` (what the lead resolved, never a
    /// password) as its own role when it has one (in `key=value` form the last `user`
    /// counts).
    pub fn database_url(&self, for_hosts: &str) -> String {
        match &self.db_role {
            Some(role) => format!("{for_hosts} user={role}"),
            None => for_hosts.to_owned(),
        }
    }

    /// `user@address`, as ssh takes it (the port apart).
    pub fn destination(&self) -> String {
        match &self.user {
            Some(u) => format!("{u}@{}", self.address),
            None => self.address.clone(),
        }
    }

    /// `[user@]address[:port]`, as people write it.
    pub fn target(&self) -> String {
        let address = if self.address.contains(':') {
            format!("[{}]", self.address)
        } else {
            self.address.clone()
        };
        let at = match &self.user {
            Some(u) => format!("{u}@{address}"),
            None => address,
        };
        match self.port {
            Some(p) => format!("{at}:{p}"),
            None => at,
        }
    }

    /// The swarm binary on the host.
    pub fn swarm_bin(&self) -> &str {
        self.swarm_bin.as_deref().unwrap_or("swarm")
    }
}

fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['-', '.'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        return Ok(());
    }
    Err(Error::InvalidName {
        kind: "host",
        name: name.to_owned(),
        rule: "use letters, digits, '-', '_' and '.' (at most 64, not starting with '-' or '.')"
            .to_owned(),
    })
}

/// The user's hosts, in one file.
#[derive(Debug, Clone)]
pub struct Hosts {
    path: PathBuf,
    lock_timeout: Duration,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    hosts: Vec<Host>,
}

impl Hosts {
    /// The hosts recorded under the root at `root`.
    pub fn at(root: &Path, lock_timeout: Duration) -> Hosts {
        Hosts {
            path: root.join("hosts.json"),
            lock_timeout,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every host, by name.
    pub fn list(&self) -> Result<Vec<Host>> {
        let mut hosts = self.read()?.hosts;
        hosts.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(hosts)
    }

    /// The host named `name`; an unknown name is an error listing the known ones.
    pub fn get(&self, name: &str) -> Result<Host> {
        let hosts = self.list()?;
        if let Some(h) = hosts.iter().find(|h| h.name == name) {
            return Ok(h.clone());
        }
        let known: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
        Err(Error::not_found(format!(
            "no host named '{name}' (known: {}); add it with `swarm host add {name} user@address`",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )))
    }

    /// Records `host`; refuses a name taken.
    pub fn add(&self, host: Host) -> Result<()> {
        self.update(|file| {
            if file.hosts.iter().any(|h| h.name == host.name) {
                return Err(Error::conflict(format!(
                    "host '{}' exists already; remove it first with `swarm host remove {}`",
                    host.name, host.name
                )));
            }
            file.hosts.push(host);
            Ok(())
        })
    }

    /// Forgets the host named `name`, and returns it.
    pub fn remove(&self, name: &str) -> Result<Host> {
        let gone = self.get(name)?;
        self.update(|file| {
            file.hosts.retain(|h| h.name != name);
            Ok(())
        })?;
        Ok(gone)
    }

    fn read(&self) -> Result<File> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => json::parse(text.as_bytes()).map_err(|e| Error::Corrupt {
                path: self.path.clone(),
                reason: format!("{e}; fix or remove it"),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(File::default()),
            Err(e) => Err(Error::io("read", &self.path, e)),
        }
    }

    fn update(&self, change: impl FnOnce(&mut File) -> Result<()>) -> Result<()> {
        let dir = self.path.parent().expect("a file under the root");
        std::fs::create_dir_all(dir).ctx("create directory", dir)?;
        let _held = lock::lock(&self.path, self.lock_timeout)?;
        let mut file = self.read()?;
        change(&mut file)?;
        atomic::write(&self.path, &json::to_pretty(&file), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_user_at_address_and_a_port() {
        let h = Host::parse("gpu", "ann@10.0.0.7:2222").unwrap();
        assert_eq!(
            (h.user.as_deref(), h.address.as_str(), h.port),
            (Some("ann"), "10.0.0.7", Some(2222))
        );
        assert_eq!(h.target(), "ann@10.0.0.7:2222");
        assert_eq!(h.destination(), "ann@10.0.0.7");
        let v6 = Host::parse("six", "[fd00::2]:22").unwrap();
        assert_eq!((v6.address.as_str(), v6.port), ("fd00::2", Some(22)));
        assert_eq!(v6.target(), "[fd00::2]:22");
        let alias = Host::parse("b", "build-box").unwrap();
        assert_eq!((alias.user, alias.port), (None, None));
        for bad in [
            "@x",
            "ann@",
            "ann@x:0",
            "ann@x:port",
            "-oProxyCommand=x",
            "ann@a b",
        ] {
            let e = Host::parse("h", bad).unwrap_err();
            assert!(
                matches!(e, Error::Usage(_) | Error::InvalidName { .. }),
                "{bad}: {e}"
            );
        }
        assert!(Host::parse("-h", "x").is_err());
    }

    #[test]
    fn hosts_are_added_once_listed_by_name_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = Hosts::at(dir.path(), Duration::from_secs(5));
        assert!(hosts.list().unwrap().is_empty());
        hosts.add(Host::parse("zed", "z@h2").unwrap()).unwrap();
        hosts.add(Host::parse("abe", "a@h1").unwrap()).unwrap();
        let again = hosts.add(Host::parse("zed", "other").unwrap()).unwrap_err();
        assert!(matches!(again, Error::Conflict(_)), "{again}");
        let names: Vec<String> = hosts.list().unwrap().into_iter().map(|h| h.name).collect();
        assert_eq!(names, ["abe", "zed"]);
        assert_eq!(hosts.remove("abe").unwrap().address, "h1");
        let unknown = hosts.get("abe").unwrap_err();
        assert!(matches!(unknown, Error::NotFound(_)), "{unknown}");
        assert!(unknown.to_string().contains("known: zed"), "{unknown}");
    }
}
