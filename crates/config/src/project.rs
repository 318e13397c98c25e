//! Where the user's configuration lives: the project's `.claude/` and the user's.
//!
//! The project directory of a working directory is its nearest ancestor (itself included)
//! holding a `.claude/` directory, not counting the user's home (whose `.claude/` is the
//! user scope) and not looking above it; with none, the working directory itself. Looking
//! upwards lets a teammate in a subdirectory find the project's agents and hooks. A teammate
//! in a worktree (see `swarm_git::worktree`) cannot rely on it: the worktree has its own
//! `.claude/` when one is committed, without the uncommitted and git-ignored files, so
//! `swarm spawn` names the project in `SWARM_PROJECT_DIR`.
//!
//! The user directory is `$CLAUDE_CONFIG_DIR` when set, else `$HOME/.claude`, as in
//! Claude Code.

use std::path::{Path, PathBuf};

use swarm_util::environment::Environment;
use swarm_util::vars;

/// Where the user's side of the configuration is: the home (a project search stops
/// there) and the user's Claude directory. Resolved once, at the edge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserDirs {
    pub home: Option<PathBuf>,
    /// `$CLAUDE_CONFIG_DIR`, else `$HOME/.claude`.
    pub claude: Option<PathBuf>,
    /// `$SWARM_SSH_CONFIG`: the ssh config file swarm gives `ssh` (`-F`) to reach hosts;
    /// `None`: ssh's own (`~/.ssh/config`).
    pub ssh_config: Option<PathBuf>,
}

impl UserDirs {
    pub fn from_env(env: &Environment) -> UserDirs {
        let home = env.get(vars::HOME).map(PathBuf::from);
        let claude = env
            .get(vars::CLAUDE_CONFIG_DIR)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".claude")));
        let ssh_config = env
            .get(vars::SWARM_SSH_CONFIG)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        UserDirs {
            home,
            claude,
            ssh_config,
        }
    }

    /// The project directory of `cwd` (see the module comment).
    pub fn project_dir(&self, cwd: &Path) -> PathBuf {
        project_dir_with_home(cwd, self.home.as_deref())
    }

    /// A teammate's project directory: `SWARM_PROJECT_DIR` if its environment names one
    /// (set by `swarm spawn`: a teammate in a worktree would not find it by walking up),
    /// else that of `cwd`.
    pub fn teammate_project_dir(&self, cwd: &Path, env: &Environment) -> PathBuf {
        match env.get(vars::SWARM_PROJECT_DIR) {
            Some(dir) => PathBuf::from(dir),
            None => self.project_dir(cwd),
        }
    }
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

/// The project's check command: `swarm.check` in `<project>/.claude/settings.json`
/// (swarm's own key; Claude Code ignores keys it does not know). `None` when the file or
/// the key is absent; an unreadable file or a key that is not a string is an error.
pub fn swarm_check(project: &Path) -> swarm_util::error::Result<Option<String>> {
    use swarm_util::error::Error;
    let file = project.join(".claude").join("settings.json");
    let Some(text) = swarm_util::bounded::config_file(&file)? else {
        return Ok(None);
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::Corrupt {
        path: file.clone(),
        reason: e.to_string(),
    })?;
    match v.get("swarm").and_then(|s| s.get("check")) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(Error::usage(format!(
            "swarm.check in {} must be a non-empty string (a shell command)",
            file.display()
        ))),
    }
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

    #[test]
    fn a_project_settings_file_over_the_size_limit_is_an_error_naming_it() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join(".claude")).unwrap();
        let file = t.path().join(".claude/settings.json");
        let pad = "x".repeat(2 << 20);
        std::fs::write(
            &file,
            format!(r#"{{"swarm":{{"check":"true"}},"pad":"{pad}"}}"#),
        )
        .unwrap();
        let err = swarm_check(t.path()).unwrap_err().to_string();
        assert!(
            err.contains(&file.display().to_string()) && err.contains("over the 1 MiB limit"),
            "{err}"
        );
    }
}
