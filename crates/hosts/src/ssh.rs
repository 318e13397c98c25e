//! Running a command on a host through the system's `ssh`, by argv.
//!
//! Invariants:
//! - the remote command is argv: ssh hands the remote shell one line, so each word is
//!   quoted once for it (`shell-escape`, POSIX single quotes) and the words joined by
//!   spaces; nothing else is ever put in that line;
//! - ssh never asks anything: `BatchMode=yes` (keys or an agent only), a connect timeout and
//!   keep-alives, and each run has a time limit after which ssh is killed;
//! - ssh's settings are the user's own (`~/.ssh/config`, their keys), unless
//!   `SWARM_SSH_CONFIG` names a file, given as `-F`; swarm keeps no key and no password;
//! - secrets never reach ssh's argv: a caller that must pass one writes it on stdin.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::registry::{Host, Hosts};
use swarm_util::process::{RunFailed, run_within};

/// How long connecting to a host may take.
const CONNECT_TIMEOUT_S: u32 = 10;

/// ssh to one host.
#[derive(Debug, Clone)]
pub struct Ssh {
    host: Host,
    /// `SWARM_SSH_CONFIG`, passed as `-F`.
    config: Option<PathBuf>,
}

impl Ssh {
    pub fn new(host: Host, config: Option<PathBuf>) -> Ssh {
        Ssh { host, config }
    }

    /// ssh to the host `hosts` knows as `name` (`swarm host add`), with `config`
    /// (`SWARM_SSH_CONFIG`) if one is named; an unknown name is an error listing the known.
    pub fn to(hosts: &Hosts, name: &str, config: Option<PathBuf>) -> Result<Ssh> {
        Ok(Ssh::new(hosts.get(name)?, config))
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The whole argv that runs `remote` on the host: `ssh`, its options, the destination
    /// and the remote line (each word of `remote` quoted once). `tty` asks for a terminal
    /// (`swarm attach`).
    pub fn argv(&self, remote: &[&str], tty: bool) -> Vec<String> {
        let mut argv = self.prefix(tty);
        argv.push(remote_line(remote));
        argv
    }

    /// `ssh`, its options and the destination: what a remote line is given to (as
    /// `swarm_tmux::Tmux::on_host` takes it).
    pub fn prefix(&self, tty: bool) -> Vec<String> {
        let mut argv = vec!["ssh".to_owned()];
        if let Some(config) = &self.config {
            argv.extend(["-F".to_owned(), config.display().to_string()]);
        }
        for option in [
            "BatchMode=yes".to_owned(),
            format!("ConnectTimeout={CONNECT_TIMEOUT_S}"),
            "ServerAliveInterval=5".to_owned(),
            "ServerAliveCountMax=3".to_owned(),
        ] {
            argv.extend(["-o".to_owned(), option]);
        }
        argv.push(if tty { "-t" } else { "-T" }.to_owned());
        if let Some(port) = self.host.port {
            argv.extend(["-p".to_owned(), port.to_string()]);
        }
        argv.push("--".to_owned());
        argv.push(self.host.destination());
        argv
    }

    /// The URL git reaches the repository at `path` on the host with (`ssh://`, with the
    /// port when the host has one).
    pub fn git_url(&self, path: &str) -> String {
        let address = if self.host.address.contains(':') {
            format!("[{}]", self.host.address)
        } else {
            self.host.address.clone()
        };
        let user = self.host.user.as_ref().map(|u| format!("{u}@"));
        let port = self.host.port.map(|p| format!(":{p}"));
        format!(
            "ssh://{}{address}{}/{}",
            user.unwrap_or_default(),
            port.unwrap_or_default(),
            path.trim_start_matches('/')
        )
    }

    /// `GIT_SSH_COMMAND` for git's own ssh transport to this host: ssh with the same
    /// options as [`Ssh::prefix`] (git adds the port and the destination from the URL). Git
    /// hands it to a shell, so each word is quoted once.
    pub fn git_ssh_command(&self) -> String {
        let prefix = self.prefix(false);
        let options = prefix
            .iter()
            .take_while(|w| !matches!(w.as_str(), "-T" | "-t"))
            .map(|w| shell_escape::unix::escape(w.into()).into_owned());
        options.collect::<Vec<_>>().join(" ")
    }

    /// `argv` as a line a person can paste into a shell (for `--dry-run`).
    pub fn shown(&self, remote: &[&str]) -> String {
        shell_line(&self.argv(remote, false))
    }

    /// Runs `remote` on the host, with `input` on its stdin, for at most `limit`. A host
    /// that cannot be reached (ssh's own exit code 255) is [`Error::Unreachable`]; the
    /// command's own failure is the caller's to read in the output.
    pub fn run(&self, remote: &[&str], input: Option<&[u8]>, limit: Duration) -> Result<Output> {
        let argv = self.argv(remote, false);
        let ran = run_within(Command::new(&argv[0]).args(&argv[1..]), input, limit);
        let output = ran.map_err(|e| match e {
            RunFailed::Spawn(e) => Error::Ssh(format!(
                "failed to run ssh: {e}; install OpenSSH's client (Debian: openssh-client)"
            )),
            RunFailed::Wait(e) => Error::Ssh(format!("failed to wait for ssh: {e}")),
            RunFailed::TimedOut => Error::Unreachable(format!(
                "failed to run `{}` on host '{}' ({}): no answer within {limit:?}",
                remote.join(" "),
                self.host.name,
                self.host.target()
            )),
        })?;
        if output.status.code() == Some(255) {
            return Err(Error::Unreachable(format!(
                "failed to reach host '{}' ({}) over ssh: {}; check it with `swarm host check {}`",
                self.host.name,
                self.host.target(),
                last_line(&output.stderr),
                self.host.name
            )));
        }
        Ok(output)
    }
}

/// `words` as a line a person can paste into a shell: each quoted once, as it needs.
pub fn shell_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shell_escape::escape(w.into()).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `remote` as one line for the remote shell: each word quoted once.
fn remote_line(remote: &[&str]) -> String {
    remote
        .iter()
        .map(|w| shell_escape::unix::escape((*w).into()).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last line of a command's error output, for a one-line message.
pub fn last_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output")
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_remote_command_is_each_word_quoted_once_after_the_options() {
        let mut host = Host::parse("h", "ann@10.0.0.7:2222").unwrap();
        host.swarm_bin = Some("/opt/swarm".into());
        let ssh = Ssh::new(host, Some("/cfg".into()));
        let argv = ssh.argv(
            &["tmux", "new-session", "-s", "a b;c", "$(rm -rf /)", "it's"],
            false,
        );
        assert_eq!(&argv[..3], ["ssh", "-F", "/cfg"]);
        assert!(argv.contains(&"BatchMode=yes".to_owned()));
        let dest = argv.iter().position(|a| a == "--").unwrap();
        assert_eq!(&argv[dest + 1..dest + 2], ["ann@10.0.0.7"]);
        assert_eq!(argv[dest - 2..dest], ["-p", "2222"]);
        assert_eq!(
            argv[dest + 2],
            r#"tmux new-session -s 'a b;c' '$(rm -rf /)' 'it'\''s'"#
        );
        assert_eq!(argv.len(), dest + 3, "the remote line is one argument");
    }

    #[test]
    fn git_reaches_the_host_with_the_same_ssh_options() {
        let ssh = Ssh::new(
            Host::parse("h", "ann@10.0.0.7:2222").unwrap(),
            Some("/my cfg".into()),
        );
        assert_eq!(
            ssh.git_url("/srv/p.git"),
            "ssh://ann@10.0.0.7:2222/srv/p.git"
        );
        let cmd = ssh.git_ssh_command();
        assert!(
            cmd.starts_with("ssh -F '/my cfg' -o BatchMode=yes"),
            "{cmd}"
        );
        assert!(!cmd.contains("2222") && !cmd.contains("ann@"), "{cmd}");
        let plain = Ssh::new(Host::parse("h", "[::1]").unwrap(), None);
        assert_eq!(plain.git_url("p"), "ssh://[::1]/p");
    }
}
