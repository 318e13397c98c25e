//! What every route shares: the session's authority, the teams' hubs, the client's time
//! limits, the shutdown ladder's settings, and the background actions under way (so a
//! second click never starts a second one).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use swarm_team::life::shutdown::LadderOptions;

use crate::auth::Auth;
use crate::hub::Hubs;

/// What every route shares.
pub struct App {
    pub auth: Arc<Auth>,
    pub hubs: Hubs,
    /// How long a client may take to send a request's body.
    pub client_timeout: Duration,
    /// The shutdown ladder's settings, as `swarm shutdown` has them.
    pub ladder: LadderOptions,
    pub actions: InFlight,
}

/// Background actions under way, so a second click does not start a second one.
#[derive(Debug, Default)]
pub struct InFlight(Mutex<HashSet<String>>);

impl InFlight {
    /// Marks `key` as under way; false if it already was.
    pub(crate) fn start(&self, key: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_owned())
    }

    pub(crate) fn finish(&self, key: &str) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }
}
