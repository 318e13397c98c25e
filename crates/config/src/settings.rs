//! swarm's settings that come from the environment alone, resolved once at the edge and
//! passed down.
//!
//! Flags and their environment twins are clap's business (each command's args beside it in
//! `ui::cli`, the shared groups in `ui::cli::options`); what is left here has no flag: where the user's configuration lives, the store's lock timeout and
//! durability, how many panes a team window holds, the benchmark's timings file, and the
//! Claude Code client `--claude-bin` falls back to. A
//! value that does not parse is warned about once, here, and the default used. Nothing
//! below the front end reads the environment; a teammate's environment is built from
//! [`Settings::env`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::project::UserDirs;
use swarm_util::environment::Environment;
use swarm_util::error::{Error, Result};
use swarm_util::lock;
use swarm_util::vars;

#[derive(Debug, Clone)]
pub struct Settings {
    /// The environment as read at start-up, which teammates inherit from.
    pub env: Environment,
    pub dirs: UserDirs,
    /// `SWARM_LOCK_TIMEOUT_MS`: how long to wait for a shared file's lock.
    pub lock_timeout: Duration,
    /// `SWARM_HEARTBEAT_TIMEOUT_MS`: how long a registered process may go without a beat.
    pub heartbeat_timeout: Duration,
    /// `SWARM_OUTAGE_WAIT_MS`: how long a call waits for a team's database to come back.
    pub outage_wait: Duration,
    /// Off with `SWARM_DURABLE=0`: writes then skip their fsyncs (atomicity never depends
    /// on them).
    pub durable: bool,
    /// `SWARM_PANES_PER_WINDOW` (at least 2: the lead and one teammate): how many panes a
    /// team window holds before the team gets another window.
    pub panes_per_window: Option<usize>,
    /// `SWARM_TIMINGS`: a file each model turn appends its timings to, for `scripts/bench`.
    pub timings: Option<PathBuf>,
    /// `SWARM_CLAUDE_BIN`: the Claude Code client for `--engine claude`, unless
    /// `--claude-bin` names one (see [`Settings::claude_bin`]).
    pub claude_bin: Option<PathBuf>,
}

impl Settings {
    pub fn resolve(env: Environment) -> Settings {
        let lock_timeout = parsed(&env, vars::SWARM_LOCK_TIMEOUT_MS)
            .map(Duration::from_millis)
            .unwrap_or(lock::DEFAULT_TIMEOUT);
        let heartbeat_timeout = parsed(&env, vars::SWARM_HEARTBEAT_TIMEOUT_MS)
            .map(Duration::from_millis)
            .unwrap_or(swarm_store::liveness::DEFAULT_TIMEOUT);
        let outage_wait = parsed(&env, vars::SWARM_OUTAGE_WAIT_MS)
            .map(Duration::from_millis)
            .unwrap_or(swarm_store::layout::DEFAULT_OUTAGE_WAIT);
        let durable = !matches!(
            env.get(vars::SWARM_DURABLE),
            Some("0" | "false" | "off" | "no")
        );
        let panes_per_window =
            parsed::<usize>(&env, vars::SWARM_PANES_PER_WINDOW).map(|n| n.max(2));
        let timings = env.get(vars::SWARM_TIMINGS).map(PathBuf::from);
        let claude_bin = env
            .get(vars::SWARM_CLAUDE_BIN)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Settings {
            claude_bin,
            dirs: UserDirs::from_env(&env),
            env,
            lock_timeout,
            heartbeat_timeout,
            outage_wait,
            durable,
            panes_per_window,
            timings,
        }
    }
}

impl Settings {
    /// The Claude Code client: `flag` (`--claude-bin`), else `SWARM_CLAUDE_BIN`, else
    /// `claude`; a bare name is looked up on `PATH`. Absolute, and known to exist, so a
    /// missing client is refused before anything is made.
    pub fn claude_bin(&self, flag: Option<&Path>) -> Result<PathBuf> {
        let given = flag.or(self.claude_bin.as_deref());
        let name = given.unwrap_or(Path::new("claude"));
        let found = if name.components().count() > 1 || name.is_absolute() {
            std::path::absolute(name).ok().filter(|p| is_executable(p))
        } else {
            self.env
                .get(vars::PATH)
                .unwrap_or_default()
                .split(':')
                .filter(|d| !d.is_empty())
                .map(|d| Path::new(d).join(name))
                .find(|p| is_executable(p))
        };
        found.ok_or_else(|| {
            let where_ = if given.is_some() { "" } else { " on PATH" };
            Error::usage(format!(
                "the Claude Code client {} was not found{where_}; install it, or name it with --claude-bin PATH or SWARM_CLAUDE_BIN",
                name.display()
            ))
        })
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A number from the environment; a value that is not one is warned about and ignored.
fn parsed<T: std::str::FromStr>(env: &Environment, name: &str) -> Option<T> {
    let value = env.get(name)?;
    let n = value.trim().parse().ok();
    if n.is_none() {
        tracing::warn!("{name}={value:?} is not a number; ignoring it");
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_values_from_the_environment() {
        let s = Settings::resolve(Environment::default());
        assert_eq!(s.lock_timeout, lock::DEFAULT_TIMEOUT);
        assert!(s.durable);
        assert_eq!((s.panes_per_window, s.timings), (None, None));

        let s = Settings::resolve(Environment::from_pairs([
            ("SWARM_LOCK_TIMEOUT_MS", "300"),
            ("SWARM_DURABLE", "0"),
            ("SWARM_PANES_PER_WINDOW", "1"),
            ("SWARM_TIMINGS", "/tmp/t.jsonl"),
            ("HOME", "/home/u"),
        ]));
        assert_eq!(s.lock_timeout, Duration::from_millis(300));
        assert!(!s.durable);
        assert_eq!(s.panes_per_window, Some(2), "at least the lead and one");
        assert_eq!(s.timings, Some(PathBuf::from("/tmp/t.jsonl")));
        assert_eq!(s.dirs.claude, Some(PathBuf::from("/home/u/.claude")));
    }

    #[test]
    fn a_value_that_is_not_a_number_is_ignored() {
        let s = Settings::resolve(Environment::from_pairs([
            ("SWARM_LOCK_TIMEOUT_MS", "soon"),
            ("SWARM_PANES_PER_WINDOW", "many"),
        ]));
        assert_eq!(s.lock_timeout, lock::DEFAULT_TIMEOUT);
        assert_eq!(s.panes_per_window, None);
    }

    #[test]
    fn the_claude_client_is_the_flag_else_the_variable_else_claude_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("claude");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().display().to_string();
        let s = Settings::resolve(Environment::from_pairs([("PATH", path.as_str())]));
        assert_eq!(s.claude_bin(None).unwrap(), bin);
        assert_eq!(s.claude_bin(Some(&bin)).unwrap(), bin);
        let e = s.claude_bin(Some(Path::new("/nope/claude"))).unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{e}");
        let s = Settings::resolve(Environment::from_pairs([
            ("PATH", "/nonexistent"),
            ("SWARM_CLAUDE_BIN", bin.to_str().unwrap()),
        ]));
        assert_eq!(s.claude_bin(None).unwrap(), bin);
        let s = Settings::resolve(Environment::from_pairs([("PATH", "/nonexistent")]));
        let e = s.claude_bin(None).unwrap_err().to_string();
        assert!(
            e.contains("--claude-bin") && e.contains("SWARM_CLAUDE_BIN"),
            "{e}"
        );
    }
}
