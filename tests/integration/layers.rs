//! The layering rule between crates: CONTRIBUTING.md's `## Layers` block lists the
//! workspace's crates top layer first (`swarm/` is the binary at the root, every other name
//! a directory under `crates/`), and a crate depends only on crates listed below it. Cargo
//! already refuses a cycle; this keeps the order the picture shows, and the picture honest:
//! a crate missing from it, or a name in it with no crate, fails too.

use std::path::Path;

/// The names of the first ```text block after the `## Layers` heading, top layer first:
/// every line whose first token is `name/`; other lines are ignored.
fn parse_layers(doc: &str) -> Result<Vec<String>, String> {
    let mut lines = doc.lines().skip_while(|l| l.trim_end() != "## Layers");
    if lines.next().is_none() {
        return Err(
            "CONTRIBUTING.md has no `## Layers` heading: add one, followed by a \
            ```text block with a line `name/  what it is` per crate, top layer first"
                .into(),
        );
    }
    let mut lines = lines
        .take_while(|l| !l.starts_with("## "))
        .skip_while(|l| !l.trim_start().starts_with("```text"));
    if lines.next().is_none() {
        return Err("CONTRIBUTING.md's `## Layers` section has no ```text block".into());
    }
    let mut layers: Vec<String> = Vec::new();
    for line in lines.take_while(|l| !l.trim_start().starts_with("```")) {
        let Some(name) = line
            .split_whitespace()
            .next()
            .and_then(|t| t.strip_suffix('/'))
        else {
            continue;
        };
        let valid = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
        if name.is_empty() || !name.chars().all(valid) {
            continue;
        }
        if layers.iter().any(|l| l == name) {
            return Err(format!("`{name}/` is listed twice under `## Layers`"));
        }
        layers.push(name.to_string());
    }
    if layers.is_empty() {
        return Err("CONTRIBUTING.md's `## Layers` block names no `name/` lines".into());
    }
    Ok(layers)
}

/// The workspace crates a manifest depends on (`swarm-<name> = { path = … }` in any
/// dependency table), by `<name>`.
fn swarm_deps(manifest: &str) -> Vec<String> {
    manifest
        .lines()
        .filter_map(|l| l.trim().strip_prefix("swarm-"))
        .filter(|l| l.contains("path"))
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect()
}

/// Every problem with the crates' dependencies (`(name, Cargo.toml)`) against the order in
/// `doc`, one line each; empty when all is well.
fn check(doc: &str, crates: &[(String, String)]) -> Vec<String> {
    let order = match parse_layers(doc) {
        Ok(order) => order,
        Err(e) => return vec![e],
    };
    let rank = |m: &str| order.iter().position(|l| l == m);
    let mut problems = Vec::new();
    for (name, _) in crates.iter().filter(|(n, _)| rank(n).is_none()) {
        problems.push(format!(
            "not placed: crate {name} is missing from `## Layers`"
        ));
    }
    for l in order
        .iter()
        .filter(|l| !crates.iter().any(|(n, _)| n == *l))
    {
        problems.push(format!(
            "stale: `{l}/` is listed under `## Layers` but there is no such crate"
        ));
    }
    for (name, manifest) in crates {
        // A crate's dev-dependency on itself (its tests turning on a feature of its own,
        // as store-pg's `testing`) points nowhere.
        for dep in swarm_deps(manifest).into_iter().filter(|d| d != name) {
            if let (Some(from), Some(to)) = (rank(name), rank(&dep))
                && to <= from
            {
                problems.push(format!("upward: {name} -> {dep} ({name}'s Cargo.toml)"));
            }
        }
    }
    problems
}

/// The workspace's crates: the binary at the root (`swarm`) and each `crates/<name>`.
fn workspace_crates(root: &Path) -> Vec<(String, String)> {
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let mut crates = vec![("swarm".to_string(), read(&root.join("Cargo.toml")))];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        crates.push((name, read(&path.join("Cargo.toml"))));
    }
    crates.sort();
    crates
}

#[test]
fn crates_only_depend_on_the_layers_below_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("CONTRIBUTING.md")).unwrap();
    let problems = check(&doc, &workspace_crates(root));
    assert!(
        problems.is_empty(),
        "the crates break the layering in CONTRIBUTING.md:\n  {}",
        problems.join("\n  ")
    );
}

#[cfg(test)]
mod checker {
    use super::*;

    const DOC: &str = "# x\n\n## Layers\n\n```text\nswarm/   the binary\nteam/    a team\nstore/   files\n```\n\n## Rules\n";

    fn crates(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, m)| (n.to_string(), m.to_string()))
            .collect()
    }

    #[test]
    fn a_downward_dependency_passes() {
        let c = crates(&[
            (
                "swarm",
                "[dependencies]\nswarm-team = { path = \"crates/team\" }\n",
            ),
            ("team", "swarm-store = { path = \"../store\" }\n"),
            ("store", ""),
        ]);
        assert_eq!(check(DOC, &c), Vec::<String>::new());
    }

    #[test]
    fn an_upward_dependency_a_missing_and_a_stale_crate_are_named() {
        let c = crates(&[
            ("swarm", ""),
            (
                "store",
                "[dev-dependencies]\nswarm-team = { path = \"../team\" }\n",
            ),
            ("tmux", ""),
        ]);
        let problems = check(DOC, &c);
        assert!(problems.contains(&"upward: store -> team (store's Cargo.toml)".to_string()));
        assert!(
            problems
                .iter()
                .any(|p| p.contains("not placed: crate tmux"))
        );
        assert!(problems.iter().any(|p| p.starts_with("stale: `team/`")));
    }

    #[test]
    fn a_document_without_the_block_says_what_to_add() {
        let problems = check("# x\n", &crates(&[("swarm", "")]));
        assert!(
            problems[0].contains("no `## Layers` heading"),
            "{problems:?}"
        );
    }
}
