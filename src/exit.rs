//! The one place errors meet exit codes: [`exit_code`] says which code an error ends the
//! process with, whatever layer it came from, and [`CODES`] says what each code means, as
//! the README's table must (a test reads that table and compares).
//!
//! An error is read from the outside in: each layer's error either is a case with a
//! meaning of its own, or carries another layer's (its source), which is read next. Each
//! code has one meaning.

use swarm_util::error::{Error as BaseError, exit};

/// Every documented exit code and its one meaning, as the README's table has it.
pub const CODES: [(u8, &str); 13] = [
    (exit::SUCCESS, "success"),
    (
        exit::FAILURE,
        "failure: I/O error, a file swarm could not read and would not rewrite, or a launch record the lead did not sign",
    ),
    (
        exit::USAGE,
        "usage: bad arguments or input (invalid name, oversized message, bad flag value)",
    ),
    (exit::NOT_FOUND, "not found: team, member, task or request"),
    (
        exit::CONFLICT,
        "conflict: already claimed, blocked, busy, already exists, already resolved, teammates still running, branches the merge queue holds, a teammate declared dead (its heartbeat stopped) that came back",
    ),
    (
        exit::LOCK_TIMEOUT,
        "lock timeout: a shared file (or a row of the team's database) stayed locked longer than `SWARM_LOCK_TIMEOUT_MS` (for `send`: unless the message says it was already taken for delivery, it was not sent)",
    ),
    (exit::TMUX, "tmux: no server, pane gone, no room for a pane"),
    (
        exit::MODEL,
        "model: the LLM API failed after retries or refused the request; a run that failed",
    ),
    (
        exit::CHECK_FAILED,
        "check failed: a job ran but its check did not pass (`swarm demo`, `swarm host check`)",
    ),
    (
        exit::BUDGET,
        "budget: a `--budget-usd`/`--budget-tokens` limit was reached; the run (or teammate) stopped cleanly, its open tasks back to pending",
    ),
    (
        exit::NO_READY_TASK,
        "no ready task: `swarm task next` found nothing to claim",
    ),
    (
        exit::UNREACHABLE,
        "unreachable: the team's PostgreSQL database could not be reached, refused the connection, or has a schema this swarm does not know; or a host could not be reached over ssh",
    ),
    (exit::INTERRUPTED, "interrupted (a signal)"),
];

/// The exit code `e` ends the process with (see the module comment).
pub fn exit_code(e: &(dyn std::error::Error + 'static)) -> u8 {
    use swarm_store::error::Error as Store;
    use swarm_team::error::Error as Team;
    let mut at = Some(e);
    while let Some(e) = at {
        at = e.source();
        if let Some(e) = e.downcast_ref::<BaseError>() {
            return match e {
                BaseError::Usage(_) | BaseError::InvalidName { .. } => exit::USAGE,
                BaseError::NotFound(_) => exit::NOT_FOUND,
                BaseError::Conflict(_) => exit::CONFLICT,
                BaseError::LockTimeout { .. } => exit::LOCK_TIMEOUT,
                BaseError::Interrupted => exit::INTERRUPTED,
                BaseError::Io { .. } | BaseError::Corrupt { .. } | BaseError::Symlink { .. } => {
                    exit::FAILURE
                }
            };
        }
        if let Some(e) = e.downcast_ref::<Store>() {
            match e {
                Store::Base(_) => continue,
                Store::SendInDoubt { .. } | Store::Busy(_) => return exit::LOCK_TIMEOUT,
                Store::Unavailable(_) => return exit::UNREACHABLE,
                Store::Fenced(_) => return exit::CONFLICT,
                Store::Pointer { .. } | Store::NoServers { .. } => return exit::FAILURE,
                Store::LeadKey(_) | Store::Database(_) => return exit::FAILURE,
            }
        }
        if let Some(e) = e.downcast_ref::<swarm_tmux::TmuxError>() {
            return match e {
                swarm_tmux::TmuxError::SessionExists { .. } => exit::CONFLICT,
                swarm_tmux::TmuxError::InvalidSpec(_) => exit::USAGE,
                _ => exit::TMUX,
            };
        }
        if let Some(e) = e.downcast_ref::<swarm_llm::LlmError>() {
            return match e {
                swarm_llm::LlmError::Config(_) => exit::USAGE,
                swarm_llm::LlmError::Cancelled => exit::INTERRUPTED,
                swarm_llm::LlmError::BudgetExhausted(_) => exit::BUDGET,
                _ => exit::MODEL,
            };
        }
        if let Some(swarm_hosts::error::Error::Unreachable(_)) = e.downcast_ref() {
            return exit::UNREACHABLE;
        }
        if let Some(e) = e.downcast_ref::<Team>() {
            match e {
                Team::Pane(_) => return exit::TMUX,
                Team::LeadGone(_) => return exit::MODEL,
                Team::OnHost(_)
                | Team::StillRunning(_)
                | Team::Unsigned(_)
                | Team::Hook(_)
                | Team::Runtime(_) => {
                    return exit::FAILURE;
                }
                _ => continue,
            }
        }
        if let Some(swarm_roles::error::Error::Unfinished(_)) = e.downcast_ref() {
            return exit::MODEL;
        }
        if let Some(swarm_demo::error::Error::CheckFailed(_)) = e.downcast_ref() {
            return exit::CHECK_FAILED;
        }
        match e.downcast_ref::<crate::error::Error>() {
            Some(crate::error::Error::CheckFailed(_)) => return exit::CHECK_FAILED,
            Some(crate::error::Error::Unreachable(_)) => return exit::UNREACHABLE,
            _ => {}
        }
    }
    exit::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;
    use swarm_store::error::Error as Store;
    use swarm_team::error::Error as Team;

    /// A representative error of each kind, as deep as it arrives, and the code it ends with.
    #[test]
    fn each_kind_of_error_ends_with_its_own_code() {
        let front = |e: crate::error::Error| exit_code(&e);
        let base = |e: BaseError| front(crate::error::Error::Base(e));
        assert_eq!(base(BaseError::Usage("bad".into())), exit::USAGE);
        assert_eq!(base(BaseError::NotFound("no team".into())), exit::NOT_FOUND);
        assert_eq!(base(BaseError::Conflict("claimed".into())), exit::CONFLICT);
        assert_eq!(base(BaseError::Interrupted), exit::INTERRUPTED);
        // A store error carried up through the team layer keeps its kind.
        let through_team = |e: Store| front(Team::Store(e).into());
        assert_eq!(
            through_team(Store::Base(BaseError::NotFound("bob".into()))),
            exit::NOT_FOUND
        );
        assert_eq!(
            through_team(Store::Busy("a row".into())),
            exit::LOCK_TIMEOUT
        );
        assert_eq!(
            through_team(Store::Unavailable("db at h".into())),
            exit::UNREACHABLE
        );
        assert_eq!(
            through_team(Store::Fenced("old lead".into())),
            exit::CONFLICT
        );
        let host = swarm_hosts::error::Error::Unreachable("h1".into());
        assert_eq!(front(Team::Host(host).into()), exit::UNREACHABLE);
        let tmux = swarm_tmux::TmuxError::NoServer {
            command: "tmux ls".into(),
            server: "s".into(),
            stderr: String::new(),
        };
        assert_eq!(front(Team::Tmux(tmux).into()), exit::TMUX);
        let spent = swarm_llm::LlmError::BudgetExhausted("spent".into());
        assert_eq!(front(spent.into()), exit::BUDGET);
        let unfinished = swarm_roles::error::Error::Unfinished("run failed".into());
        assert_eq!(front(unfinished.into()), exit::MODEL);
        let failed = swarm_demo::error::Error::CheckFailed("tests fail".into());
        assert_eq!(front(failed.into()), exit::CHECK_FAILED);
        assert_eq!(
            front(crate::error::Error::Runtime("no runtime".into())),
            exit::FAILURE
        );
    }

    /// The README's exit-code table says what [`CODES`] says, row for row.
    #[test]
    fn the_readme_table_is_the_codes_table() {
        let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"));
        let table = readme
            .split("| code | meaning |\n|---|---|\n")
            .nth(1)
            .expect("the README has an exit-code table");
        let rows: Vec<(u8, &str)> = table
            .lines()
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                let cells: Vec<&str> = l.trim_matches('|').split(" | ").collect();
                (cells[0].trim().parse().unwrap(), cells[1].trim())
            })
            .collect();
        assert_eq!(rows, CODES.to_vec());
    }
}
