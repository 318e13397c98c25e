//! Text shown to a person in a terminal, when it came from someone else (a message, a
//! task, a request): control characters other than newline and tab are spelled out
//! (`\u{1b}`, `\0`, `\r`), so nobody's text can move the cursor, retitle the window, clear
//! the screen or ring the bell. JSON output keeps the exact text.

use std::borrow::Cow;

/// `text` with every control character but `\n` and `\t` written as an escape.
pub fn printable(text: &str) -> Cow<'_, str> {
    let shown = |c: char| !c.is_control() || c == '\n' || c == '\t';
    if text.chars().all(shown) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if shown(c) {
            out.push(c);
        } else {
            out.extend(c.escape_debug());
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_spelled_out_but_lines_and_tabs_stay() {
        assert!(matches!(printable("plain\ttext\nand é"), Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}[2J\u{7}\0\r\u{9b}31m\u{7f}\n\tb"),
            "a\\u{1b}[2J\\u{7}\\0\\r\\u{9b}31m\\u{7f}\n\tb"
        );
    }
}
