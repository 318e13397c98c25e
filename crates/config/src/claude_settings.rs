//! Claude Code's settings files, read so a project set up for Claude Code runs under swarm
//! with the same model, environment and permissions.
//!
//! Three files, in Claude Code's precedence (a later one wins a single value, and adds to
//! the lists): the user's `<user>/settings.json`, the project's `.claude/settings.json`,
//! then its `.claude/settings.local.json`. Read here: `model`, `env`, and `permissions`'
//! `allow`, `deny` and `defaultMode`. Flags and the environment still win over all of them;
//! that is the front end's business (`ui::cli::context`), which resolves these once and
//! passes the result down. A rule swarm has no tool for (`WebFetch(...)`, `mcp__...`) or
//! that does not parse is left out, and said once in [`ClaudeSettings::warnings`]; so is a
//! file that is not JSON. Hooks and `swarm.check` are read elsewhere ([`crate::hooks`],
//! [`crate::project::swarm_check`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::permissions::{AllowRule, PermissionMode};
use crate::tools::ToolName;

/// A value and the file it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub from: PathBuf,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaudeSettings {
    pub model: Option<Sourced<String>>,
    pub default_mode: Option<Sourced<PermissionMode>>,
    pub env: BTreeMap<String, Sourced<String>>,
    pub allow: Vec<Sourced<AllowRule>>,
    /// Rules whose [`AllowRule::deny`] is set.
    pub deny: Vec<Sourced<AllowRule>>,
    /// The files that exist and were read, lowest precedence first.
    pub files: Vec<PathBuf>,
    /// What was left out and why, one line each.
    pub warnings: Vec<String>,
}

impl ClaudeSettings {
    /// The settings of the project at `project`, over the user's in `user` (the user's
    /// Claude directory, if known).
    pub fn load(project: &Path, user: Option<&Path>) -> ClaudeSettings {
        let claude = project.join(".claude");
        let mut files: Vec<PathBuf> = user.map(|u| u.join("settings.json")).into_iter().collect();
        files.push(claude.join("settings.json"));
        files.push(claude.join("settings.local.json"));
        // The user's directory may be the project's own `.claude` (a project in the home).
        files.dedup();
        let mut settings = ClaudeSettings::default();
        for file in files {
            settings.add_file(&file);
        }
        settings
    }

    /// Every rule, allow and deny, for an agent's permission check.
    pub fn rules(&self) -> impl Iterator<Item = &AllowRule> {
        self.allow.iter().chain(&self.deny).map(|r| &r.value)
    }

    fn add_file(&mut self, file: &Path) {
        let text = match swarm_util::bounded::config_file(file) {
            Ok(Some(t)) => t,
            Ok(None) => return,
            Err(e) => {
                self.warnings.push(e.to_string());
                return;
            }
        };
        let v: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                self.warnings.push(format!(
                    "{} is not valid JSON ({e}); its settings are ignored",
                    file.display()
                ));
                return;
            }
        };
        self.files.push(file.to_path_buf());
        let from = || file.to_path_buf();
        match v.get("model") {
            None | Some(Value::Null) => {}
            Some(Value::String(m)) if !m.trim().is_empty() => {
                self.model = Some(Sourced {
                    value: m.trim().to_owned(),
                    from: from(),
                })
            }
            Some(_) => self.warnings.push(format!(
                "{}: 'model' must be a model name; ignored",
                file.display()
            )),
        }
        if let Some(env) = v.get("env") {
            match env.as_object() {
                Some(vars) => {
                    for (k, val) in vars {
                        let value = match val {
                            Value::String(s) => s.clone(),
                            Value::Number(n) => n.to_string(),
                            Value::Bool(b) => b.to_string(),
                            _ => {
                                self.warnings.push(format!(
                                    "{}: env.{k} must be a string; ignored",
                                    file.display()
                                ));
                                continue;
                            }
                        };
                        self.env.insert(
                            k.clone(),
                            Sourced {
                                value,
                                from: from(),
                            },
                        );
                    }
                }
                None => self.warnings.push(format!(
                    "{}: 'env' must be an object of variables; ignored",
                    file.display()
                )),
            }
        }
        let Some(permissions) = v.get("permissions") else {
            return;
        };
        if let Some(mode) = permissions.get("defaultMode").and_then(Value::as_str) {
            match mode.parse::<PermissionMode>() {
                Ok(m) => {
                    self.default_mode = Some(Sourced {
                        value: m,
                        from: from(),
                    })
                }
                Err(_) => self.warnings.push(format!(
                    "{}: permissions.defaultMode {mode:?} is not a mode swarm knows (default, acceptEdits, bypassPermissions, plan); ignored",
                    file.display()
                )),
            }
        }
        let mut unknown = Vec::new();
        for (key, deny) in [("allow", false), ("deny", true)] {
            let Some(list) = permissions.get(key).and_then(Value::as_array) else {
                continue;
            };
            for raw in list {
                let text = raw.as_str().unwrap_or_default();
                match known_rule(text) {
                    Some(mut rule) => {
                        rule.deny = deny;
                        let target = if deny {
                            &mut self.deny
                        } else {
                            &mut self.allow
                        };
                        if !target.iter().any(|r| r.value == rule) {
                            target.push(Sourced {
                                value: rule,
                                from: from(),
                            });
                        }
                    }
                    None => unknown.push(raw.to_string()),
                }
            }
        }
        if !unknown.is_empty() {
            self.warnings.push(format!(
                "{}: swarm has no tool for these permission rules, which it ignores: {}",
                file.display(),
                unknown.join(", ")
            ));
        }
    }
}

/// A rule for one of swarm's tools, or `None`.
fn known_rule(text: &str) -> Option<AllowRule> {
    let rule: AllowRule = text.parse().ok()?;
    ToolName::parse(&rule.tool).map(|_| rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_beats_project_beats_user_and_the_lists_add_up() {
        let t = tempfile::tempdir().unwrap();
        let user = t.path().join("user");
        let project = t.path().join("p");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        std::fs::write(
            user.join("settings.json"),
            r#"{"model":"haiku","env":{"A":"user","B":"user"},
                "permissions":{"allow":["Bash(ls)"],"defaultMode":"plan"}}"#,
        )
        .unwrap();
        std::fs::write(
            project.join(".claude/settings.json"),
            r#"{"model":"sonnet","env":{"B":"project","N":3},
                "permissions":{"allow":["Bash(ls)","WebFetch(domain:x.org)"],"deny":["Read(./.env)"],"defaultMode":"acceptEdits"}}"#,
        )
        .unwrap();
        std::fs::write(
            project.join(".claude/settings.local.json"),
            r#"{"model":"opus","permissions":{"defaultMode":"nonsense"}}"#,
        )
        .unwrap();
        let s = ClaudeSettings::load(&project, Some(&user));
        assert_eq!(s.model.as_ref().unwrap().value, "opus");
        assert!(s.model.unwrap().from.ends_with("settings.local.json"));
        assert_eq!(s.default_mode.unwrap().value, PermissionMode::AcceptEdits);
        assert_eq!(s.env["A"].value, "user");
        assert_eq!(s.env["B"].value, "project");
        assert_eq!(s.env["N"].value, "3");
        let allow: Vec<String> = s.allow.iter().map(|r| r.value.to_string()).collect();
        assert_eq!(allow, ["Bash(ls)"]);
        assert!(s.deny[0].value.deny);
        assert_eq!(s.files.len(), 3);
        assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
        assert!(s.warnings.iter().any(|w| w.contains("WebFetch")));
    }

    #[test]
    fn a_broken_file_is_left_out_with_a_warning() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join(".claude")).unwrap();
        std::fs::write(t.path().join(".claude/settings.json"), "{oops").unwrap();
        let s = ClaudeSettings::load(t.path(), None);
        assert_eq!((s.model, s.files.len()), (None, 0));
        assert!(s.warnings[0].contains("not valid JSON"), "{:?}", s.warnings);
    }

    /// A settings file is read with a size limit: one over it is skipped with a warning
    /// naming it, never read whole.
    #[test]
    fn a_settings_file_over_the_size_limit_is_skipped_naming_it() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join(".claude")).unwrap();
        let file = t.path().join(".claude/settings.json");
        let pad = "x".repeat(2 << 20);
        std::fs::write(&file, format!(r#"{{"model":"opus","pad":"{pad}"}}"#)).unwrap();
        let s = ClaudeSettings::load(t.path(), None);
        assert_eq!(s.model, None);
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(
            s.warnings[0].contains(&file.display().to_string())
                && s.warnings[0].contains("over the 1 MiB limit"),
            "{:?}",
            s.warnings
        );
    }
}
