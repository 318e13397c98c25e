//! Claude Code's `isActive` for a teammate, written to the roster by a thread of its own.
//!
//! Every teammate of a team shares one roster, under one lock, and a broadcast makes all of
//! them active at the same moment: waiting there before its model call, the last of 64
//! would answer only after 63 durable roster writes. So the flag is handed to a writer
//! thread and the teammate goes on at once. The writer waits [`SETTLE`] after a wish and
//! writes only the latest one then, if it differs from what the roster has: a quick turn
//! (`true`, then `false` a few milliseconds later) writes nothing, a long one is seen a
//! quarter of a second late. Wishes are written in order, so the roster ends with the last
//! one; [`ActiveFlag::finish`] waits until it has.

use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use swarm_store::Store;
use swarm_util::names::AgentName;

/// How long a wish waits for the next before it is written: a flag that flips back within
/// it (a turn of a few milliseconds) costs the shared roster nothing.
const SETTLE: Duration = Duration::from_millis(250);

pub(super) struct ActiveFlag {
    wishes: Option<Sender<bool>>,
    writer: Option<JoinHandle<()>>,
}

impl ActiveFlag {
    /// A writer for `name`'s flag, which the roster has as `written` now.
    pub(super) fn new(store: &Store, name: &AgentName, written: bool) -> Self {
        let (tx, rx) = mpsc::channel::<bool>();
        let (store, name) = (store.clone(), name.to_string());
        let writer = std::thread::Builder::new()
            .name("isActive".to_owned())
            .spawn(move || {
                let mut written = written;
                while let Ok(mut want) = rx.recv() {
                    let deadline = Instant::now() + SETTLE;
                    let left = || deadline.saturating_duration_since(Instant::now());
                    while let Ok(later) = rx.recv_timeout(left()) {
                        want = later;
                    }
                    if want == written {
                        continue;
                    }
                    match store
                        .roster()
                        .update_member(&name, |m| m.is_active = Some(want))
                    {
                        Ok(()) => written = want,
                        Err(e) => tracing::warn!("failed to update the roster: {e}"),
                    }
                }
            });
        match writer {
            Ok(writer) => ActiveFlag {
                wishes: Some(tx),
                writer: Some(writer),
            },
            Err(e) => {
                tracing::warn!("failed to start the roster writer ({e}); isActive stays as it is");
                ActiveFlag {
                    wishes: None,
                    writer: None,
                }
            }
        }
    }

    /// Asks for the flag to be `active`, without waiting for the write.
    pub(super) fn set(&self, active: bool) {
        if let Some(tx) = &self.wishes {
            let _ = tx.send(active);
        }
    }

    /// Waits until every wish so far is written; later ones are dropped.
    pub(super) fn finish(&mut self) {
        self.wishes = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}
