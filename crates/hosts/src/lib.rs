//! The hosts a team's teammates may run on, besides the lead's own, and how swarm reaches
//! them: [`registry`] keeps them (`swarm host add`, one file per user under the root),
//! [`ssh`] runs a command on one by argv through the system's `ssh` (the user's keys and
//! `~/.ssh/config`; swarm stores no key and no password), and [`check`] says whether a host
//! can take teammates (ssh, tmux, git, the same swarm, the team's database, the project).
//!
//! Nothing here knows a team: the layers above place teammates on hosts.

pub mod check;
pub mod error;
pub mod registry;
pub mod ssh;

pub use registry::{Host, Hosts};
pub use ssh::Ssh;
