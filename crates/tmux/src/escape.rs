//! Escaping for the three languages tmux reads: its argument parser ([`escape_arg`]), its
//! formats ([`escape_format`], and `sanitized` for free text read back through a format),
//! and its configuration language ([`config_quote`], for what goes in on `source-file -`).
//! Also `SEP`, the field separator of batched queries, and `shell_word`, which shows an
//! argument the way a shell reads it back (for printing a command line).
//!
//! Invariants: escaping never changes what tmux ends up with: an escaped argument or format
//! value reaches tmux's command as exactly the original bytes, and [`config_quote`] returns
//! `None` rather than a quoting tmux would expand. `SEP` is a control character tmux refuses
//! in titles and escapes in session names; `sanitized` replaces it (and newlines) in any
//! other free text, so a batched answer splits into the right fields.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// Field separator of batched queries: a control character tmux refuses in titles and
/// escapes in session names; free-text fields are rewritten by the format to exclude it.
pub(super) const SEP: char = '\x1f';

/// Escapes one argument for tmux's argument parser, which ends a command at an argument
/// ending in `;` (even after `--`) and turns a final `\;` into `;`: so a final `;` is sent
/// as `\;`, which tmux turns back into exactly the original bytes.
pub fn escape_arg(arg: &OsStr) -> OsString {
    let bytes = arg.as_bytes();
    match bytes.split_last() {
        Some((b';', head)) => {
            let mut out = Vec::with_capacity(bytes.len() + 1);
            out.extend_from_slice(head);
            out.extend_from_slice(b"\\;");
            OsString::from_vec(out)
        }
        _ => arg.to_owned(),
    }
}

/// Escapes a value that tmux expands as a format (`-c`, `-s`, `-n`, `-T`): `#` becomes `##`,
/// so `#(cmd)` and `#{var}` stay literal.
pub fn escape_format(value: &OsStr) -> OsString {
    let mut out = Vec::with_capacity(value.len());
    for &b in value.as_bytes() {
        if b == b'#' {
            out.push(b'#');
        }
        out.push(b);
    }
    OsString::from_vec(out)
}

/// A format that prints `var` with the separators of batched queries replaced by `_`.
pub(super) fn sanitized(var: &str) -> String {
    format!("#{{s/[{SEP}\n]/_/:{var}}}")
}

/// A value quoted for tmux's configuration language (what `source-file` reads): single
/// quotes keep everything literal; a value with a single quote goes in double quotes with
/// `\\`, `\"` and `\$` escaped. `None` for what cannot be quoted safely: control
/// characters, or a double-quoted value starting with `~` (tmux expands it even there).
pub fn config_quote(value: &str) -> Option<String> {
    if value.chars().any(char::is_control) {
        return None;
    }
    if !value.contains('\'') {
        return Some(format!("'{value}'"));
    }
    if value.starts_with('~') {
        return None;
    }
    Some(format!(
        "\"{}\"",
        value
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('$', "\\$")
    ))
}

/// One argument as a shell reads it back: quoted where needed, and with control
/// characters (the separator of batched queries) as bash's `$'\xNN'`, so they show.
pub(super) fn shell_word(arg: &str) -> String {
    if !arg.chars().any(char::is_control) {
        return shell_escape::escape(arg.into()).into_owned();
    }
    let mut out = String::from("$'");
    for c in arg.chars() {
        match c {
            '\\' | '\'' => {
                out.push('\\');
                out.push(c);
            }
            c if u32::from(c) < 0x80 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", u32::from(c)));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_show_control_characters() {
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("x\x1fy"), "$'x\\x1fy'");
        assert_eq!(shell_word("a\u{85}'"), "$'a\\u0085\\''");
    }

    #[test]
    fn trailing_semicolons_are_escaped_and_nothing_else_changes() {
        let cases = [
            ("x;", "x\\;"),
            (";", "\\;"),
            ("a\\;", "a\\\\;"),
            ("a;b", "a;b"),
            ("", ""),
            ("$(id) `x` 'q' \"d\"", "$(id) `x` 'q' \"d\""),
        ];
        for (input, want) in cases {
            assert_eq!(escape_arg(OsStr::new(input)), OsStr::new(want), "{input:?}");
        }
    }

    #[test]
    fn format_values_double_every_hash() {
        assert_eq!(
            escape_format(OsStr::new("/a/#(touch x)/#{pane_id}/##")),
            OsStr::new("/a/##(touch x)/##{pane_id}/####")
        );
    }
}
