//! The team's tool set, which the agent's engine calls like any other: SendMessage, the
//! task tools, and the lead's Agent and TeamStatus ([`tools`]); the lead's MergeQueue tool
//! ([`merge_tool`]); the lease warning a write gets ([`leases`]); and the task events that
//! run the user's hooks ([`task_events`]).

pub mod leases;
pub mod merge_tool;
pub mod task_events;
pub mod tools;
