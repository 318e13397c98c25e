//! A team at work in tmux, in rooms by concern:
//!
//! - [`spawn`]: what a teammate inherits and the lead's own command line, launching agents
//!   into panes, launch records, the team window and its layout, what an agent is told;
//! - [`life`]: liveness, supervision of deaths, the shutdown ladder, resume and teardown,
//!   and the first-run dialogs that can hold a Claude Code teammate;
//! - [`git`]: teammates' worktrees, the merge queue that lands their branches, hand-backs;
//! - [`toolset`]: the team tools the agents call (with the advisory file-lease warning on
//!   their writes) and the task events that run the user's hooks;
//! - [`runs`]: a run toward a goal, the progress it tells, and its report;
//! - [`views`]: the task board and the message feed as people see them.
//!
//! Each module is also reachable from the crate root (`swarm_team::launch`,
//! `swarm_team::status`, ...), which is how the crates above name them.
//!
//! Uses `tmux`, `agent`, `config`, `store`, `llm` and `util`; never `roles` or `ui`.

pub mod git;
pub mod life;
pub mod runs;
pub mod spawn;
pub mod toolset;
pub mod views;

pub use git::{merge, merge_handback, remote_worktree, settle, worktree};
pub use life::{dialogs, resume, shutdown, status, supervisor, teardown};
pub use runs::{progress, report, run};
pub use spawn::{inherit, launch, launch_record, layout, prompt, show, window};
pub use toolset::{leases, merge_tool, task_events, tools};
pub use views::{board, feed};
