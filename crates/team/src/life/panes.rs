//! The panes of a tmux server as last listed, listed again only when something suggests
//! they changed.
//!
//! A lead looks at its team twice a second, and `tmux list-panes -a` is a process started
//! and a server formatting every pane each time: at 128 teammates that was most of an idle
//! team's cost. A list is reused while all of these hold:
//! - it is younger than [`REUSE_FOR`];
//! - the roster names the same members with the same panes, and what each member said of
//!   itself (its state's pid, activity and exit) is the same: a member that stops writes
//!   so before its process ends;
//! - the server's process is alive, and every pane in it still has its first process (a
//!   zombie counts: tmux reaps its children within moments, and the next look sees it
//!   gone): a pane closed, killed or left dead takes its process with it (tmux signals
//!   it), and a server killed takes its panes (whose processes may outlive it a moment);
//! - no pane in it is dead (a dead pane's exit status can lag; see
//!   [`Tmux::list_panes`]).
//!
//! What a reused list can miss for at most [`REUSE_FOR`]: a pane moved or resized, a pane
//! of no member, a pane whose process ignored the hangup of its closing.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use swarm_store::roster::TeamConfig;
use swarm_tmux::{PaneRecord, Tmux, TmuxError};

/// How long a list is reused at most.
pub const REUSE_FOR: Duration = Duration::from_secs(5);

struct Listed {
    at: Instant,
    roster: Vec<(String, String)>,
    said: Vec<String>,
    panes: Vec<PaneRecord>,
}

/// Last lists by server (its flag, as tmux is given it) and team.
static LISTED: Mutex<Option<HashMap<(String, String), Listed>>> = Mutex::new(None);

/// The server's panes: the last list of them for this team if nothing suggests a change,
/// else a fresh one. `said`: what each member's state says of it, in roster order, in any
/// form that changes when the state does. A server on another host is always listed
/// afresh.
pub fn list(
    tmux: &Tmux,
    config: &TeamConfig,
    said: &[String],
) -> Result<Vec<PaneRecord>, TmuxError> {
    if tmux.is_remote() {
        return tmux.list_panes();
    }
    let key = (tmux.server().to_string(), config.name.clone());
    let roster: Vec<(String, String)> = config
        .members
        .iter()
        .map(|m| (m.name.clone(), m.tmux_pane_id.clone()))
        .collect();
    {
        let listed = LISTED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(last) = listed.as_ref().and_then(|l| l.get(&key))
            && last.at.elapsed() < REUSE_FOR
            && last.roster == roster
            && last.said == said
            && last
                .panes
                .first()
                .is_none_or(|p| swarm_util::process::is_alive(p.server_pid))
            && last
                .panes
                .iter()
                .all(|p| !p.dead && swarm_util::process::exists(p.pid))
        {
            return Ok(last.panes.clone());
        }
    }
    let panes = tmux.list_panes()?;
    let fresh = Listed {
        at: Instant::now(),
        roster,
        said: said.to_vec(),
        panes: panes.clone(),
    };
    LISTED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(key, fresh);
    Ok(panes)
}
