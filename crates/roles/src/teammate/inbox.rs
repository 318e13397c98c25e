//! A teammate's mailbox, seen from inside: mail for the model, and protocol messages for
//! the runtime.
//!
//! A protocol message its envelope does not bear out (see [`crate::sender`]) is dropped
//! with a warning, and a shutdown request is obeyed only from the lead's mailbox name: a
//! peer pasting the lead's JSON into a message stops nobody. Given the lead's key
//! ([`Inbox::guarded_by`]), anything in the lead's name without the lead's valid signature
//! is dropped with a warning before the model or the runtime sees it (see
//! [`crate::lead_sig`]).
//!
//! Mail for the model is acknowledged only after a model request carrying it was answered
//! ([`Inbox::commit`]), so a crash before that re-delivers it; protocol messages are
//! acknowledged as soon as the runtime takes them. Keys already taken are remembered, so a
//! message still in the file is never handed out twice by one process.
//!
//! It wakes for its own mail only: it watches its inbox's bell (see
//! [`swarm_store::mailbox::bell`]), which every swarm commit into its inbox rings, never the
//! inbox directory, which every teammate's mail changes; what rings no bell (a Claude Code
//! sender) is found by the rescan its waiters do anyway.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::error::Result;
use crate::lead_sig::LeadGuard;
use crate::sender::forged;
use swarm_store::Store;
use swarm_store::mailbox::{Delivery, bell};
use swarm_store::protocol::{
    PermissionResponse, PlanApprovalResponse, Protocol, ShutdownRequest, shutdown_target,
};
use swarm_team::spawn::prompt::wrap_message;
use swarm_util::names::{AgentName, LEAD};
use swarm_util::watcher::DirWatcher;

/// A protocol message the runtime acts on itself.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Shutdown(ShutdownRequest),
    PlanResponse {
        from: String,
        response: PlanApprovalResponse,
    },
    PermissionResponse {
        from: String,
        response: PermissionResponse,
    },
}

/// One message for the model: who sent it, the raw text, and the wrapped form.
#[derive(Debug, Clone)]
pub struct Mail {
    pub key: String,
    pub from: String,
    pub text: String,
    pub wrapped: String,
}

pub struct Inbox {
    store: Store,
    me: AgentName,
    seen: HashSet<String>,
    mail: Vec<Mail>,
    in_flight: Vec<String>,
    protocol: VecDeque<Incoming>,
    /// The lead's key, when this teammate was given one.
    guard: Option<LeadGuard>,
    /// Notified when the bell rings (and with it `side`, for a second waiter).
    pub wake: Arc<Notify>,
    pub side: Arc<Notify>,
    watcher: Option<DirWatcher>,
}

impl Inbox {
    /// Opens `me`'s inbox, watching its bell. A bell that cannot be made is logged, and
    /// only rescans find mail then.
    pub fn open(store: &Store, me: &AgentName) -> Inbox {
        let (wake, side) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let watcher = match bell::install(store.root(), store.team(), me) {
            Ok(path) => {
                let (wake, side) = (wake.clone(), side.clone());
                Some(DirWatcher::touched(&path, move || {
                    wake.notify_one();
                    side.notify_one();
                }))
            }
            Err(e) => {
                tracing::warn!(
                    "failed to make the bell of {me}'s inbox ({e}); looking for mail every {:?} instead",
                    swarm_util::watcher::RESCAN_EVERY
                );
                None
            }
        };
        Inbox {
            store: store.clone(),
            me: me.clone(),
            seen: HashSet::new(),
            mail: Vec::new(),
            in_flight: Vec::new(),
            protocol: VecDeque::new(),
            guard: None,
            wake,
            side,
            watcher,
        }
    }

    /// Believes mail in the lead's name only with the lead's signature.
    pub fn guarded_by(mut self, guard: Option<LeadGuard>) -> Inbox {
        self.guard = guard;
        self
    }

    /// How many times its watch has woken this process so far (see
    /// [`DirWatcher::events`]).
    pub fn wakeups(&self) -> u64 {
        self.watcher.as_ref().map_or(0, DirWatcher::events)
    }

    /// Reads new messages and sorts them.
    pub fn poll(&mut self) -> Result<()> {
        let fresh: Vec<Delivery> = self
            .store
            .mail()
            .read_unread(&self.me)?
            .into_iter()
            .filter(|d| !self.seen.contains(&d.key))
            .collect();
        let mut consumed = Vec::new();
        for d in fresh {
            self.seen.insert(d.key.clone());
            let e = &d.envelope;
            if let Some(why) = self.guard.as_mut().and_then(|g| g.vet(e)) {
                consumed.push(d.key.clone());
                tracing::warn!(
                    "dropping a message in the lead's name from {}'s inbox: {why}",
                    self.me
                );
                continue;
            }
            let for_model = |text: String| Mail {
                key: d.key.clone(),
                from: e.from.clone(),
                wrapped: wrap_message(&e.from, e.color.as_deref(), e.summary.as_deref(), &text),
                text,
            };
            let protocol = e.protocol();
            if let Some(p) = &protocol
                && let Some(why) = forged(p, &e.from)
            {
                consumed.push(d.key.clone());
                tracing::warn!("ignoring a {} from {}: {why}", p.kind(), e.from);
                continue;
            }
            match protocol {
                None => self.mail.push(for_model(e.text.clone())),
                Some(Protocol::ShutdownRequest(req)) => {
                    consumed.push(d.key.clone());
                    let target = shutdown_target(&req.request_id);
                    if e.from == LEAD && target == Some(self.me.as_str()) {
                        self.protocol.push_back(Incoming::Shutdown(req));
                    } else if e.from == LEAD {
                        // A request made for another teammate, copied here.
                        tracing::warn!(
                            "ignoring shutdown request {}: it names {}, not {}",
                            req.request_id,
                            target.unwrap_or("no one"),
                            self.me
                        );
                    } else {
                        tracing::warn!(
                            "ignoring a shutdown request from {}: only {LEAD} may ask",
                            e.from
                        );
                    }
                }
                Some(Protocol::PlanApprovalResponse(response)) => {
                    consumed.push(d.key.clone());
                    self.protocol.push_back(Incoming::PlanResponse {
                        from: e.from.clone(),
                        response,
                    });
                }
                Some(Protocol::PermissionResponse(response)) => {
                    consumed.push(d.key.clone());
                    self.protocol.push_back(Incoming::PermissionResponse {
                        from: e.from.clone(),
                        response,
                    });
                }
                Some(Protocol::TaskAssignment(t)) => self.mail.push(for_model(format!(
                    "{} assigned you task #{}: {}\n\n{}",
                    t.assigned_by, t.task_id, t.subject, t.description
                ))),
                Some(
                    Protocol::IdleNotification(_)
                    | Protocol::ShutdownApproved(_)
                    | Protocol::ShutdownRejected(_),
                ) => {
                    // Lead-bound lifecycle messages mean nothing to a teammate's model.
                    consumed.push(d.key.clone());
                }
                Some(other) => self.mail.push(for_model(other.describe())),
            }
        }
        self.store.mail().ack(&self.me, &consumed)?;
        Ok(())
    }

    pub fn next_protocol(&mut self) -> Option<Incoming> {
        self.protocol.pop_front()
    }

    pub fn has_mail(&self) -> bool {
        !self.mail.is_empty()
    }

    /// Hands every waiting message to the model (acknowledged at the next [`Inbox::commit`]).
    pub fn take_mail(&mut self) -> Vec<Mail> {
        let mail = std::mem::take(&mut self.mail);
        self.in_flight.extend(mail.iter().map(|m| m.key.clone()));
        mail
    }

    /// The keys of the mail taken and not yet acknowledged.
    pub fn in_flight(&self) -> &[String] {
        &self.in_flight
    }

    /// The model has seen everything taken so far: acknowledge it.
    pub fn commit(&mut self) -> Result<()> {
        if self.in_flight.is_empty() {
            return Ok(());
        }
        let keys = std::mem::take(&mut self.in_flight);
        self.store.mail().ack(&self.me, &keys)?;
        Ok(())
    }

    /// Waits until the inbox may have changed, at most `timeout`.
    pub async fn changed(&self, timeout: Duration) {
        let _ = tokio::time::timeout(timeout, self.wake.notified()).await;
    }
}
