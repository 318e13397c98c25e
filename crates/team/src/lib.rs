//! A team at work in tmux, in rooms by concern:
//!
//! - [`spawn`]: what a teammate inherits and the lead's own command line, launching agents
//!   into panes, launch records, the team window and its layout, what an agent is told;
//! - [`life`]: liveness, supervision of deaths, the shutdown ladder, resume and teardown,
//!   and the first-run dialogs that can hold a Claude Code teammate;
//! - [`toolset`]: the team tools the agents call (with the advisory file-lease warning on
//!   their writes) and the task events that run the user's hooks;
//! - [`runs`]: a run toward a goal, the progress it tells, and its report;
//! - [`views`]: the task board and the message feed as people see them.
//!
//! A caller names a module by its room (`swarm_team::spawn::launch`,
//! `swarm_team::life::status`): the rooms are real to callers. Teammates' worktrees and the
//! merge queue are their own crate, `swarm_git`.
//!
//! Uses `git`, `hosts`, `tmux`, `agent`, `config`, `store`, `llm` and `util`; never
//! `roles` or `ui`.

pub mod error;
pub mod life;
pub mod runs;
pub mod spawn;
pub mod toolset;
pub mod views;
