//! tmux's object ids: [`SessionId`] (`$N`), [`WindowId`] (`@N`) and [`PaneId`] (`%N`), the
//! [`InvalidId`] error for a string that is not one, and [`Target`], what a `-t` flag may
//! name.
//!
//! Invariants: outside tests an id is made only by parsing its text form (as tmux prints it
//! with `-P -F`, in a listing or in `$TMUX_PANE`), which must be exactly its sigil followed
//! by decimal digits, so a name or an index never passes for an id. Only the id types implement [`Target`], so a
//! command can address an object by id and in no other way. Ids print back in tmux's own
//! form and order by their number, which only grows within one server's life.

use std::fmt;
use std::str::FromStr;

/// A string that is not a tmux id of the expected kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid tmux {kind} id {text:?}")]
pub struct InvalidId {
    pub kind: &'static str,
    pub text: String,
}

macro_rules! tmux_id {
    ($(#[$doc:meta])* $name:ident, $sigil:literal, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub(super) u32);

        impl $name {
            /// The number after the sigil; ids only grow within one server's life.
            pub fn number(self) -> u32 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", $sigil, self.0)
            }
        }

        impl FromStr for $name {
            type Err = InvalidId;

            fn from_str(s: &str) -> Result<$name, InvalidId> {
                s.strip_prefix($sigil)
                    .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|d| d.parse().ok())
                    .map($name)
                    .ok_or_else(|| InvalidId {
                        kind: $kind,
                        text: s.to_owned(),
                    })
            }
        }

        impl Target for $name {}
    };
}

/// Something a tmux `-t` flag can name: only ids, never names or indexes.
pub trait Target: fmt::Display {}

tmux_id!(
    /// A session id, `$N`.
    SessionId,
    "$",
    "session"
);
tmux_id!(
    /// A window id, `@N`.
    WindowId,
    "@",
    "window"
);
tmux_id!(
    /// A pane id, `%N`: unique across all sessions of one server, never reused by it.
    PaneId,
    "%",
    "pane"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_and_print() {
        assert_eq!("%12".parse::<PaneId>().unwrap().to_string(), "%12");
        assert_eq!("@0".parse::<WindowId>().unwrap().number(), 0);
        assert_eq!("$7".parse::<SessionId>().unwrap().to_string(), "$7");
        for bad in ["", "%", "12", "@1", "%1a", "% 1", "%-1"] {
            assert!(bad.parse::<PaneId>().is_err(), "{bad:?}");
        }
    }
}
