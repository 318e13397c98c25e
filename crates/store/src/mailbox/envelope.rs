//! A message as it sits in an inbox: Claude Code's envelope (both generations of it), the
//! key that acknowledges it, and the checks a message passes before it is sent.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::protocol::Protocol;
use swarm_util::clock;
use swarm_util::error::Base as _;

/// The largest message text accepted.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub from: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<bool>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(rename = "msgV", default, skip_serializing_if = "Option::is_none")]
    pub msg_v: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg_id: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Envelope {
    /// A new message, stamped now, in the Claude Code 2.1.328 shape.
    pub fn new(from: &str, text: impl Into<String>) -> Envelope {
        Envelope {
            from: from.to_owned(),
            text: text.into(),
            summary: None,
            timestamp: clock::now_iso(),
            color: None,
            read: Some(false),
            kind: Some("message".to_owned()),
            msg_v: Some(1),
            msg_id: Some(uuid::Uuid::now_v7().to_string()),
            extra: Map::new(),
        }
    }

    pub fn with_summary(mut self, summary: Option<String>) -> Envelope {
        self.summary = summary;
        self
    }

    pub fn with_color(mut self, color: Option<String>) -> Envelope {
        self.color = color;
        self
    }

    /// The acknowledgement key: `msg_id`, or for entries without one (Claude Code 2.1.88) a
    /// digest of sender, time and text.
    pub fn key(&self) -> String {
        match &self.msg_id {
            Some(id) => id.clone(),
            None => {
                // FNV-1a: stable across processes and versions, unlike std's hasher.
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                for part in [&self.from, &self.timestamp, &self.text] {
                    for b in part.bytes().chain([0]) {
                        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                    }
                }
                format!("legacy-{h:016x}")
            }
        }
    }

    pub fn protocol(&self) -> Option<Protocol> {
        Protocol::parse(&self.text)
    }

    pub fn is_read(&self) -> bool {
        self.read == Some(true)
    }
}

/// A message taken from an inbox, with the key that acknowledges it.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub key: String,
    pub envelope: Envelope,
}

/// One copy of a sent message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sent {
    pub to: String,
    pub msg_id: String,
}
/// Checks the text of a message about to be sent.
pub fn check_text(text: &str) -> Result<()> {
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(Error::usage(format!(
            "message is {} bytes, over the {} byte (256 KiB) limit; write the content to a file and send its path",
            text.len(),
            MAX_MESSAGE_BYTES
        )));
    }
    // Blank text would reach a model as an empty block: refused like no text at all.
    if text.trim().is_empty() {
        return Err(Error::usage("message is empty; say something"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_text_is_refused_like_no_text() {
        for blank in ["", " ", "\n\t \r\n"] {
            let err = check_text(blank).unwrap_err();
            assert_eq!(err.to_string(), "message is empty; say something");
        }
        check_text(" x ").unwrap();
    }

    #[test]
    fn legacy_key_is_stable() {
        let mut e = Envelope::new("bob", "hi");
        e.msg_id = None;
        e.timestamp = "2026-02-12T05:22:25.366Z".into();
        assert_eq!(e.key(), e.clone().key());
        assert!(e.key().starts_with("legacy-"));
        let mut other = e.clone();
        other.text = "hi!".into();
        assert_ne!(e.key(), other.key());
    }
}
