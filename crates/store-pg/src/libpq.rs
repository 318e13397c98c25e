//! What a store URL leaves out, filled in the way every PostgreSQL client (libpq, `psql`)
//! does, so a URL can be as short as `postgres:///swarm` on a machine already set up for
//! `psql`: the `PG*` variables (`PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`,
//! `PGCONNECT_TIMEOUT`, `PGPASSWORD`), then the defaults (the local server's socket
//! directory, the login name), and a password from the password file (`PGPASSFILE`, else
//! `~/.pgpass`).
//!
//! One difference from libpq: a URL that names a host without a port means port 5432
//! (the driver reads it so), where libpq would take `PGPORT`.
//!
//! Invariants: the URL wins over the environment, the environment over the file; a
//! password file others can read is ignored (with a warning), as libpq ignores it; the
//! password is never part of an error or a log line. The variables come from the
//! environment the front end captured once ([`Environment`]), never from this process's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use postgres::Config;
use postgres::config::Host;

use swarm_store::error::{Error, Result};
use swarm_util::environment::Environment;
use swarm_util::error::Base as _;
use swarm_util::vars;

/// Where Debian's server (and libpq as Debian builds it) puts its socket.
const SOCKET_DIR: &str = "/var/run/postgresql";
const DEFAULT_PORT: u16 = 5432;

/// Fills in what `config` (parsed from a URL) leaves out; see the module comment.
pub fn fill(config: &mut Config, env: &Environment) -> Result<()> {
    fill_address(config, env)?;
    if config.get_password().is_none() {
        if let Some(password) = env.get(vars::PGPASSWORD) {
            config.password(password);
        } else if let Some(password) = from_password_file(config, env) {
            config.password(password);
        }
    }
    Ok(())
}

/// Fills in where the server is and who connects, as [`fill`] does, but no password.
pub(crate) fn fill_address(config: &mut Config, env: &Environment) -> Result<()> {
    if config.get_hosts().is_empty() {
        match env.get(vars::PGHOST) {
            Some(hosts) => hosts.split(',').for_each(|h| add_host(config, h.trim())),
            None if Path::new(SOCKET_DIR).is_dir() => add_host(config, SOCKET_DIR),
            None => add_host(config, "localhost"),
        }
    }
    if config.get_ports().is_empty()
        && let Some(port) = env.get(vars::PGPORT)
    {
        let port = port.parse::<u16>().map_err(|_| {
            Error::usage(format!(
                "failed to read PGPORT: '{port}' is not a port number"
            ))
        })?;
        config.port(port);
    }
    if config.get_user().is_none()
        && let Some(user) = [vars::PGUSER, vars::USER, vars::LOGNAME]
            .iter()
            .find_map(|v| env.get(v))
    {
        config.user(user);
    }
    if config.get_dbname().is_none()
        && let Some(db) = env.get(vars::PGDATABASE)
    {
        config.dbname(db);
    }
    if config.get_connect_timeout().is_none()
        && let Some(secs) = env.get(vars::PGCONNECT_TIMEOUT)
    {
        let secs = secs.parse::<u64>().map_err(|_| {
            Error::usage(format!(
                "failed to read PGCONNECT_TIMEOUT: '{secs}' is not a number of seconds"
            ))
        })?;
        // libpq's floor: a shorter wait would fail on a server that is merely busy.
        config.connect_timeout(Duration::from_secs(secs.max(2)));
    }
    Ok(())
}

fn add_host(config: &mut Config, host: &str) {
    if host.starts_with('/') {
        config.host_path(host);
    } else if !host.is_empty() {
        config.host(host);
    }
}

/// The password file's entry for the first server `config` names, if the file may be used.
fn from_password_file(config: &Config, env: &Environment) -> Option<String> {
    let path = password_file(env)?;
    let text = readable_only_by_owner(&path)?;
    // A socket directory is "localhost" to the password file, as to libpq.
    let host = match config.get_hosts().first()? {
        Host::Tcp(name) => name.clone(),
        Host::Unix(_) => "localhost".to_owned(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(DEFAULT_PORT)
        .to_string();
    let user = config.get_user()?;
    let db = config.get_dbname().unwrap_or(user);
    lookup(&text, [&host, &port, db, user])
}

fn password_file(env: &Environment) -> Option<PathBuf> {
    env.get(vars::PGPASSFILE)
        .map(PathBuf::from)
        .or_else(|| env.get(vars::HOME).map(|h| Path::new(h).join(".pgpass")))
}

/// The file's text, unless it is missing or group or others may read it (then a warning,
/// once per open, says to `chmod 0600` it).
fn readable_only_by_owner(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    if meta.permissions().mode() & 0o077 != 0 {
        tracing::warn!(
            "ignoring the password file {}: group or others can read it; chmod 0600 it",
            path.display()
        );
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The password of the first line whose host, port, database and user match (`*` matches
/// anything), in the password file's format: `host:port:database:user:password`, with `\:`
/// and `\\` for a colon and a backslash, `#` starting a comment line.
pub fn lookup(text: &str, want: [&str; 4]) -> Option<String> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(fields)
        .filter(|f| f.len() == 5)
        .find(|f| {
            f[..4]
                .iter()
                .zip(want)
                .all(|(have, w)| have == "*" || have == w)
        })
        .map(|mut f| f.swap_remove(4))
}

fn fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.last_mut().unwrap().extend(chars.next()),
            // The password is the rest of the line, colons and all.
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn the_password_file_matches_by_host_port_database_and_user_with_wildcards() {
        let text = "# comment\n\ndb.example:5432:swarm:bob:one\n*:*:*:bob:two\n*:*:*:*:three\n";
        let find = |w| lookup(text, w);
        assert_eq!(
            find(["db.example", "5432", "swarm", "bob"]).as_deref(),
            Some("one")
        );
        assert_eq!(
            find(["db.example", "5433", "swarm", "bob"]).as_deref(),
            Some("two")
        );
        assert_eq!(find(["h", "1", "d", "carol"]).as_deref(), Some("three"));
        assert_eq!(
            lookup("h:1:d:u", ["h", "1", "d", "u"]),
            None,
            "no password field"
        );
    }

    #[test]
    fn the_password_file_unescapes_colons_and_backslashes_and_keeps_the_rest() {
        let text = r"h\:6:1:d:u:p\\w:with:colons";
        assert_eq!(
            lookup(text, ["h:6", "1", "d", "u"]).as_deref(),
            Some(r"p\w:with:colons")
        );
    }

    #[test]
    fn the_url_wins_over_the_environment_and_the_environment_fills_the_rest() {
        let mut c = Config::from_str("postgres://alice@db.example:7000/swarm").unwrap();
        let e = env(&[
            ("PGHOST", "/run/other"),
            ("PGPORT", "6000"),
            ("PGUSER", "bob"),
            ("PGDATABASE", "elsewhere"),
            ("PGCONNECT_TIMEOUT", "1"),
        ]);
        fill(&mut c, &e).unwrap();
        assert_eq!(c.get_hosts(), &[Host::Tcp("db.example".into())]);
        assert_eq!(c.get_ports(), &[7000]);
        assert_eq!(c.get_user(), Some("alice"));
        assert_eq!(c.get_dbname(), Some("swarm"));
        assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(2)));

        let mut c = Config::from_str("postgres://").unwrap();
        fill(&mut c, &e).unwrap();
        assert_eq!(c.get_hosts(), &[Host::Unix("/run/other".into())]);
        assert_eq!(c.get_ports(), &[6000]);
        assert_eq!(
            (c.get_user(), c.get_dbname()),
            (Some("bob"), Some("elsewhere"))
        );
    }

    #[test]
    fn a_password_comes_from_pgpassword_else_a_private_password_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pass");
        std::fs::write(&file, "localhost:5432:*:bob:from-file\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let file = file.display().to_string();
        let password = |pairs: &[(&str, &str)]| {
            let mut c = Config::from_str("host=/tmp user=bob dbname=swarm").unwrap();
            fill(&mut c, &env(pairs)).unwrap();
            c.get_password()
                .map(|p| String::from_utf8_lossy(p).into_owned())
        };
        assert_eq!(
            password(&[("PGPASSFILE", &file)]).as_deref(),
            Some("from-file")
        );
        assert_eq!(
            password(&[("PGPASSFILE", &file), ("PGPASSWORD", "from-env")]).as_deref(),
            Some("from-env")
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            password(&[("PGPASSFILE", &file)]),
            None,
            "others can read it"
        );
    }

    #[test]
    fn a_bad_port_or_timeout_is_a_usage_error_naming_the_variable() {
        let mut c = Config::from_str("host=/tmp dbname=d").unwrap();
        let e = fill(&mut c, &env(&[("PGPORT", "x")])).unwrap_err();
        assert!(e.to_string().contains("PGPORT"), "{e}");
        let e = fill(&mut c, &env(&[("PGCONNECT_TIMEOUT", "soon")])).unwrap_err();
        assert!(e.to_string().contains("PGCONNECT_TIMEOUT"), "{e}");
    }
}
