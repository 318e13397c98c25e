//! A teammate's check on the mail in its lead's name (`lead_sig`, docs/design/formats.md
//! §4.6): [`LeadGuard`] drops what claims to come from the lead without the lead's valid
//! signature. The scheme itself (the key, the signed bytes, the signer) is the store's
//! ([`swarm_store::mailbox::lead_sig`]), re-exported here.

use std::collections::HashSet;

use swarm_store::mailbox::Envelope;
pub use swarm_store::mailbox::lead_sig::{CLOCK_SKEW_MS, DOMAIN, LeadKey, LeadSigner};

/// A teammate's check on the mail in its lead's name: the key, the names that are the
/// lead's (`team-lead`, and the lead's name in the roster if it differs), and the
/// `msg_id`s already believed.
#[derive(Debug, Clone)]
pub struct LeadGuard {
    key: LeadKey,
    names: Vec<String>,
    accepted: HashSet<String>,
}

impl LeadGuard {
    pub fn new(key: LeadKey, names: Vec<String>) -> LeadGuard {
        LeadGuard {
            key,
            names,
            accepted: HashSet::new(),
        }
    }

    /// Why `e` must be dropped, if it claims to come from the lead and does not; a message
    /// believed is remembered, so a copy of it is not believed again.
    pub fn vet(&mut self, e: &Envelope) -> Option<String> {
        if !self.names.contains(&e.from) {
            return None;
        }
        match self.key.check(e, &self.accepted) {
            Ok(msg_id) => {
                self.accepted.insert(msg_id.to_owned());
                None
            }
            Err(why) => Some(why),
        }
    }

    /// Whether `e` really is the lead's, without remembering it (for a look ahead).
    pub fn believes(&self, e: &Envelope) -> bool {
        self.names.contains(&e.from) && self.key.check(e, &self.accepted).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lead_mail(text: &str) -> Envelope {
        Envelope::new("team-lead", text).with_summary(Some("a summary".into()))
    }

    #[test]
    fn the_guard_believes_a_signed_entry_once_and_minds_only_the_leads_mail() {
        let signer = LeadSigner::generate().unwrap();
        let signed = signer.sign(lead_mail("please take task 1"));
        let mut guard = LeadGuard::new(signer.verify_key(), vec!["team-lead".into()]);
        assert!(guard.believes(&signed));
        assert_eq!(guard.vet(&signed), None);
        // The same entry again is a replay.
        assert!(guard.vet(&signed).unwrap().contains("replay"));
        assert!(!guard.believes(&signed));
        // A peer's mail is not the guard's business.
        let mut peer = lead_mail("hi");
        peer.from = "bob".into();
        assert_eq!(guard.vet(&peer), None);
        // Unsigned mail in the lead's name is dropped.
        let why = guard.vet(&lead_mail("stop")).unwrap();
        assert!(why.contains("not signed"), "{why}");
    }
}
