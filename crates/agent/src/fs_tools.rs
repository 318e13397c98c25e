//! The file tools: Read, Write, Edit, Glob, Grep.
//!
//! Paths are confined to the working directory: a path is resolved against it, `.` and `..`
//! are folded, and symlinks in the part that exists are followed, so neither `../x` nor a
//! symlink pointing out escapes. An allow rule naming the tool and a matching path
//! (`Read(/data/**)`) opens a path outside.
//!
//! Grep takes Claude Code's options, which are ripgrep's (`-A`/`-B`/`-C`, `-n`, `-i`,
//! `type`, `multiline`), and answers in ripgrep's format, so prompts written for Claude
//! Code carry over.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::tool_context::{ToolContext, ToolOutcome, required_str};
use swarm_config::tools::ToolName;

const READ_DEFAULT_LINES: usize = 2000;
const READ_MAX_LINE: usize = 2000;
const LIST_LIMIT: usize = 200;

/// `raw` made absolute against `cwd`, with `.` and `..` folded (no filesystem access).
pub fn absolute(cwd: &Path, raw: &str) -> PathBuf {
    let joined = if Path::new(raw).is_absolute() {
        PathBuf::from(raw)
    } else {
        cwd.join(raw)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Follows symlinks in the longest existing prefix of `path`.
fn real(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (
            existing.file_name().map(|n| n.to_owned()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut out = existing.canonicalize().unwrap_or(existing);
    for name in rest.into_iter().rev() {
        out.push(name);
    }
    out
}

/// Resolves a path a tool was given and checks it is inside the working directory or
/// allowed by a rule.
pub fn resolve(ctx: &ToolContext, tool: ToolName, raw: &str) -> Result<PathBuf, ToolOutcome> {
    if raw.is_empty() {
        return Err(ToolOutcome::err("empty path"));
    }
    let path = absolute(&ctx.cwd, raw);
    let real_path = real(&path);
    let cwd = real(&ctx.cwd);
    if real_path.starts_with(&cwd)
        || ctx
            .allow
            .iter()
            .any(|r| r.allows_path(tool.as_str(), &real_path, &ctx.cwd) && r.pattern.is_some())
    {
        Ok(path)
    } else {
        Err(ToolOutcome::err(format!(
            "{raw} is outside the working directory {}; only paths inside it are allowed (an allow rule such as {}({}/**) opens another directory)",
            ctx.cwd.display(),
            tool.as_str(),
            real_path.parent().unwrap_or(Path::new("/")).display()
        )))
    }
}

fn optional_usize(input: &Value, key: &str) -> Option<usize> {
    input
        .get(key)
        .and_then(Value::as_f64)
        .map(|v| v.max(0.0) as usize)
}

pub fn read(input: Value, ctx: &ToolContext) -> ToolOutcome {
    let run = || -> Result<ToolOutcome, ToolOutcome> {
        let path = resolve(ctx, ToolName::Read, required_str(&input, "file_path")?)?;
        let bytes = std::fs::read(&path)
            .map_err(|e| ToolOutcome::err(format!("failed to read {}: {e}", path.display())))?;
        let text = String::from_utf8_lossy(&bytes);
        let offset = optional_usize(&input, "offset").unwrap_or(1).max(1);
        let limit = optional_usize(&input, "limit").unwrap_or(READ_DEFAULT_LINES);
        let mut out = String::new();
        for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
            let line: String = if line.len() > READ_MAX_LINE {
                let cut = line.floor_char_boundary(READ_MAX_LINE);
                format!("{}… [line truncated]", &line[..cut])
            } else {
                line.to_owned()
            };
            out.push_str(&format!("{:>6}\t{line}\n", i + 1));
        }
        if out.is_empty() {
            out = if text.is_empty() {
                "(the file is empty)".to_owned()
            } else {
                format!(
                    "(no lines at offset {offset}; the file has {} lines)",
                    text.lines().count()
                )
            };
        }
        Ok(ToolOutcome::ok(out))
    };
    run().unwrap_or_else(|e| e)
}

pub fn write(input: Value, ctx: &ToolContext) -> ToolOutcome {
    let run = || -> Result<ToolOutcome, ToolOutcome> {
        let path = resolve(ctx, ToolName::Write, required_str(&input, "file_path")?)?;
        let content = required_str(&input, "content")?;
        let existed = path.exists();
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                ToolOutcome::err(format!("failed to create {}: {e}", parent.display()))
            })?;
        }
        std::fs::write(&path, content)
            .map_err(|e| ToolOutcome::err(format!("failed to write {}: {e}", path.display())))?;
        Ok(ToolOutcome::ok(format!(
            "{} {} ({} bytes)",
            if existed { "Updated" } else { "Created" },
            path.display(),
            content.len()
        )))
    };
    run().unwrap_or_else(|e| e)
}

pub fn edit(input: Value, ctx: &ToolContext) -> ToolOutcome {
    let run = || -> Result<ToolOutcome, ToolOutcome> {
        let path = resolve(ctx, ToolName::Edit, required_str(&input, "file_path")?)?;
        let old = required_str(&input, "old_string")?;
        let new = required_str(&input, "new_string")?;
        let all = input
            .get("replace_all")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if old.is_empty() {
            return Err(ToolOutcome::err(
                "old_string is empty; use Write to create a file",
            ));
        }
        if old == new {
            return Err(ToolOutcome::err("old_string and new_string are the same"));
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| ToolOutcome::err(format!("failed to read {}: {e}", path.display())))?;
        let count = text.matches(old).count();
        let updated = match (count, all) {
            (0, _) => {
                return Err(ToolOutcome::err(format!(
                    "old_string was not found in {}",
                    path.display()
                )));
            }
            (1, _) | (_, true) => text.replace(old, new),
            (n, false) => {
                return Err(ToolOutcome::err(format!(
                    "old_string occurs {n} times in {}; give more context to make it unique, or set replace_all",
                    path.display()
                )));
            }
        };
        std::fs::write(&path, updated)
            .map_err(|e| ToolOutcome::err(format!("failed to write {}: {e}", path.display())))?;
        Ok(ToolOutcome::ok(format!(
            "Edited {} ({count} replacement{})",
            path.display(),
            if count == 1 { "" } else { "s" }
        )))
    };
    run().unwrap_or_else(|e| e)
}

fn search_root(input: &Value, ctx: &ToolContext, tool: ToolName) -> Result<PathBuf, ToolOutcome> {
    match input.get("path").and_then(Value::as_str) {
        Some(p) if !p.is_empty() => resolve(ctx, tool, p),
        _ => Ok(ctx.cwd.clone()),
    }
}

fn walk(root: &Path) -> impl Iterator<Item = PathBuf> {
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.into_path())
}

fn display(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

pub fn glob(input: Value, ctx: &ToolContext) -> ToolOutcome {
    let run = || -> Result<ToolOutcome, ToolOutcome> {
        let pattern = required_str(&input, "pattern")?;
        let root = search_root(&input, ctx, ToolName::Glob)?;
        let matcher = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolOutcome::err(format!("invalid glob {pattern}: {e}")))?
            .compile_matcher();
        let mut found: Vec<String> = walk(&root)
            .filter(|p| p.strip_prefix(&root).is_ok_and(|rel| matcher.is_match(rel)))
            .map(|p| display(&p, &ctx.cwd))
            .collect();
        found.sort();
        let total = found.len();
        found.truncate(LIST_LIMIT);
        let mut out = found.join("\n");
        if total == 0 {
            out = format!("no files match {pattern}");
        } else if total > LIST_LIMIT {
            out.push_str(&format!("\n… and {} more", total - LIST_LIMIT));
        }
        Ok(ToolOutcome::ok(out))
    };
    run().unwrap_or_else(|e| e)
}

pub fn grep(input: Value, ctx: &ToolContext) -> ToolOutcome {
    let run = || -> Result<ToolOutcome, ToolOutcome> {
        let pattern = required_str(&input, "pattern")?;
        let root = search_root(&input, ctx, ToolName::Grep)?;
        let flag = |key: &str| input.get(key).and_then(Value::as_bool);
        let multiline = flag("multiline").unwrap_or(false);
        // As `rg -U --multiline-dotall`: `^` and `$` keep meaning line starts and ends.
        let re = regex::RegexBuilder::new(pattern)
            .case_insensitive(flag("-i").unwrap_or(false))
            .multi_line(multiline)
            .dot_matches_new_line(multiline)
            .build()
            .map_err(|e| ToolOutcome::err(format!("invalid regex {pattern}: {e}")))?;
        let filter = match input.get("glob").and_then(Value::as_str) {
            Some(g) => Some(
                globset::Glob::new(g)
                    .map_err(|e| ToolOutcome::err(format!("invalid glob {g}: {e}")))?
                    .compile_matcher(),
            ),
            None => None,
        };
        let types = match input.get("type").and_then(Value::as_str) {
            Some(t) => Some(
                ignore::types::TypesBuilder::new()
                    .add_defaults()
                    .select(t)
                    .build()
                    .map_err(|e| {
                        ToolOutcome::err(format!(
                            "invalid type {t}: {e}; use a ripgrep type such as rust, py, js or go, or a glob"
                        ))
                    })?,
            ),
            None => None,
        };
        let mode = input
            .get("output_mode")
            .and_then(Value::as_str)
            .unwrap_or("files_with_matches");
        let limit = optional_usize(&input, "head_limit").unwrap_or(LIST_LIMIT);
        // -A and -B beat -C, as in rg.
        let around = optional_usize(&input, "-C").unwrap_or(0);
        let before = optional_usize(&input, "-B").unwrap_or(around);
        let after = optional_usize(&input, "-A").unwrap_or(around);
        let numbers = flag("-n").unwrap_or(true);
        let mut files = if root.is_file() {
            vec![root.clone()]
        } else {
            walk(&root)
                .filter(|p| {
                    types
                        .as_ref()
                        .is_none_or(|t| t.matched(p, false).is_whitelist())
                })
                .collect()
        };
        // Sorted by file, not by output line, so that each file's lines stay in order.
        files.sort();
        let mut out = Vec::new();
        for path in files {
            if let Some(f) = &filter
                && !path.file_name().is_some_and(|n| f.is_match(n))
                && !path.strip_prefix(&root).is_ok_and(|rel| f.is_match(rel))
            {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue; // binary or unreadable
            };
            let hits = matching_lines(&re, &text, multiline);
            if hits.is_empty() {
                continue;
            }
            let shown = display(&path, &ctx.cwd);
            match mode {
                "content" => {
                    let lines: Vec<&str> = text.lines().collect();
                    push_content(&mut out, &shown, &lines, &hits, (before, after), numbers);
                }
                "count" => out.push(format!("{shown}:{}", hits.len())),
                _ => out.push(shown),
            }
        }
        let total = out.len();
        out.truncate(limit);
        let mut out = out.join("\n");
        if total == 0 {
            out = format!("no matches for {pattern}");
        } else if total > limit {
            out.push_str(&format!("\n… and {} more", total - limit));
        }
        Ok(ToolOutcome::ok(out))
    };
    run().unwrap_or_else(|e| e)
}

/// The 0-based numbers, ascending, of the lines a match touches. In multiline mode a
/// match can touch several.
fn matching_lines(re: &regex::Regex, text: &str, multiline: bool) -> Vec<usize> {
    if !multiline {
        return text
            .lines()
            .enumerate()
            .filter(|(_, l)| re.is_match(l))
            .map(|(i, _)| i)
            .collect();
    }
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |at: usize| starts.partition_point(|&s| s <= at) - 1;
    let mut hits = Vec::new();
    for m in re.find_iter(text) {
        let last = m.end().saturating_sub(1).max(m.start());
        hits.extend(line_of(m.start())..=line_of(last));
    }
    hits.dedup();
    // An empty match after a final newline is on no line.
    let count = text.lines().count();
    hits.retain(|&i| i < count);
    hits
}

/// Content lines in rg's format: `path:N:line` for a match, `path-N-line` for context
/// (without numbers `path:line`, `path-line`), and `--` between groups that do not touch.
fn push_content(
    out: &mut Vec<String>,
    shown: &str,
    lines: &[&str],
    hits: &[usize],
    (before, after): (usize, usize),
    numbers: bool,
) {
    let context = before > 0 || after > 0;
    let mut next: Option<usize> = None; // the first line of this file not yet shown
    for &hit in hits {
        let from = hit.saturating_sub(before).max(next.unwrap_or(0));
        let to = hit.saturating_add(after).min(lines.len() - 1);
        if from > to {
            continue;
        }
        if context && !out.is_empty() && next.is_none_or(|n| from > n) {
            out.push("--".to_owned());
        }
        for (i, line) in lines.iter().enumerate().take(to + 1).skip(from) {
            let mark = if hits.binary_search(&i).is_ok() {
                ':'
            } else {
                '-'
            };
            out.push(if numbers {
                format!("{shown}{mark}{}{mark}{line}", i + 1)
            } else {
                format!("{shown}{mark}{line}")
            });
        }
        next = Some(to + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use swarm_config::permissions::PermissionMode;
    use swarm_util::names::AgentName;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(
            dir.to_path_buf(),
            AgentName::new("bob").unwrap(),
            PermissionMode::BypassPermissions,
        )
    }

    #[test]
    fn write_read_edit_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let c = ctx(&cwd);
        assert!(
            !write(
                json!({"file_path": "a/b.txt", "content": "one\ntwo\ntwo\n"}),
                &c
            )
            .is_error
        );
        assert_eq!(
            read(json!({"file_path": "a/b.txt"}), &c).content,
            "     1\tone\n     2\ttwo\n     3\ttwo\n"
        );
        assert_eq!(
            read(json!({"file_path": "a/b.txt", "offset": 2, "limit": 1}), &c).content,
            "     2\ttwo\n"
        );
        let e = edit(
            json!({"file_path": "a/b.txt", "old_string": "two", "new_string": "2"}),
            &c,
        );
        assert!(
            e.is_error && e.content.contains("occurs 2 times"),
            "{}",
            e.content
        );
        assert!(!edit(json!({"file_path": "a/b.txt", "old_string": "two", "new_string": "2", "replace_all": true}), &c).is_error);
        assert_eq!(
            std::fs::read_to_string(cwd.join("a/b.txt")).unwrap(),
            "one\n2\n2\n"
        );
        assert!(
            edit(
                json!({"file_path": "a/b.txt", "old_string": "zzz", "new_string": "y"}),
                &c
            )
            .is_error
        );
        assert_eq!(glob(json!({"pattern": "**/*.txt"}), &c).content, "a/b.txt");
        assert_eq!(
            grep(json!({"pattern": "^2$", "output_mode": "count"}), &c).content,
            "a/b.txt:2"
        );
        assert!(read(json!({}), &c).is_error);
    }

    #[test]
    fn grep_context_line_numbers_types_and_multiline() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        std::fs::create_dir(cwd.join("src")).unwrap();
        std::fs::write(
            cwd.join("src/a.rs"),
            "fn one() {}\nlet x = 1;\nlet y = 2;\nfn two() {}\nlet z = 3;\n",
        )
        .unwrap();
        std::fs::write(cwd.join("notes.txt"), "fn one, then fn two\n").unwrap();
        let c = ctx(&cwd);
        let g = |input: Value| {
            let out = grep(input, &c);
            assert!(!out.is_error, "{}", out.content);
            out.content
        };
        // Context: `:` marks a match, `-` a context line, `--` a gap (ripgrep's format).
        assert_eq!(
            g(json!({"pattern": "^fn two", "output_mode": "content", "-C": 1})),
            "src/a.rs-3-let y = 2;\nsrc/a.rs:4:fn two() {}\nsrc/a.rs-5-let z = 3;"
        );
        assert_eq!(
            g(json!({"pattern": "^fn", "output_mode": "content", "-A": 1, "type": "rust"})),
            "src/a.rs:1:fn one() {}\nsrc/a.rs-2-let x = 1;\n--\nsrc/a.rs:4:fn two() {}\nsrc/a.rs-5-let z = 3;"
        );
        assert_eq!(
            g(json!({"pattern": "^fn two", "output_mode": "content", "-C": 2, "-B": 0})),
            "src/a.rs:4:fn two() {}\nsrc/a.rs-5-let z = 3;"
        );
        // Windows that touch merge into one group.
        assert_eq!(
            g(json!({"pattern": "^let [xy]", "output_mode": "content", "-B": 1})),
            "src/a.rs-1-fn one() {}\nsrc/a.rs:2:let x = 1;\nsrc/a.rs:3:let y = 2;"
        );
        assert_eq!(
            g(json!({"pattern": "two", "output_mode": "content", "-n": false})),
            "notes.txt:fn one, then fn two\nsrc/a.rs:fn two() {}"
        );
        assert_eq!(
            g(json!({"pattern": "two", "output_mode": "content", "-B": 1, "-n": false})),
            "notes.txt:fn one, then fn two\n--\nsrc/a.rs-let y = 2;\nsrc/a.rs:fn two() {}"
        );
        // File types are ripgrep's.
        assert_eq!(g(json!({"pattern": "one"})), "notes.txt\nsrc/a.rs");
        assert_eq!(g(json!({"pattern": "one", "type": "rust"})), "src/a.rs");
        assert_eq!(
            g(json!({"pattern": "one", "type": "py"})),
            "no matches for one"
        );
        let bad = grep(json!({"pattern": "one", "type": "nosuch"}), &c);
        assert!(
            bad.is_error && bad.content.contains("nosuch"),
            "{}",
            bad.content
        );
        // Multiline: a match may span lines, `.` crosses them, `^` is still a line start.
        let across = "x = 1;\\nlet y";
        assert_eq!(
            g(json!({"pattern": across, "output_mode": "content"})),
            "no matches for x = 1;\\nlet y"
        );
        assert_eq!(
            g(json!({"pattern": across, "output_mode": "content", "multiline": true})),
            "src/a.rs:2:let x = 1;\nsrc/a.rs:3:let y = 2;"
        );
        assert_eq!(
            g(json!({"pattern": "^fn one.*^fn two", "multiline": true})),
            "src/a.rs"
        );
        assert_eq!(
            g(json!({"pattern": "^let x.*^let y", "output_mode": "count", "multiline": true})),
            "src/a.rs:2"
        );
    }

    #[test]
    fn paths_outside_the_working_directory_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        let cwd = cwd.canonicalize().unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), cwd.join("link")).unwrap();
        let mut c = ctx(&cwd);
        for p in ["../secret", "/etc/passwd", "link", "sub/../../secret"] {
            let out = read(json!({"file_path": p}), &c);
            assert!(
                out.is_error && out.content.contains("outside the working directory"),
                "{p}: {}",
                out.content
            );
        }
        assert!(write(json!({"file_path": "../evil", "content": "x"}), &c).is_error);
        assert!(!dir.path().join("evil").exists());
        let outside = dir.path().canonicalize().unwrap();
        c.allow = vec![format!("Read({}/**)", outside.display()).parse().unwrap()];
        assert_eq!(
            read(json!({"file_path": "../secret"}), &c).content,
            "     1\ts\n"
        );
        assert!(
            write(json!({"file_path": "../evil", "content": "x"}), &c).is_error,
            "a Read rule must not open Write"
        );
    }
}
