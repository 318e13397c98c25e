//! Worktrees of teammates on other hosts: the lead's commit reaches the host's repository,
//! the teammate works there on its branch `swarm/<team>/<agent>`, and its commits come
//! back to the lead's repository by fetch, where the merge queue lands them like any
//! branch.
//!
//! The host's repository is the host's project directory (`swarm host add --dir`) when it
//! is one; else swarm makes a bare repository there, so that the lead can push any branch
//! to it (a checked-out branch refuses pushes). The worktree is in the host repository's
//! `swarm-worktrees/<team>/<agent>`, as a local one is in the lead's. The record's
//! `git_dir` and `path` are the host's, and `host` names it: the teammate reads them where
//! it runs; the lead reaches them over ssh, and keeps its own repository as the merge
//! queue's `git_dir`.
//!
//! Git travels by git's own ssh transport (`GIT_SSH_COMMAND`, the user's ssh with swarm's
//! options); every command on the host is argv through [`swarm_hosts::Ssh`]. Each has a
//! time limit.
//!
//! Invariants: the lead never deletes a host's branch whose commits it has not fetched;
//! a host that cannot be reached leaves the worktree and its record as they are.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::{Error, Result};
use git2::Repository;
use swarm_config::project::UserDirs;
use swarm_hosts::{Hosts, Ssh};
use swarm_store::Store;
use swarm_store::worktrees::{Record, RecordState};
use swarm_util::clock;
use swarm_util::names::{AgentName, TeamName};
use swarm_util::process::{RunFailed, run_within};

use crate::worktree::{self, Changes};

/// How long one git step (a push, a fetch, a command there) may take.
const GIT_LIMIT: Duration = Duration::from_secs(120);

/// A worktree about to be made on a host: the lead's side checked, nothing made.
#[derive(Debug, Clone)]
pub struct Plan {
    pub agent: String,
    pub branch: String,
    pub base: String,
    /// The lead's repository (its common git directory).
    pub lead_git_dir: PathBuf,
    /// The spawn's directory relative to the lead's checkout, kept in the worktree.
    pub subdir: PathBuf,
}

/// A worktree made on a host, and the teammate's working directory in it.
#[derive(Debug, Clone)]
pub struct Made {
    pub record: Record,
    pub cwd: String,
}

/// The plan for `agent`'s worktree when the lead works in a git checkout at `cwd`;
/// `None` when it does not (the teammate then works in the host's directory as it is).
pub fn plan(team: &TeamName, agent: &AgentName, cwd: &Path) -> Result<Option<Plan>> {
    let Ok(repo) = Repository::discover(cwd) else {
        return Ok(None);
    };
    let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(None);
    };
    let local = worktree::plan(team, agent, cwd)?;
    let workdir = workdir.canonicalize().unwrap_or(workdir);
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let subdir = cwd.strip_prefix(&workdir).unwrap_or(Path::new("")).into();
    Ok(Some(Plan {
        agent: local.agent,
        branch: local.branch,
        base: local.base,
        lead_git_dir: local.git_dir,
        subdir,
    }))
}

/// Makes the planned worktree on the host `ssh` reaches, in the repository at `dir` there
/// (made if need be), and records it; also records the lead's repository as the merge
/// queue's. On failure nothing is left on the host but the repository.
pub fn create(store: &Store, ssh: &Ssh, dir: &str, plan: &Plan) -> Result<Made> {
    let team = store.team();
    let git_dir = host_repository(ssh, dir)?;
    // Before anything writes a reflog there: without an identity git looks for the host's
    // domain name, which can take a resolver's timeout.
    copy_identity(ssh, &plan.lead_git_dir, &git_dir);
    let path = format!("{git_dir}/swarm-worktrees/{team}/{}", plan.agent);
    let url = ssh.git_url(&git_dir);
    push(
        ssh,
        &plan.lead_git_dir,
        &url,
        &format!("{}:refs/heads/{}", plan.base, plan.branch),
    )?;
    if let Err(e) = on_host(
        ssh,
        &[
            "git",
            "-C",
            &git_dir,
            "worktree",
            "add",
            "-q",
            &path,
            &plan.branch,
        ],
    ) {
        let _ = on_host(ssh, &["git", "-C", &git_dir, "branch", "-D", &plan.branch]);
        return Err(e);
    }
    let record = Record {
        agent: plan.agent.clone(),
        git_dir: git_dir.clone().into(),
        path: path.clone().into(),
        branch: plan.branch.clone(),
        name: format!("swarm-{team}-{}", plan.agent),
        base: plan.base.clone(),
        state: RecordState::Active,
        created_at: clock::now_ms(),
        host: Some(ssh.host().name.clone()),
    };
    let lead_git_dir = plan.lead_git_dir.clone();
    let saved = store
        .merge_queue()
        .update(|q| {
            q.git_dir.get_or_insert(lead_git_dir);
        })
        .and_then(|()| store.worktrees().save_worktree(&record));
    if let Err(e) = saved {
        let _ = remove_there(ssh, &record);
        return Err(e.into());
    }
    let cwd = Path::new(&path).join(&plan.subdir);
    Ok(Made {
        record,
        cwd: cwd.to_string_lossy().into_owned(),
    })
}

/// What [`create`] would run, as lines a person can paste, when the host's repository is
/// `dir` itself (a bare one swarm makes there; a checkout's is its `.git`); and the
/// teammate's working directory there.
pub fn shown(ssh: &Ssh, team: &TeamName, dir: &str, plan: &Plan) -> (Vec<String>, String) {
    let path = format!("{dir}/swarm-worktrees/{team}/{}", plan.agent);
    let push = [
        "git".to_owned(),
        "--git-dir".to_owned(),
        plan.lead_git_dir.display().to_string(),
        "push".to_owned(),
        ssh.git_url(dir),
        format!("{}:refs/heads/{}", plan.base, plan.branch),
    ];
    let lines = vec![
        ssh.shown(&["git", "init", "-q", "--bare", dir]),
        format!(
            "GIT_SSH_COMMAND={} {}",
            swarm_hosts::ssh::shell_line(&[ssh.git_ssh_command()]),
            swarm_hosts::ssh::shell_line(&push)
        ),
        ssh.shown(&[
            "git",
            "-C",
            dir,
            "worktree",
            "add",
            "-q",
            &path,
            &plan.branch,
        ]),
    ];
    let cwd = Path::new(&path).join(&plan.subdir);
    (lines, cwd.to_string_lossy().into_owned())
}

/// The host repository's common git directory: the one at `dir`, else a bare one made
/// there. Only `dir` itself counts, never a repository above it (a home directory's).
fn host_repository(ssh: &Ssh, dir: &str) -> Result<String> {
    let ceiling = Path::new(dir)
        .parent()
        .map(|p| format!("GIT_CEILING_DIRECTORIES={}", p.display()))
        .unwrap_or_else(|| "GIT_CEILING_DIRECTORIES=".to_owned());
    let find = [
        "env",
        &ceiling,
        "git",
        "-C",
        dir,
        "rev-parse",
        "--path-format=absolute",
        "--git-common-dir",
    ];
    if let Ok(found) = on_host(ssh, &find) {
        return Ok(found);
    }
    on_host(ssh, &["git", "init", "-q", "--bare", dir])?;
    on_host(ssh, &find)
}

/// The lead repository's own user.name and user.email, set in the host's repository when
/// it has none (a teammate's commit needs an identity; the host may have no global one).
fn copy_identity(ssh: &Ssh, lead_git_dir: &Path, git_dir: &str) {
    for key in ["user.name", "user.email"] {
        let Ok(value) = local_git(lead_git_dir, &["config", "--local", "--get", key]) else {
            continue;
        };
        if on_host(ssh, &["git", "-C", git_dir, "config", "--get", key]).is_err() {
            let _ = on_host(ssh, &["git", "-C", git_dir, "config", key, &value]);
        }
    }
}

/// ssh to the host of the remote `record`, and the lead's repository (the merge queue's).
pub fn reach(store: &Store, record: &Record, dirs: &UserDirs) -> Result<(Ssh, PathBuf)> {
    let host = record.host.as_deref().unwrap_or_default();
    let root = store.root();
    let hosts = Hosts::at(root.path(), root.lock_timeout());
    let ssh = Ssh::to(&hosts, host, dirs.ssh_config.clone())?;
    let lead = store.merge_queue().load()?.git_dir.ok_or_else(|| {
        Error::Git(format!(
            "failed to find the lead's repository for {}'s worktree on host '{host}': the merge queue names none",
            record.agent
        ))
    })?;
    Ok((ssh, lead))
}

/// Brings the branch of the remote `record` into the lead's repository at `lead_git_dir`
/// (forced: the teammate may have rebased it). Returns its head there.
pub fn fetch(ssh: &Ssh, record: &Record, lead_git_dir: &Path) -> Result<String> {
    let url = ssh.git_url(&record.git_dir.to_string_lossy());
    let refspec = format!("+refs/heads/{0}:refs/heads/{0}", record.branch);
    let mut cmd = git_over_ssh(ssh, lead_git_dir);
    cmd.args(["fetch", "-q", "--no-tags", &url, &refspec]);
    run(
        cmd,
        &format!("fetch {} from host '{}'", record.branch, ssh.host().name),
    )?;
    local_git(
        lead_git_dir,
        &["rev-parse", &format!("refs/heads/{}", record.branch)],
    )
}

/// What the remote `record`'s worktree holds: its branch fetched and compared in the
/// lead's repository, its uncommitted files counted there.
pub fn changes(ssh: &Ssh, record: &Record, lead_git_dir: &Path) -> Result<Changes> {
    let path = record.path.to_string_lossy();
    let status = on_host(ssh, &["git", "-C", &path, "status", "--porcelain"]);
    fetch(ssh, record, lead_git_dir)?;
    let mut local = record.clone();
    local.git_dir = lead_git_dir.to_path_buf();
    local.path = PathBuf::new();
    let mut changes = worktree::changes(&local)?;
    match status {
        Ok(lines) => {
            changes.missing = false;
            changes.files = lines.lines().filter(|l| !l.trim().is_empty()).count();
        }
        Err(_) => changes.missing = true,
    }
    Ok(changes)
}

/// Deletes the remote `record`'s worktree and branch on the host, the branch in the lead's
/// repository, and the record.
pub fn remove(store: &Store, ssh: &Ssh, record: &Record, lead: &Path) -> Result<()> {
    remove_there(ssh, record)?;
    let branch = format!("refs/heads/{}", record.branch);
    if local_git(lead, &["rev-parse", "-q", "--verify", &branch]).is_ok() {
        local_git(lead, &["update-ref", "-d", &branch])?;
    }
    Ok(store.worktrees().remove_worktree(&record.agent)?)
}

fn remove_there(ssh: &Ssh, record: &Record) -> Result<()> {
    let (git_dir, path) = (
        record.git_dir.to_string_lossy(),
        record.path.to_string_lossy(),
    );
    // A worktree already gone is fine; its branch must go.
    let _ = on_host(
        ssh,
        &[
            "git", "-C", &git_dir, "worktree", "remove", "--force", &path,
        ],
    );
    let _ = on_host(ssh, &["git", "-C", &git_dir, "worktree", "prune"]);
    let listed = on_host(
        ssh,
        &["git", "-C", &git_dir, "branch", "--list", &record.branch],
    )?;
    if !listed.trim().is_empty() {
        on_host(
            ssh,
            &["git", "-C", &git_dir, "branch", "-D", &record.branch],
        )?;
    }
    Ok(())
}

/// Sends `refspec` from the lead's repository to the host's (`url`).
pub fn push(ssh: &Ssh, lead_git_dir: &Path, url: &str, refspec: &str) -> Result<()> {
    let mut cmd = git_over_ssh(ssh, lead_git_dir);
    cmd.args(["push", "-q", url, refspec]);
    run(
        cmd,
        &format!("push {refspec} to host '{}'", ssh.host().name),
    )
    .map(|_| ())
}

/// git in the lead's repository, reaching hosts with swarm's ssh options.
fn git_over_ssh(ssh: &Ssh, git_dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("--git-dir")
        .arg(git_dir)
        .env("GIT_SSH_COMMAND", ssh.git_ssh_command())
        .env("GIT_SSH_VARIANT", "ssh")
        .env("GIT_TERMINAL_PROMPT", "0");
    cmd
}

fn local_git(git_dir: &Path, args: &[&str]) -> Result<String> {
    let mut cmd = Command::new("git");
    cmd.arg("--git-dir").arg(git_dir).args(args);
    run(
        cmd,
        &format!("git {} in {}", args.join(" "), git_dir.display()),
    )
}

/// Runs `cmd` within [`GIT_LIMIT`]; its trimmed stdout, or an error saying `what` failed.
fn run(mut cmd: Command, what: &str) -> Result<String> {
    let out = run_within(&mut cmd, None, GIT_LIMIT).map_err(|e| match e {
        RunFailed::Spawn(e) | RunFailed::Wait(e) => {
            Error::Git(format!("failed to {what}: failed to run git: {e}"))
        }
        RunFailed::TimedOut => swarm_hosts::error::Error::Unreachable(format!(
            "failed to {what}: no answer within {GIT_LIMIT:?}"
        ))
        .into(),
    })?;
    if !out.status.success() {
        return Err(Error::Git(format!(
            "failed to {what}: {}",
            swarm_hosts::ssh::last_line(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Runs `argv` on the host; its trimmed stdout, or an error naming the command.
fn on_host(ssh: &Ssh, argv: &[&str]) -> Result<String> {
    let out = ssh.run(argv, None, GIT_LIMIT)?;
    if !out.status.success() {
        return Err(Error::Git(format!(
            "failed to run `{}` on host '{}': {}",
            argv.join(" "),
            ssh.host().name,
            swarm_hosts::ssh::last_line(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
