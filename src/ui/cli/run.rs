//! `swarm run` and `swarm demo`: a goal, a lead agent in the team window, and the wait for
//! its report.

use std::io::{IsTerminal, Write};

use serde_json::json;

use crate::ui::cli::args::{DemoArgs, RunArgs};
use crate::ui::cli::context::{Ctx, lead_dir, working_dir};
use crate::ui::cli::lead::inherited;
use crate::ui::cli::output::print_json;
use swarm_demo::run::{self as demo_run, Demo};
use swarm_llm::budget::Limits;
use swarm_llm::{Usage, estimate_cost_usd};
use swarm_store::names::TeamName;
use swarm_team::progress::Event;
use swarm_team::run::{self as team_run, Goal};
use swarm_util::clock;
use swarm_util::error::{Error, Result};

pub fn run(ctx: &Ctx, args: RunArgs) -> Result<u8> {
    if args.goal.trim().is_empty() {
        return Err(Error::usage(
            "give the team a goal: swarm run \"what to build\"",
        ));
    }
    if args.teammates == 0 {
        return Err(Error::usage("--teammates must be at least 1"));
    }
    // Fail here, not in the pane: a missing key or a bad provider is the person's to fix.
    let llm = ctx.llm_config(&args.model)?;
    let budget = args.budget.limits();
    warn_unpriced(&budget, &llm.model);
    let here = working_dir(args.cwd.as_deref())?;
    if let Some(code) = super::resume::offer(ctx, &here)? {
        return Ok(code);
    }
    let team = match &ctx.global.team {
        Some(n) => TeamName::new(n)?,
        None => team_run::team_from_goal(&args.goal)?,
    };
    let cwd = here;
    let lead = ctx.with_engine(
        inherited(ctx, &args.model, &args.permissions)?,
        &args.engine,
    )?;
    let launcher = ctx.launcher(&team, lead, cwd)?;
    let window = team_run::launch(
        &launcher,
        &Goal {
            text: &args.goal,
            approver: args.approver,
            teammates: args.teammates,
            budget,
            merge: args.merge.options(false),
        },
    )?;
    let speak = if args.events {
        Speak::Events
    } else if ctx.json() {
        Speak::Json
    } else {
        Speak::Text
    };
    // Machine output is for scripts: nothing to attach to.
    let no_attach = args.no_attach || speak != Speak::Text;
    let started = Event::Started {
        team: team.to_string(),
    };
    if attaches(no_attach) {
        println!("{}", started.line());
    } else {
        speak.tell(&started);
    }
    follow_speaking(ctx, &team, &window, no_attach, speak)
        .inspect(|_| swarm_team::teardown::close_finished(&ctx.root, &window, args.keep))
}

/// What an unattached wait prints on stdout: the report as text, the report as JSON
/// (`--json`), or every event as a JSON line ending with the report (`--events`). Progress
/// lines go to stderr whichever it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Speak {
    Text,
    Json,
    Events,
}

impl Speak {
    /// Tells one event: a timestamped line on stderr, and with `--events` its JSON line on
    /// stdout, flushed so a reader sees it at once.
    fn tell(self, event: &Event) {
        eprintln!("{} {}", clock::local_hms(clock::now_ms()), event.line());
        if self == Speak::Events {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", event.json_now());
            let _ = out.flush();
        }
    }
}

/// Whether the wait attaches to the team window: on a terminal, unless told not to.
fn attaches(no_attach: bool) -> bool {
    !no_attach && std::io::stdout().is_terminal()
}

/// Attaches to the team's window on a terminal (unless `no_attach`), else waits for the
/// lead's end and prints the report; returns the lead's exit code.
pub fn follow(
    ctx: &Ctx,
    team: &TeamName,
    window: &swarm_team::window::TeamWindow,
    no_attach: bool,
) -> Result<u8> {
    follow_speaking(ctx, team, window, no_attach, Speak::Text)
}

fn follow_speaking(
    ctx: &Ctx,
    team: &TeamName,
    window: &swarm_team::window::TeamWindow,
    no_attach: bool,
    speak: Speak,
) -> Result<u8> {
    if attaches(no_attach) {
        window.attach(ctx.caller.inside())?;
        if team_run::lead_is_working(&ctx.root, team) {
            println!(
                "detached; the team keeps working. `swarm attach {team}` to look again, `swarm status` for a summary."
            );
            return Ok(0);
        }
    }
    let code = team_run::follow_lead(
        &ctx.root,
        team,
        window,
        &|line| eprintln!("{line}"),
        Some(&|event| speak.tell(event)),
    )?;
    let report = team_run::report(&ctx.root, team);
    let result = team_run::lead_exit_reason(&ctx.root, team);
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

/// Says once, before anything starts, that a dollar budget cannot see `model`'s tokens.
pub fn warn_unpriced(budget: &Limits, model: &str) {
    if budget.usd.is_some() && estimate_cost_usd(model, &Usage::default()).is_none() {
        eprintln!(
            "swarm: warning: no price is known for model {model}: --budget-usd does not count its tokens{}",
            if budget.tokens.is_some() {
                "; --budget-tokens still limits them"
            } else {
                "; give --budget-tokens to limit them"
            }
        );
    }
}

pub fn demo(ctx: &Ctx, args: DemoArgs) -> Result<u8> {
    let team = demo_run::team_name()?;
    let launcher = ctx.launcher(&team, ctx.lead_settings()?, lead_dir())?;
    let demo = Demo {
        launcher,
        attach: !args.no_attach && std::io::stdout().is_terminal(),
        teammates: args.teammates,
        dir: args
            .dir
            .unwrap_or_else(|| demo_run::scratch_dir(&std::env::temp_dir())),
        keep: args.keep,
        job: args.job,
    };
    demo_run::run(demo, &|line| println!("{line}"), &|line| {
        eprintln!("{line}")
    })
}
