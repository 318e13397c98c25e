//! The wait for a team's end, after `swarm run` or `swarm resume` started its lead:
//! attached to its window on a terminal, else telling progress on stderr and printing the
//! lead's report.

use std::io::{IsTerminal, Write};

use serde_json::json;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::output::print_json;
use swarm::error::Result;
use swarm_store::Store;
use swarm_team::runs::progress::Event;
use swarm_team::runs::run as team_run;
use swarm_util::clock;

/// What an unattached wait prints on stdout: the report as text, the report as JSON
/// (`--json`), or every event as a JSON line ending with the report (`--events`). Progress
/// lines go to stderr whichever it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speak {
    Text,
    Json,
    Events,
}

impl Speak {
    /// Tells one event: a timestamped line on stderr, and with `--events` its JSON line on
    /// stdout, flushed so a reader sees it at once.
    pub fn tell(self, event: &Event) {
        eprintln!("{} {}", clock::local_hms(clock::now_ms()), event.line());
        if self == Speak::Events {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", event.json_now());
            let _ = out.flush();
        }
    }
}

/// Whether the wait attaches to the team window: on a terminal, unless told not to.
pub fn attaches(no_attach: bool) -> bool {
    !no_attach && std::io::stdout().is_terminal()
}

/// Attaches to the team's window on a terminal (unless `no_attach`), else waits for the
/// lead's end and prints the report as `speak` says; returns the lead's exit code.
pub fn follow(
    ctx: &Ctx,
    store: &Store,
    window: &swarm_team::spawn::window::TeamWindow,
    no_attach: bool,
    speak: Speak,
) -> Result<u8> {
    let team = store.team();
    if attaches(no_attach) {
        window.attach(ctx.caller.inside())?;
        if team_run::lead_is_working(store) {
            println!(
                "detached; the team keeps working. `swarm attach {team}` to look again, `swarm status` for a summary."
            );
            return Ok(0);
        }
    }
    let code = team_run::follow_lead(
        store,
        window,
        &|line| eprintln!("{line}"),
        Some(&|event| speak.tell(event)),
    )?;
    let report = team_run::report(store);
    let result = team_run::lead_exit_reason(store);
    match speak {
        Speak::Text => println!("{report}"),
        Speak::Json => print_json(&json!({
            "team": team.as_str(),
            "code": code,
            "result": result,
            "report": report,
        })),
        Speak::Events => {
            let end = Event::Ended {
                code,
                result: result.clone(),
                report,
            };
            println!("{}", end.json_now());
        }
    }
    if code != 0
        && let Some(why) = result
    {
        eprintln!("swarm: the run of team {team} ended with exit code {code}: {why}");
    }
    Ok(code)
}
