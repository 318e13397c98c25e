//! Agent definitions: Claude Code's custom agent types.
//!
//! A definition is a Markdown file with YAML frontmatter (see [`crate::frontmatter`]) in
//! `<project>/.claude/agents/*.md` or `<user>/agents/*.md` (see [`crate::project`]):
//! `name` and `description` (required), `model`, `provider` and `base_url` (swarm's: the
//! API the teammate talks to, see [`Definition::provider`]), `tools`, `disallowedTools`
//! (each a comma-separated string or a list), `permissionMode`, `maxTurns`, `isolation`,
//! `initialPrompt`, `color`; the body is the agent's instructions, appended to its system
//! prompt as "Custom Agent Instructions". Other keys are Claude Code's and are ignored.
//!
//! Precedence: a project definition beats a user one of the same name, which beats a
//! built-in (`general-purpose`, `Explore`, `Plan`). A file that does not parse, or whose
//! field is wrong, is reported with its path and the field, and skipped: it never stops
//! the other definitions from loading.
//!
//! Who applies what: `swarm spawn` (and the lead's Agent tool) takes the model, provider,
//! base URL, isolation,
//! colour, initial prompt and permission mode into the teammate's command line; the
//! teammate loads its definition itself and applies instructions, tools and turn limit.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::frontmatter::{self, Value};
use crate::permissions::PermissionMode;
use crate::project::UserDirs;
use crate::tools::ToolName;
use swarm_llm::Provider;
use swarm_store::roster::PALETTE;
use swarm_util::error::{Error, Result};

/// Where a teammate works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// In the spawn's working directory, shared with everyone else.
    None,
    /// In its own git worktree.
    Worktree,
}

impl FromStr for Isolation {
    type Err = Error;

    fn from_str(s: &str) -> Result<Isolation> {
        match s {
            "worktree" => Ok(Isolation::Worktree),
            "none" => Ok(Isolation::None),
            other => Err(Error::usage(format!(
                "unknown isolation '{other}'; use worktree or none"
            ))),
        }
    }
}

/// The tools a teammate keeps whatever its definition says: without them it could not
/// report, finish its task, or leave plan mode.
pub const ESSENTIAL: [ToolName; 5] = [
    ToolName::SendMessage,
    ToolName::TaskGet,
    ToolName::TaskList,
    ToolName::TaskUpdate,
    ToolName::ExitPlanMode,
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    BuiltIn,
    Project(PathBuf),
    User(PathBuf),
}

impl Source {
    pub fn scope(&self) -> &'static str {
        match self {
            Source::BuiltIn => "built-in",
            Source::Project(_) => "project",
            Source::User(_) => "user",
        }
    }

    pub fn path(&self) -> Option<&Path> {
        match self {
            Source::BuiltIn => None,
            Source::Project(p) | Source::User(p) => Some(p),
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.path() {
            Some(p) => write!(f, "{} {}", self.scope(), p.display()),
            None => f.write_str(self.scope()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub name: String,
    pub description: String,
    pub model: Option<String>,
    /// The provider this agent's model runs on (`anthropic`, `openai`, `scripted`), when
    /// not the lead's; its key comes from the environment, never from here.
    pub provider: Option<Provider>,
    /// The provider's base URL, when not the environment's (`ANTHROPIC_BASE_URL`,
    /// `OPENAI_BASE_URL`) or the provider's own.
    pub base_url: Option<String>,
    /// `None`: every tool.
    pub tools: Option<Vec<String>>,
    pub disallowed_tools: Vec<String>,
    pub permission_mode: Option<PermissionMode>,
    pub max_turns: Option<u32>,
    pub isolation: Option<Isolation>,
    /// The host its teammates start on (one of `swarm host list`), when not this machine.
    pub host: Option<String>,
    pub initial_prompt: Option<String>,
    pub color: Option<String>,
    /// The instructions (the file's body).
    pub prompt: String,
    pub source: Source,
}

/// A definition file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub path: PathBuf,
    pub source: &'static str,
    /// The frontmatter field at fault, when one is.
    pub field: Option<String>,
    pub message: String,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(
                f,
                "{}: field '{field}': {}",
                self.path.display(),
                self.message
            ),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// Every definition in reach of one working directory.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// The definitions in force, one per name, built-ins first, then by name.
    pub active: Vec<Definition>,
    /// Definitions hidden by one of higher precedence with the same name.
    pub shadowed: Vec<Definition>,
    pub invalid: Vec<Invalid>,
}

impl Catalog {
    /// The definitions for an agent working in `cwd`.
    pub fn load(cwd: &Path, dirs: &UserDirs) -> Catalog {
        let project = dirs.project_dir(cwd).join(".claude").join("agents");
        let user = dirs.claude.as_ref().map(|d| d.join("agents"));
        Catalog::load_from(Some(&project), user.as_deref())
    }

    /// The definitions in these two directories (either may be missing) and the built-ins.
    pub fn load_from(project: Option<&Path>, user: Option<&Path>) -> Catalog {
        let mut catalog = Catalog::default();
        let mut all = builtins();
        // Lowest precedence first: each later one replaces an earlier one of its name.
        let same_dir = project.is_some() && project == user;
        let scopes = [
            user.map(|d| (d, false)),
            project.filter(|_| !same_dir).map(|d| (d, true)),
        ];
        for (dir, is_project) in scopes.into_iter().flatten() {
            let (defs, invalid) = load_dir(dir, is_project);
            catalog.invalid.extend(invalid);
            all.extend(defs);
        }
        for def in all {
            match catalog.active.iter().position(|d| d.name == def.name) {
                Some(i) => {
                    let old = std::mem::replace(&mut catalog.active[i], def);
                    catalog.shadowed.push(old);
                }
                None => catalog.active.push(def),
            }
        }
        catalog
    }

    /// The definition named `name`, or an error listing the ones there are.
    pub fn get(&self, name: &str) -> Result<&Definition> {
        self.active.iter().find(|d| d.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.active.iter().map(|d| d.name.as_str()).collect();
            Error::usage(format!(
                "unknown agent type '{name}'; available: {} (see `swarm agents list`)",
                names.join(", ")
            ))
        })
    }

    /// Tells the user, on stderr, about every file that was skipped.
    pub fn warn_invalid(&self) {
        use std::io::Write;
        for bad in &self.invalid {
            let _ = writeln!(
                std::io::stderr(),
                "swarm: warning: skipped agent definition {bad}"
            );
            // Into a teammate's log too (stderr is its pane); info, so a command's own
            // stderr does not show it twice.
            tracing::info!("skipped agent definition {bad}");
        }
    }
}

fn builtins() -> Vec<Definition> {
    let read_only = Some(vec![
        "Read".to_owned(),
        "Glob".to_owned(),
        "Grep".to_owned(),
    ]);
    let def =
        |name: &str, description: &str, tools: Option<Vec<String>>, prompt: &str| Definition {
            name: name.to_owned(),
            description: description.to_owned(),
            model: None,
            provider: None,
            base_url: None,
            tools,
            disallowed_tools: Vec::new(),
            permission_mode: None,
            max_turns: None,
            isolation: None,
            host: None,
            initial_prompt: None,
            color: None,
            prompt: prompt.to_owned(),
            source: Source::BuiltIn,
        };
    vec![
        def(
            "general-purpose",
            "General-purpose agent for researching questions, searching code and carrying out multi-step tasks, with every tool.",
            None,
            "",
        ),
        def(
            "Explore",
            "Read-only agent for exploring a codebase: finds files, searches code and answers questions about it.",
            read_only.clone(),
            "You are a read-only exploration agent. Search and read files to answer what you are asked; \
             do not create, change or delete any file. Report what you found with file paths and line numbers.",
        ),
        def(
            "Plan",
            "Read-only software architect: explores the code and returns a step-by-step implementation plan.",
            read_only,
            "You are a software architect. Explore the code with read-only tools and produce a concrete, \
             step-by-step implementation plan: the files to change, how, in what order, and how to check the \
             result. Do not change any file.",
        ),
    ]
}

fn load_dir(dir: &Path, is_project: bool) -> (Vec<Definition>, Vec<Invalid>) {
    let scope = if is_project { "project" } else { "user" };
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            return (
                Vec::new(),
                vec![Invalid {
                    path: dir.to_path_buf(),
                    source: scope,
                    field: None,
                    message: format!("failed to read the directory: {e}"),
                }],
            );
        }
    };
    paths.sort();
    let mut defs: Vec<Definition> = Vec::new();
    let mut invalid = Vec::new();
    for path in paths {
        let source = if is_project {
            Source::Project(path.clone())
        } else {
            Source::User(path.clone())
        };
        match parse_file(&path, source) {
            Ok(def) => {
                if let Some(first) = defs.iter().find(|d| d.name == def.name) {
                    invalid.push(Invalid {
                        path,
                        source: scope,
                        field: Some("name".to_owned()),
                        message: format!(
                            "'{}' is already defined by {}",
                            def.name,
                            first.source.path().unwrap_or(Path::new("?")).display()
                        ),
                    });
                } else {
                    defs.push(def);
                }
            }
            Err((field, message)) => invalid.push(Invalid {
                path,
                source: scope,
                field,
                message,
            }),
        }
    }
    (defs, invalid)
}

type FieldError = (Option<String>, String);

fn parse_file(path: &Path, source: Source) -> Result<Definition, FieldError> {
    let text = match swarm_util::bounded::config_file(path) {
        Ok(Some(text)) => text,
        Ok(None) => return Err((None, "it is gone".to_owned())),
        Err(e) => return Err((None, e.to_string())),
    };
    parse(&text, source)
}

/// Parses one definition file's text.
pub fn parse(text: &str, source: Source) -> Result<Definition, FieldError> {
    let doc = frontmatter::parse_document(text).map_err(|e| (None, e.to_string()))?;
    let bad = |key: &str, message: String| (Some(key.to_owned()), message);
    let string = |key: &str| -> Result<Option<String>, FieldError> {
        match doc.get(key).map(|f| &f.value) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Str(s)) => Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty())),
            Some(Value::List(_) | Value::Other) => Err(bad(
                key,
                "must be a single value, not a list or a mapping".to_owned(),
            )),
        }
    };
    let tool_list = |key: &str| -> Result<Option<Vec<String>>, FieldError> {
        let items: Vec<String> = match doc.get(key).map(|f| &f.value) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Str(s)) => s.split(',').map(str::to_owned).collect(),
            Some(Value::List(l)) => l.clone(),
            Some(Value::Other) => {
                return Err(bad(
                    key,
                    "must be a comma-separated string or a list of tool names".to_owned(),
                ));
            }
        };
        let items: Vec<String> = items
            .into_iter()
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect();
        Ok(Some(items))
    };
    let name = string("name")?.ok_or_else(|| bad("name", "is required".to_owned()))?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        || name.starts_with(['-', '_'])
        || name.len() > 64
    {
        return Err(bad(
            "name",
            format!(
                "'{name}' is not a valid agent type: use letters, digits, '-' and '_' (at most 64)"
            ),
        ));
    }
    let description =
        string("description")?.ok_or_else(|| bad("description", "is required".to_owned()))?;
    let permission_mode = string("permissionMode")?
        .map(|m| m.parse::<PermissionMode>())
        .transpose()
        .map_err(|e| bad("permissionMode", e.to_string()))?;
    let max_turns = string("maxTurns")?
        .map(|n| match n.parse::<u32>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(bad(
                "maxTurns",
                format!("'{n}' is not a positive whole number"),
            )),
        })
        .transpose()?;
    let isolation = string("isolation")?
        .map(|i| i.parse::<Isolation>())
        .transpose()
        .map_err(|e| bad("isolation", e.to_string()))?;
    let provider = string("provider")?
        .map(|p| p.parse::<Provider>())
        .transpose()
        .map_err(|e| bad("provider", e.to_string()))?;
    let color = string("color")?;
    if let Some(c) = &color
        && !PALETTE.contains(&c.as_str())
    {
        return Err(bad(
            "color",
            format!("unknown colour '{c}'; use one of: {}", PALETTE.join(", ")),
        ));
    }
    Ok(Definition {
        name,
        description,
        model: string("model")?,
        provider,
        base_url: string("base_url")?,
        tools: tool_list("tools")?,
        disallowed_tools: tool_list("disallowedTools")?.unwrap_or_default(),
        permission_mode,
        max_turns,
        isolation,
        host: string("host")?,
        initial_prompt: string("initialPrompt")?,
        color,
        prompt: doc.body,
        source,
    })
}

/// The tool name of an entry like `Bash(git log:*)`.
fn tool_name(entry: &str) -> &str {
    entry.split('(').next().unwrap_or(entry).trim()
}

impl Definition {
    /// The tools out of `base` this agent gets, in `base`'s order, and the names it lists
    /// that swarm has no tool for (for a warning).
    pub fn tool_set(&self, base: &[ToolName]) -> (Vec<ToolName>, Vec<String>) {
        let mut unknown = Vec::new();
        let mut names = |list: &[String]| -> Vec<ToolName> {
            list.iter()
                .filter_map(|entry| {
                    let name = tool_name(entry);
                    let found = ToolName::parse(name);
                    if found.is_none() && name != "*" {
                        unknown.push(name.to_owned());
                    }
                    found
                })
                .collect()
        };
        let allowed = match &self.tools {
            Some(list) if !list.iter().any(|t| t == "*") => Some(names(list)),
            _ => None,
        };
        let denied = names(&self.disallowed_tools);
        let tools = base
            .iter()
            .copied()
            .filter(|t| {
                ESSENTIAL.contains(t)
                    || (allowed.as_ref().is_none_or(|a| a.contains(t)) && !denied.contains(t))
            })
            .collect();
        unknown.dedup();
        (tools, unknown)
    }

    /// The instructions for the system prompt, if any.
    pub fn instructions(&self) -> Option<&str> {
        Some(self.prompt.as_str()).filter(|p| !p.trim().is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, file: &str, text: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(file);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn every_field_is_read() {
        let def = parse(
            "---\nname: reviewer\ndescription: Reviews code\nmodel: opus\ntools: Read, Grep, Bash(git diff:*)\n\
             disallowedTools: [Write]\npermissionMode: acceptEdits\nmaxTurns: 7\nisolation: worktree\n\
             initialPrompt: Review the diff\ncolor: green\nprovider: openai\nbase_url: http://127.0.0.1:8080/v1\nhooks:\n  Stop: []\n---\n\nYou review code.\n",
            Source::BuiltIn,
        )
        .unwrap();
        assert_eq!(def.name, "reviewer");
        assert_eq!(def.model.as_deref(), Some("opus"));
        assert_eq!(def.provider, Some(Provider::OpenAi));
        assert_eq!(def.base_url.as_deref(), Some("http://127.0.0.1:8080/v1"));
        assert_eq!(
            def.tools,
            Some(vec![
                "Read".into(),
                "Grep".into(),
                "Bash(git diff:*)".into()
            ])
        );
        assert_eq!(def.disallowed_tools, vec!["Write".to_owned()]);
        assert_eq!(def.permission_mode, Some(PermissionMode::AcceptEdits));
        assert_eq!(def.max_turns, Some(7));
        assert_eq!(def.isolation, Some(Isolation::Worktree));
        assert_eq!(def.initial_prompt.as_deref(), Some("Review the diff"));
        assert_eq!(def.color.as_deref(), Some("green"));
        assert_eq!(def.prompt, "You review code.");
    }

    #[test]
    fn bad_fields_are_named() {
        let field = |fm: &str| {
            parse(&format!("---\n{fm}\n---\nbody"), Source::BuiltIn)
                .unwrap_err()
                .0
        };
        let base = "name: a\ndescription: d";
        assert_eq!(field("description: d"), Some("name".into()));
        assert_eq!(field("name: a"), Some("description".into()));
        assert_eq!(field("name: a b\ndescription: d"), Some("name".into()));
        for (key, value) in [
            ("permissionMode", "yolo"),
            ("maxTurns", "0"),
            ("maxTurns", "many"),
            ("isolation", "container"),
            ("color", "mauve"),
            ("model", "[a, b]"),
            ("provider", "claude"),
            ("base_url", "[a]"),
            ("tools", "{a: 1}"),
        ] {
            assert_eq!(
                field(&format!("{base}\n{key}: {value}")),
                Some(key.into()),
                "{key}: {value}"
            );
        }
        assert_eq!(field("name: [a"), None, "a syntax error names no field");
    }

    #[test]
    fn tools_restrict_and_deny_but_keep_the_essentials() {
        let mut def = builtins().remove(1); // Explore
        let (tools, unknown) = def.tool_set(&ToolName::ALL);
        assert_eq!(
            tools,
            [
                ToolName::Read,
                ToolName::Glob,
                ToolName::Grep,
                ToolName::SendMessage,
                ToolName::TaskGet,
                ToolName::TaskList,
                ToolName::TaskUpdate,
                ToolName::ExitPlanMode
            ]
        );
        assert!(unknown.is_empty());
        def.tools = None;
        def.disallowed_tools = vec!["Bash".into(), "WebFetch".into(), "SendMessage".into()];
        let (tools, unknown) = def.tool_set(&ToolName::ALL);
        assert!(!tools.contains(&ToolName::Bash) && tools.contains(&ToolName::Write));
        assert!(tools.contains(&ToolName::SendMessage), "essential");
        assert_eq!(unknown, vec!["WebFetch".to_owned()]);
    }

    #[test]
    fn project_beats_user_beats_builtin_and_broken_files_are_skipped() {
        let t = tempfile::tempdir().unwrap();
        let (project, user) = (t.path().join("p"), t.path().join("u"));
        write(
            &user,
            "a.md",
            "---\nname: shared\ndescription: user's\n---\nU",
        );
        write(
            &user,
            "b.md",
            "---\nname: mine\ndescription: only mine\n---\n",
        );
        write(
            &user,
            "c.md",
            "---\nname: Explore\ndescription: my explore\n---\n",
        );
        write(
            &project,
            "a.md",
            "---\nname: shared\ndescription: project's\n---\nP",
        );
        let broken = write(
            &project,
            "broken.md",
            "---\nname: x\ndescription: d\nmaxTurns: -1\n---\n",
        );
        write(&project, "notes.txt", "not a definition");
        let c = Catalog::load_from(Some(&project), Some(&user));
        let get = |n: &str| c.get(n).unwrap();
        assert_eq!(get("shared").description, "project's");
        assert_eq!(get("shared").source.scope(), "project");
        assert_eq!(get("mine").source.scope(), "user");
        assert_eq!(get("Explore").description, "my explore");
        assert_eq!(get("Plan").source, Source::BuiltIn);
        assert_eq!(c.shadowed.len(), 2);
        assert_eq!(c.invalid.len(), 1);
        assert_eq!(c.invalid[0].path, broken);
        assert_eq!(c.invalid[0].field.as_deref(), Some("maxTurns"));
        let err = c.get("x").unwrap_err().to_string();
        assert!(
            err.starts_with("unknown agent type 'x'; available: general-purpose, Explore, Plan"),
            "{err}"
        );
    }

    #[test]
    fn a_definition_over_the_size_limit_is_skipped_naming_it() {
        let t = tempfile::tempdir().unwrap();
        let body = "x".repeat(2 << 20);
        let file = write(
            t.path(),
            "big.md",
            &format!("---\nname: big\ndescription: too big\n---\n{body}"),
        );
        let c = Catalog::load_from(Some(t.path()), None);
        assert!(c.active.iter().all(|d| d.name != "big"));
        assert_eq!(c.invalid.len(), 1, "{:?}", c.invalid);
        let said = c.invalid[0].to_string();
        assert!(
            said.contains(&file.display().to_string()) && said.contains("over the 1 MiB limit"),
            "{said}"
        );
    }
}
