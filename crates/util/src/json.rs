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
use serde_json::Value;

/// `JSON.stringify(value, null, 2)`.
pub fn to_pretty<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    serde_json::to_vec_pretty(value).expect("serialising plain data cannot fail")
}

/// `JSON.stringify(value)`.
pub fn to_compact<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("serialising plain data cannot fail")
}

/// `JSON.stringify(value, null, 2)` of a rewrite of `old` (the file's previous bytes, if any):
/// keys keep the order `old` had them in, at every depth, so a file Claude Code wrote keeps
/// its order when swarm rewrites it. A key `old` lacks goes after the key that precedes it in
/// `value`'s own order; objects in arrays are matched by `name`, else by position.
pub fn to_pretty_keeping_order<T: Serialize + ?Sized>(value: &T, old: Option<&[u8]>) -> Vec<u8> {
    let old = old.and_then(|b| parse::<Value>(b).ok());
    match (old, serde_json::to_value(value)) {
        (Some(old), Ok(mut new)) => {
            keep_order(&mut new, &old);
            to_pretty(&new)
        }
        _ => to_pretty(value),
    }
}

fn keep_order(new: &mut Value, old: &Value) {
    match (new, old) {
        (Value::Object(new), Value::Object(old)) => {
            let own: Vec<String> = new.keys().cloned().collect();
            let mut order: Vec<String> = old
                .keys()
                .filter(|k| new.contains_key(*k))
                .cloned()
                .collect();
            for (i, key) in own.iter().enumerate() {
                if order.contains(key) {
                    continue;
                }
                let at = match i.checked_sub(1).map(|p| &own[p]) {
                    Some(prev) => order
                        .iter()
                        .position(|k| k == prev)
                        .map_or(order.len(), |p| p + 1),
                    None => 0,
                };
                order.insert(at, key.clone());
            }
            let mut taken = std::mem::take(new);
            for key in order {
                let mut v = taken
                    .remove(&key)
                    .expect("every key comes from the new object");
                if let Some(o) = old.get(&key) {
                    keep_order(&mut v, o);
                }
                new.insert(key, v);
            }
        }
        (Value::Array(new), Value::Array(old)) => {
            for (i, v) in new.iter_mut().enumerate() {
                let name = v.get("name").and_then(Value::as_str).map(str::to_owned);
                let matched = match name {
                    Some(n) => old
                        .iter()
                        .find(|o| o.get("name").and_then(Value::as_str) == Some(&n)),
                    None => old.get(i),
                };
                if let Some(o) = matched {
                    keep_order(v, o);
                }
            }
        }
        _ => {}
    }
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
    fn a_rewrite_keeps_the_order_of_keys_it_found() {
        let old = br#"{"b": 1, "z": [{"name": "x", "q": 1, "p": 2}], "a": 2}"#;
        let new = json!({"a": 3, "n": 0, "b": 4, "z": [{"name": "y", "p": 1, "q": 2}, {"name": "x", "p": 5, "q": 6}]});
        let out = String::from_utf8(to_pretty_keeping_order(&new, Some(old))).unwrap();
        let want = json!({"b": 4, "z": [{"name": "y", "p": 1, "q": 2}, {"name": "x", "q": 6, "p": 5}], "a": 3, "n": 0});
        assert_eq!(out, String::from_utf8(to_pretty(&want)).unwrap());
        let fresh = to_pretty_keeping_order(&new, None);
        assert_eq!(fresh, to_pretty(&new));
    }

    #[test]
    fn lone_surrogates_are_tolerated() {
        let v: Value = parse(br#"["a\ud800b", "\udc00", "\ud83d\ude00", "\\ud800"]"#).unwrap();
        assert_eq!(v, json!(["a\u{fffd}b", "\u{fffd}", "😀", "\\ud800"]));
    }
}
