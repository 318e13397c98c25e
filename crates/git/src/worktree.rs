//! Git worktrees for teammates spawned with `--isolation worktree`.
//!
//! A teammate's worktree is made from HEAD of the repository holding the spawn's working
//! directory, on a new branch `swarm/<team>/<agent>`, in
//! `<git common dir>/swarm-worktrees/<team>/<agent>`: inside `.git/`, so it never shows as
//! an untracked directory in the main checkout and goes wherever the repository goes. The
//! teammate's working directory is the same subdirectory of the worktree the spawn's was
//! of the checkout.
//!
//! Each worktree has a record (see `store::worktrees`); the roster's `worktreePath` says
//! the same for Claude Code.
//!
//! Invariants (settling a worktree when its teammate stops is `git::settle`'s):
//! - "changes" means commits on the branch (or the worktree's HEAD) since the starting
//!   commit, or any file git would report as modified, added, deleted or untracked; files
//!   ignored by `.gitignore` (build output) are not changes. Without changes the worktree
//!   and its branch are removed; with changes both are kept and the lead is told;
//! - a worktree holding unmerged work (uncommitted changes, or commits not reachable from
//!   the main checkout's HEAD) is only ever deleted by `swarm team delete --force`.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use git2::{
    BranchType, ErrorCode, Oid, Repository, StatusOptions, WorktreeAddOptions, WorktreePruneOptions,
};
use swarm_store::Store;
use swarm_store::worktrees::{Record, RecordState};
use swarm_util::clock;
use swarm_util::error::{Base as _, IoContext};
use swarm_util::names::{AgentName, TeamName};

/// A worktree about to be made: everything checked, nothing created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub agent: String,
    pub git_dir: PathBuf,
    pub path: PathBuf,
    /// The teammate's working directory inside the worktree.
    pub cwd: PathBuf,
    pub branch: String,
    pub name: String,
    pub base: String,
}

/// What a worktree holds that its starting commit does not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// The worktree's directory is gone.
    pub missing: bool,
    /// Commits on the branch (or the worktree's HEAD) since the starting commit.
    pub commits: usize,
    /// Files git reports as changed or untracked.
    pub files: usize,
    /// Every commit is reachable from the main checkout's HEAD.
    pub merged: bool,
}

impl Changes {
    pub fn any(&self) -> bool {
        self.commits > 0 || self.files > 0
    }

    /// Work that deleting the worktree and branch would lose.
    pub fn unmerged(&self) -> bool {
        self.files > 0 || (self.commits > 0 && !self.merged)
    }

    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.commits > 0 {
            parts.push(format!(
                "{} new commit(s){}",
                self.commits,
                if self.merged { ", merged" } else { "" }
            ));
        }
        if self.files > 0 {
            parts.push(format!("{} uncommitted file(s)", self.files));
        }
        if parts.is_empty() {
            "no changes".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

fn git_err(action: &str, path: &Path, e: git2::Error) -> Error {
    Error::Git(format!(
        "failed to {action} {}: {}",
        path.display(),
        e.message()
    ))
}

pub fn branch_name(team: &TeamName, agent: &AgentName) -> String {
    format!("swarm/{team}/{agent}")
}

/// Checks that a worktree can be made for `agent` from `cwd`, and where it would go.
pub fn plan(team: &TeamName, agent: &AgentName, cwd: &Path) -> Result<Plan> {
    let cwd = cwd.canonicalize().ctx("open", cwd)?;
    let repo = Repository::discover(&cwd).map_err(|_| {
        Error::usage(format!(
            "--isolation worktree needs a git repository, and {} is not inside one; run `git init` and commit there, or spawn without isolation",
            cwd.display()
        ))
    })?;
    let workdir = repo
        .workdir()
        .ok_or_else(|| {
            Error::usage(format!(
                "{} is a bare git repository; worktree isolation needs a checkout",
                repo.path().display()
            ))
        })?
        .canonicalize()
        .ctx("open", repo.path())?;
    let head = repo.head().map_err(|e| match e.code() {
        ErrorCode::UnbornBranch | ErrorCode::NotFound => Error::usage(format!(
            "the repository at {} has no commits yet; commit once before spawning a teammate in a worktree",
            workdir.display()
        )),
        _ => git_err("read HEAD of", &workdir, e),
    })?;
    let commit = head
        .peel_to_commit()
        .map_err(|e| git_err("read HEAD of", &workdir, e))?;
    let base = commit.id();
    let git_dir = repo
        .commondir()
        .canonicalize()
        .ctx("open", repo.commondir())?;
    let path = git_dir
        .join("swarm-worktrees")
        .join(team.as_str())
        .join(agent.as_str());
    let branch = branch_name(team, agent);
    if repo.find_branch(&branch, BranchType::Local).is_ok() {
        return Err(Error::conflict(format!(
            "branch {branch} already exists in {} (kept work of an earlier {agent}?); merge or delete it (git branch -D {branch}), or pick another name",
            workdir.display()
        )));
    }
    if path.exists() {
        return Err(Error::conflict(format!(
            "{} already exists; remove it (git worktree remove {}) or pick another name",
            path.display(),
            path.display()
        )));
    }
    // The same subdirectory, if the commit has it (an untracked one will not be there).
    let rel = cwd.strip_prefix(&workdir).unwrap_or(Path::new(""));
    let in_commit = rel.as_os_str().is_empty()
        || commit
            .tree()
            .and_then(|t| t.get_path(rel))
            .is_ok_and(|e| e.kind() == Some(git2::ObjectType::Tree));
    Ok(Plan {
        agent: agent.to_string(),
        cwd: if in_commit {
            path.join(rel)
        } else {
            path.clone()
        },
        git_dir,
        path,
        branch,
        name: format!("swarm-{team}-{agent}"),
        base: base.to_string(),
    })
}

/// Makes the planned worktree and its branch, and records it. On failure nothing is left.
pub fn create(store: &Store, plan: &Plan) -> Result<Record> {
    let repo = Repository::open(&plan.git_dir).map_err(|e| git_err("open", &plan.git_dir, e))?;
    // A worktree of this name whose directory is gone is a leftover: prune it.
    if let Ok(old) = repo.find_worktree(&plan.name) {
        if old.validate().is_ok() {
            return Err(Error::conflict(format!(
                "git already has a worktree named {} at {}; remove it with `git worktree remove`",
                plan.name,
                old.path().display()
            )));
        }
        old.prune(None)
            .map_err(|e| git_err("prune the stale worktree", old.path(), e))?;
    }
    let parent = plan.path.parent().unwrap_or(&plan.path);
    std::fs::create_dir_all(parent).ctx("create directory", parent)?;
    let base = Oid::from_str(&plan.base).map_err(|e| git_err("read", &plan.git_dir, e))?;
    let commit = repo
        .find_commit(base)
        .map_err(|e| git_err("read", &plan.git_dir, e))?;
    let branch = repo.branch(&plan.branch, &commit, false).map_err(|e| {
        git_err(
            &format!("create branch {} in", plan.branch),
            &plan.git_dir,
            e,
        )
    })?;
    let reference = branch.into_reference();
    let mut opts = WorktreeAddOptions::new();
    opts.reference(Some(&reference));
    if let Err(e) = repo.worktree(&plan.name, &plan.path, Some(&opts)) {
        if let Ok(mut b) = repo.find_branch(&plan.branch, BranchType::Local) {
            let _ = b.delete();
        }
        let _ = std::fs::remove_dir_all(&plan.path);
        return Err(git_err("create the worktree", &plan.path, e));
    }
    let record = Record {
        agent: plan.agent.clone(),
        git_dir: plan.git_dir.clone(),
        path: plan.path.clone(),
        branch: plan.branch.clone(),
        name: plan.name.clone(),
        base: plan.base.clone(),
        state: RecordState::Active,
        created_at: clock::now_ms(),
        host: None,
    };
    if let Err(e) = store.worktrees().save_worktree(&record) {
        let _ = remove(store, &record);
        return Err(e.into());
    }
    Ok(record)
}

/// The teammate's working directory in a new worktree: the planned one if the checkout
/// has it (it should), else the worktree's root.
pub fn working_dir(plan: &Plan) -> PathBuf {
    if plan.cwd.is_dir() {
        plan.cwd.clone()
    } else {
        plan.path.clone()
    }
}

/// What the worktree holds since its starting commit.
pub fn changes(record: &Record) -> Result<Changes> {
    let main =
        Repository::open(&record.git_dir).map_err(|e| git_err("open", &record.git_dir, e))?;
    let base = Oid::from_str(&record.base).map_err(|e| git_err("read", &record.git_dir, e))?;
    let tip = main
        .find_branch(&record.branch, BranchType::Local)
        .ok()
        .and_then(|b| b.get().target());
    let mut changes = Changes {
        missing: !record.path.is_dir(),
        ..Changes::default()
    };
    let mut heads: Vec<Oid> = tip.into_iter().collect();
    if !changes.missing {
        let repo = Repository::open(&record.path).map_err(|e| git_err("open", &record.path, e))?;
        if let Some(head) = repo.head().ok().and_then(|h| h.target())
            && !heads.contains(&head)
        {
            heads.push(head);
        }
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .exclude_submodules(true);
        changes.files = repo
            .statuses(Some(&mut opts))
            .map_err(|e| git_err("read the status of", &record.path, e))?
            .len();
    }
    let main_head = main.head().ok().and_then(|h| h.target());
    changes.merged = true;
    for head in heads.into_iter().filter(|h| *h != base) {
        let (ahead, _) = main
            .graph_ahead_behind(head, base)
            .map_err(|e| git_err("compare commits in", &record.git_dir, e))?;
        changes.commits = changes.commits.max(ahead.max(1));
        let reachable = main_head
            .is_some_and(|m| m == head || main.graph_descendant_of(m, head).unwrap_or(false));
        changes.merged &= reachable;
    }
    Ok(changes)
}

/// The commit the worktree's branch points at.
pub fn branch_head(record: &Record) -> Option<String> {
    let repo = Repository::open(&record.git_dir).ok()?;
    let branch = repo.find_branch(&record.branch, BranchType::Local).ok()?;
    branch.get().target().map(|oid| oid.to_string())
}

/// Deletes the worktree, its branch and its record.
pub fn remove(store: &Store, record: &Record) -> Result<()> {
    // A repository that is gone took its worktrees and branches with it.
    let repo = match Repository::open(&record.git_dir) {
        Ok(r) => Some(r),
        Err(_) if !record.git_dir.exists() => None,
        Err(e) => return Err(git_err("open", &record.git_dir, e)),
    };
    if let Some(wt) = repo
        .as_ref()
        .and_then(|r| r.find_worktree(&record.name).ok())
    {
        let mut opts = WorktreePruneOptions::new();
        opts.valid(true).locked(true).working_tree(true);
        wt.prune(Some(&mut opts))
            .map_err(|e| git_err("remove the worktree", &record.path, e))?;
    }
    match std::fs::remove_dir_all(&record.path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("remove", &record.path, e)),
    }
    if let Some(mut branch) = repo
        .as_ref()
        .and_then(|r| r.find_branch(&record.branch, BranchType::Local).ok())
    {
        branch.delete().map_err(|e| {
            git_err(
                &format!("delete branch {} in", record.branch),
                &record.git_dir,
                e,
            )
        })?;
    }
    // Empty folders of ours go too; a non-empty one stays (remove_dir refuses).
    for dir in record.path.ancestors().skip(1).take(2) {
        let _ = std::fs::remove_dir(dir);
    }
    Ok(store.worktrees().remove_worktree(&record.agent)?)
}
