//! Permission modes and allow rules: which tool calls may run without asking.
//!
//! Modes are Claude Code's: `default` (edits and commands need permission), `acceptEdits`
//! (file edits allowed, commands still need permission), `bypassPermissions` (everything
//! allowed), `plan` (read-only tools only, until a plan is approved). Allow rules are
//! Claude Code's too: `Bash` allows every command, `Bash(cargo test:*)` every command that
//! starts with `cargo test`, `Bash(ls)` exactly `ls`; `Write(src/**)`, `Edit(/abs/**)`,
//! `Read(/other/**)` allow a file tool on paths matching a glob (relative globs are taken
//! from the working directory). A path rule also lets a file tool reach outside the working
//! directory.
//!
//! A deny rule (from Claude Code's `permissions.deny`, see [`crate::claude_settings`])
//! is written the same way and refuses a matching call in every mode, before anything else
//! is considered.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::tools::ToolKind;
use swarm_util::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionMode {
    Default,
    AcceptEdits,
    BypassPermissions,
    Plan,
}

impl PermissionMode {
    /// How much it lets an agent do unasked: plan < default < acceptEdits <
    /// bypassPermissions. What the lead granted bounds what a restart may give.
    pub fn latitude(self) -> u8 {
        match self {
            PermissionMode::Plan => 0,
            PermissionMode::Default => 1,
            PermissionMode::AcceptEdits => 2,
            PermissionMode::BypassPermissions => 3,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::Plan => "plan",
        }
    }
}

impl FromStr for PermissionMode {
    type Err = Error;

    fn from_str(s: &str) -> Result<PermissionMode> {
        match s {
            "default" => Ok(PermissionMode::Default),
            "acceptEdits" | "accept-edits" => Ok(PermissionMode::AcceptEdits),
            "bypassPermissions" | "bypass-permissions" | "bypass" => {
                Ok(PermissionMode::BypassPermissions)
            }
            "plan" => Ok(PermissionMode::Plan),
            other => Err(Error::usage(format!(
                "unknown permission mode '{other}'; use default, acceptEdits, bypassPermissions or plan"
            ))),
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who answers plan approval and permission requests: the lead's model, or a person
/// (`swarm approve`, the dashboard).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approver {
    Lead,
    Human,
}

impl FromStr for Approver {
    type Err = Error;

    fn from_str(s: &str) -> Result<Approver> {
        match s {
            "lead" => Ok(Approver::Lead),
            "human" => Ok(Approver::Human),
            other => Err(Error::usage(format!(
                "unknown approver '{other}'; use lead or human"
            ))),
        }
    }
}

impl Approver {
    pub fn as_str(self) -> &'static str {
        match self {
            Approver::Lead => "lead",
            Approver::Human => "human",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowRule {
    pub tool: String,
    pub pattern: Option<String>,
    /// A deny rule: it refuses what it matches instead of allowing it.
    pub deny: bool,
}

impl FromStr for AllowRule {
    type Err = Error;

    fn from_str(s: &str) -> Result<AllowRule> {
        let s = s.trim();
        let bad = || {
            Error::usage(format!(
                "invalid allow rule '{s}'; write Tool or Tool(pattern), e.g. Bash(cargo test:*) or Write(src/**)"
            ))
        };
        match s.split_once('(') {
            None if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric()) => {
                Ok(AllowRule {
                    tool: s.to_owned(),
                    pattern: None,
                    deny: false,
                })
            }
            None => Err(bad()),
            Some((tool, rest)) => {
                let pattern = rest.strip_suffix(')').ok_or_else(bad)?;
                if tool.is_empty()
                    || pattern.is_empty()
                    || !tool.chars().all(|c| c.is_ascii_alphanumeric())
                {
                    return Err(bad());
                }
                Ok(AllowRule {
                    tool: tool.to_owned(),
                    pattern: Some(pattern.to_owned()),
                    deny: false,
                })
            }
        }
    }
}

impl fmt::Display for AllowRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            Some(p) => write!(f, "{}({p})", self.tool),
            None => f.write_str(&self.tool),
        }
    }
}

impl AllowRule {
    /// Does this rule allow `Bash` to run `command`?
    pub fn allows_command(&self, command: &str) -> bool {
        !self.deny && self.matches_command(command)
    }

    fn matches_command(&self, command: &str) -> bool {
        if self.tool != "Bash" {
            return false;
        }
        match &self.pattern {
            None => true,
            Some(p) => match p.strip_suffix(":*") {
                Some(prefix) => {
                    let command = command.trim();
                    command == prefix
                        || command
                            .strip_prefix(prefix)
                            .is_some_and(|rest| rest.starts_with(char::is_whitespace))
                }
                None => command.trim() == p,
            },
        }
    }

    /// Does this rule allow `tool` on `path` (absolute)?
    pub fn allows_path(&self, tool: &str, path: &Path, cwd: &Path) -> bool {
        !self.deny && self.matches_path(tool, path, cwd)
    }

    /// Does this deny rule refuse a call of `tool` on `command` or `path`?
    pub fn denies(
        &self,
        tool: &str,
        command: Option<&str>,
        path: Option<&Path>,
        cwd: &Path,
    ) -> bool {
        if !self.deny || self.tool != tool {
            return false;
        }
        if self.pattern.is_none() {
            return true;
        }
        if let Some(c) = command {
            // Any part may be the refused one; a line the splitter cannot read is taken whole.
            let parts = simple_commands(c).unwrap_or_else(|| vec![c.to_owned()]);
            return parts.iter().any(|p| self.matches_command(p)) || self.matches_command(c);
        }
        path.is_some_and(|p| self.matches_path(tool, p, cwd))
    }

    fn matches_path(&self, tool: &str, path: &Path, cwd: &Path) -> bool {
        if self.tool != tool {
            return false;
        }
        let Some(pattern) = &self.pattern else {
            return true;
        };
        // Claude Code writes absolute paths in rules as `//abs/path/**`.
        let pattern = pattern
            .strip_prefix('/')
            .filter(|p| p.starts_with('/'))
            .unwrap_or(pattern);
        // Claude Code's rules say `./.env` for a file of the working directory.
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let full: PathBuf = if Path::new(pattern).is_absolute() {
            PathBuf::from(pattern)
        } else {
            cwd.join(pattern)
        };
        globset::Glob::new(&full.to_string_lossy())
            .map(|g| g.compile_matcher().is_match(path))
            .unwrap_or(false)
    }
}

/// Splits a command line at `&&`, `||`, `;`, `|`, `&` and newlines outside quotes.
/// `None` if it holds what a rule cannot vouch for: command substitution (`$(`, backticks)
/// or a redirection outside single quotes.
fn simple_commands(command: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let (mut single, mut double) = (false, false);
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '\\' if !single => {
                current.push(c);
                if let Some(n) = chars.next() {
                    current.push(n);
                }
                continue;
            }
            '`' if !single => return None,
            '$' if !single && chars.peek() == Some(&'(') => return None,
            '>' | '<' if !single && !double => return None,
            ';' | '\n' | '|' | '&' if !single && !double => {
                if matches!(chars.peek(), Some('|' | '&')) {
                    chars.next();
                }
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if single || double {
        return None;
    }
    parts.push(current);
    Some(
        parts
            .into_iter()
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
            .collect(),
    )
}

/// True if every simple command in `command` is allowed by some rule.
pub fn command_allowed(rules: &[AllowRule], command: &str) -> bool {
    match simple_commands(command) {
        Some(parts) if !parts.is_empty() => parts
            .iter()
            .all(|p| rules.iter().any(|r| r.allows_command(p))),
        _ => false,
    }
}

/// The decision for one tool call, before any asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Needs someone's permission.
    Ask,
    /// Refused outright (plan mode), with the reason for the model.
    Deny(String),
}

/// Decides whether a call of `tool` (of `kind`) may run in `mode` under `rules`.
/// `command` is the Bash command, `path` the file a file tool touches.
pub fn verdict(
    mode: PermissionMode,
    rules: &[AllowRule],
    tool: &str,
    kind: ToolKind,
    command: Option<&str>,
    path: Option<&Path>,
    cwd: &Path,
) -> Verdict {
    if let Some(rule) = rules.iter().find(|r| r.denies(tool, command, path, cwd)) {
        return Verdict::Deny(format!(
            "{tool} is refused here by the deny rule {rule} in the settings; do without it"
        ));
    }
    match (mode, kind) {
        (_, ToolKind::ReadOnly | ToolKind::Team | ToolKind::PlanExit) => Verdict::Allow,
        (PermissionMode::Plan, _) => Verdict::Deny(format!(
            "{tool} is not available in plan mode: explore with read-only tools, then call ExitPlanMode with your plan and wait for approval"
        )),
        (PermissionMode::BypassPermissions, _) => Verdict::Allow,
        (PermissionMode::AcceptEdits, ToolKind::Edit) => Verdict::Allow,
        _ => {
            let allowed = match (kind, command, path) {
                // `Bash` with no pattern allows anything; patterns vouch for each part.
                (ToolKind::Execute, Some(c), _) => {
                    rules
                        .iter()
                        .any(|r| !r.deny && r.tool == "Bash" && r.pattern.is_none())
                        || command_allowed(rules, c)
                }
                (ToolKind::Edit, _, Some(p)) => rules.iter().any(|r| r.allows_path(tool, p, cwd)),
                _ => rules
                    .iter()
                    .any(|r| !r.deny && r.tool == tool && r.pattern.is_none()),
            };
            if allowed {
                Verdict::Allow
            } else {
                Verdict::Ask
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[&str]) -> Vec<AllowRule> {
        list.iter().map(|r| r.parse().unwrap()).collect()
    }

    #[test]
    fn bash_prefix_rules() {
        let r: AllowRule = "Bash(cargo test:*)".parse().unwrap();
        assert!(r.allows_command("cargo test"));
        assert!(r.allows_command("cargo test --all"));
        assert!(!r.allows_command("cargo testx"));
        assert!(!r.allows_command("cargo build"));
        let exact: AllowRule = "Bash(ls)".parse().unwrap();
        assert!(exact.allows_command("ls"));
        assert!(!exact.allows_command("ls -la"));
        assert!("Bash(".parse::<AllowRule>().is_err());
        assert!("(x)".parse::<AllowRule>().is_err());
        assert!("Ba sh".parse::<AllowRule>().is_err());
    }

    #[test]
    fn compound_commands_need_every_part_allowed() {
        let r = rules(&["Bash(bash check.sh:*)", "Bash(echo:*)"]);
        assert!(command_allowed(
            &r,
            "bash check.sh && echo \"task #4: ok; fine\""
        ));
        assert!(command_allowed(&r, "bash check.sh | echo x"));
        assert!(!command_allowed(&r, "bash check.sh && rm -rf ~"));
        assert!(!command_allowed(&r, "bash check.sh; curl evil"));
        assert!(!command_allowed(&r, "echo $(rm -rf ~)"));
        assert!(!command_allowed(&r, "echo `id`"));
        assert!(!command_allowed(&r, "echo x > /etc/passwd"));
        assert!(command_allowed(&r, "echo 'a > b; $(c)'"));
        assert!(!command_allowed(&r, "echo \"$(id)\""));
        assert!(!command_allowed(&r, "echo 'unterminated"));
        assert!(!command_allowed(&r, ""));
    }

    #[test]
    fn modes() {
        let cwd = Path::new("/w");
        let p = Some(Path::new("/w/src/a.rs"));
        let v = |mode, kind, rules: &[AllowRule]| {
            verdict(mode, rules, "Write", kind, Some("cargo test"), p, cwd)
        };
        assert_eq!(
            v(PermissionMode::Default, ToolKind::Edit, &[]),
            Verdict::Ask
        );
        assert_eq!(
            v(PermissionMode::Default, ToolKind::ReadOnly, &[]),
            Verdict::Allow
        );
        assert_eq!(
            v(PermissionMode::AcceptEdits, ToolKind::Edit, &[]),
            Verdict::Allow
        );
        assert_eq!(
            v(PermissionMode::AcceptEdits, ToolKind::Execute, &[]),
            Verdict::Ask
        );
        assert_eq!(
            v(PermissionMode::BypassPermissions, ToolKind::Execute, &[]),
            Verdict::Allow
        );
        assert!(matches!(
            v(PermissionMode::Plan, ToolKind::Edit, &[]),
            Verdict::Deny(_)
        ));
        assert!(matches!(
            v(PermissionMode::Plan, ToolKind::Execute, &rules(&["Bash"])),
            Verdict::Deny(_)
        ));
        assert_eq!(v(PermissionMode::Plan, ToolKind::Team, &[]), Verdict::Allow);
        assert_eq!(
            v(
                PermissionMode::Default,
                ToolKind::Edit,
                &rules(&["Write(src/**)"])
            ),
            Verdict::Allow
        );
        assert_eq!(
            v(
                PermissionMode::Default,
                ToolKind::Edit,
                &rules(&["Write(docs/**)"])
            ),
            Verdict::Ask
        );
        assert_eq!(
            v(
                PermissionMode::Default,
                ToolKind::Execute,
                &rules(&["Bash(cargo test:*)"])
            ),
            Verdict::Allow
        );
    }

    #[test]
    fn a_deny_rule_refuses_in_every_mode_and_never_allows() {
        let cwd = Path::new("/w");
        let mut deny: Vec<AllowRule> = rules(&["Bash(rm:*)", "Read(./.env)", "Bash"]);
        deny.iter_mut().for_each(|r| r.deny = true);
        let bash = |c: &str, rules: &[AllowRule]| {
            verdict(
                PermissionMode::BypassPermissions,
                rules,
                "Bash",
                ToolKind::Execute,
                Some(c),
                None,
                cwd,
            )
        };
        assert!(matches!(
            bash("ls && rm -rf x", &deny[..1]),
            Verdict::Deny(_)
        ));
        assert_eq!(bash("ls", &deny[..1]), Verdict::Allow);
        let read = |p: &str| {
            verdict(
                PermissionMode::Default,
                &deny[1..2],
                "Read",
                ToolKind::ReadOnly,
                None,
                Some(Path::new(p)),
                cwd,
            )
        };
        assert!(matches!(read("/w/.env"), Verdict::Deny(_)));
        assert_eq!(read("/w/src/a.rs"), Verdict::Allow);
        // A bare deny rule for a tool never counts as allowing it.
        assert!(!deny[2].allows_command("ls"));
        assert!(!command_allowed(&deny[2..], "ls"));
    }
}
