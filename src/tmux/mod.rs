//! The tmux client: typed ids, errors classified from tmux's stderr, escaping, the
//! command builder, pane records and the [`Tmux`] server handle.
//!
//! Knows nothing of teams. Uses only `util`.

pub mod client;

pub use client::*;
