//! What the `swarm` package's programs share: the error a command fails with
//! ([`error`]), and the one mapping of errors to exit codes ([`exit`]), which `swarm` and
//! the load generator both end with.

pub mod error;
pub mod exit;
