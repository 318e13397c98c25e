//! A team at work in tmux: launching a teammate (the inherited argv and environment), its
//! window and layout, the liveness model, supervision of deaths, the shutdown ladder and
//! teardown, git worktrees and the merge queue that lands their branches, a run and its
//! report, the team tools the agents call (with the advisory file-lease warning on their
//! writes) and the task events that run the user's hooks, and what a teammate is told; the task board and the message feed as people see them.
//!
//! Uses `tmux`, `agent`, `config`, `store`, `llm` and `util`; never `roles` or `ui`.

pub mod board;
pub mod dialogs;
pub mod feed;
pub mod inherit;
pub mod launch;
pub mod launch_record;
pub mod layout;
pub mod leases;
pub mod merge;
pub mod merge_handback;
pub mod merge_tool;
pub mod progress;
pub mod prompt;
pub mod report;
pub mod resume;
pub mod run;
pub mod show;
pub mod shutdown;
pub mod status;
pub mod supervisor;
pub mod task_events;
pub mod teardown;
pub mod tools;
pub mod window;
pub mod worktree;
