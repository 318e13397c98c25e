//! The URL a teammate's host is given for its team's database: what this machine's
//! environment fills in written into it, so the host reaches the same server as the same
//! user, and nothing that is this machine's own (a password, the password file, a root
//! certificate's path from `PGSSLROOTCERT`): those are the host's (see the settings table,
//! `swarm_util::vars`).

use std::str::FromStr;

use postgres::Config;
use postgres::config::Host;

use crate::connect::redact;
use crate::{libpq, tls};
use swarm_store::error::{Error, Result};
use swarm_store::seam::NotForHosts;
use swarm_util::environment::Environment;
use swarm_util::error::Base as _;
use swarm_util::vars;

/// The URL another host is given for the server `url` names from here: `url` with what
/// this environment fills in (hosts, ports, user, database, connect timeout, `sslmode`)
/// written into it, in `key=value` form, so the host reaches the same server as the same
/// user. Never a password, and never this machine's files (the password file, a root
/// certificate named by `PGSSLROOTCERT`): those are the host's own. A root certificate the
/// URL itself names is kept, as given. A server reached through a Unix socket is this
/// machine's: [`NotForHosts::Socket`].
pub fn for_hosts(url: &str, env: &Environment) -> Result<std::result::Result<String, NotForHosts>> {
    crate::connect::check_url(url)?;
    let (rest, given) = tls::take_settings(url);
    let mut config = Config::from_str(&rest)
        .map_err(|e| Error::usage(format!("failed to read the store url {}: {e}", redact(url))))?;
    libpq::fill_address(&mut config, env)?;
    let mut words = Vec::new();
    let mut hosts = Vec::new();
    for host in config.get_hosts() {
        match host {
            Host::Tcp(name) => hosts.push(name.clone()),
            Host::Unix(path) => return Ok(Err(NotForHosts::Socket(path.display().to_string()))),
        }
    }
    words.push(("host", hosts.join(",")));
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    if !ports.is_empty() {
        words.push(("port", ports.join(",")));
    }
    if let Some(user) = config.get_user() {
        words.push(("user", user.to_owned()));
    }
    if let Some(db) = config.get_dbname() {
        words.push(("dbname", db.to_owned()));
    }
    if let Some(t) = config.get_connect_timeout() {
        words.push(("connect_timeout", t.as_secs().to_string()));
    }
    if let Some(options) = config.get_options() {
        words.push(("options", options.to_owned()));
    }
    if let Some(mode) = given.sslmode.as_deref().or(env.get(vars::PGSSLMODE)) {
        words.push(("sslmode", mode.to_owned()));
    }
    if let Some(root) = given.sslrootcert {
        words.push(("sslrootcert", root));
    }
    let pairs: Vec<String> = words
        .into_iter()
        .map(|(k, v)| format!("{k}={}", quoted(&v)))
        .collect();
    Ok(Ok(pairs.join(" ")))
}

/// A value as the `key=value` form reads it: quoted when it holds a space or a quote.
fn quoted(value: &str) -> String {
    if !value.is_empty() && !value.contains([' ', '\'', '\\']) {
        return value.to_owned();
    }
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn a_host_gets_the_url_this_environment_fills_in_without_a_password_or_local_files() {
        let here = env(&[
            ("PGHOST", "db.example"),
            ("PGPORT", "7000"),
            ("PGUSER", "swarm"),
            ("PGDATABASE", "teams"),
            ("PGPASSWORD", "s3cret-Pw"),
            ("PGSSLMODE", "verify-full"),
            ("PGSSLROOTCERT", "/home/lead/ca.pem"),
            ("PGCONNECT_TIMEOUT", "7"),
        ]);
        let url = for_hosts("postgres:///", &here).unwrap().unwrap();
        assert_eq!(
            url,
            "host=db.example port=7000 user=swarm dbname=teams connect_timeout=7 sslmode=verify-full"
        );
        // What the URL says wins, and its own root certificate stays; it reads back.
        let given = "postgres://bob@10.0.0.5:5433/swarm?sslmode=require&sslrootcert=/etc/ca.pem";
        let url = for_hosts(given, &here).unwrap().unwrap();
        assert_eq!(
            url,
            "host=10.0.0.5 port=5433 user=bob dbname=swarm connect_timeout=7 sslmode=require sslrootcert=/etc/ca.pem"
        );
        let (rest, _) = tls::take_settings(&url);
        let back = Config::from_str(&rest).unwrap();
        assert_eq!(back.get_user(), Some("bob"));
        assert_eq!(back.get_ports(), [5433]);
        assert_eq!(quoted("a b'c"), r"'a b\'c'");
        assert!(Config::from_str(&format!("dbname={}", quoted("a b'c"))).is_ok());
    }

    #[test]
    fn a_server_reached_through_a_unix_socket_is_not_for_hosts() {
        let here = env(&[("PGHOST", "/run/postgresql")]);
        assert_eq!(
            for_hosts("postgres:///swarm", &here).unwrap(),
            Err(NotForHosts::Socket("/run/postgresql".to_owned()))
        );
    }
}
