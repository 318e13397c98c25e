//! Mailboxes: one JSON array of message envelopes per agent,
//! `teams/<team>/inboxes/<agent>.json`, in Claude Code's format.
//!
//! Invariants:
//! - every mutation (send, acknowledge, quarantine) holds both locks of the inbox and
//!   replaces the file atomically; a reader without the lock sees a whole array;
//! - a recipient must be on the roster: an unknown name is an error, never a new inbox;
//! - a message is acknowledged by its key ([`Delivery::key`]: the `msg_id`, or a digest of
//!   `from`+`timestamp`+`text` for Claude Code 2.1.88 entries that have none), only after it
//!   was put in front of its reader; acknowledged entries are appended to
//!   `<agent>.delivered.jsonl` and then removed from the live inbox, so the inbox holds only
//!   undelivered mail however long a team runs;
//! - entries are kept as raw JSON objects when rewritten, so fields swarm does not know
//!   (and entries it cannot interpret) survive untouched;
//! - a file that is not a JSON array is moved aside as `<agent>.json.corrupt-<stamp>` with a
//!   warning, and delivery continues with an empty inbox.
//!
//! [`envelope`] is a message's shape, [`send`](mod@send) the way in (through the recipient's
//! spool), [`inbox`] reading and acknowledging, both over `inbox_file` (the live file's
//! lock, read and quarantine), [`delivered`] the log of what was acknowledged, [`bell`] the
//! file a commit touches so that the recipient, and only it, wakes; [`lead_sig`] the
//! lead's signature on what it writes, with the team's key kept by [`lead_key`], which
//! also seals every delivery in the lead's name, whichever backend makes it.

pub mod bell;
pub mod delivered;
pub mod envelope;
pub mod inbox;
mod inbox_file;
pub mod lead_key;
pub mod lead_seen;
pub mod lead_sig;
pub mod send;

pub use delivered::Cursor;
pub(crate) use delivered::{agents_with_mail, read_delivered, read_delivered_since};
pub use envelope::{Delivery, Envelope, Sent, check_text};
pub use inbox::Version;
pub(crate) use inbox::{ack, read_all, read_unread, remove_inbox, version};
pub use send::recipients;
pub(crate) use send::{deliver, send};
