//! A teammate's worktree as the lead settles it, wherever it is: what it holds and its
//! deletion ([`inspect`], [`discard`]: here through `git::worktree`, on another host
//! through [`remote_worktree`]), and its fate when its teammate stops ([`finalize`],
//! [`settle`]).
//!
//! Invariant: a worktree is settled exactly once when its teammate stops, under its
//! record's lock (the shutdown ladder and the supervisor may both try); without changes
//! it and its branch are removed, with changes both are kept and the lead is told.

use crate::error::Result;
use crate::remote_worktree;
use crate::worktree::{Changes, changes, remove};
use swarm_config::project::UserDirs;
use swarm_store::Store;
use swarm_store::mailbox::Envelope;
use swarm_store::worktrees::{Record, RecordState};
use swarm_util::names::AgentName;

/// How a worktree was settled when its teammate stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finalized {
    Removed(Record),
    Kept(Record, Changes),
}

/// What `record`'s worktree holds, seen from the lead: over ssh for one on another host
/// (see `remote_worktree`).
pub fn inspect(store: &Store, record: &Record, dirs: &UserDirs) -> Result<Changes> {
    if record.host.is_none() {
        return changes(record);
    }
    let (ssh, lead) = remote_worktree::reach(store, record, dirs)?;
    remote_worktree::changes(&ssh, record, &lead)
}

/// Deletes `record`'s worktree, its branch and the record, wherever the worktree is.
pub fn discard(store: &Store, record: &Record, dirs: &UserDirs) -> Result<()> {
    if record.host.is_none() {
        return remove(store, record);
    }
    let (ssh, lead) = remote_worktree::reach(store, record, dirs)?;
    remote_worktree::remove(store, &ssh, record, &lead)
}

/// Settles `agent`'s worktree after it stopped: removed without changes, kept with them.
/// `None` when it has no worktree in use (none, or already settled).
pub fn finalize(store: &Store, agent: &str, dirs: &UserDirs) -> Result<Option<Finalized>> {
    // A look without the lock first: most agents have no worktree to settle.
    if store.worktrees().worktree(agent)?.is_none() {
        return Ok(None);
    }
    let _guard = store.worktrees().lock_worktree(agent)?;
    let Some(mut record) = store.worktrees().worktree(agent)? else {
        return Ok(None);
    };
    if record.state != RecordState::Active {
        return Ok(None);
    }
    let changes = inspect(store, &record, dirs)?;
    if !changes.any() {
        discard(store, &record, dirs)?;
        return Ok(Some(Finalized::Removed(record)));
    }
    record.state = RecordState::Kept;
    store.worktrees().save_worktree(&record)?;
    Ok(Some(Finalized::Kept(record, changes)))
}

/// [`finalize`], then tell the lead about a kept worktree and clear `worktreePath` from
/// the roster for a removed one. Returns a line saying what happened, if anything did.
pub fn settle(store: &Store, agent: &str, dirs: &UserDirs) -> Option<String> {
    match finalize(store, agent, dirs) {
        Ok(None) => None,
        Ok(Some(Finalized::Removed(r))) => {
            let _ = store
                .roster()
                .update_member(agent, |m| m.worktree_path = None);
            tracing::info!("removed {agent}'s unchanged worktree {}", r.path.display());
            Some(format!(
                "removed its worktree {} and branch {} (no changes)",
                r.path.display(),
                r.branch
            ))
        }
        Ok(Some(Finalized::Kept(r, changes))) => {
            let text = format!(
                "{agent}'s worktree was kept because it has changes ({}): branch {} at {}. Its commits land through the team's merge queue (MergeQueue, `swarm merge`), which removes the worktree once they are on the target; uncommitted files stay there until someone commits them. To discard it instead: `git worktree remove --force {}` and `git branch -D {}`.",
                changes.describe(),
                r.branch,
                r.path.display(),
                r.path.display(),
                r.branch
            );
            let mut envelope = Envelope::new("system", text);
            envelope.summary = Some(format!("{agent}'s worktree kept: {}", r.branch));
            if let Err(e) = store.mail().deliver(&AgentName::lead(), envelope) {
                tracing::warn!("failed to tell the lead about {agent}'s kept worktree: {e}");
            }
            Some(format!(
                "kept its worktree {} on branch {} ({})",
                r.path.display(),
                r.branch,
                changes.describe()
            ))
        }
        Err(e) => {
            tracing::warn!("failed to settle {agent}'s worktree: {e}");
            Some(format!("failed to settle its worktree: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worktree::{create, plan, working_dir};
    use git2::{BranchType, Repository};
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use swarm_store::Root;
    use swarm_util::names::TeamName;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_SYSTEM", "/dev/null")
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}: {ok:?}");
    }

    fn repo() -> (tempfile::TempDir, PathBuf, Store) {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        std::fs::create_dir_all(repo.join("src")).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("src/a.txt"), "a\n").unwrap();
        std::fs::write(repo.join(".gitignore"), "target/\n").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", "first"]);
        let root = Root::new(t.path().join("root"));
        let store = swarm_store::Teams::new(root.clone())
            .open(&TeamName::new("t").unwrap())
            .unwrap();
        (t, repo, store)
    }

    fn names(agent: &str) -> (TeamName, AgentName) {
        (TeamName::new("t").unwrap(), AgentName::new(agent).unwrap())
    }

    #[test]
    fn outside_a_repository_or_without_commits_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let (team, agent) = names("bob");
        let err = plan(&team, &agent, t.path()).unwrap_err().to_string();
        assert!(err.contains("needs a git repository"), "{err}");
        git(t.path(), &["init", "-q"]);
        let err = plan(&team, &agent, t.path()).unwrap_err().to_string();
        assert!(err.contains("has no commits yet"), "{err}");
    }

    #[test]
    fn clean_worktrees_are_removed_and_changed_ones_kept() {
        let (_t, repo, store) = repo();
        let (team, bob) = names("bob");
        let p = plan(&team, &bob, &repo.join("src")).unwrap();
        assert!(
            p.path
                .starts_with(repo.canonicalize().unwrap().join(".git"))
        );
        assert_eq!(p.branch, "swarm/t/bob");
        let rec = create(&store, &p).unwrap();
        assert_eq!(working_dir(&p), p.path.join("src"));
        // A directory the commit does not have means the worktree's root.
        std::fs::create_dir_all(repo.join("untracked")).unwrap();
        let (_, other) = names("other");
        assert_eq!(
            plan(&team, &other, &repo.join("untracked")).unwrap().cwd,
            plan(&team, &other, &repo).unwrap().path
        );
        assert!(p.path.join("src/a.txt").is_file());
        // Build output is not a change; the main checkout sees nothing new.
        std::fs::create_dir_all(p.path.join("target")).unwrap();
        std::fs::write(p.path.join("target/out"), "x").unwrap();
        let status = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(&repo)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&status.stdout), "");
        assert!(!changes(&rec).unwrap().any());
        assert!(matches!(
            finalize(&store, "bob", &UserDirs::default()).unwrap(),
            Some(Finalized::Removed(_))
        ));
        assert!(!p.path.exists());
        assert!(
            Repository::open(&repo)
                .unwrap()
                .find_branch("swarm/t/bob", BranchType::Local)
                .is_err()
        );
        assert_eq!(
            finalize(&store, "bob", &UserDirs::default()).unwrap(),
            None,
            "settled once"
        );

        // An untracked file is a change.
        let (_, carol) = names("carol");
        let p = plan(&team, &carol, &repo).unwrap();
        create(&store, &p).unwrap();
        std::fs::write(p.path.join("new.txt"), "n").unwrap();
        let Some(Finalized::Kept(r, c)) = finalize(&store, "carol", &UserDirs::default()).unwrap()
        else {
            panic!("not kept")
        };
        assert_eq!((c.files, c.commits), (1, 0));
        assert!(c.unmerged());
        assert_eq!(r.state, RecordState::Kept);
        assert!(p.path.join("new.txt").exists());
        assert_eq!(
            finalize(&store, "carol", &UserDirs::default()).unwrap(),
            None
        );

        // A commit is a change, and stops being unmerged once main has it.
        let (_, dave) = names("dave");
        let p = plan(&team, &dave, &repo).unwrap();
        let rec = create(&store, &p).unwrap();
        std::fs::write(p.path.join("d.txt"), "d").unwrap();
        git(&p.path, &["add", "."]);
        git(&p.path, &["commit", "-q", "-m", "dave"]);
        let c = changes(&rec).unwrap();
        assert_eq!((c.files, c.commits, c.merged), (0, 1, false));
        git(&repo, &["merge", "-q", "--ff-only", "swarm/t/dave"]);
        let c = changes(&rec).unwrap();
        assert!(c.any() && !c.unmerged(), "{c:?}");
        remove(&store, &rec).unwrap();
        assert!(!p.path.exists());
        assert_eq!(
            store.worktrees().all_worktrees().unwrap().len(),
            1,
            "carol's stays"
        );
    }

    #[test]
    fn a_record_outlives_its_repository_harmlessly() {
        let (_t, repo, store) = repo();
        let (team, bob) = names("bob");
        let rec = create(&store, &plan(&team, &bob, &repo).unwrap()).unwrap();
        std::fs::remove_dir_all(&repo).unwrap();
        remove(&store, &rec).unwrap();
        assert!(store.worktrees().all_worktrees().unwrap().is_empty());
    }

    #[test]
    fn an_existing_branch_is_refused_with_a_way_out() {
        let (_t, repo, _store) = repo();
        git(&repo, &["branch", "swarm/t/bob"]);
        let (team, bob) = names("bob");
        let err = plan(&team, &bob, &repo).unwrap_err().to_string();
        assert!(err.contains("branch swarm/t/bob already exists"), "{err}");
    }
}
