//! Mailboxes in PostgreSQL: one row per message in `messages`, in its recipient's inbox
//! until acknowledged, then in its delivered log; one row per recipient in `mailboxes`,
//! whose lock orders every delivery and acknowledgement to that recipient and whose write
//! counter is the inbox's version.
//!
//! Invariants:
//! - a message is unique per recipient by its origin (the id the sender gave it), so a
//!   send or delivery retried after a dropped connection finds the copy it made and makes
//!   none (a broadcast's copies, which get ids of their own, included);
//! - a send to several recipients is one transaction: every copy or none; mailboxes are
//!   locked in name order, so two broadcasts never deadlock;
//! - an acknowledgement moves messages from the inbox to the delivered log in one
//!   statement, numbered by one draw of the `acks` sequence taken under the mailbox's
//!   lock: a recipient's log grows in the order its acknowledgements commit, which is what
//!   lets a reader's [`Cursor`] hold only the last number it read;
//! - the recipient must be on the roster (`send`); `deliver` trusts its caller.

use postgres::GenericClient;
use postgres::types::Json;

use crate::PgStore;
use crate::connect::{Fail, Retry};
use crate::roster::load_in;
use crate::watch::{Change, notify};
use swarm_store::error::Result;
use swarm_store::mailbox::delivered::{Appended, Cursor};
use swarm_store::mailbox::lead_key;
use swarm_store::mailbox::{Delivery, Envelope, Sent, Version, check_text, recipients};
use swarm_store::seam::Mailboxes;
use swarm_util::names::AgentName;

pub(crate) type Tx<'a, 'b> = &'a mut postgres::Transaction<'b>;

/// The one delivered log a recipient has here (a cursor on another is on none, and reads
/// from the start).
const LOG: u64 = 1;

/// The database's clock, in nanoseconds since the epoch.
const NOW_NS: &str = "(extract(epoch from clock_timestamp()) * 1e9)::bigint";

/// Puts each `(recipient, origin, copy)` in its recipient's inbox, in one transaction,
/// each copy sealed with the lead's key when it goes out in the lead's name (see
/// `lead_key::seal`); returns each copy's key: the one stored, when the origin was
/// delivered before.
pub(crate) fn deliver_all(
    store: &PgStore,
    tx: Tx,
    copies: &[(AgentName, String, Envelope)],
) -> std::result::Result<Vec<String>, Fail> {
    let team = store.team.as_str();
    let mut order: Vec<&str> = copies.iter().map(|(to, _, _)| to.as_str()).collect();
    order.sort_unstable();
    order.dedup();
    for to in order {
        tx.execute(
            &format!(
                "INSERT INTO mailboxes (team, agent, writes, written_ns) VALUES ($1, $2, 1, {NOW_NS})
                 ON CONFLICT (team, agent) DO UPDATE
                 SET writes = coalesce(mailboxes.writes, 0) + 1, written_ns = EXCLUDED.written_ns"
            ),
            &[&team, &to],
        )
        .map_err(|e| unknown_team(store, e))?;
        notify(tx, &store.team, Change::Inbox(to))?;
    }
    let mut keys = Vec::with_capacity(copies.len());
    for (to, origin, envelope) in copies {
        let envelope = &lead_key::seal(&store.root, &store.team, to, envelope.clone())?;
        let key = envelope.key();
        let made = tx.execute(
            "INSERT INTO messages (team, agent, origin, key, envelope) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT DO NOTHING",
            &[&team, &to.as_str(), origin, &key, &Json(envelope)],
        )?;
        if made == 1 {
            keys.push(key);
            continue;
        }
        // Delivered before (a retry): the copy that is there, by origin or by key.
        let row = tx.query_one(
            "SELECT key FROM messages WHERE team = $1 AND agent = $2 AND (origin = $3 OR key = $4)
             ORDER BY (origin = $3) DESC LIMIT 1",
            &[&team, &to.as_str(), origin, &key],
        )?;
        keys.push(row.get(0));
    }
    Ok(keys)
}

/// A foreign key refused: the team is not in the database.
pub(crate) fn unknown_team(store: &PgStore, e: postgres::Error) -> Fail {
    if e.code() == Some(&postgres::error::SqlState::FOREIGN_KEY_VIOLATION) {
        Fail::Swarm(store.no_team())
    } else {
        Fail::Db(e)
    }
}

fn envelopes(rows: &[postgres::Row], agent: &AgentName) -> Vec<Envelope> {
    rows.iter()
        .filter_map(|r| {
            match serde_json::from_value::<Envelope>(r.get::<_, serde_json::Value>(0)) {
                Ok(e) => Some(e),
                Err(e) => {
                    tracing::warn!(%agent, "skipping an inbox entry that is not a message: {e}");
                    None
                }
            }
        })
        .collect()
}

impl PgStore {
    fn mail_what(&self, doing: &str) -> String {
        format!("{doing} in team '{}'", self.team)
    }

    fn inbox(
        &self,
        client: &mut impl GenericClient,
        agent: &AgentName,
    ) -> Result<Vec<Envelope>, Fail> {
        let rows = client.query(
            "SELECT envelope FROM messages WHERE team = $1 AND agent = $2 AND acked IS NULL ORDER BY seq",
            &[&self.team.as_str(), &agent.as_str()],
        )?;
        Ok(envelopes(&rows, agent))
    }
}

impl Mailboxes for PgStore {
    fn send(&self, to: &str, envelope: Envelope) -> Result<Vec<Sent>> {
        check_text(&envelope.text)?;
        let what = self.mail_what(&format!("send a message to {to}"));
        let origin = envelope.key();
        let mut copies: Option<Vec<(AgentName, String, Envelope)>> = None;
        let keys = self.db.transaction(Retry::Safe, &what, |tx| {
            let config = load_in(self, tx, false)?;
            let recipients = recipients(&config, &self.team, &envelope.from, to)?;
            // The copies' ids are made once: a retry offers the same ones (and the same
            // signatures: Ed25519's are deterministic).
            if copies.is_none() {
                let mut made = Vec::with_capacity(recipients.len());
                for (i, r) in recipients.iter().enumerate() {
                    let mut copy = envelope.clone();
                    if i > 0 {
                        copy.msg_id = Some(uuid::Uuid::now_v7().to_string());
                    }
                    made.push((r.clone(), origin.clone(), copy));
                }
                copies = Some(made);
            }
            let made = copies.as_ref().expect("made above");
            let keys = deliver_all(self, tx, made)?;
            Ok(made
                .iter()
                .map(|(to, _, _)| to.to_string())
                .zip(keys)
                .collect::<Vec<_>>())
        })?;
        Ok(keys
            .into_iter()
            .map(|(to, msg_id)| Sent { to, msg_id })
            .collect())
    }

    fn deliver(&self, to: &AgentName, envelope: Envelope) -> Result<String> {
        check_text(&envelope.text)?;
        let what = self.mail_what(&format!("deliver a message to {to}"));
        let copies = [(to.clone(), envelope.key(), envelope)];
        let mut keys = self
            .db
            .transaction(Retry::Safe, &what, |tx| deliver_all(self, tx, &copies))?;
        Ok(keys.pop().expect("one key per copy"))
    }

    fn read_unread(&self, agent: &AgentName) -> Result<Vec<Delivery>> {
        Ok(self
            .read_all(agent)?
            .into_iter()
            .filter(|d| !d.envelope.is_read())
            .collect())
    }

    fn read_all(&self, agent: &AgentName) -> Result<Vec<Delivery>> {
        let what = self.mail_what(&format!("read the inbox of {agent}"));
        let inbox = self.db.run(Retry::Safe, &what, |c| self.inbox(c, agent))?;
        Ok(inbox
            .into_iter()
            .map(|envelope| Delivery {
                key: envelope.key(),
                envelope,
            })
            .collect())
    }

    fn ack(&self, agent: &AgentName, keys: &[String]) -> Result<usize> {
        if keys.is_empty() {
            return Ok(0);
        }
        let what = self.mail_what(&format!("acknowledge messages of {agent}"));
        let (team, name) = (self.team.as_str(), agent.as_str());
        // Safe to retry: an acknowledged key is not in the inbox any more.
        self.db.transaction(Retry::Safe, &what, |tx| {
            let locked = tx.query_opt(
                "SELECT 1 FROM mailboxes WHERE team = $1 AND agent = $2 FOR UPDATE",
                &[&team, &name],
            )?;
            if locked.is_none() {
                return Ok(0);
            }
            let moved = tx.execute(
                "UPDATE messages SET acked = (SELECT nextval('acks'))
                 WHERE team = $1 AND agent = $2 AND acked IS NULL AND key = ANY($3)",
                &[&team, &name, &keys],
            )?;
            if moved > 0 {
                notify(tx, &self.team, Change::Inbox(name))?;
                tx.execute(
                    &format!(
                        "UPDATE mailboxes SET writes = coalesce(writes, 0) + 1, written_ns = {NOW_NS}
                         WHERE team = $1 AND agent = $2"
                    ),
                    &[&team, &name],
                )?;
            }
            Ok(moved as usize)
        })
    }

    fn remove_inbox(&self, agent: &AgentName) -> Result<()> {
        let what = self.mail_what(&format!("remove the inbox of {agent}"));
        let (team, name) = (self.team.as_str(), agent.as_str());
        self.db.transaction(Retry::Safe, &what, |tx| {
            tx.execute(
                "UPDATE mailboxes SET writes = NULL WHERE team = $1 AND agent = $2",
                &[&team, &name],
            )?;
            tx.execute(
                "DELETE FROM messages WHERE team = $1 AND agent = $2 AND acked IS NULL",
                &[&team, &name],
            )?;
            notify(tx, &self.team, Change::Inbox(name))?;
            Ok(())
        })
    }

    fn read_delivered(&self, agent: &AgentName) -> Result<Vec<Envelope>> {
        let mut cursor = Cursor::default();
        Ok(self.read_delivered_since(agent, &mut cursor)?.envelopes)
    }

    fn read_delivered_since(&self, agent: &AgentName, cursor: &mut Cursor) -> Result<Appended> {
        let restarted = cursor.log() != LOG;
        let after = if restarted { 0 } else { cursor.offset() as i64 };
        let what = self.mail_what(&format!("read the delivered log of {agent}"));
        let rows = self.db.run(Retry::Safe, &what, |c| {
            Ok(c.query(
                "SELECT envelope, acked FROM messages
                 WHERE team = $1 AND agent = $2 AND acked > $3 ORDER BY acked, seq",
                &[&self.team.as_str(), &agent.as_str(), &after],
            )?)
        })?;
        // No log yet (nothing acknowledged): the cursor stays on none, as the file store's
        // does on a log file not there, and the first read that finds one restarts.
        if !(restarted && rows.is_empty()) {
            let last = rows.last().map_or(after, |r| r.get::<_, i64>(1));
            *cursor = Cursor::at(LOG, last as u64);
        }
        Ok(Appended {
            restarted,
            envelopes: envelopes(&rows, agent),
        })
    }

    fn agents_with_mail(&self) -> Result<Vec<AgentName>> {
        let what = self.mail_what("list the mailboxes");
        let rows = self.db.run(Retry::Safe, &what, |c| {
            Ok(c.query(
                "SELECT agent FROM mailboxes m WHERE team = $1 AND (writes IS NOT NULL OR EXISTS (
                     SELECT 1 FROM messages WHERE team = m.team AND agent = m.agent AND acked IS NOT NULL))
                 ORDER BY agent",
                &[&self.team.as_str()],
            )?)
        })?;
        Ok(rows
            .iter()
            .filter_map(|r| AgentName::parse_any(r.get::<_, &str>(0)).ok())
            .collect())
    }

    fn inbox_version(&self, agent: &AgentName) -> Option<Version> {
        let what = self.mail_what(&format!("read the inbox version of {agent}"));
        let row = self
            .db
            .run(Retry::Safe, &what, |c| {
                Ok(c.query_opt(
                    "SELECT writes, written_ns FROM mailboxes
                     WHERE team = $1 AND agent = $2 AND writes IS NOT NULL",
                    &[&self.team.as_str(), &agent.as_str()],
                )?)
            })
            .inspect_err(|e| tracing::warn!("{e}"))
            .ok()??;
        let (writes, written_ns): (i64, i64) = (row.get(0), row.get(1));
        Some(Version::from_parts(
            0,
            writes as u64,
            i128::from(written_ns),
        ))
    }
}
