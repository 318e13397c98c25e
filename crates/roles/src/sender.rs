//! Who really sent a protocol message. Any teammate can write to any inbox, so an agent
//! believes a protocol message only when its envelope agrees with it: the message names no
//! other sender than the envelope ([`Protocol::signed_by`]), and an answer to a shutdown
//! request comes from the agent the request was sent to
//! ([`Protocol::answers_own_request`]). The lead and the teammates drop a message that
//! fails this, with a warning, so that nothing is filed, shown or obeyed in another's name.
//! (The shutdown ladder, which knows whom it asked, checks its answers the same way.)

use swarm_store::protocol::Protocol;

/// Why `p`, in an envelope from `from`, is not to be believed, if it is not.
pub fn forged(p: &Protocol, from: &str) -> Option<String> {
    if !p.signed_by(from) {
        return Some(format!(
            "it names {} as its sender",
            p.named_sender().unwrap_or_default()
        ));
    }
    if !p.answers_own_request(from) {
        return Some("it answers a shutdown request that was sent to someone else".to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use swarm_store::protocol::{ShutdownApproved, shutdown_request_id};

    fn approved(request_id: &str, from: &str) -> Protocol {
        Protocol::ShutdownApproved(ShutdownApproved {
            request_id: request_id.into(),
            from: from.into(),
            timestamp: "t".into(),
            pane_id: None,
            backend_type: None,
        })
    }

    #[test]
    fn a_message_is_believed_only_from_the_sender_it_names_and_for_its_own_request() {
        let carol_asked = shutdown_request_id("carol");
        assert_eq!(forged(&approved(&carol_asked, "carol"), "carol"), None);
        assert_eq!(
            forged(&approved(&carol_asked, "carol"), "bob").as_deref(),
            Some("it names carol as its sender")
        );
        assert_eq!(
            forged(&approved(&shutdown_request_id("bob"), "carol"), "carol").as_deref(),
            Some("it answers a shutdown request that was sent to someone else")
        );
    }
}
