//! A team and git: each isolated teammate's worktree and branch ([`worktree`]), the merge
//! queue that lands their branches one at a time behind the project's check ([`merge`]),
//! and a held merge handed back to the teammate whose branch it is ([`merge_handback`]).

pub mod merge;
pub mod merge_handback;
pub mod worktree;
