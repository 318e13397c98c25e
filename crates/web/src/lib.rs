//! `swarm serve`: the teams under a root in a browser, live. A page (embedded in the
//! binary, no build step) and the JSON API it uses: every team's members, task board,
//! message feed, pending approvals, merge queue, spend and panes, pushed to the page as
//! they change (server-sent events); and the actions a person takes there (decide a
//! request, send a message, shut a teammate down, retry a held merge), through the very
//! library calls the CLI makes. Webhook notifications when something needs a person.
//!
//! Invariants:
//! - Nobody gets at a team without the access token: every request but the page's own
//!   files carries it (as a bearer token, or the key of the session a `/?token=` visit
//!   trades it for, which the page keeps in its tab and sends in a header, never in a
//!   cookie); a session expires; an action comes from this origin ([`auth`]).
//! - No secret reaches a page or a log: the token is printed once, at start, by the
//!   caller; a session is named in records and logs by a label, never by its key; a
//!   webhook URL is logged by its host only.
//! - Reads and actions go through the store's seam ([`swarm_store::Store`]) and the team
//!   crate's functions, so an approval is decided exactly once whoever else decides it.
//! - Nothing here blocks the team: store calls run on blocking threads, notifications on
//!   their own tasks, and every connection, body and webhook has a time limit; idle
//!   connections make way for new ones ([`conns`]).

pub mod actions;
pub mod app;
pub mod assets;
pub mod auth;
pub mod conns;
pub mod error;
pub mod errors;
pub mod events;
pub mod hub;
pub mod metrics;
pub mod notify;
pub mod routes;
pub mod serve;
pub mod server;
pub mod tls;
pub mod view;

pub use auth::Secret;
pub use server::{Options, Server};
