//! The scripted model server: a real HTTP server on loopback that answers Messages API (and
//! chat completions) requests from a script, so tests and demos run the real client code
//! without reaching any model.

pub mod builder;
pub mod matcher;
pub mod render;
pub mod script;
pub mod server;

pub use matcher::Outcome;
pub use script::{Fault, Raw, Reply, Rule, Script};
pub use server::{ModelServer, RecordedRequest};
