//! The tmux client: a thin, synchronous layer over the tmux binary, one [`Tmux`] value per
//! server, with typed ids ([`ids`]), errors classified from tmux's stderr ([`error`]),
//! escaping ([`escape`]), the command builder ([`command`]), pane and session records
//! ([`pane`]), which server ([`server`]) and the server handle ([`client`]). Callers in
//! async code run it under `spawn_blocking`. Knows nothing of teams. Uses only `util`.
//!
//! Invariants (each one closes a pitfall measured on tmux 3.3a, `docs/design/reliability.md` §2):
//! * Every command names its server: `-L NAME`, `-S PATH`, or (only when neither is known)
//!   the default server. `$TMUX` never picks the server behind our back.
//! * Objects are addressed only by id (`$N`, `@N`, `%N`) captured with `-P -F`; names are
//!   looked up by exact comparison, because `-t alpha` prefix-matches `alpha-lead` and
//!   indexes renumber when a pane is killed.
//! * Programs start from argv after `--` and never through a shell: tmux execs two or more
//!   words directly but hands a single word to `sh -c`, so a one-word argv is run as
//!   `/usr/bin/env -- WORD`. `send-keys` is never used.
//! * Every argument passes [`escape::escape_arg`]: tmux's argument parser treats a trailing `;` as
//!   the end of the command, even after `--`. Every value tmux expands as a format (`-c`,
//!   `-s`, `-n`, `-T`) also passes [`escape::escape_format`], since `#(…)` there runs a shell command.
//!   Option values and `-e` values are not expanded and stay literal.
//! * Errors are classified from tmux's stderr into [`TmuxError`]; every tmux call has a
//!   time limit, so a hung server fails a call instead of hanging swarm.
//! * Panes swarm owns carry the pane options `@swarm-team`, `@swarm-agent` and `@swarm-pane`
//!   (the pane's own id). User options are inherited from window, session and global
//!   scope, so in a listing a tag only counts when `@swarm-pane` equals the pane's id: a
//!   `set -g @swarm-team …` or a tagged window cannot make a user's pane look like ours.
//!   Before killing, callers also read the pane-scope value ([`Tmux::own_pane_options`]),
//!   which nothing inherited can fake.
//! * `display-message` runs its format through strftime; [`Tmux::display`] escapes `%`.

pub mod client;
pub mod command;
pub mod error;
pub mod escape;
pub mod ids;
pub mod pane;
pub mod server;

pub use client::{Tmux, is_server_path};
pub use command::{Direction, Layout, NewSession, PaneSpec, Size, TmuxCommand};
pub use error::TmuxError;
pub use ids::{PaneId, SessionId, Target, WindowId};
pub use pane::{AGENT_OPTION, NewPane, PANE_OPTION, PaneRecord, TEAM_OPTION};
pub use server::{Caller, Server};
