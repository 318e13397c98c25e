//! The mailboxes' contract: a message stays in the inbox until acknowledged by its key and
//! is delivered once; a broadcast reaches every teammate but the sender; the delivered log
//! keeps the order of acknowledgement; concurrent senders lose nothing.

use std::collections::HashSet;

use crate::backends::{Team, agent};
use crate::contract;
use swarm_store::mailbox::{Cursor, Envelope};

contract!(
    a_message_is_read_until_acknowledged_and_delivered_once,
    recipients_and_senders_must_be_members,
    a_broadcast_reaches_every_teammate_but_the_sender,
    the_inbox_version_changes_with_every_write,
    a_removed_inbox_keeps_its_delivered_log,
    eight_senders_at_once_lose_nothing,
    broadcasts_racing_each_other_and_single_sends_lose_nothing,
    mail_in_the_leads_name_is_signed_where_the_root_signs_as_the_lead,
);

fn texts(envelopes: impl IntoIterator<Item = Envelope>) -> Vec<String> {
    envelopes.into_iter().map(|e| e.text).collect()
}

fn a_message_is_read_until_acknowledged_and_delivered_once(team: &Team) {
    team.add(&["bob"]);
    let bob = agent("bob");
    for text in ["one", "two", "three"] {
        let sent = team
            .mail()
            .send("bob", Envelope::new("team-lead", text))
            .unwrap();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].to, "bob");
    }
    let unread = team.mail().read_unread(&bob).unwrap();
    assert_eq!(
        texts(unread.iter().map(|d| d.envelope.clone())),
        ["one", "two", "three"]
    );
    // Read again, still there: nothing is lost before it is acknowledged.
    assert_eq!(team.open().mail().read_unread(&bob).unwrap().len(), 3);
    let mut cursor = Cursor::default();
    let first = team.mail().read_delivered_since(&bob, &mut cursor).unwrap();
    assert!(first.restarted && first.envelopes.is_empty());
    let keys = [unread[1].key.clone(), unread[0].key.clone()];
    assert_eq!(team.mail().ack(&bob, &keys).unwrap(), 2);
    assert_eq!(
        team.open().mail().ack(&bob, &keys).unwrap(),
        0,
        "acknowledged once"
    );
    assert_eq!(team.mail().ack(&bob, &["no-such-key".into()]).unwrap(), 0);
    assert_eq!(
        texts(
            team.mail()
                .read_unread(&bob)
                .unwrap()
                .into_iter()
                .map(|d| d.envelope)
        ),
        ["three"]
    );
    // The log keeps the inbox's order within one acknowledgement.
    // The first read that finds a log starts on it; later ones go on from there.
    let since = team.mail().read_delivered_since(&bob, &mut cursor).unwrap();
    assert!(since.restarted);
    assert_eq!(texts(since.envelopes), ["one", "two"]);
    team.mail().ack(&bob, &[unread[2].key.clone()]).unwrap();
    let since = team.mail().read_delivered_since(&bob, &mut cursor).unwrap();
    assert!(!since.restarted);
    assert_eq!(texts(since.envelopes), ["three"]);
    assert!(
        team.mail()
            .read_delivered_since(&bob, &mut cursor)
            .unwrap()
            .envelopes
            .is_empty()
    );
    assert_eq!(
        texts(team.mail().read_delivered(&bob).unwrap()),
        ["one", "two", "three"]
    );
    assert!(team.mail().read_unread(&bob).unwrap().is_empty());
}

fn recipients_and_senders_must_be_members(team: &Team) {
    team.add(&["bob"]);
    let unknown = team
        .mail()
        .send("nobody", Envelope::new("team-lead", "hi"))
        .unwrap_err();
    assert!(unknown.is_not_found(), "{unknown}");
    let stranger = team
        .mail()
        .send("bob", Envelope::new("stranger", "hi"))
        .unwrap_err();
    assert!(stranger.is_not_found(), "{stranger}");
    assert!(stranger.to_string().contains("pass --from"), "{stranger}");
    let blank = team
        .mail()
        .send("bob", Envelope::new("team-lead", "  "))
        .unwrap_err();
    assert!(blank.is_usage(), "{blank}");
    assert!(team.mail().read_all(&agent("bob")).unwrap().is_empty());
    assert!(team.mail().agents_with_mail().unwrap().is_empty());
    // `deliver` trusts its caller: a system note needs no roster entry.
    team.mail()
        .deliver(&agent("ghost"), Envelope::new("swarm", "note"))
        .unwrap();
    assert_eq!(team.mail().read_unread(&agent("ghost")).unwrap().len(), 1);
}

fn a_broadcast_reaches_every_teammate_but_the_sender(team: &Team) {
    team.add(&["bob", "carol"]);
    let sent = team
        .mail()
        .send("*", Envelope::new("bob", "all hands"))
        .unwrap();
    let to: Vec<&str> = sent.iter().map(|s| s.to.as_str()).collect();
    assert_eq!(to, ["team-lead", "carol"]);
    let ids: HashSet<&str> = sent.iter().map(|s| s.msg_id.as_str()).collect();
    assert_eq!(ids.len(), 2, "each copy has its own id");
    for (name, s) in [("team-lead", &sent[0]), ("carol", &sent[1])] {
        let inbox = team.mail().read_unread(&agent(name)).unwrap();
        assert_eq!(inbox.len(), 1);
        assert_eq!(inbox[0].key, s.msg_id);
        assert_eq!(inbox[0].envelope.text, "all hands");
    }
    assert!(team.mail().read_unread(&agent("bob")).unwrap().is_empty());
    let with_mail: Vec<String> = team
        .mail()
        .agents_with_mail()
        .unwrap()
        .iter()
        .map(|a| a.to_string())
        .collect();
    assert_eq!(with_mail, ["carol", "team-lead"]);
}

fn the_inbox_version_changes_with_every_write(team: &Team) {
    team.add(&["bob"]);
    let bob = agent("bob");
    assert_eq!(team.mail().inbox_version(&bob), None);
    team.mail()
        .send("bob", Envelope::new("team-lead", "one"))
        .unwrap();
    let one = team.mail().inbox_version(&bob).expect("an inbox now");
    assert_eq!(team.mail().inbox_version(&bob), Some(one));
    team.mail()
        .send("bob", Envelope::new("team-lead", "two"))
        .unwrap();
    let two = team.mail().inbox_version(&bob).unwrap();
    assert_ne!(one, two);
    let key = team.mail().read_unread(&bob).unwrap()[0].key.clone();
    team.mail().ack(&bob, &[key]).unwrap();
    assert_ne!(team.mail().inbox_version(&bob).unwrap(), two);
    assert!(!two.settled(), "written just now");
}

fn a_removed_inbox_keeps_its_delivered_log(team: &Team) {
    team.add(&["bob"]);
    let bob = agent("bob");
    team.mail()
        .send("bob", Envelope::new("team-lead", "read"))
        .unwrap();
    team.mail()
        .send("bob", Envelope::new("team-lead", "unread"))
        .unwrap();
    let key = team.mail().read_unread(&bob).unwrap()[0].key.clone();
    team.mail().ack(&bob, &[key]).unwrap();
    team.mail().remove_inbox(&bob).unwrap();
    team.mail().remove_inbox(&agent("nobody")).unwrap();
    assert!(team.mail().read_all(&bob).unwrap().is_empty());
    assert_eq!(team.mail().inbox_version(&bob), None);
    assert_eq!(texts(team.mail().read_delivered(&bob).unwrap()), ["read"]);
    assert_eq!(team.mail().agents_with_mail().unwrap(), [bob]);
}

fn eight_senders_at_once_lose_nothing(team: &Team) {
    const SENDERS: usize = 8;
    const EACH: usize = 40;
    let names: Vec<String> = (0..SENDERS).map(|i| format!("s{i}")).collect();
    team.add(&names.iter().map(String::as_str).collect::<Vec<_>>());
    team.add(&["bob"]);
    let sent: Vec<String> = std::thread::scope(|scope| {
        let senders: Vec<_> = names
            .iter()
            .map(|name| {
                let handle = team.open();
                scope.spawn(move || {
                    (0..EACH)
                        .map(|i| {
                            let envelope = Envelope::new(name, format!("{name} #{i}"));
                            handle
                                .mail()
                                .send("bob", envelope)
                                .unwrap()
                                .remove(0)
                                .msg_id
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        senders
            .into_iter()
            .flat_map(|s| s.join().unwrap())
            .collect()
    });
    let inbox = team.mail().read_unread(&agent("bob")).unwrap();
    let keys: HashSet<&str> = inbox.iter().map(|d| d.key.as_str()).collect();
    assert_eq!(
        inbox.len(),
        SENDERS * EACH,
        "{}: each message once",
        team.kind
    );
    assert!(
        sent.iter().all(|id| keys.contains(id.as_str())),
        "none lost"
    );
    // Each sender's messages arrive in the order it sent them.
    for name in &names {
        let own: Vec<String> = inbox
            .iter()
            .filter(|d| &d.envelope.from == name)
            .map(|d| d.envelope.text.clone())
            .collect();
        let expected: Vec<String> = (0..EACH).map(|i| format!("{name} #{i}")).collect();
        assert_eq!(own, expected);
    }
}

/// Four broadcasters and four senders to one teammate at once: on files, some copies find
/// their inbox free and go in the broadcast's group commit, others find it taken and go
/// through the spool; every copy arrives once, and each sender's in its order.
fn broadcasts_racing_each_other_and_single_sends_lose_nothing(team: &Team) {
    const EACH: usize = 15;
    let casters: Vec<String> = (0..4).map(|i| format!("b{i}")).collect();
    let senders: Vec<String> = (0..4).map(|i| format!("s{i}")).collect();
    let all: Vec<&str> = casters.iter().chain(&senders).map(String::as_str).collect();
    team.add(&all);
    team.add(&["bob", "carol"]);
    std::thread::scope(|scope| {
        for (name, to) in casters
            .iter()
            .map(|n| (n, "*"))
            .chain(senders.iter().map(|n| (n, "bob")))
        {
            let handle = team.open();
            scope.spawn(move || {
                for i in 0..EACH {
                    let envelope = Envelope::new(name, format!("{name} #{i}"));
                    let sent = handle.mail().send(to, envelope).unwrap();
                    assert!(!sent.is_empty());
                }
            });
        }
    });
    for (recipient, from) in [
        ("bob", &all),
        ("carol", &casters.iter().map(String::as_str).collect()),
    ] {
        let inbox = team.mail().read_unread(&agent(recipient)).unwrap();
        let keys: HashSet<&str> = inbox.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys.len(), inbox.len(), "{}: no copy twice", team.kind);
        for name in from {
            let own: Vec<String> = inbox
                .iter()
                .filter(|d| d.envelope.from == *name)
                .map(|d| d.envelope.text.clone())
                .collect();
            let expected: Vec<String> = (0..EACH).map(|i| format!("{name} #{i}")).collect();
            assert_eq!(own, expected, "{}: {name}'s mail to {recipient}", team.kind);
        }
    }
    // Every broadcaster's copies reached every other broadcaster and sender too.
    let s0 = team.mail().read_unread(&agent("s0")).unwrap();
    assert_eq!(s0.len(), casters.len() * EACH, "{}", team.kind);
}

/// A message in the lead's name, through a root that signs as the lead (the lead's process,
/// a person's CLI), carries the lead's signature however it goes out (a message, each copy
/// of a broadcast, a note); anyone else's, or one through a root that does not sign, goes
/// as it is (a teammate drops an unsigned one in the lead's name).
fn mail_in_the_leads_name_is_signed_where_the_root_signs_as_the_lead(team: &Team) {
    team.add(&["bob", "carol"]);
    let lead = team.open_as_lead();
    let mail = lead.mail();
    mail.send("bob", Envelope::new("team-lead", "signed: direct"))
        .unwrap();
    mail.send("*", Envelope::new("team-lead", "signed: to all"))
        .unwrap();
    mail.deliver(
        &agent("carol"),
        Envelope::new("team-lead", "signed: a note"),
    )
    .unwrap();
    mail.send("bob", Envelope::new("carol", "plain: from carol"))
        .unwrap();
    team.mail()
        .send("bob", Envelope::new("team-lead", "plain: no key"))
        .unwrap();
    let mut seen = 0;
    for who in ["bob", "carol"] {
        for d in team.mail().read_unread(&agent(who)).unwrap() {
            let signed = d.envelope.extra.contains_key("lead_sig");
            assert_eq!(
                signed,
                d.envelope.text.starts_with("signed:"),
                "{} on {}: {:?}",
                who,
                team.kind,
                d.envelope
            );
            seen += 1;
        }
    }
    assert_eq!(seen, 6);
}
