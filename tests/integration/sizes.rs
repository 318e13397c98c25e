//! Functions fit on a screen: no function outside tests is longer than [`MAX_LINES`] lines,
//! from its `fn` line to its closing brace. Read from the source text as `circles.rs`
//! reads it (comments, literals and `#[cfg(test)]` items blanked, test-only modules left
//! out), over the binary's `src/`, every crate's `src/` and `bin/`.

use std::path::Path;

use crate::circles::{blank_tests, item_end, load, source_roots, strip, words};

/// The most lines a function may take.
const MAX_LINES: usize = 120;

/// Each function of `text` (a file's source) longer than `MAX_LINES`: its name, first line
/// and length in lines.
fn long_functions(text: &str) -> Vec<(String, usize, usize)> {
    let (code, _) = blank_tests(&strip(text));
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let all = words(&code);
    let mut long = Vec::new();
    for pair in all.windows(2) {
        let ((at, kind), (_, name)) = (pair[0], pair[1]);
        if kind != "fn" {
            continue;
        }
        let end = item_end(code.as_bytes(), at);
        if !code[at..end].ends_with('}') {
            continue; // a declaration without a body
        }
        let lines = line_of(end) - line_of(at) + 1;
        if lines > MAX_LINES {
            long.push((name.to_owned(), line_of(at), lines));
        }
    }
    long
}

/// The files of `src` that are not test-only modules (`#[cfg(test)] mod x;` in their
/// parent, or a name ending in `_test`).
fn sources(src: &Path) -> Vec<(String, String)> {
    let all = load(src);
    let test_only: Vec<String> = all
        .iter()
        .flat_map(|(rel, text)| {
            let dir = Path::new(rel).parent().unwrap_or(Path::new("")).to_owned();
            let (_, mods) = blank_tests(&strip(text));
            mods.into_iter()
                .map(move |m| dir.join(format!("{m}.rs")).display().to_string())
        })
        .collect();
    all.into_iter()
        .filter(|(rel, _)| !test_only.contains(rel) && !rel.ends_with("_test.rs"))
        .collect()
}

#[test]
fn no_function_outside_tests_is_longer_than_a_screen() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for src in source_roots(root).into_iter().chain([root.join("bin")]) {
        for (rel, text) in sources(&src) {
            for (name, line, lines) in long_functions(&text) {
                let at = src.join(&rel);
                let at = at.strip_prefix(root).unwrap().display().to_string();
                found.push(format!("{at}:{line}: fn {name} is {lines} lines"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "functions longer than {MAX_LINES} lines; split each into parts of one purpose:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_long_function_is_found_and_comments_literals_and_tests_do_not_count() {
    let body = "    let x = 1;\n".repeat(MAX_LINES);
    let long = format!("fn long() {{\n{body}}}\n");
    assert_eq!(
        long_functions(&long),
        [("long".to_owned(), 1, MAX_LINES + 2)]
    );
    let fits = format!("fn fits() {{\n{}}}\n", "    x();\n".repeat(MAX_LINES - 2));
    assert!(long_functions(&fits).is_empty());
    let braces = format!("fn a() {{ let s = \"}}\"; let c = '}}'; }}\n{long}");
    assert_eq!(
        long_functions(&braces)[0].0,
        "long",
        "literals hold no braces"
    );
    let tested = format!("#[cfg(test)]\nmod tests {{\n{long}}}\n");
    assert!(long_functions(&tested).is_empty(), "tests do not count");
}
