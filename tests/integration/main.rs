//! swarm's integration tests: the real binaries, real files, real tmux, real HTTP on
//! loopback. One test binary; each module covers one capability.

mod harness;

mod agents;
mod approvals;
mod budgets;
mod cc_settings;
mod claude_live;
mod claude_mixed;
mod claude_real;
mod claude_spawn;
mod claude_wire;
mod cli_surface;
mod compaction;
mod concurrency;
mod engine;
mod hardening_cli;
mod hardening_store;
mod hardening_tasks;
mod hardening_tmux;
mod hooks;
mod layers;
mod lead_end;
mod lead_wake;
mod leases;
mod llm;
mod llm_openai;
mod llm_retry;
mod main_job;
mod merge_lead;
mod merge_queue;
mod model_server;
mod pane_snapshots;
mod rate_limits;
mod resume;
mod run_progress;
mod scale;
mod setup_cleanup;
mod store_cli;
mod team_spawn;
mod team_tmux;
mod team_window;
mod teammate;
mod tmux;
mod watch;
mod worktrees;
