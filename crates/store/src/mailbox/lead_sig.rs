//! The lead's signature on what it writes to a teammate's inbox (`lead_sig`), as Claude
//! Code 2.1.328 makes it (docs/design/formats.md §4.6).
//!
//! A lead that spawns a teammate makes an Ed25519 key pair for it, keeps the private half
//! in memory and hands the public half over as `--lead-verify-key <ms>.<key>`, where `<ms>`
//! is when the key was made (epoch milliseconds) and `<key>` the base64url of its SPKI DER.
//! Every envelope it writes under a lead's name carries `lead_sig`: the base64url Ed25519
//! signature over the compact JSON array `["claude-team-lead-entry-v1", msg_id, from,
//! timestamp, text, summary, color, from_plugin]`, an absent field being `null`.
//!
//! A teammate that holds a key believes an envelope in a lead's name only when
//! [`LeadKey::check`] passes: a valid signature, a timestamp no older than the key less
//! [`CLOCK_SKEW_MS`], and a `msg_id` it has not accepted before (a copied entry is a
//! replay). This stops anyone who can write the inbox file but lacks the lead's memory
//! (another teammate's model, a peer process) from speaking as the lead; it does not stop
//! a process that can read the lead's memory.
//!
//! swarm's own lead signs the same way with one key per team, kept in a 0600 file for a
//! resumed lead and a person's CLI ([`super::lead_key`]); the teammate's side of the check,
//! `LeadGuard`, lives with the teammate (`swarm_roles::lead_sig`).
//!
//! Claude Code's array names neither the team nor the recipient, so one teammate's signed
//! entry verifies in another's inbox. swarm's lead therefore also signs each copy for its
//! recipient: `lead_sig_to`, over `["swarm-team-lead-entry-v2", team, recipient, msg_id,
//! from, timestamp, text, summary, color, from_plugin]`. A teammate swarm's lead started
//! (`--bound-lead-sig`) believes only that one, for its own team and name; a Claude Code
//! teammate reads `lead_sig` as it always has and ignores the other. Either way an entry
//! older than [`MAX_AGE_MS`] is refused, and the `msg_id`s believed are kept across
//! restarts by the teammate ([`super::lead_seen`]).

use std::collections::HashSet;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::{URL_SAFE_NO_PAD, URL_SAFE_NO_PAD_INDIFFERENT};
use ring::signature::{ED25519, Ed25519KeyPair, KeyPair, UnparsedPublicKey};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::mailbox::envelope::Envelope;
use swarm_util::clock;
use swarm_util::error::Base as _;

/// What the signed array starts with: the scheme and its version.
pub const DOMAIN: &str = "claude-team-lead-entry-v1";

/// What the recipient-bound array starts with (swarm's own, beside Claude Code's).
pub const BOUND_DOMAIN: &str = "swarm-team-lead-entry-v2";

/// How much older than its key a signed entry may claim to be (Claude Code's allowance).
pub const CLOCK_SKEW_MS: i64 = 120_000;

/// The oldest a signed entry may be when a teammate reads it: a day. An entry the lead
/// wrote longer ago than that (to a teammate down for a day) is dropped, so a teammate's
/// record of what it believed need only reach back that far.
pub const MAX_AGE_MS: i64 = 24 * 3600 * 1000;

/// Whom a recipient-bound signature names: the team and the teammate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipient {
    pub team: String,
    pub name: String,
}

/// The DER of an Ed25519 SubjectPublicKeyInfo up to the 32 key bytes (RFC 8410): a
/// sequence of the algorithm (OID 1.3.101.112, no parameters) and a 33-byte bit string.
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The public key a teammate checks its lead's mail with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadKey {
    /// When the lead made it (epoch ms): nothing signed may be much older.
    pub made_ms: i64,
    key: [u8; 32],
}

impl LeadKey {
    /// Reads `--lead-verify-key`'s value, `<ms>.<base64url SPKI DER>`.
    pub fn parse(value: &str) -> Result<LeadKey> {
        let bad = |why: &str| {
            Error::usage(format!(
                "failed to read --lead-verify-key {value:?}: {why}; it is <epoch ms>.<base64url of an Ed25519 public key in SPKI DER>, as the lead passes it"
            ))
        };
        let (ms, der) = value.split_once('.').ok_or_else(|| bad("no '.'"))?;
        let made_ms = ms
            .parse::<i64>()
            .map_err(|_| bad("no time before the '.'"))?;
        let der = URL_SAFE_NO_PAD_INDIFFERENT
            .decode(der)
            .map_err(|_| bad("the key is not base64url"))?;
        let key = der
            .strip_prefix(&SPKI_PREFIX[..])
            .and_then(|k| <[u8; 32]>::try_from(k).ok())
            .ok_or_else(|| bad("the key is not an Ed25519 SPKI"))?;
        Ok(LeadKey { made_ms, key })
    }

    /// The value a lead passes as `--lead-verify-key`.
    pub fn to_arg(&self) -> String {
        let mut der = SPKI_PREFIX.to_vec();
        der.extend_from_slice(&self.key);
        format!("{}.{}", self.made_ms, URL_SAFE_NO_PAD.encode(der))
    }

    /// Whether `sig` (base64url) is this key's signature of `bytes`.
    pub fn verifies(&self, bytes: &[u8], sig: &str) -> bool {
        URL_SAFE_NO_PAD_INDIFFERENT.decode(sig).is_ok_and(|sig| {
            UnparsedPublicKey::new(&ED25519, &self.key)
                .verify(bytes, &sig)
                .is_ok()
        })
    }

    /// Whether `e`, written in a lead's name, is the lead's: its `msg_id` if so, why not
    /// if not. `accepted` holds the `msg_id`s this teammate already believed; `bound`,
    /// given to a teammate swarm's lead started, is who it is, and then only a signature
    /// for it (`lead_sig_to`) counts.
    pub fn check<'e>(
        &self,
        e: &'e Envelope,
        accepted: &HashSet<String>,
        bound: Option<&Recipient>,
    ) -> std::result::Result<&'e str, String> {
        let Some(msg_id) = e.msg_id.as_deref() else {
            return Err("it has no msg_id to check the signature against".to_owned());
        };
        let (field, bytes) = match bound {
            Some(to) => ("lead_sig_to", bound_bytes(e, msg_id, to)),
            None => ("lead_sig", signed_bytes(e, msg_id)),
        };
        let sig = match e.extra.get(field) {
            Some(Value::String(s)) => s,
            Some(_) => return Err(format!("its {field} is not a string")),
            None => return Err(format!("it is not signed (no {field})")),
        };
        let sig = URL_SAFE_NO_PAD_INDIFFERENT
            .decode(sig)
            .map_err(|_| format!("its {field} is not base64url"))?;
        UnparsedPublicKey::new(&ED25519, &self.key)
            .verify(bytes.as_bytes(), &sig)
            .map_err(|_| match bound {
                Some(to) => format!(
                    "its {field} does not match the lead's key for {} in team {}",
                    to.name, to.team
                ),
                None => format!("its {field} does not match the lead's key"),
            })?;
        match clock::parse_iso_ms(&e.timestamp) {
            Some(t) if t < self.made_ms - CLOCK_SKEW_MS => {
                return Err(format!(
                    "its timestamp {} predates the lead's key",
                    e.timestamp
                ));
            }
            Some(t) if t < clock::now_ms() - MAX_AGE_MS => {
                return Err(format!(
                    "its timestamp {} is more than a day old",
                    e.timestamp
                ));
            }
            Some(_) => {}
            None => return Err(format!("its timestamp {} is not one", e.timestamp)),
        }
        if accepted.contains(msg_id) {
            return Err(format!(
                "its msg_id {msg_id} was already delivered (a replay)"
            ));
        }
        Ok(msg_id)
    }
}

/// What the lead signs for `e`: the compact JSON array of the module comment.
pub(crate) fn signed_bytes(e: &Envelope, msg_id: &str) -> String {
    let opt = |v: Option<&str>| v.map_or(Value::Null, |s| Value::String(s.to_owned()));
    let from_plugin = e.extra.get("from_plugin").and_then(Value::as_str);
    Value::Array(vec![
        Value::String(DOMAIN.to_owned()),
        Value::String(msg_id.to_owned()),
        Value::String(e.from.clone()),
        Value::String(e.timestamp.clone()),
        Value::String(e.text.clone()),
        opt(e.summary.as_deref()),
        opt(e.color.as_deref()),
        opt(from_plugin),
    ])
    .to_string()
}

/// What the lead signs for `e` sent to `to`: the recipient-bound array of the module
/// comment.
pub(crate) fn bound_bytes(e: &Envelope, msg_id: &str, to: &Recipient) -> String {
    let opt = |v: Option<&str>| v.map_or(Value::Null, |s| Value::String(s.to_owned()));
    let from_plugin = e.extra.get("from_plugin").and_then(Value::as_str);
    Value::Array(vec![
        Value::String(BOUND_DOMAIN.to_owned()),
        Value::String(to.team.clone()),
        Value::String(to.name.clone()),
        Value::String(msg_id.to_owned()),
        Value::String(e.from.clone()),
        Value::String(e.timestamp.clone()),
        Value::String(e.text.clone()),
        opt(e.summary.as_deref()),
        opt(e.color.as_deref()),
        opt(from_plugin),
    ])
    .to_string()
}

/// A lead's private key: what signs its mail to one teammate.
pub struct LeadSigner {
    pair: Ed25519KeyPair,
    made_ms: i64,
    /// The private key as ring made it (PKCS#8 v2), for the key file.
    pkcs8: Vec<u8>,
}

impl fmt::Debug for LeadSigner {
    /// Shows the public half only: the private key never reaches a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LeadSigner({})", self.verify_key().to_arg())
    }
}

impl LeadSigner {
    /// A new key pair, made now.
    pub fn generate() -> Result<LeadSigner> {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng)
            .map_err(|_| Error::LeadKey("failed to make an Ed25519 key pair".to_owned()))?;
        LeadSigner::from_pkcs8(pkcs8.as_ref(), clock::now_ms())
            .ok_or_else(|| Error::LeadKey("failed to read a new Ed25519 key pair".to_owned()))
    }

    /// The signer of a PKCS#8 private key made at `made_ms`; `None` if it is not one.
    pub(crate) fn from_pkcs8(pkcs8: &[u8], made_ms: i64) -> Option<LeadSigner> {
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8).ok()?;
        Some(LeadSigner {
            pair,
            made_ms,
            pkcs8: pkcs8.to_vec(),
        })
    }

    /// The key file's bytes: `{"madeMs": <epoch ms>, "pkcs8": "<base64url>"}`.
    pub(crate) fn to_file(&self) -> Vec<u8> {
        let file = serde_json::json!({
            "madeMs": self.made_ms,
            "pkcs8": URL_SAFE_NO_PAD.encode(&self.pkcs8),
        });
        file.to_string().into_bytes()
    }

    /// The signer a key file holds; `None` if the bytes are not one.
    pub(crate) fn from_file(bytes: &[u8]) -> Option<LeadSigner> {
        let file: Value = serde_json::from_slice(bytes).ok()?;
        let pkcs8 = URL_SAFE_NO_PAD_INDIFFERENT
            .decode(file.get("pkcs8")?.as_str()?)
            .ok()?;
        LeadSigner::from_pkcs8(&pkcs8, file.get("madeMs")?.as_i64()?)
    }

    /// Its public half, for the teammate.
    pub fn verify_key(&self) -> LeadKey {
        let mut key = [0u8; 32];
        key.copy_from_slice(self.pair.public_key().as_ref());
        LeadKey {
            made_ms: self.made_ms,
            key,
        }
    }

    /// The base64url Ed25519 signature of `bytes` (for what the lead writes besides mail:
    /// launch records).
    pub fn sign_bytes(&self, bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(self.pair.sign(bytes).as_ref())
    }

    /// `e` signed as Claude Code's lead signs (see [`LeadSigner::sign`]) and for its
    /// recipient `to` too (`lead_sig_to`).
    pub fn sign_for(&self, e: Envelope, to: &Recipient) -> Envelope {
        let mut e = self.sign(e);
        let msg_id = e.msg_id.clone().unwrap_or_default();
        let sig = self.pair.sign(bound_bytes(&e, &msg_id, to).as_bytes());
        e.extra.insert(
            "lead_sig_to".to_owned(),
            Value::String(URL_SAFE_NO_PAD.encode(sig.as_ref())),
        );
        e
    }

    /// `e` with its `lead_sig` (and a `msg_id` if it had none), as Claude Code's lead signs.
    pub fn sign(&self, mut e: Envelope) -> Envelope {
        let msg_id = e
            .msg_id
            .get_or_insert_with(|| uuid::Uuid::new_v4().to_string())
            .clone();
        let sig = self.pair.sign(signed_bytes(&e, &msg_id).as_bytes());
        e.extra.insert(
            "lead_sig".to_owned(),
            Value::String(URL_SAFE_NO_PAD.encode(sig.as_ref())),
        );
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lead_mail(text: &str) -> Envelope {
        Envelope::new("team-lead", text)
            .with_summary(Some("a summary".into()))
            .with_color(None)
    }

    #[test]
    fn a_signed_entry_passes_and_a_tampered_one_never() {
        let signer = LeadSigner::generate().unwrap();
        let key = LeadKey::parse(&signer.verify_key().to_arg()).unwrap();
        assert_eq!(key, signer.verify_key());
        let signed = signer.sign(lead_mail("please take task 1"));
        let mut accepted = HashSet::new();
        assert_eq!(
            key.check(&signed, &accepted, None),
            Ok(signed.msg_id.as_deref().unwrap())
        );
        accepted.insert(signed.msg_id.clone().unwrap());
        assert!(
            key.check(&signed, &accepted, None)
                .unwrap_err()
                .contains("replay")
        );
        let accepted = HashSet::new();
        for tamper in [
            |e: &mut Envelope| e.text.push('!'),
            |e: &mut Envelope| e.summary = None,
            |e: &mut Envelope| e.color = Some("red".into()),
            |e: &mut Envelope| e.msg_id = Some("another".into()),
            |e: &mut Envelope| {
                e.extra.insert("from_plugin".into(), "p".into());
            },
        ] {
            let mut forged = signed.clone();
            tamper(&mut forged);
            let why = key.check(&forged, &accepted, None).unwrap_err();
            assert_eq!(why, "its lead_sig does not match the lead's key");
        }
        let mut unsigned = signed.clone();
        unsigned.extra.remove("lead_sig");
        assert!(
            key.check(&unsigned, &accepted, None)
                .unwrap_err()
                .contains("not signed")
        );
        // Signed by another lead.
        let other = LeadSigner::generate().unwrap().sign(lead_mail("stop"));
        assert!(key.check(&other, &accepted, None).is_err());
    }

    #[test]
    fn a_signed_envelope_round_trips_through_its_json() {
        let signed = LeadSigner::generate().unwrap().sign(lead_mail("hi"));
        let json = serde_json::to_string(&signed).unwrap();
        assert!(json.contains("\"lead_sig\":"), "{json}");
        let back: Envelope = serde_json::from_str(&json).unwrap();
        assert_eq!(back, signed);
    }

    #[test]
    fn the_key_file_gives_back_the_same_signer() {
        let signer = LeadSigner::generate().unwrap();
        let back = LeadSigner::from_file(&signer.to_file()).unwrap();
        assert_eq!(back.verify_key(), signer.verify_key());
        let signed = back.sign(lead_mail("from the file"));
        assert!(
            signer
                .verify_key()
                .check(&signed, &HashSet::new(), None)
                .is_ok()
        );
        assert!(!format!("{back:?}").contains(&URL_SAFE_NO_PAD.encode(&signer.pkcs8)));
        assert!(LeadSigner::from_file(b"{}").is_none());
    }

    #[test]
    fn an_entry_older_than_the_key_is_refused() {
        let signer = LeadSigner::generate().unwrap();
        let mut old = lead_mail("from long ago");
        old.timestamp = "2020-01-01T00:00:00.000Z".into();
        let old = signer.sign(old);
        let why = signer
            .verify_key()
            .check(&old, &HashSet::new(), None)
            .unwrap_err();
        assert!(why.contains("predates"), "{why}");
    }

    #[test]
    fn a_bound_signature_holds_only_for_its_team_and_recipient_and_a_day() {
        let signer = LeadSigner::generate().unwrap();
        let key = signer.verify_key();
        let to = |team: &str, name: &str| Recipient {
            team: team.into(),
            name: name.into(),
        };
        let none = HashSet::new();
        let for_bob = signer.sign_for(lead_mail("shut down"), &to("t", "bob"));
        assert!(key.check(&for_bob, &none, Some(&to("t", "bob"))).is_ok());
        // Copied to carol, or to bob of another team: refused, though Claude Code's own
        // signature still verifies (it binds neither).
        for other in [to("t", "carol"), to("u", "bob")] {
            let why = key.check(&for_bob, &none, Some(&other)).unwrap_err();
            assert!(why.contains("does not match"), "{why}");
        }
        assert!(key.check(&for_bob, &none, None).is_ok());
        // Claude Code's signature alone is not enough for a bound teammate.
        let v1 = signer.sign(lead_mail("shut down"));
        let why = key.check(&v1, &none, Some(&to("t", "bob"))).unwrap_err();
        assert!(why.contains("no lead_sig_to"), "{why}");
        // A day and a minute old: refused, however well signed.
        let mut stale = lead_mail("old news");
        stale.timestamp = clock::iso_from_ms(clock::now_ms() - MAX_AGE_MS - 60_000);
        let old_signer = LeadSigner::from_pkcs8(&signer.pkcs8, 0).unwrap();
        let stale = old_signer.sign_for(stale, &to("t", "bob"));
        let why = old_signer
            .verify_key()
            .check(&stale, &none, Some(&to("t", "bob")))
            .unwrap_err();
        assert!(why.contains("more than a day old"), "{why}");
    }

    #[test]
    fn the_signed_bytes_are_claude_codes_array() {
        let mut e = lead_mail("a \"quoted\"\nline é");
        e.msg_id = Some("m-1".into());
        e.timestamp = "2026-01-02T03:04:05.678Z".into();
        assert_eq!(
            signed_bytes(&e, "m-1"),
            r#"["claude-team-lead-entry-v1","m-1","team-lead","2026-01-02T03:04:05.678Z","a \"quoted\"\nline é","a summary",null,null]"#
        );
    }

    #[test]
    fn a_key_argument_that_is_not_one_is_refused() {
        for bad in ["", "123", "x.AAAA", "123.!!!", "123.MCowBQYDK2VwAyEA"] {
            let e = LeadKey::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("failed to read --lead-verify-key"), "{e}");
        }
    }
}
