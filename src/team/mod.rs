//! A team at work in tmux: its window and layout, launching a teammate (the inherited
//! argv and environment), the liveness model, supervision of deaths, the shutdown ladder,
//! git worktrees, the final report, and the team tools the agents call.
//!
//! Uses `tmux`, `agent`, `config`, `store`, `llm` and `util`; never `roles` or `ui`.

pub mod inherit;
pub mod launch;
pub mod layout;
pub mod prompt;
pub mod report;
pub mod run;
pub mod shutdown;
pub mod status;
pub mod supervisor;
pub mod task_events;
pub mod teardown;
pub mod tools;
pub mod window;
pub mod worktree;
