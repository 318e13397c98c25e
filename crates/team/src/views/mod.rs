//! The team as people see it in `swarm watch` and `swarm serve`: the task board
//! ([`board`]) and the message feed ([`feed`]).

pub mod board;
pub mod feed;
