//! A team and git: each isolated teammate's worktree and branch ([`worktree`]), the merge
//! queue that lands their branches one at a time behind the project's check ([`merge`]),
//! a held merge handed back to the teammate whose branch it is ([`merge_handback`]), the
//! worktrees of teammates on other hosts ([`remote_worktree`]), and what becomes of a
//! worktree when its teammate stops, wherever it is ([`settle`]).
//!
//! The only user of `git2` in the house; everything else it does with git runs the `git`
//! binary by argv, here or on a host over ssh.
//!
//! Uses `hosts`, `config`, `store` and `util`; never `team`, `tmux` or `roles`.

pub mod error;
pub mod merge;
pub mod merge_handback;
pub mod remote_worktree;
pub mod settle;
pub mod worktree;
