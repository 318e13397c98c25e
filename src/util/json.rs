//! JSON exactly as JavaScript writes it, and a reader that accepts what JavaScript writes.
//!
//! Files are `JSON.stringify(v, null, 2)`: two-space indent, `": "`, no trailing newline;
//! protocol objects inside messages are compact `JSON.stringify(v)`. serde_json already
//! escapes like JavaScript (only `"`, `\` and control characters, short forms for
//! `\b \f \n \r \t`, lowercase `\u00xx` otherwise, non-ASCII raw, `/` not escaped); the tests
//! below pin that down. JavaScript may write a lone UTF-16 surrogate (`"\ud800"`), which
//! serde_json refuses; [`parse`] replaces those with U+FFFD rather than declaring the whole
//! file corrupt.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// `JSON.stringify(value, null, 2)`.
pub fn to_pretty<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    serde_json::to_vec_pretty(value).expect("serialising plain data cannot fail")
}

/// `JSON.stringify(value)`.
pub fn to_compact<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("serialising plain data cannot fail")
}

/// Parses JSON written by swarm or by Claude Code.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    match serde_json::from_slice(bytes) {
        Err(_) if has_surrogate_escape(bytes) => {
            serde_json::from_slice(&replace_lone_surrogates(bytes))
        }
        other => other,
    }
}

fn has_surrogate_escape(bytes: &[u8]) -> bool {
    bytes.windows(3).any(|w| {
        w[0] == b'u' && (w[1] | 0x20) == b'd' && matches!(w[2] | 0x20, b'8'..=b'9' | b'a'..=b'f')
    })
}

/// Rewrites `\uD800`-`\uDFFF` escapes that are not part of a valid pair to `\uFFFD`.
fn replace_lone_surrogates(bytes: &[u8]) -> Vec<u8> {
    fn hex4(b: &[u8]) -> Option<u16> {
        let s = std::str::from_utf8(b.get(..4)?).ok()?;
        u16::from_str_radix(s, 16).ok()
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 1 < bytes.len() {
            if bytes[i + 1] == b'u'
                && let Some(cu) = hex4(&bytes[i + 2..])
            {
                let is_high = (0xD800..0xDC00).contains(&cu);
                let is_low = (0xDC00..0xE000).contains(&cu);
                let next_low = bytes.get(i + 6..i + 8) == Some(b"\\u")
                    && hex4(&bytes[i + 8..]).is_some_and(|c| (0xDC00..0xE000).contains(&c));
                if is_high && next_low {
                    out.extend_from_slice(&bytes[i..i + 12]);
                    i += 12;
                    continue;
                }
                if is_high || is_low {
                    out.extend_from_slice(b"\\ufffd");
                    i += 6;
                    continue;
                }
            }
            out.extend_from_slice(&bytes[i..i + 2]);
            i += 2;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn pretty_matches_javascript() {
        let v = json!({"a": [], "b": {}, "c": [1, {"d": "x"}], "e": null});
        // JSON.stringify({a:[],b:{},c:[1,{d:"x"}],e:null}, null, 2)
        let js = "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": \"x\"\n    }\n  ],\n  \"e\": null\n}";
        assert_eq!(String::from_utf8(to_pretty(&v)).unwrap(), js);
    }

    #[test]
    fn escaping_matches_javascript() {
        let s = "q\"b\\s/\u{8}\u{c}\n\r\t\u{1}\u{1f}\u{7f}é\u{2028}😀";
        // JSON.stringify of the same string in node 20:
        let js = r#""q\"b\\s/\b\f\n\r\t\u0001\u001f"#.to_owned() + "\u{7f}é\u{2028}😀\"";
        assert_eq!(to_compact(s), js);
    }

    #[test]
    fn lone_surrogates_are_tolerated() {
        let v: Value = parse(br#"["a\ud800b", "\udc00", "\ud83d\ude00", "\\ud800"]"#).unwrap();
        assert_eq!(v, json!(["a\u{fffd}b", "\u{fffd}", "😀", "\\ud800"]));
    }
}
