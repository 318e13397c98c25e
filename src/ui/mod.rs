//! The front ends: the `swarm` command line and the live dashboard. Each command parses
//! its arguments, calls the library, and prints.
//!
//! The top layer: may use every other.

pub mod cli;
pub mod dashboard;
