//! What runs in a pane: a teammate (`swarm teammate`), the lead (`swarm lead`: the
//! supervisor loop and the lead agent), and the one-agent `swarm agent -p`; how each is
//! put together (`builder`, one way for all three); what a resumed one does first; who
//! really sent a message (`sender`, `lead_sig`).
//!
//! Uses `team`, `git`, `tmux`, `agent`, `config`, `store`, `llm` and `util`.

pub mod builder;
pub mod error;
pub mod heartbeat;
pub mod lead;
pub mod lead_sig;
pub mod resume;
pub mod sender;
pub mod solo;
pub mod teammate;

/// The first pause of an agent's loop while the team's database is away; each look that
/// finds it still away waits one more of these, up to ten.
pub(crate) const OUTAGE_BACKOFF: std::time::Duration = std::time::Duration::from_millis(500);
