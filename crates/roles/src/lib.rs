//! What runs in a pane: a teammate (`swarm teammate`), the lead (`swarm lead`: the
//! supervisor loop and the lead agent), and the one-agent `swarm agent -p`; what a resumed one does first.
//!
//! Uses `team` and everything below it.

pub mod lead;
pub mod resume;
pub mod solo;
pub mod teammate;
