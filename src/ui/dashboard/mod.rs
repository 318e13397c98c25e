//! `swarm watch`: the live terminal dashboard of a team (members, tasks, messages,
//! approvals), redrawn when the team's files change. Logic lives in the files below;
//! this module only re-exports.

pub mod app;
pub mod model;
pub mod ui;
pub mod view;

// The view's parts: one file per panel, and what the panels share.
mod panel_approvals;
mod panel_feed;
mod panel_members;
mod panel_tasks;
mod style;

pub use app::{App, Jumper, run};
pub use model::Source;

#[cfg(test)]
mod fixture;
#[cfg(test)]
mod keys_test;
