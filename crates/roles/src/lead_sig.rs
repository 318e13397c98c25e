//! A teammate's check on the mail in its lead's name (`lead_sig`, docs/design/formats.md
//! §4.6): [`LeadGuard`] drops what claims to come from the lead without the lead's valid
//! signature. The scheme itself (the key, the signed bytes, the signer) is the store's
//! ([`swarm_store::mailbox::lead_sig`]), re-exported here.

use std::collections::HashSet;

use swarm_store::Root;
use swarm_store::mailbox::Envelope;
use swarm_store::mailbox::lead_seen::{self, Seen};
pub use swarm_store::mailbox::lead_sig::{
    CLOCK_SKEW_MS, DOMAIN, LeadKey, LeadSigner, MAX_AGE_MS, Recipient,
};
use swarm_util::clock;
use swarm_util::names::{AgentName, TeamName};

/// A teammate's check on the mail in its lead's name: the key, the names that are the
/// lead's (`team-lead`, and the lead's name in the roster if it differs), whom a
/// signature must name (a teammate swarm's lead started), and the `msg_id`s already
/// believed, kept across restarts when it has a place to keep them.
#[derive(Debug, Clone)]
pub struct LeadGuard {
    key: LeadKey,
    names: Vec<String>,
    bound: Option<Recipient>,
    accepted: HashSet<String>,
    kept: Option<Kept>,
}

/// Where a guard keeps what it believed: its teammate's file under its root.
#[derive(Debug, Clone)]
struct Kept {
    root: Root,
    team: TeamName,
    me: AgentName,
    seen: Seen,
}

impl LeadGuard {
    pub fn new(key: LeadKey, names: Vec<String>) -> LeadGuard {
        LeadGuard {
            key,
            names,
            bound: None,
            accepted: HashSet::new(),
            kept: None,
        }
    }

    /// This guard believing only signatures made for `me` of `team` (`lead_sig_to`).
    pub fn bound_to(self, team: &TeamName, me: &AgentName) -> LeadGuard {
        LeadGuard {
            bound: Some(Recipient {
                team: team.to_string(),
                name: me.to_string(),
            }),
            ..self
        }
    }

    /// This guard remembering what `me` believed in its file under `root`, and starting
    /// from what that file holds: a copy put back after a restart is still a replay.
    pub fn kept_in(self, root: &Root, team: &TeamName, me: &AgentName) -> LeadGuard {
        let seen = lead_seen::load(root, team, me).unwrap_or_else(|e| {
            tracing::warn!("{e}; a message believed before this start may be believed again");
            Seen::new()
        });
        LeadGuard {
            accepted: seen.keys().cloned().collect(),
            kept: Some(Kept {
                root: root.clone(),
                team: team.clone(),
                me: me.clone(),
                seen,
            }),
            ..self
        }
    }

    /// Why `e` must be dropped, if it claims to come from the lead and does not; a message
    /// believed is remembered, so a copy of it is not believed again.
    pub fn vet(&mut self, e: &Envelope) -> Option<String> {
        if !self.names.contains(&e.from) {
            return None;
        }
        match self.key.check(e, &self.accepted, self.bound.as_ref()) {
            Ok(msg_id) => {
                self.accepted.insert(msg_id.to_owned());
                self.keep(msg_id, e);
                None
            }
            Err(why) => Some(why),
        }
    }

    /// Records `msg_id` as believed in the guard's file, if it has one.
    fn keep(&mut self, msg_id: &str, e: &Envelope) {
        let Some(kept) = &mut self.kept else {
            return;
        };
        let at = clock::parse_iso_ms(&e.timestamp).unwrap_or_else(clock::now_ms);
        kept.seen.insert(msg_id.to_owned(), at);
        if let Err(e) = lead_seen::record(&kept.root, &kept.team, &kept.me, &mut kept.seen) {
            tracing::warn!("{e}; after a restart this message could be believed again");
        }
    }

    /// Whether `e` really is the lead's, without remembering it (for a look ahead).
    pub fn believes(&self, e: &Envelope) -> bool {
        self.names.contains(&e.from)
            && self
                .key
                .check(e, &self.accepted, self.bound.as_ref())
                .is_ok()
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

    #[test]
    fn a_kept_guard_refuses_a_replay_after_a_restart_and_a_copy_for_another() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let team = TeamName::new("t").unwrap();
        let (bob, carol) = (
            AgentName::new("bob").unwrap(),
            AgentName::new("carol").unwrap(),
        );
        let signer = LeadSigner::generate().unwrap();
        let to_bob = Recipient {
            team: "t".into(),
            name: "bob".into(),
        };
        let signed = signer.sign_for(lead_mail("shut down"), &to_bob);
        let guard = |me: &AgentName| {
            LeadGuard::new(signer.verify_key(), vec!["team-lead".into()])
                .bound_to(&team, me)
                .kept_in(&root, &team, me)
        };
        assert_eq!(guard(&bob).vet(&signed), None);
        // bob restarts: the same entry is still a replay.
        let why = guard(&bob).vet(&signed).unwrap();
        assert!(why.contains("replay"), "{why}");
        // carol never believes bob's.
        let why = guard(&carol).vet(&signed).unwrap();
        assert!(why.contains("for carol"), "{why}");
    }
}
