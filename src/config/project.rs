//! Where the user's configuration lives: the project's `.claude/` and the user's.
//!
//! The project directory of a working directory is its nearest ancestor (itself included)
//! holding a `.claude/` directory, not counting the user's home (whose `.claude/` is the
//! user scope) and not looking above it; with none, the working directory itself. Looking
//! upwards lets a teammate in a subdirectory find the project's agents and hooks. A teammate
//! in a worktree (see [`crate::team::worktree`]) cannot rely on it: the worktree has its own
//! `.claude/` when one is committed, without the uncommitted and git-ignored files, so
//! `swarm spawn` names the project in [`PROJECT_DIR_ENV`].
//!
//! The user directory is `$CLAUDE_CONFIG_DIR` when set, else `$HOME/.claude`, as in
//! Claude Code.

use std::path::{Path, PathBuf};

/// The user's home, if `HOME` is set.
pub fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The user's Claude directory: `$CLAUDE_CONFIG_DIR`, else `$HOME/.claude`.
pub fn user_dir() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| home().map(|h| h.join(".claude")))
}

/// Set by `swarm spawn` for a teammate: the project it was spawned for, which a teammate
/// in a worktree would not find by walking up from its own working directory.
pub const PROJECT_DIR_ENV: &str = "SWARM_PROJECT_DIR";

/// A teammate's project directory: [`PROJECT_DIR_ENV`] if set, else that of `cwd`.
pub fn teammate_project_dir(cwd: &Path) -> PathBuf {
    match std::env::var_os(PROJECT_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => project_dir(cwd),
    }
}

/// The project directory of `cwd` (see the module comment).
pub fn project_dir(cwd: &Path) -> PathBuf {
    project_dir_with_home(cwd, home().as_deref())
}

pub fn project_dir_with_home(cwd: &Path, home: Option<&Path>) -> PathBuf {
    let home = home.map(|h| h.canonicalize().unwrap_or_else(|_| h.to_path_buf()));
    let start = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    for dir in start.ancestors() {
        if home.as_deref() == Some(dir) {
            break;
        }
        if dir.join(".claude").is_dir() {
            return dir.to_path_buf();
        }
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_claude_dir_below_home_wins() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let home = base.join("home");
        let repo = home.join("repo");
        let deep = repo.join("src/deep");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        // No project .claude: the cwd itself, never the home.
        assert_eq!(project_dir_with_home(&deep, Some(&home)), deep);
        std::fs::create_dir_all(repo.join(".claude")).unwrap();
        assert_eq!(project_dir_with_home(&deep, Some(&home)), repo);
        assert_eq!(project_dir_with_home(&repo, Some(&home)), repo);
    }
}
