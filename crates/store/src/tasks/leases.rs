//! Advisory file leases: the files a task says it will touch, kept as project-relative
//! paths under `metadata.swarmFiles` (Claude Code keeps `metadata` and ignores keys it does
//! not know), who holds a lease on a file, and which files two open tasks both name. No I/O.
//!
//! A lease is only ever a warning: nothing here refuses a write.

use std::path::{Component, Path};

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::tasks::model::{Status, Task};
use swarm_util::error::Base as _;

/// The `metadata` key holding a task's files.
pub const FILES_KEY: &str = "swarmFiles";

/// `raw` as a project-relative path with `/` separators and `.`/`..` folded; an absolute
/// path or one leaving the project is refused, since a lease can only name project files.
pub fn normalize(raw: &str) -> Result<String> {
    let refuse = |why: &str| {
        Error::usage(format!(
            "file '{raw}' {why}; name files relative to the project root, like src/main.rs"
        ))
    };
    if Path::new(raw).is_absolute() {
        return Err(refuse("is absolute"));
    }
    let mut parts: Vec<String> = Vec::new();
    for c in Path::new(raw).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => {
                parts
                    .pop()
                    .ok_or_else(|| refuse("is outside the project"))?;
            }
            _ => return Err(refuse("is absolute")),
        }
    }
    if parts.is_empty() {
        return Err(refuse("names no file"));
    }
    Ok(parts.join("/"))
}

/// `files` normalised, each once, in the order given; an entry may hold several paths
/// separated by commas (`--files a.rs,b.rs`).
pub fn normalize_all<S: AsRef<str>>(files: &[S]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for f in files.iter().flat_map(|f| f.as_ref().split(',')) {
        let f = f.trim();
        if f.is_empty() {
            continue;
        }
        let n = normalize(f)?;
        if !out.contains(&n) {
            out.push(n);
        }
    }
    Ok(out)
}

/// `metadata` with `files` set under [`FILES_KEY`] (left as it was when there are none).
pub fn with_files(
    metadata: Option<Map<String, Value>>,
    files: &[String],
) -> Option<Map<String, Value>> {
    if files.is_empty() {
        return metadata;
    }
    let mut m = metadata.unwrap_or_default();
    m.insert(
        FILES_KEY.to_owned(),
        Value::Array(files.iter().cloned().map(Value::String).collect()),
    );
    Some(m)
}

impl Task {
    /// The project-relative files this task says it will touch.
    pub fn files(&self) -> Vec<String> {
        self.metadata
            .as_ref()
            .and_then(|m| m.get(FILES_KEY))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter_map(|f| normalize(f).ok())
            .collect()
    }

    /// Holds leases on its files: open, and someone works on it (owned, or in progress).
    pub fn holds_leases(&self) -> bool {
        match self.status {
            Status::InProgress => true,
            Status::Pending => self.owner.is_some(),
            Status::Completed => false,
        }
    }
}

/// The task leasing `file` (project-relative) to someone other than `agent`, if any.
pub fn leased_to_other<'a>(tasks: &'a [Task], file: &str, agent: &str) -> Option<&'a Task> {
    tasks.iter().find(|t| {
        t.holds_leases()
            && !t.is_internal()
            && t.owner.is_some()
            && !t.owned_by(agent)
            && t.files().iter().any(|f| f == file)
    })
}

/// A file two or more open tasks name.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Overlap {
    pub file: String,
    /// Task ids, in list order.
    pub tasks: Vec<String>,
    /// Their owners, `None` for a task nobody has taken.
    pub owners: Vec<Option<String>>,
}

impl Overlap {
    /// "src/x.rs: #3 (bob), #5 (unowned)".
    pub fn describe(&self) -> String {
        let who: Vec<String> = self
            .tasks
            .iter()
            .zip(&self.owners)
            .map(|(id, o)| format!("#{id} ({})", o.as_deref().unwrap_or("unowned")))
            .collect();
        format!("{}: {}", self.file, who.join(", "))
    }
}

/// Files named by more than one open task, sorted by file. Pending tasks nobody has taken
/// count too: the overlap is worth seeing before anyone starts.
pub fn overlaps(tasks: &[Task]) -> Vec<Overlap> {
    let mut by_file: std::collections::BTreeMap<String, Overlap> = Default::default();
    for t in tasks.iter().filter(|t| t.is_open() && !t.is_internal()) {
        for f in t.files() {
            let e = by_file.entry(f.clone()).or_insert_with(|| Overlap {
                file: f,
                tasks: Vec::new(),
                owners: Vec::new(),
            });
            if !e.tasks.contains(&t.id) {
                e.tasks.push(t.id.clone());
                e.owners.push(t.owner.clone());
            }
        }
    }
    by_file
        .into_values()
        .filter(|o| o.tasks.len() > 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, owner: Option<&str>, status: Status, files: &[&str]) -> Task {
        let files: Vec<String> = files.iter().map(|f| f.to_string()).collect();
        Task {
            id: id.into(),
            subject: "s".into(),
            description: String::new(),
            active_form: None,
            owner: owner.map(str::to_owned),
            status,
            blocks: vec![],
            blocked_by: vec![],
            metadata: with_files(None, &files),
            extra: Map::new(),
        }
    }

    #[test]
    fn paths_are_folded_and_outside_ones_refused() {
        assert_eq!(normalize("./src/../src/x.rs").unwrap(), "src/x.rs");
        assert!(normalize("/etc/passwd").is_err());
        assert!(normalize("../x.rs").is_err());
        assert!(normalize(".").is_err());
        assert_eq!(
            normalize_all(&["a.rs,b/c.rs", "a.rs", " d.rs "]).unwrap(),
            vec!["a.rs", "b/c.rs", "d.rs"]
        );
    }

    #[test]
    fn only_open_worked_on_tasks_of_others_lease() {
        let tasks = vec![
            task("1", Some("bob"), Status::Completed, &["a.rs"]),
            task("2", Some("me"), Status::InProgress, &["a.rs"]),
            task("3", None, Status::Pending, &["a.rs"]),
        ];
        assert!(leased_to_other(&tasks, "a.rs", "me").is_none());
        let tasks = [
            tasks,
            vec![task("4", Some("bob"), Status::Pending, &["a.rs"])],
        ]
        .concat();
        assert_eq!(leased_to_other(&tasks, "a.rs", "me").unwrap().id, "4");
        assert!(leased_to_other(&tasks, "b.rs", "me").is_none());
    }

    #[test]
    fn overlaps_list_files_named_by_two_open_tasks() {
        let tasks = vec![
            task("1", Some("bob"), Status::InProgress, &["a.rs", "b.rs"]),
            task("2", None, Status::Pending, &["b.rs"]),
            task("3", Some("amy"), Status::Completed, &["a.rs"]),
        ];
        let o = overlaps(&tasks);
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].describe(), "b.rs: #1 (bob), #2 (unowned)");
    }
}
