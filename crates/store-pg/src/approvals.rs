//! Approvals in PostgreSQL: each request its JSON document in `approvals`, keyed by its
//! request id.
//!
//! Invariants:
//! - the rules are the file store's ([`check_id`], [`recorded_again`], [`decide`],
//!   [`expired`]), applied to the row read `FOR UPDATE`: a decision is a compare-and-set,
//!   so of two deciders one wins and the other is told who did;
//! - a decision and its answer to the teammate's inbox are one transaction: never resolved
//!   without an answer, never answered twice (the file store writes them in two steps);
//! - a decision is not retried after a dropped connection (its outcome unknown, it would be
//!   refused as already decided, by itself); recording and expiring are, being idempotent.

use postgres::GenericClient;
use postgres::types::Json;

use crate::PgStore;
use crate::connect::{Fail, Retry};
use crate::mail::{Tx, deliver_all, unknown_team};
use crate::roster::load_in;
use crate::watch::{Change, notify};
use swarm_store::approvals::{
    Approval, Decision, State, answered_by_mail, check_id, decide, expired, lead_mode_of,
    recorded_again, unknown,
};
use swarm_store::error::Result;
use swarm_store::seam::Approvals;

fn read(
    store: &PgStore,
    client: &mut impl GenericClient,
    id: &str,
    for_update: bool,
) -> std::result::Result<Option<Approval>, Fail> {
    let lock = if for_update { " FOR UPDATE" } else { "" };
    let row = client.query_opt(
        &format!("SELECT doc FROM approvals WHERE team = $1 AND id = $2{lock}"),
        &[&store.team.as_str(), &id],
    )?;
    Ok(row.map(|r| r.get::<_, Json<Approval>>(0).0))
}

fn write(store: &PgStore, tx: Tx, a: &Approval) -> std::result::Result<(), Fail> {
    tx.execute(
        "UPDATE approvals SET doc = $3 WHERE team = $1 AND id = $2",
        &[&store.team.as_str(), &a.request_id, &Json(a)],
    )?;
    notify(tx, &store.team, Change::Approvals)?;
    Ok(())
}

/// Oldest first, as the file store lists them (sorted here: the database's collation
/// need not order ids as Rust does).
fn sorted(mut all: Vec<Approval>) -> Vec<Approval> {
    all.sort_by(|a, b| (a.created_ms, &a.request_id).cmp(&(b.created_ms, &b.request_id)));
    all
}

impl PgStore {
    fn approvals_what(&self, doing: &str) -> String {
        format!("{doing} in team '{}'", self.team)
    }
}

impl Approvals for PgStore {
    fn record(&self, approval: &Approval) -> Result<Approval> {
        check_id(&approval.request_id)?;
        let what = self.approvals_what(&format!("record request {}", approval.request_id));
        self.db.transaction(Retry::Safe, &what, |tx| {
            let made = tx
                .execute(
                    "INSERT INTO approvals (team, id, doc) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING",
                    &[&self.team.as_str(), &approval.request_id, &Json(approval)],
                )
                .map_err(|e| unknown_team(self, e))?;
            if made == 1 {
                notify(tx, &self.team, Change::Approvals)?;
                return Ok(approval.clone());
            }
            let existing = read(self, tx, &approval.request_id, true)?
                .expect("a row the insert conflicted with, and records are never deleted");
            Ok(match recorded_again(&existing, approval) {
                Some(filled) => {
                    write(self, tx, &filled)?;
                    filled
                }
                None => existing,
            })
        })
    }

    fn get(&self, id: &str) -> Result<Approval> {
        check_id(id)?;
        let what = self.approvals_what(&format!("read request {id}"));
        self.db
            .run(Retry::Safe, &what, |c| read(self, c, id, false))?
            .ok_or_else(|| unknown(&self.team, id))
    }

    fn list(&self) -> Result<Vec<Approval>> {
        let what = self.approvals_what("list the requests");
        let all = self.db.run(Retry::Safe, &what, |c| {
            let rows = c.query(
                "SELECT doc FROM approvals WHERE team = $1",
                &[&self.team.as_str()],
            )?;
            Ok(rows
                .iter()
                .map(|r| r.get::<_, Json<Approval>>(0).0)
                .collect())
        })?;
        Ok(sorted(all))
    }

    fn resolve(&self, id: &str, decision: Decision) -> Result<Approval> {
        check_id(id)?;
        let what = self.approvals_what(&format!("decide request {id}"));
        self.db.transaction(Retry::BeforeCommit, &what, |tx| {
            let decision = decision.clone();
            let a = read(self, tx, id, true)?.ok_or_else(|| unknown(&self.team, id))?;
            let lead_mode = || {
                load_in(self, &mut *tx, false)
                    .ok()
                    .and_then(|c| lead_mode_of(&c))
            };
            let done = decide(&a, decision, lead_mode)?;
            write(self, tx, &done.approval)?;
            let key = done.answer.key();
            deliver_all(self, tx, &[(done.to, key, done.answer)])?;
            Ok(done.approval)
        })
    }

    fn answered(&self, id: &str, decision: Decision) -> Result<Option<Approval>> {
        check_id(id)?;
        let what = self.approvals_what(&format!("record the answer to request {id}"));
        // Safe to retry: once recorded, the request is no longer pending.
        self.db.transaction(Retry::Safe, &what, |tx| {
            let Some(a) =
                read(self, tx, id, true)?.and_then(|a| answered_by_mail(&a, decision.clone()))
            else {
                return Ok(None);
            };
            write(self, tx, &a)?;
            Ok(Some(a))
        })
    }

    fn expire(&self, id: &str, why: &str) -> Result<Option<Approval>> {
        check_id(id)?;
        let what = self.approvals_what(&format!("expire request {id}"));
        self.db.transaction(Retry::Safe, &what, |tx| {
            let Some(a) = read(self, tx, id, true)?.and_then(|a| expired(&a, why)) else {
                return Ok(None);
            };
            write(self, tx, &a)?;
            Ok(Some(a))
        })
    }

    fn expire_all(&self, agent: &str, why: &str) -> Result<Vec<Approval>> {
        let what = self.approvals_what(&format!("expire the requests of {agent}"));
        self.db.transaction(Retry::Safe, &what, |tx| {
            let rows = tx.query(
                "SELECT doc FROM approvals WHERE team = $1 AND doc->>'agent' = $2
                 AND doc->>'state' = $3 FOR UPDATE",
                &[&self.team.as_str(), &agent, &State::Pending.as_str()],
            )?;
            let pending = rows.iter().map(|r| r.get::<_, Json<Approval>>(0).0);
            let mut done = Vec::new();
            for a in sorted(pending.collect()) {
                if let Some(a) = expired(&a, why) {
                    write(self, tx, &a)?;
                    done.push(a);
                }
            }
            Ok(done)
        })
    }
}
