//! The layering rule: `src/`'s top-level modules are one-way layers, listed top layer first
//! in CONTRIBUTING.md's `## Layers` block, and a module uses only the layers below it.
//! The checker reads that list, finds every reference from one top-level module to another
//! (`use crate::…`, inline `crate::…` paths, `super::` climbing out of the module) with
//! comments and string and char literals blanked out first, and reports upward edges,
//! modules missing from the list, listed layers that do not exist, and module cycles.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

/// One reference from a file of top-level module `from` to top-level module `to`.
struct Edge {
    from: String,
    to: String,
    file: String,
    line: usize,
}

/// The names of the first ```text block after the `## Layers` heading, top layer first:
/// every line whose first token is `name/`; other lines are ignored.
fn parse_layers(doc: &str) -> Result<Vec<String>, String> {
    let mut lines = doc.lines().skip_while(|l| l.trim_end() != "## Layers");
    if lines.next().is_none() {
        return Err(
            "CONTRIBUTING.md has no `## Layers` heading: add one, followed by a \
            ```text block with a line `name/  what it is` per top-level module of src/, \
            top layer first"
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
        let valid = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
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

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `src` with comments and string, byte-string and char literals turned into spaces;
/// newlines are kept so line numbers stay right. Lifetimes and labels are kept.
fn blank_comments_and_literals(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < c.len() {
        let start = i;
        let keep = if c[i] == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
            false
        } else if c[i] == '/' && at(i + 1) == '*' {
            let mut depth = 0; // block comments nest
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    (depth, i) = (depth + 1, i + 2);
                } else if c[i] == '*' && at(i + 1) == '/' {
                    (depth, i) = (depth - 1, i + 2);
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            false
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            false
        } else if c[i] == '\'' && at(i + 1) == '\\' {
            i += 3; // '\n', '\'', '\\', '\u{…}'
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
            false
        } else if c[i] == '\'' && at(i + 2) == '\'' {
            i += 3; // 'x', '"'
            false
        } else if is_ident(c[i]) {
            while i < c.len() && is_ident(c[i]) {
                i += 1;
            }
            let prefix: String = c[start..i].iter().collect();
            let hashes = c[i..].iter().take_while(|&&h| h == '#').count();
            if matches!(prefix.as_str(), "r" | "br" | "cr") && at(i + hashes) == '"' {
                i += hashes + 1; // a raw string ends at `"` and as many `#`
                while i < c.len() && !(c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#')) {
                    i += 1;
                }
                i += hashes + 1;
                false
            } else {
                true
            }
        } else {
            i += 1; // punctuation, whitespace, a lifetime's `'`
            true
        };
        let piece = &c[start..i.min(c.len())];
        if keep {
            out.extend(piece);
        } else {
            out.extend(piece.iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }));
        }
    }
    out
}

/// Identifiers, `::` and single punctuation characters, each with its line (from 1).
fn tokens(src: &str) -> Vec<(String, usize)> {
    let mut toks = Vec::new();
    for (n, line) in blank_comments_and_literals(src).lines().enumerate() {
        let c: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < c.len() {
            let start = i;
            if is_ident(c[i]) {
                while i < c.len() && is_ident(c[i]) {
                    i += 1;
                }
            } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
                i += 2;
            } else {
                i += 1;
                if c[start].is_whitespace() {
                    continue;
                }
            }
            toks.push((c[start..i].iter().collect(), n + 1));
        }
    }
    toks
}

/// The module path of a file relative to `src/`: `agent/tools/fs.rs` is `agent::tools::fs`,
/// `agent/tools/mod.rs` is `agent::tools`.
fn module_path(rel: &str) -> Vec<String> {
    let mut path: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if path.len() > 1 && path.last().is_some_and(|p| p == "mod") {
        path.pop();
    }
    path
}

/// The crate-root names a path names at `toks[k]`, the part after `crate::`: `a` in
/// `a::b`, and `a`, `b` in `{a::{x, y}, b}`.
fn roots_at(toks: &[(String, usize)], k: usize) -> Vec<(String, usize)> {
    let Some((first, line)) = toks.get(k) else {
        return Vec::new();
    };
    if first != "{" {
        return vec![(first.clone(), *line)];
    }
    let (mut roots, mut depth, mut expect) = (Vec::new(), 0, true);
    for (tok, line) in &toks[k..] {
        match tok.as_str() {
            "{" => depth += 1,
            "}" if depth == 1 => break,
            "}" => depth -= 1,
            "," if depth == 1 => expect = true,
            _ if depth == 1 && expect => {
                roots.push((tok.clone(), *line));
                expect = false;
            }
            _ => {}
        }
    }
    roots
}

/// Every crate-root name that the file `rel` (relative to `src/`) refers to outside its own
/// top-level module, with the line: `crate::` paths anywhere, and `super::` chains that
/// climb to the crate root (counted from the file's module and any inline `mod x { … }`).
fn references(rel: &str, src: &str) -> Vec<(String, usize)> {
    let toks = tokens(src);
    let tok = |k: usize| toks.get(k).map_or("", |t| t.0.as_str());
    let mut module = module_path(rel);
    let own = module[0].clone();
    let (mut depth, mut inline_mods, mut found) = (0, Vec::new(), Vec::new());
    for i in 0..toks.len() {
        match tok(i) {
            "{" => depth += 1,
            "}" => {
                if inline_mods.last() == Some(&depth) {
                    inline_mods.pop();
                    module.pop();
                }
                depth -= 1;
            }
            "mod" if tok(i + 2) == "{" => {
                module.push(tok(i + 1).to_string());
                inline_mods.push(depth + 1);
            }
            "crate" if tok(i + 1) == "::" => found.extend(roots_at(&toks, i + 2)),
            "super" if tok(i + 1) == "::" && (i == 0 || tok(i - 1) != "::") => {
                let (mut up, mut j) = (0, i);
                while tok(j) == "super" && tok(j + 1) == "::" {
                    (up, j) = (up + 1, j + 2);
                }
                if up == module.len() {
                    found.extend(roots_at(&toks, j)); // fewer stays inside `own`
                }
            }
            _ => {}
        }
    }
    found.retain(|(name, _)| *name != own);
    found
}

/// Every problem with the layering of `files` (paths relative to `src/`, and contents)
/// against the `## Layers` order in `doc`, one line each; empty when all is well.
fn check(doc: &str, files: &[(String, String)]) -> Vec<String> {
    let files: Vec<_> = files
        .iter()
        .filter(|(rel, _)| rel != "lib.rs" && rel != "main.rs")
        .collect();
    let modules: BTreeSet<String> = files
        .iter()
        .map(|(rel, _)| module_path(rel)[0].clone())
        .collect();
    let order = parse_layers(doc);
    let listed = order.as_deref().unwrap_or_default();
    let edges: Vec<Edge> = files
        .iter()
        .flat_map(|(rel, src)| {
            let from = module_path(rel)[0].clone();
            references(rel, src)
                .into_iter()
                .map(move |(to, line)| Edge {
                    from: from.clone(),
                    to,
                    file: format!("src/{rel}"),
                    line,
                })
        })
        .filter(|e| modules.contains(&e.to) || listed.contains(&e.to))
        .collect();
    let mut problems = Vec::new();
    match &order {
        Err(e) => problems.push(e.clone()),
        Ok(order) => {
            let rank = |m: &str| order.iter().position(|l| l == m);
            for m in modules.iter().filter(|m| rank(m).is_none()) {
                problems.push(format!("not placed: src/{m} is missing from `## Layers`"));
            }
            for l in order.iter().filter(|l| !modules.contains(*l)) {
                problems.push(format!(
                    "stale: `{l}/` is listed under `## Layers` but src/{l} does not exist"
                ));
            }
            for e in &edges {
                if let (Some(from), Some(to)) = (rank(&e.from), rank(&e.to))
                    && to <= from
                {
                    problems.push(format!(
                        "upward: {} -> {} ({}:{})",
                        e.from, e.to, e.file, e.line
                    ));
                }
            }
        }
    }
    problems.extend(cycles(&edges));
    problems
}

/// Each set of modules that reach each other, as its shortest cycle through its first module
/// with one place for each step.
fn cycles(edges: &[Edge]) -> Vec<String> {
    let mut graph: BTreeMap<&str, BTreeMap<&str, &Edge>> = BTreeMap::new();
    for e in edges {
        graph.entry(&e.from).or_default().entry(&e.to).or_insert(e);
    }
    let next = |m: &str| graph.get(m).into_iter().flat_map(|n| n.keys().copied());
    let reach: BTreeMap<&str, BTreeSet<&str>> = graph
        .keys()
        .map(|&m| {
            let (mut seen, mut stack) = (BTreeSet::new(), vec![m]);
            while let Some(n) = stack.pop() {
                stack.extend(next(n).filter(|&x| seen.insert(x)));
            }
            (m, seen)
        })
        .collect();
    let (mut done, mut out) = (BTreeSet::new(), Vec::new());
    for (&m, reached) in &reach {
        if done.contains(m) || !reached.contains(m) {
            continue;
        }
        let scc: BTreeSet<&str> = reached
            .iter()
            .copied()
            .filter(|n| reach.get(n).is_some_and(|r| r.contains(m)))
            .collect();
        done.extend(scc.iter().copied());
        let (mut prev, mut queue, mut last) = (BTreeMap::new(), VecDeque::from([m]), m);
        'bfs: while let Some(n) = queue.pop_front() {
            for x in next(n) {
                if x == m {
                    last = n;
                    break 'bfs;
                }
                if scc.contains(x) && !prev.contains_key(x) {
                    prev.insert(x, n);
                    queue.push_back(x);
                }
            }
        }
        let (mut path, mut n) = (vec![m, m], last);
        while n != m {
            path.insert(1, n);
            n = prev[n];
        }
        let mut text = format!("cycle: {}", path.join(" -> "));
        if scc.len() + 1 > path.len() {
            let all: Vec<_> = scc.iter().copied().collect();
            text += &format!(" (one of the loops between {})", all.join(", "));
        }
        for step in path.windows(2) {
            let e = graph[step[0]][step[1]];
            text += &format!("\n    {} -> {} ({}:{})", e.from, e.to, e.file, e.line);
        }
        out.push(text);
    }
    out
}

fn rust_files(dir: &Path, src: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, src, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(src).unwrap().components();
            let rel: Vec<_> = rel.map(|c| c.as_os_str().to_string_lossy()).collect();
            out.push((rel.join("/"), std::fs::read_to_string(&path).unwrap()));
        }
    }
}

#[test]
fn modules_only_use_the_layers_below_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc =
        std::fs::read_to_string(root.join("CONTRIBUTING.md")).expect("reading CONTRIBUTING.md");
    let mut files = Vec::new();
    rust_files(&root.join("src"), &root.join("src"), &mut files);
    let problems = check(&doc, &files);
    assert!(
        problems.is_empty(),
        "src/ does not follow the layers in CONTRIBUTING.md (`## Layers`, top layer first; a \
         module may use only the layers below it):\n{}\n",
        problems.join("\n")
    );
}

/// Where the process environment may be read: the one capture, and the front ends.
const ENV_READERS: [&str; 2] = ["util/environment.rs", "ui/"];

/// The places in `files` that read the process environment outside [`ENV_READERS`], as
/// `file:line`. Comments and strings do not count.
fn env_reads(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, src) in files {
        if ENV_READERS.iter().any(|allowed| rel.starts_with(allowed)) {
            continue;
        }
        let code = blank_comments_and_literals(src);
        for (i, line) in code.lines().enumerate() {
            let compact: String = line.split_whitespace().collect();
            if ["env::var(", "env::var_os(", "env::vars(", "env::vars_os("]
                .iter()
                .any(|call| compact.contains(call))
            {
                found.push(format!("src/{rel}:{}", i + 1));
            }
        }
    }
    found
}

#[test]
fn settings_are_read_from_the_environment_only_at_the_edge() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &root.join("src"), &mut files);
    let found = env_reads(&files);
    assert!(
        found.is_empty(),
        "the environment is read below the front end; take the value from the settings the \
         edge resolved (util::environment, config::settings) instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn checker_finds_environment_reads_outside_the_edge() {
    let files = |rel: &str, src: &str| vec![(rel.to_owned(), src.to_owned())];
    assert_eq!(
        env_reads(&files(
            "store/x.rs",
            "fn f() { let _ = std::env::var(\"A\"); }"
        )),
        ["src/store/x.rs:1"]
    );
    assert!(env_reads(&files("ui/cli/x.rs", "fn f() { std::env::var_os(\"A\"); }")).is_empty());
    assert!(env_reads(&files("team/x.rs", "// std::env::var(\"A\")\nfn f() {}")).is_empty());
}

const LAYERS: &str = "\
# Contributing

```text
not/      a block before the heading is not the order
```

## Layers

Top first; each uses only what is below it.

```text
ui/       the front ends: the clap CLI (one file per command group) and the dashboard
demo/     `swarm demo`: a scratch job, the scripted model, a real team
roles/    what runs in a pane: teammate, lead, solo agent

          ↓ uses
team/     a team in tmux: launch, window, status, supervision, shutdown, worktrees, team tools
tmux/     the tmux client
agent/    the model loop and the general tools, no teams, no tmux
Config/   not a module name
config/   project discovery, agent definitions, hooks, permissions, settings
store/    the on-disk layout: names, roster, mailboxes, tasks, approvals, agent state
llm/      the Messages API both ways: clients and the scripted model server
util/     errors, atomic writes, locks, JSON, clock, processes, file watching
```

```text
later/    a second block is not the order
```
";

/// What `check` says about these files (paths under `src/`) against these layers, top first.
fn problems(layers: &[&str], files: &[(&str, &str)]) -> Vec<String> {
    let lines: String = layers
        .iter()
        .map(|l| format!("{l}/  the {l} layer\n"))
        .collect();
    let files: Vec<_> = files
        .iter()
        .map(|(p, s)| (p.to_string(), s.to_string()))
        .collect();
    check(&format!("## Layers\n\n```text\n{lines}```\n"), &files)
}

#[test]
fn checker_reads_the_layer_order() {
    let want = "ui demo roles team tmux agent config store llm util";
    assert_eq!(
        parse_layers(LAYERS).unwrap(),
        want.split(' ').collect::<Vec<_>>()
    );
    let error = |doc: &str| parse_layers(doc).unwrap_err();
    assert!(error("# Contributing\n\n## Rules\n").contains("no `## Layers`"));
    assert!(error("## Layers\n\n## Rules\n```text\nui/\n```\n").contains("no ```text"));
    assert!(error("## Layers\n```text\nui/\nutil/\nui/\n```\n").contains("twice"));
}

#[test]
fn checker_reports_an_upward_import() {
    let fs = "//! Files.\n\nuse crate::team::tools;\n";
    let found = problems(
        &["team", "agent"],
        &[("agent/tools/fs.rs", fs), ("team.rs", "")],
    );
    assert_eq!(found, ["upward: agent -> team (src/agent/tools/fs.rs:3)"]);
}

#[test]
fn checker_reads_nested_and_multi_line_groups_and_inline_paths() {
    let layers = ["team", "store", "util"];
    let with = |x: &str| {
        problems(
            &layers,
            &[("store/x.rs", x), ("team.rs", ""), ("util.rs", "")],
        )
    };
    let nested = with("use crate::{util::{clock, json}, team::x};");
    assert_eq!(nested, ["upward: store -> team (src/store/x.rs:1)"]);
    let grouped = with(
        "pub use crate::{\n    util::{clock, json},\n    team::x,\n};\n\
         fn f() {\n    crate::team::roster::load();\n}\n",
    );
    let want = [
        "upward: store -> team (src/store/x.rs:3)",
        "upward: store -> team (src/store/x.rs:6)",
    ];
    assert_eq!(grouped, want);
}

#[test]
fn checker_ignores_comments_and_strings() {
    let src = r####"//! See crate::team::x.
/// Uses [`crate::team::x`].
// use crate::team::x;
/* crate::team /* nested */ crate::team */
fn f<'a>(s: &'a str) -> &'a str {
    let _ = ("crate::team::x", "\"crate::team", r"crate::team", r#"crate::team "x" "#);
    let (q, b, e) = ('"', b'"', '\'');
    crate::util::id(s) // crate::team
}
"####;
    assert_eq!(references("store.rs", src), [("util".to_string(), 8)]);
}

#[test]
fn checker_resolves_super_from_the_file_path() {
    let refs = |rel: &str, src: &str| {
        references(rel, src)
            .into_iter()
            .map(|r| r.0)
            .collect::<Vec<_>>()
    };
    assert!(refs("agent/tools/fs.rs", "use super::super::x;").is_empty()); // crate::agent::x
    assert_eq!(
        refs("agent/tools/fs.rs", "use super::super::super::x;"),
        ["x"]
    );
    assert_eq!(refs("agent/tools/mod.rs", "use super::super::x;"), ["x"]);
    assert_eq!(refs("agent.rs", "use super::{x::a, y};"), ["x", "y"]);
    assert!(refs("agent.rs", "mod tests {\n    use super::x;\n}\n").is_empty()); // crate::agent::x
    assert_eq!(refs("agent.rs", "mod tests {\n}\nuse super::x;\n"), ["x"]);
}

#[test]
fn checker_reports_a_cycle_with_its_path() {
    let files = [
        ("a.rs", "use crate::{b, c};"),
        ("b/mod.rs", "\nfn f() { crate::a::g() }"),
        ("c.rs", ""),
    ];
    let want = [
        "upward: b -> a (src/b/mod.rs:2)",
        "cycle: a -> b -> a\n    a -> b (src/a.rs:1)\n    b -> a (src/b/mod.rs:2)",
    ];
    assert_eq!(problems(&["a", "b", "c"], &files), want);
    let unordered = problems(&[], &files); // cycles are found without the order too
    assert_eq!(unordered.len(), 2, "{unordered:?}");
    assert_eq!(unordered[1], want[1]);
}

#[test]
fn checker_reports_unplaced_and_stale_layers() {
    let found = problems(&["a", "gone"], &[("a.rs", ""), ("new/x.rs", "")]);
    let want = [
        "not placed: src/new is missing from `## Layers`",
        "stale: `gone/` is listed under `## Layers` but src/gone does not exist",
    ];
    assert_eq!(found, want);
}

#[test]
fn checker_passes_a_clean_graph() {
    let files = [
        ("lib.rs", "pub mod ui; pub mod agent; pub mod util;"),
        (
            "ui/cli.rs",
            "use crate::{agent::engine, util::{clock, json}};\nuse super::dashboard;",
        ),
        ("ui/dashboard.rs", "use super::super::agent;"),
        (
            "agent/mod.rs",
            "pub use crate::util::clock;\nfn f() { crate::util::json::parse(); }",
        ),
        (
            "util.rs",
            "use crate::util::json; // crate::ui\nmod tests { use super::*; }",
        ),
    ];
    assert_eq!(
        problems(&["ui", "agent", "util"], &files),
        Vec::<String>::new()
    );
}
