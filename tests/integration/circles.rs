//! What crates cannot express: inside a crate, the modules of one folder must not use each
//! other in a circle. Cargo keeps the crates in order; this keeps each folder's files in
//! one too, so a file can be read knowing only what it points down to.
//!
//! Every `crate::`, `super::` and `self::` path in a file's code (before its
//! `#[cfg(test)]` part) is resolved to the module file it names; an edge joins two entries
//! of the same folder (a file, or a subfolder taken whole) when one's code names the
//! other. A circle among a folder's entries fails, naming its files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path inside a crate, e.g. `["mailbox", "send"]`.
type ModPath = Vec<String>;

/// Every module of the crate whose source root is `src`, by its path.
fn modules(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    let mut out = BTreeMap::new();
    walk(src, &mut Vec::new(), &mut out);
    out
}

fn walk(dir: &Path, prefix: &mut ModPath, out: &mut BTreeMap<ModPath, PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            prefix.push(name);
            walk(&path, prefix, out);
            prefix.pop();
        } else if let Some(stem) = name.strip_suffix(".rs") {
            let mut module = prefix.clone();
            if !matches!(stem, "mod" | "lib" | "main") {
                module.push(stem.to_string());
            }
            out.insert(module, path);
        }
    }
}

/// The module paths a file's code names, each as written after `crate::` (made absolute
/// for `super::` and `self::`); brace groups in `use` are expanded.
fn named_paths(code: &str, here: &ModPath) -> Vec<ModPath> {
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    for (start, _) in code.match_indices("crate::") {
        if code[..start].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue; // `swarm_store::` and the like
        }
        expand(&code[start + "crate::".len()..], Vec::new(), &mut out);
    }
    // A file `a/b.rs` is module `a::b`: its `super` is `a`, its `self` is `a::b`.
    let parent: ModPath = here[..here.len().saturating_sub(1)].to_vec();
    for (word, base) in [("super::", &parent), ("self::", here)] {
        for (start, _) in code.match_indices(word) {
            if code[..start].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            expand(&code[start + word.len()..], base.clone(), &mut out);
        }
    }
    out
}

/// Reads one path (or `{a, b::c}` group) from the start of `rest`, after `prefix`.
fn expand(rest: &str, prefix: ModPath, out: &mut Vec<ModPath>) {
    let rest = rest.trim_start();
    if let Some(group) = rest.strip_prefix('{') {
        let mut depth = 0;
        let mut item_start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    expand(&group[item_start..i], prefix.clone(), out);
                    return;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&group[item_start..i], prefix.clone(), out);
                    item_start = i + 1;
                }
                _ => {}
            }
        }
        return;
    }
    let mut path = prefix;
    let mut s = rest;
    loop {
        let end = s
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        if end == 0 {
            break;
        }
        path.push(s[..end].to_string());
        s = &s[end..];
        match s.strip_prefix("::") {
            Some(next) if next.starts_with('{') => return expand(next, path, out),
            Some(next) => s = next,
            None => break,
        }
    }
    out.push(path);
}

/// The deepest module a path names (its items stripped off).
fn resolve<'a>(path: &ModPath, modules: &'a BTreeMap<ModPath, PathBuf>) -> Option<&'a ModPath> {
    (1..=path.len())
        .rev()
        .find_map(|n| modules.get_key_value(&path[..n]).map(|(k, _)| k))
}

/// The circles among each folder's entries, as `folder: a -> b -> a` lines.
fn circles(src: &Path) -> Vec<String> {
    let modules = modules(src);
    // Edges between entries of one folder: (folder, from entry, to entry).
    let mut edges: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (here, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let is_mod_file = matches!(
            file.file_name().unwrap().to_str(),
            Some("mod.rs" | "lib.rs" | "main.rs")
        );
        if is_mod_file {
            continue; // a folder's mod.rs declares and re-exports its entries
        }
        for named in named_paths(code, here) {
            let Some(target) = resolve(&named, &modules) else {
                continue;
            };
            // The folder both sit in: their common prefix, when `here` is directly in it.
            let folder: ModPath = here[..here.len() - 1].to_vec();
            if target.len() <= folder.len() || target[..folder.len()] != folder[..] {
                continue;
            }
            let (from, to) = (&here[folder.len()], &target[folder.len()]);
            if from != to {
                edges
                    .entry(folder)
                    .or_default()
                    .entry(from.clone())
                    .or_default()
                    .insert(to.clone());
            }
        }
    }
    let mut found = Vec::new();
    for (folder, graph) in &edges {
        for cycle in find_cycles(graph) {
            found.push(format!("{}: {}", folder.join("/"), cycle.join(" -> ")));
        }
    }
    found
}

/// One circle per strongly connected group of more than one entry.
fn find_cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for m in graph.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    todo.push(m.clone());
                }
            }
        }
        seen
    };
    let mut reported: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for node in graph.keys() {
        if reported.contains(node) || !reach(node).contains(node) {
            continue;
        }
        let group: Vec<String> = reach(node)
            .into_iter()
            .filter(|m| reach(m).contains(node))
            .collect();
        reported.extend(group.iter().cloned());
        let mut cycle = group;
        cycle.push(cycle[0].clone());
        out.push(cycle);
    }
    out
}

/// Each crate's source root: the binary's `src/` and every `crates/<name>/src`.
fn source_roots(root: &Path) -> Vec<PathBuf> {
    let mut roots = vec![root.join("src")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        roots.push(entry.unwrap().path().join("src"));
    }
    roots.sort();
    roots
}

#[test]
fn no_folder_has_modules_that_use_each_other_in_a_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for src in source_roots(root) {
        let krate = src
            .parent()
            .unwrap()
            .strip_prefix(root)
            .unwrap()
            .display()
            .to_string();
        found.extend(
            circles(&src)
                .into_iter()
                .map(|c| format!("{krate}/src/{c}")),
        );
    }
    assert!(
        found.is_empty(),
        "modules in one folder use each other in a circle; move what both need into a \
         module they both use:\n  {}",
        found.join("\n  ")
    );
}

#[cfg(test)]
mod checker {
    use super::*;

    fn graph(edges: &[(&str, &str)]) -> BTreeMap<String, BTreeSet<String>> {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
        }
        g
    }

    #[test]
    fn a_circle_is_found_and_a_chain_is_not() {
        assert!(find_cycles(&graph(&[("a", "b"), ("b", "c")])).is_empty());
        assert_eq!(
            find_cycles(&graph(&[("a", "b"), ("b", "a"), ("b", "c")])),
            vec![vec!["a".to_string(), "b".into(), "a".into()]]
        );
    }

    #[test]
    fn paths_are_read_through_groups_and_super() {
        let here: ModPath = vec!["mailbox".into(), "send".into()];
        let got = named_paths(
            "use super::inbox::{ack, Version};\nuse crate::{files, tasks::{list::X}};\nfn f() { crate::lock::take(); }",
            &here,
        );
        for want in [
            vec!["mailbox", "inbox", "ack"],
            vec!["files"],
            vec!["tasks", "list", "X"],
            vec!["lock", "take"],
        ] {
            let want: ModPath = want.into_iter().map(String::from).collect();
            assert!(got.contains(&want), "{want:?} not in {got:?}");
        }
    }
}
