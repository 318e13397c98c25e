//! An agent process's heartbeat, on a team whose processes beat (see
//! `swarm_store::liveness`): registered once, then a beat every `BEAT_EVERY`, on a thread
//! of its own so a busy loop or a blocking call never delays one.
//!
//! Invariants:
//! - a beat that cannot reach the store (the database away) is only logged: the next one
//!   tries again, and the timeout is several beats;
//! - when the store says this process was declared dead, the thread says so once, calls
//!   `on_fenced` and stops beating: the process is to end, since the store refuses its
//!   writes and its tasks are someone else's;
//! - dropping the [`Beater`] stops the thread and waits for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use swarm_store::Store;
use swarm_store::liveness::BEAT_EVERY;
use swarm_util::names::AgentName;

/// The beating thread of one registered process.
pub struct Beater {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Beater {
    /// Registers this process as `agent`'s newest and starts beating; returns its fencing
    /// token, or `None` (and beats nothing) on a backend whose liveness is the pid.
    pub fn start(
        store: &Store,
        agent: &AgentName,
        on_fenced: impl Fn() + Send + 'static,
    ) -> Result<Option<(i64, Beater)>> {
        let Some(token) = store.agents().register_process(agent)? else {
            return Ok(None);
        };
        tracing::info!("registered as process {token} of {agent}");
        let stop = Arc::new(AtomicBool::new(false));
        let (store, stopping) = (store.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("swarm-heartbeat".into())
            .spawn(move || beat(&store, token, &stopping, on_fenced))
            .map_err(|e| Error::Runtime(format!("failed to start the heartbeat: {e}")))?;
        let beater = Beater {
            stop,
            thread: Some(thread),
        };
        Ok(Some((token, beater)))
    }
}

fn beat(store: &Store, token: i64, stop: &AtomicBool, on_fenced: impl Fn()) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(BEAT_EVERY);
        if stop.load(Ordering::Relaxed) {
            return;
        }
        match store.agents().heartbeat(token) {
            Ok(()) => {}
            Err(e @ swarm_store::error::Error::Fenced(_)) => {
                tracing::error!("{e}");
                on_fenced();
                return;
            }
            Err(e) => tracing::warn!("failed to beat: {e}"),
        }
    }
}

impl Drop for Beater {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}
