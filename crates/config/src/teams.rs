//! Team definitions: a team committed as a file, which `swarm run --team-def NAME` starts.
//!
//! A definition is TOML in `<project>/.swarm/teams/<name>.toml` (the project as for agent
//! definitions, see [`crate::project`]). Not under `.claude/teams/`: when the project is
//! the home directory that is `~/.claude/teams/`, where every running team keeps its
//! roster and inboxes (Claude Code's layout), and a file there would sit among them. The
//! file holds an optional `[lead]` table (`goal`, a template where `{goal}` stands for the
//! run's goal; `provider`, `base_url`, `model` for the lead's own model) and one
//! `[[member]]` table per teammate: `name` (required), `agent_type`, `provider`,
//! `base_url`, `model`, `permission_mode`, `plan_mode`, `isolation`, `color`, `prompt`.
//!
//! Every value is checked by the rule its spawn flag uses (agent names by
//! `swarm_util::names`, providers by `swarm_llm`, permission modes, isolation, colours),
//! and unknown keys, wrong types and names used twice are refused too, so a definition
//! that loads is one `swarm spawn` would take. Every error is one line naming the file and
//! the line at fault: `failed to read team definition <path>: line N: ...`, exit 2.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use toml_edit::{Item, Table, Value};

use crate::agents::{Catalog, Isolation};
use crate::permissions::PermissionMode;
use swarm_llm::Provider;
use swarm_store::roster::check_colour;
use swarm_util::error::{Error, Result};
use swarm_util::names::{AgentName, TeamName};

/// Where a project keeps its team definitions, under its directory.
pub const DIR: &str = ".swarm/teams";
/// What a goal template's run goal is written as.
pub const GOAL_PLACEHOLDER: &str = "{goal}";

const LEAD_KEYS: [&str; 4] = ["goal", "provider", "base_url", "model"];
const MEMBER_KEYS: [&str; 10] = [
    "name",
    "agent_type",
    "provider",
    "base_url",
    "model",
    "permission_mode",
    "plan_mode",
    "isolation",
    "color",
    "prompt",
];

/// A team definition that passed every check.
#[derive(Debug, Clone, PartialEq)]
pub struct TeamDef {
    pub path: PathBuf,
    pub lead: LeadDef,
    pub members: Vec<MemberDef>,
}

/// The `[lead]` table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LeadDef {
    /// A template holding [`GOAL_PLACEHOLDER`] once or more.
    pub goal: Option<String>,
    pub provider: Option<Provider>,
    pub base_url: Option<String>,
    pub model: Option<String>,
}

/// One `[[member]]` table: what `swarm spawn` would be given for it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberDef {
    pub name: AgentName,
    pub agent_type: Option<String>,
    pub provider: Option<Provider>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub permission_mode: Option<PermissionMode>,
    pub plan_mode: bool,
    pub isolation: Option<Isolation>,
    pub color: Option<String>,
    pub prompt: Option<String>,
    /// The line of its `[[member]]` header.
    pub line: usize,
    /// The line of its `agent_type`, for an unknown type (found against the catalog later).
    pub agent_type_line: usize,
}

impl TeamDef {
    /// The lead's goal: the template with `goal` in it, else `goal` itself.
    pub fn goal(&self, goal: &str) -> String {
        match &self.lead.goal {
            Some(template) => template.replace(GOAL_PLACEHOLDER, goal),
            None => goal.to_owned(),
        }
    }

    /// Refuses a member whose agent type is not in `catalog`, naming its line.
    pub fn check_agent_types(&self, catalog: &Catalog) -> Result<()> {
        for m in &self.members {
            if let Some(t) = &m.agent_type
                && let Err(e) = catalog.get(t)
            {
                return Err(bad(
                    &self.path,
                    m.agent_type_line,
                    format!("agent_type: {e}"),
                ));
            }
        }
        Ok(())
    }
}

/// The directory of the definitions of the project at `project`.
pub fn dir(project: &Path) -> PathBuf {
    project.join(DIR)
}

/// The file `given` means: a path when it has a `/` or ends in `.toml`, else the name of a
/// definition in `project`'s directory (checked as a team name).
pub fn locate(given: &str, project: &Path) -> Result<PathBuf> {
    if given.contains('/') || given.ends_with(".toml") {
        return Ok(PathBuf::from(given));
    }
    let name = TeamName::new(given)?;
    Ok(dir(project).join(format!("{name}.toml")))
}

/// Reads and checks the definition at `path`.
pub fn load(path: &Path) -> Result<TeamDef> {
    match swarm_util::bounded::config_file(path)? {
        Some(text) => parse(&text, path),
        None => Err(Error::not_found(format!(
            "failed to read team definition {}: no such file; write one with `swarm team init`",
            path.display()
        ))),
    }
}

/// Writes the commented example as `name`'s definition in `project`; refuses to replace
/// a file that is there. Returns where it wrote.
pub fn init(project: &Path, name: &str) -> Result<PathBuf> {
    let name = TeamName::new(name)?;
    let dir = dir(project);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
    let path = dir.join(format!("{name}.toml"));
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(Error::conflict(format!(
                "failed to write team definition {}: it exists; edit it, or give another name",
                path.display()
            )));
        }
        Err(e) => return Err(Error::io("create", &path, e)),
    };
    let written = file
        .write_all(EXAMPLE.as_bytes())
        .and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&path);
        return Err(Error::io("write", &path, e));
    }
    Ok(path)
}

/// The example `swarm team init` writes: every key, each said what it does.
pub const EXAMPLE: &str = r#"# A swarm team definition: `swarm run --team-def NAME "<goal>"` starts this team,
# `swarm team check NAME` checks it. Every key but a member's name may be left out.

# The lead: it splits the goal into tasks and hands them to the members below.
[lead]
# What the lead is asked; {goal} is the goal given to `swarm run`.
goal = """
{goal}

Keep every change small and covered by a test.
"""
# The lead's own model [default: swarm run's --provider, --base-url and --model].
# provider = "anthropic"          # anthropic, openai or scripted
# base_url = "https://api.anthropic.com"
# model = "claude-sonnet-4-5"

# One [[member]] table per teammate; each starts with the run, before the lead's first turn.
[[member]]
name = "architect"                # a-z, 0-9, '-' and '_'; unique in the team
agent_type = "general-purpose"    # an agent definition (see `swarm agents list`)
plan_mode = true                  # its plan needs the lead's approval before it changes anything
prompt = "You review the design: present a plan for each task before you change anything."
# provider = "openai"             # its own API: anthropic, openai or scripted [default: the lead's]
# base_url = "http://127.0.0.1:8080/v1"
# model = "gpt-4.1"
# permission_mode = "acceptEdits" # default, acceptEdits, bypassPermissions or plan
# isolation = "worktree"          # worktree: its own git worktree and branch; none: the shared checkout
# color = "blue"                  # red, blue, green, yellow, purple, orange, pink or cyan

[[member]]
name = "builder"
prompt = "You build what the tasks ask, run their checks, and report to team-lead."
"#;

/// Parses a definition's text; `path` is only named in errors.
pub fn parse(text: &str, path: &Path) -> Result<TeamDef> {
    let doc = toml_edit::Document::parse(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text, s.start));
        let message = e.message().trim().replace('\n', "; ");
        bad(path, line, format!("not valid TOML: {message}"))
    })?;
    let at = |span: Option<std::ops::Range<usize>>| span.map_or(1, |s| line_of(text, s.start));
    let fail = |span, message: String| bad(path, at(span), message);
    let root = doc.as_table();
    for (key, _) in root.iter() {
        if !matches!(key, "lead" | "member") {
            return Err(fail(
                root.key(key).and_then(|k| k.span()),
                format!("unknown key '{key}'; the file has a [lead] table and [[member]] tables"),
            ));
        }
    }
    let lead = match root.get("lead") {
        None => LeadDef::default(),
        Some(Item::Table(t)) => lead(&Fields::new(t, &at, path, &LEAD_KEYS)?)?,
        Some(other) => {
            return Err(fail(
                other.span(),
                "'lead' must be a table: write it as [lead]".to_owned(),
            ));
        }
    };
    let tables: Vec<&Table> = match root.get("member") {
        None => Vec::new(),
        Some(Item::ArrayOfTables(a)) => a.iter().collect(),
        Some(other) => {
            return Err(fail(
                root.key("member").and_then(|k| k.span()).or(other.span()),
                "'member' must be an array of tables: write each as [[member]]".to_owned(),
            ));
        }
    };
    if tables.is_empty() {
        return Err(fail(
            None,
            "no members; add a [[member]] table with a name for each teammate".to_owned(),
        ));
    }
    let mut members: Vec<MemberDef> = Vec::new();
    for table in tables {
        let fields = Fields::new(table, &at, path, &MEMBER_KEYS)?;
        let m = member(&fields, at(table.span()))?;
        if let Some(first) = members
            .iter()
            .find(|o| o.name.as_str().eq_ignore_ascii_case(m.name.as_str()))
        {
            return Err(fields.error(
                "name",
                format!(
                    "'{}' is named twice (first on line {}); names are unique within a team",
                    m.name, first.line
                ),
            ));
        }
        members.push(m);
    }
    Ok(TeamDef {
        path: path.to_path_buf(),
        lead,
        members,
    })
}

fn lead(f: &Fields) -> Result<LeadDef> {
    let goal = f.string("goal")?;
    if let Some(g) = &goal
        && !g.contains(GOAL_PLACEHOLDER)
    {
        return Err(f.error(
            "goal",
            format!(
                "the goal template has no {GOAL_PLACEHOLDER}; put it where the run's goal goes"
            ),
        ));
    }
    Ok(LeadDef {
        goal,
        provider: f.parsed("provider")?,
        base_url: f.string("base_url")?,
        model: f.string("model")?,
    })
}

fn member(f: &Fields, line: usize) -> Result<MemberDef> {
    let Some(name) = f.string("name")? else {
        return Err(bad(
            f.path,
            line,
            "this [[member]] has no name; add name = \"...\"".to_owned(),
        ));
    };
    let name = AgentName::new(&name).map_err(|e| f.error("name", e.to_string()))?;
    let color = f.string("color")?;
    if let Some(c) = &color {
        check_colour(c).map_err(|e| f.error("color", e.to_string()))?;
    }
    let prompt = f.string("prompt")?;
    if let Some(p) = &prompt {
        swarm_store::mailbox::check_text(p).map_err(|e| f.error("prompt", e.to_string()))?;
    }
    Ok(MemberDef {
        name,
        agent_type: f.string("agent_type")?,
        provider: f.parsed("provider")?,
        base_url: f.string("base_url")?,
        model: f.string("model")?,
        permission_mode: f.parsed("permission_mode")?,
        plan_mode: f.boolean("plan_mode")?.unwrap_or(false),
        isolation: f.parsed("isolation")?,
        color,
        prompt,
        line,
        agent_type_line: f.line("agent_type"),
    })
}

/// One table's values, its keys checked against the ones it may have.
struct Fields<'a> {
    table: &'a Table,
    at: &'a dyn Fn(Option<std::ops::Range<usize>>) -> usize,
    path: &'a Path,
}

impl<'a> Fields<'a> {
    fn new(
        table: &'a Table,
        at: &'a dyn Fn(Option<std::ops::Range<usize>>) -> usize,
        path: &'a Path,
        known: &[&str],
    ) -> Result<Fields<'a>> {
        let fields = Fields { table, at, path };
        for (key, _) in table.iter() {
            if !known.contains(&key) {
                return Err(fields.error(
                    key,
                    format!("unknown key; the keys here are {}", known.join(", ")),
                ));
            }
        }
        Ok(fields)
    }

    /// The line of `key` (of the table, when it has no such key).
    fn line(&self, key: &str) -> usize {
        (self.at)(
            self.table
                .key(key)
                .and_then(|k| k.span())
                .or(self.table.span()),
        )
    }

    fn error(&self, key: &str, message: String) -> Error {
        bad(self.path, self.line(key), format!("{key}: {message}"))
    }

    fn value(&self, key: &str) -> Option<&'a Value> {
        self.table.get(key).and_then(Item::as_value)
    }

    fn string(&self, key: &str) -> Result<Option<String>> {
        match self.table.get(key) {
            None => Ok(None),
            Some(item) => match item.as_str() {
                Some(s) if s.trim().is_empty() => Err(self.error(
                    key,
                    "is empty; give a value or leave the key out".to_owned(),
                )),
                Some(s) => Ok(Some(s.to_owned())),
                None => Err(self.error(key, format!("must be a string, not {}", item.type_name()))),
            },
        }
    }

    fn boolean(&self, key: &str) -> Result<Option<bool>> {
        match self.value(key) {
            None if !self.table.contains_key(key) => Ok(None),
            Some(v) if v.as_bool().is_some() => Ok(v.as_bool()),
            _ => Err(self.error(key, "must be true or false".to_owned())),
        }
    }

    /// A string parsed by its spawn flag's own rule.
    fn parsed<T: FromStr>(&self, key: &str) -> Result<Option<T>>
    where
        T::Err: std::fmt::Display,
    {
        self.string(key)?
            .map(|s| s.parse::<T>().map_err(|e| self.error(key, e.to_string())))
            .transpose()
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn bad(path: &Path, line: usize, message: String) -> Error {
    Error::usage(format!(
        "failed to read team definition {}: line {line}: {message}",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_err(text: &str) -> String {
        let e = parse(text, Path::new("t.toml")).unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{e}");
        e.to_string()
    }

    #[test]
    fn the_example_parses_and_fills_its_goal() {
        let def = parse(EXAMPLE, Path::new("t.toml")).unwrap();
        let names: Vec<&str> = def.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["architect", "builder"]);
        assert!(def.members[0].plan_mode && !def.members[1].plan_mode);
        assert_eq!(
            def.goal("ship it"),
            "ship it\n\nKeep every change small and covered by a test.\n"
        );
    }

    #[test]
    fn errors_name_the_line_at_fault() {
        let cases = [
            (
                "[[member]]\nname = \"a\"\nmodle = \"x\"\n",
                "line 3: modle: unknown key",
            ),
            (
                "[[member]]\nname = \"Bad Name\"\n",
                "line 2: name: invalid agent name",
            ),
            (
                "[[member]]\nname = \"a\"\n\n[[member]]\nname = \"a\"\n",
                "line 5: name: 'a' is named twice (first on line 1)",
            ),
            (
                "[[member]]\nname = \"a\"\nprovider = \"acme\"\n",
                "line 3: provider: unknown model provider",
            ),
            (
                "[[member]]\nname = \"a\"\npermission_mode = \"yolo\"\n",
                "line 3: permission_mode:",
            ),
            (
                "[[member]]\nname = \"a\"\nplan_mode = \"yes\"\n",
                "line 3: plan_mode: must be true or false",
            ),
            (
                "[lead]\ngoal = \"no placeholder\"\n[[member]]\nname = \"a\"\n",
                "line 2: goal: the goal template has no {goal}",
            ),
            (
                "[[member]]\nname = \"a\"\n[other]\n",
                "line 3: unknown key 'other'",
            ),
            ("[[member]]\nname = \"a\n", "line 2: not valid TOML"),
            ("[lead]\n", "line 1: no members"),
            (
                "[[member]]\nagent_type = \"x\"\n",
                "line 1: this [[member]] has no name",
            ),
        ];
        for (text, want) in cases {
            let got = parse_err(text);
            assert!(
                got.starts_with("failed to read team definition t.toml: "),
                "{got}"
            );
            assert!(got.contains(want), "{text:?}: {got}");
            assert!(!got.contains('\n'), "{got}");
        }
    }
}
