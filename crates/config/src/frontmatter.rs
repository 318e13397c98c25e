//! Markdown files with YAML frontmatter: the subset of YAML agent definitions use.
//!
//! A file starts with a `---` line; the frontmatter runs to the next `---` (or `...`) line
//! and the rest is the body. The frontmatter is a flat mapping of keys to scalars or lists
//! of scalars, which is all Claude Code's agent files hold:
//! - scalars: plain (`key: text`, continued on more-indented lines, folded with spaces),
//!   double-quoted (with `\n`, `\t`, `\"`, `\\`, `\uXXXX` escapes), single-quoted (`''` is
//!   a quote), and block scalars `|` and `>` with optional `-`/`+` chomping;
//! - lists: flow (`[a, "b c"]`) or block (`- a` lines under the key);
//! - nested mappings (for keys swarm does not use, like `hooks` or `mcpServers`) are
//!   recognised and skipped as [`Value::Other`], never an error;
//! - `# comments` and blank lines are ignored.
//!
//! Anything else (tabs in indentation, a duplicate key, an unterminated quote, a line that
//! is not `key: value`) is an error naming the line. Hand-written, because the format is
//! this small and the maintained YAML crates are either deprecated (serde_yaml) or far
//! larger than what they would parse here.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A scalar, as text (`5` and `true` too: the reader decides what they mean).
    Str(String),
    List(Vec<String>),
    /// `key:` with nothing under it, or `~`/`null`.
    Null,
    /// A nested mapping or a list of mappings: something swarm does not read.
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub key: String,
    pub value: Value,
    /// 1-based line number in the file.
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number in the file, when one is to blame.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

fn error(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line: Some(line),
        message: message.into(),
    }
}

/// A parsed file: its frontmatter fields in order, and the body after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub fields: Vec<Field>,
    pub body: String,
}

impl Document {
    pub fn get(&self, key: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.key == key)
    }
}

/// Splits and parses a whole file.
pub fn parse_document(text: &str) -> Result<Document, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.split('\n').map(|l| l.trim_end_matches('\r')).collect();
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return Err(ParseError {
            line: Some(1),
            message: "no frontmatter: the file must start with a line '---'".to_owned(),
        });
    }
    let end = lines
        .iter()
        .skip(1)
        .position(|l| matches!(l.trim_end(), "---" | "..."))
        .map(|i| i + 1)
        .ok_or_else(|| ParseError {
            line: None,
            message: "the frontmatter has no closing '---' line".to_owned(),
        })?;
    let fields = parse_mapping(&lines[1..end], 2)?;
    let body = lines[end + 1..].join("\n").trim().to_owned();
    Ok(Document { fields, body })
}

fn indent_of(line: &str, number: usize) -> Result<usize, ParseError> {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    if line[spaces..].starts_with('\t') {
        return Err(error(
            number,
            "a tab in the indentation; YAML indents with spaces",
        ));
    }
    Ok(spaces)
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// Parses the top-level mapping. `first_line` is the file line number of `lines[0]`.
fn parse_mapping(lines: &[&str], first_line: usize) -> Result<Vec<Field>, ParseError> {
    let mut fields: Vec<Field> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let number = first_line + i;
        if is_blank_or_comment(line) {
            i += 1;
            continue;
        }
        if indent_of(line, number)? != 0 {
            return Err(error(
                number,
                "unexpected indentation: a top-level line must be 'key: value'",
            ));
        }
        let (key, rest) = split_key(line).ok_or_else(|| {
            error(
                number,
                format!("expected 'key: value', found '{}'", line.trim()),
            )
        })?;
        if fields.iter().any(|f| f.key == key) {
            return Err(error(number, format!("duplicate key '{key}'")));
        }
        // The lines that belong to this key: everything more indented (or blank) after it.
        let mut j = i + 1;
        while j < lines.len() && (lines[j].trim().is_empty() || lines[j].starts_with([' ', '\t'])) {
            j += 1;
        }
        // A block list may also sit at the key's own indentation ("key:\n- a").
        if rest.is_empty() {
            while j < lines.len()
                && (lines[j].trim().is_empty()
                    || lines[j].starts_with("- ")
                    || lines[j].trim_end() == "-"
                    || lines[j].starts_with([' ', '\t']))
            {
                j += 1;
            }
        }
        let nested = &lines[i + 1..j];
        let value = parse_value(rest, nested, number)?;
        fields.push(Field {
            key: key.to_owned(),
            value,
            line: number,
        });
        i = j;
    }
    Ok(fields)
}

/// `key: rest` → (key, rest), for a key of letters, digits, `_` and `-` (or quoted).
fn split_key(line: &str) -> Option<(&str, &str)> {
    let (key, rest) = line.split_once(':')?;
    let key = key.trim();
    let key = key
        .strip_prefix('"')
        .and_then(|k| k.strip_suffix('"'))
        .or_else(|| key.strip_prefix('\'').and_then(|k| k.strip_suffix('\'')))
        .unwrap_or(key);
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return None;
    }
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some((key, rest.trim()))
}

fn parse_value(rest: &str, nested: &[&str], line: usize) -> Result<Value, ParseError> {
    let content: Vec<(usize, &str)> = nested
        .iter()
        .enumerate()
        .map(|(k, l)| (line + 1 + k, *l))
        .filter(|(_, l)| !is_blank_or_comment(l))
        .collect();
    if !rest.starts_with(['|', '>']) {
        for (no, l) in &content {
            indent_of(l, *no)?;
        }
    }
    if rest.is_empty() {
        let Some(&(first_no, first)) = content.first() else {
            return Ok(Value::Null);
        };
        let item = first.trim_start();
        if item.starts_with("- ") || item == "-" {
            let mut items = Vec::new();
            for (no, l) in &content {
                let t = l.trim_start();
                let Some(v) = t.strip_prefix("- ").or((t == "-").then_some("")) else {
                    return Err(error(
                        *no,
                        "expected a list item '- value' (lists here hold plain values)",
                    ));
                };
                let v = v.trim();
                if v.starts_with(['{', '[']) || split_key(v).is_some() && !is_quoted(v) {
                    return Ok(Value::Other);
                }
                items.push(scalar(v, *no)?);
            }
            return Ok(Value::List(items));
        }
        if split_key(item).is_some() {
            return Ok(Value::Other);
        }
        return Err(error(
            first_no,
            format!("expected a list item or a nested 'key: value', found '{item}'"),
        ));
    }
    if let Some(header) = rest.strip_prefix(['|', '>']) {
        let folded = rest.starts_with('>');
        return block_scalar(folded, header, nested, line).map(Value::Str);
    }
    if rest.starts_with('[') {
        if !content.is_empty() {
            return Err(error(
                content[0].0,
                "a flow list '[...]' must fit on its key's line",
            ));
        }
        return flow_list(rest, line).map(Value::List);
    }
    if rest.starts_with('{') {
        return Ok(Value::Other);
    }
    if is_quoted(rest) {
        if let Some(&(no, _)) = content.first() {
            return Err(error(
                no,
                "a quoted value must fit on its key's line (use | for text over several lines)",
            ));
        }
        return scalar(rest, line).map(Value::Str);
    }
    if matches!(rest, "~" | "null" | "Null" | "NULL") && content.is_empty() {
        return Ok(Value::Null);
    }
    // A plain scalar, folded over more-indented continuation lines.
    let mut text = plain(rest).to_owned();
    for (_, l) in &content {
        text.push(' ');
        text.push_str(plain(l.trim()));
    }
    Ok(Value::Str(text))
}

fn is_quoted(s: &str) -> bool {
    s.starts_with(['"', '\''])
}

/// A plain scalar without its trailing ` # comment`.
fn plain(s: &str) -> &str {
    match s.find(" #") {
        Some(i) => s[..i].trim_end(),
        None => s.trim(),
    }
}

/// One scalar on one line: quoted or plain.
fn scalar(s: &str, line: usize) -> Result<String, ParseError> {
    let (value, rest) = if let Some(inner) = s.strip_prefix('"') {
        double_quoted(inner, line)?
    } else if let Some(inner) = s.strip_prefix('\'') {
        single_quoted(inner, line)?
    } else {
        return Ok(plain(s).to_owned());
    };
    let rest = rest.trim();
    if !(rest.is_empty() || rest.starts_with('#')) {
        return Err(error(
            line,
            format!("unexpected text after a quoted value: '{rest}'"),
        ));
    }
    Ok(value)
}

/// The text of a double-quoted scalar (after its opening quote) and what follows it.
fn double_quoted(s: &str, line: usize) -> Result<(String, &str), ParseError> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, &s[i + 1..])),
            '\\' => {
                let (_, e) = chars
                    .next()
                    .ok_or_else(|| error(line, "unterminated double-quoted value"))?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    '"' | '\\' | '/' | ' ' => out.push(e),
                    'u' => {
                        let hex: String =
                            (0..4).filter_map(|_| chars.next().map(|p| p.1)).collect();
                        let c = u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or_else(|| error(line, format!("bad escape '\\u{hex}'")))?;
                        out.push(c);
                    }
                    other => return Err(error(line, format!("unknown escape '\\{other}'"))),
                }
            }
            c => out.push(c),
        }
    }
    Err(error(line, "unterminated double-quoted value"))
}

fn single_quoted(s: &str, line: usize) -> Result<(String, &str), ParseError> {
    let mut out = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().map(|p| p.1) == Some('\'') {
                chars.next();
                out.push('\'');
            } else {
                return Ok((out, &s[i + 1..]));
            }
        } else {
            out.push(c);
        }
    }
    Err(error(line, "unterminated single-quoted value"))
}

fn flow_list(s: &str, line: usize) -> Result<Vec<String>, ParseError> {
    let inner = s[1..].trim_end();
    let inner = plain_comment_free(inner);
    let inner = inner
        .strip_suffix(']')
        .ok_or_else(|| error(line, "a flow list '[...]' has no closing ']'"))?;
    let mut items = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let (item, after) = if let Some(q) = rest.strip_prefix('"') {
            double_quoted(q, line)?
        } else if let Some(q) = rest.strip_prefix('\'') {
            single_quoted(q, line)?
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            let item = rest[..end].trim();
            if item.starts_with(['[', '{']) {
                return Err(error(line, "nested lists are not supported here"));
            }
            (item.to_owned(), &rest[end..])
        };
        items.push(item);
        let after = after.trim_start();
        rest = match after.strip_prefix(',') {
            Some(r) => r.trim_start(),
            None if after.is_empty() => after,
            None => {
                return Err(error(
                    line,
                    format!("expected ',' or ']' in a flow list, found '{after}'"),
                ));
            }
        };
    }
    Ok(items)
}

/// A flow list line without a trailing comment after its `]`.
fn plain_comment_free(s: &str) -> &str {
    match s.rfind(']') {
        Some(i) if s[i + 1..].trim_start().starts_with('#') => &s[..=i],
        _ => s,
    }
}

fn block_scalar(
    folded: bool,
    header: &str,
    nested: &[&str],
    line: usize,
) -> Result<String, ParseError> {
    let header = plain(header);
    let chomp = match header {
        "" => ' ',
        "-" => '-',
        "+" => '+',
        other => {
            return Err(error(
                line,
                format!("unsupported block scalar header '{other}' (use |, |-, |+, >, >- or >+)"),
            ));
        }
    };
    let mut indent = None;
    let mut lines: Vec<&str> = Vec::new();
    for (k, l) in nested.iter().enumerate() {
        if l.trim().is_empty() {
            lines.push("");
            continue;
        }
        let n = indent_of(l, line + 1 + k)?;
        let want = *indent.get_or_insert(n);
        if n < want {
            return Err(error(
                line + 1 + k,
                "a line of a block scalar is less indented than its first line",
            ));
        }
        lines.push(&l[want..]);
    }
    let mut text = String::new();
    if folded {
        let mut prev_blank = true;
        for l in &lines {
            if l.is_empty() {
                text.push('\n');
                prev_blank = true;
            } else {
                if !prev_blank && !l.starts_with(' ') {
                    text.push(' ');
                } else if !prev_blank {
                    text.push('\n');
                }
                text.push_str(l);
                prev_blank = false;
            }
        }
        text.push('\n');
    } else {
        for l in &lines {
            text.push_str(l);
            text.push('\n');
        }
    }
    match chomp {
        '-' => Ok(text.trim_end_matches('\n').to_owned()),
        '+' => Ok(text),
        _ => Ok(format!("{}\n", text.trim_end_matches('\n'))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(yaml: &str) -> Vec<(String, Value)> {
        parse_document(&format!("---\n{yaml}\n---\nbody"))
            .unwrap()
            .fields
            .into_iter()
            .map(|f| (f.key, f.value))
            .collect()
    }

    fn s(v: &str) -> Value {
        Value::Str(v.to_owned())
    }

    fn list(v: &[&str]) -> Value {
        Value::List(v.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn scalars_of_every_kind() {
        let got = fields(
            "name: code-reviewer   # a comment\n\
             description: \"Reviews code.\\nThoroughly: \\\"really\\\" \\u00e9\"\n\
             model: 'sonnet''s'\n\
             maxTurns: 5\n\
             url: http://example.com/a#b\n\
             empty:\n\
             nothing: ~\n\
             long: one\n  two\n  three",
        );
        assert_eq!(
            got,
            vec![
                ("name".into(), s("code-reviewer")),
                (
                    "description".into(),
                    s("Reviews code.\nThoroughly: \"really\" é")
                ),
                ("model".into(), s("sonnet's")),
                ("maxTurns".into(), s("5")),
                ("url".into(), s("http://example.com/a#b")),
                ("empty".into(), Value::Null),
                ("nothing".into(), Value::Null),
                ("long".into(), s("one two three")),
            ]
        );
    }

    #[test]
    fn lists_flow_and_block() {
        let got = fields(
            "tools: [Read, \"Grep\", 'Glob']\n\
             disallowedTools:\n  - Bash\n  - \"Write\"  # no writes\n\
             other:\n- a\n- b\n\
             none: []",
        );
        assert_eq!(
            got,
            vec![
                ("tools".into(), list(&["Read", "Grep", "Glob"])),
                ("disallowedTools".into(), list(&["Bash", "Write"])),
                ("other".into(), list(&["a", "b"])),
                ("none".into(), list(&[])),
            ]
        );
    }

    #[test]
    fn block_scalars() {
        let got = fields(
            "a: |\n  line one\n    indented\n\n  after blank\nb: >-\n  folded\n  text\n\n  para\nc: |-\n  x\n",
        );
        assert_eq!(
            got,
            vec![
                ("a".into(), s("line one\n  indented\n\nafter blank\n")),
                ("b".into(), s("folded text\npara")),
                ("c".into(), s("x")),
            ]
        );
    }

    #[test]
    fn nested_mappings_are_skipped_not_errors() {
        let got = fields(
            "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks: []\nmcpServers: {a: 1}\nname: x",
        );
        assert_eq!(
            got,
            vec![
                ("hooks".into(), Value::Other),
                ("mcpServers".into(), Value::Other),
                ("name".into(), s("x")),
            ]
        );
    }

    #[test]
    fn body_and_delimiters() {
        let d =
            parse_document("\u{feff}---\r\nname: a\r\n...\r\n\r\nYou are A.\r\n\r\nBe brief.\r\n")
                .unwrap();
        assert_eq!(d.body, "You are A.\n\nBe brief.");
        assert_eq!(d.get("name").unwrap().line, 2);
    }

    #[test]
    fn errors_name_the_line() {
        let err = |text: &str| parse_document(text).unwrap_err().to_string();
        assert_eq!(
            err("name: a\n"),
            "line 1: no frontmatter: the file must start with a line '---'"
        );
        assert_eq!(
            err("---\nname: a\n"),
            "the frontmatter has no closing '---' line"
        );
        assert_eq!(
            err("---\nname: a\nname: b\n---\n"),
            "line 3: duplicate key 'name'"
        );
        assert_eq!(
            err("---\ndescription: \"open\n---\n"),
            "line 2: unterminated double-quoted value"
        );
        assert_eq!(
            err("---\njust words\n---\n"),
            "line 2: expected 'key: value', found 'just words'"
        );
        assert_eq!(
            err("---\ntools: [Read, Grep\n---\n"),
            "line 2: a flow list '[...]' has no closing ']'"
        );
        assert_eq!(
            err("---\n  name: a\n---\n"),
            "line 2: unexpected indentation: a top-level line must be 'key: value'"
        );
        assert!(err("---\ntools:\n\t- Read\n---\n").contains("line 3"));
        assert_eq!(
            err("---\nmodel: 'a' b\n---\n"),
            "line 2: unexpected text after a quoted value: 'b'"
        );
    }

    #[test]
    fn never_panics_on_arbitrary_text() {
        proptest::proptest!(|(text in "(---\n)?([a-z:\\[\\]\"' |>#\\-\n\t]{0,80})(\n---\n)?")| {
            let _ = parse_document(&text);
        });
    }
}
