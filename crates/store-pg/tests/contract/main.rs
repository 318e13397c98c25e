//! The store's contract: one suite of tests, each run against the file store and against
//! PostgreSQL (`contract!` makes a `file` and a `postgres` test of each), so the two
//! backends cannot behave differently without a test saying so. A test that holds for one
//! backend only says why, beside it.

mod agents;
mod approvals;
mod backends;
mod budget;
mod host_rights;
mod mail;
mod merge_queue;
mod postgres_only;
mod rate_gate;
mod records;
mod roster;
mod tasks;
mod watch;

/// For each contract `fn name(open: &backends::Opener)`, a module `name` with a test per
/// backend.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        $(mod $name {
            #[test]
            fn file() {
                super::$name(&crate::backends::file());
            }
            #[test]
            fn postgres() {
                if let Some(team) = crate::backends::postgres() {
                    super::$name(&team);
                }
            }
        })*
    };
}
pub(crate) use contract;
