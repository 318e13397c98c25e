//! The store: a team on disk, in Claude Code's layout and formats. Every path is built in
//! [`layout`]; names are validated in [`names`]; the roster, the mailboxes (with their
//! spool and delivered log), the task list, approvals, each agent's state and spend, the protocol
//! messages carried in mail, the lead lock, each pane's launch record, worktree records and a run's documents each
//! have a module. Every write and lock goes through `files`, with the root's settings.
//!
//! The layers above reach team files and their locks only through this module's public
//! operations. Uses `util` and, for the token figures in agent state and the
//! budget ledger, `llm`'s `Usage` and budget types.

pub mod approvals;
pub mod budget;
pub mod documents;
mod files;
pub mod launch_record;
pub mod layout;
pub mod lead;
pub mod mailbox;
pub mod merge_queue;
pub mod names;
pub mod protocol;
pub mod roster;
pub mod state;
pub mod tasks;
pub mod usage;
pub mod worktrees;
