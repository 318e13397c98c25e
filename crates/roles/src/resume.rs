//! What a resumed agent (started with `--resume` after its team stopped, see
//! [`swarm_team::life::resume`]) does before its first turn: take up its conversation from its
//! transcript, and acknowledge the mail already in it, so nothing is read twice. Shared by
//! the lead and the teammates; the lead's first turn is written here too.

use std::path::Path;

use crate::error::Result;
use swarm_agent::engine::Engine;
use swarm_store::Store;
use swarm_team::life::status::{self, TeamStatus};
use swarm_util::clock;
use swarm_util::names::AgentName;

/// Restores `agent`'s conversation from the transcript at `path` into `engine`; false
/// when there is nothing to restore (no transcript, or nothing said yet).
pub fn restore_conversation(
    store: &Store,
    agent: &AgentName,
    path: &Path,
    engine: &mut Engine,
) -> Result<bool> {
    let Some(restored) = swarm_agent::transcript::restore(path)? else {
        return Ok(false);
    };
    if restored.messages.is_empty() {
        return Ok(false);
    }
    store.mail().ack(agent, &restored.acked)?;
    engine.restore(restored);
    Ok(true)
}

/// A resumed lead's first turn: what happened and where the team stands. The goal is in
/// its restored conversation; without one (`restored` false), it is given again here.
pub fn lead_turn(
    seen: swarm_team::error::Result<TeamStatus>,
    goal: &str,
    restored: bool,
) -> String {
    let seen = seen
        .map(|s| status::render_for_width(&s, clock::now_ms(), 90))
        .unwrap_or_else(|e| format!("(the team's status could not be read: {e})"));
    let goal = if restored {
        String::new()
    } else {
        format!("Your conversation could not be restored. The team's goal was:\n{goal}\n\n")
    };
    format!(
        "You were resumed after the team stopped (the lead process ended before the work was done). {goal}\
         Teammates that had not finished were restarted with their conversations and keep their tasks; \
         tasks already completed stay completed: do not create them again. The team now:\n{seen}\n\
         Continue: use TaskList to see what is open, act on what needs you, then end your turn and wait for news."
    )
}
