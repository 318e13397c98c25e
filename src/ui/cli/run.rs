//! `swarm run` and `swarm demo`: a goal, a lead agent in the team window, and the wait for
//! its report.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::config::permissions::PermissionMode;
use crate::demo::job as demo;
use crate::roles::lead::agent::Approver;
use crate::store::layout::Root;
use crate::store::names::{AgentName, TeamName};
use crate::store::roster;
use crate::store::state::{self, Activity};
use crate::team::inherit::LeadSettings;
use crate::team::launch::{self as spawn, Place};
use crate::team::window::TeamWindow;
use crate::ui::cli::args::{DemoArgs, RunArgs};
use crate::ui::cli::context::{Ctx, working_dir};
use crate::ui::cli::ops::{env_map, inside_tmux, lead_settings, settings_from, team_tmux};
use crate::util::atomic;
use crate::util::error::{Error, Result, exit};

/// What a run starts with.
struct Launch {
    team: TeamName,
    goal: String,
    cwd: PathBuf,
    settings: LeadSettings,
    env: BTreeMap<String, String>,
    approver: Approver,
    teammates: usize,
}

/// Creates the team and opens its window with the lead agent in the first pane.
fn launch(ctx: &Ctx, l: &Launch) -> Result<TeamWindow> {
    let description = l
        .goal
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(120)
        .collect::<String>();
    roster::create(&ctx.root, &l.team, Some(description), &l.cwd)?;
    let goal_file = ctx.root.team_dir(&l.team).join("goal.md");
    atomic::write(&goal_file, l.goal.as_bytes())?;
    let extra = vec![
        format!("--goal-file={}", goal_file.display()),
        format!(
            "--approver={}",
            match l.approver {
                Approver::Lead => "lead",
                Approver::Human => "human",
            }
        ),
        format!("--teammates={}", l.teammates),
        format!("--cwd={}", l.cwd.display()),
    ];
    let mut lead = spawn::lead_command(&l.team, &l.settings, &l.env, &extra);
    lead.cwd = l.cwd.clone();
    let tmux = team_tmux(ctx, &l.team)?;
    let (window, _) = spawn::ensure_window(
        &ctx.root,
        &l.team,
        &Place {
            tmux: &tmux,
            inside_tmux: inside_tmux(),
        },
        &lead,
    )?;
    Ok(window)
}

/// Waits until the team's lead has finished; returns its exit code. Ctrl-C asks the lead
/// to stop (it shuts the team down first); a second one stops waiting.
fn wait_for_lead(root: &Root, team: &TeamName, window: &TeamWindow) -> Result<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("failed to start the async runtime: {e}")))?;
    runtime.block_on(async {
        let started = Instant::now();
        let mut interrupts = 0;
        loop {
            let lead_state = state::read(root, team, &AgentName::lead());
            if let Some(s) = &lead_state {
                if s.activity == Activity::Exited {
                    return Ok(s.exit.as_ref().map(|e| u8::try_from(e.code).unwrap_or(1)).unwrap_or(0));
                }
                if !s.process_alive() {
                    return Err(Error::Other(format!(
                        "the lead of team '{team}' stopped without finishing; see {}",
                        root.logs_dir(team).join("team-lead.log").display()
                    )));
                }
            } else if started.elapsed() > Duration::from_secs(30) {
                let pane = window.lead_pane().ok().flatten();
                let text = pane.and_then(|p| window.tmux().capture_pane(p, None).ok()).unwrap_or_default();
                return Err(Error::Other(format!(
                    "the lead of team '{team}' did not start: {}",
                    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output")
                )));
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                _ = tokio::signal::ctrl_c() => {
                    interrupts += 1;
                    if interrupts > 1 {
                        return Ok(exit::INTERRUPTED);
                    }
                    eprintln!("\nstopping: the lead shuts the team down (Ctrl-C again to stop waiting)");
                    if let Some(pid) = lead_state.map(|s| s.pid) {
                        crate::util::process::signal(pid, nix::sys::signal::Signal::SIGTERM);
                    }
                }
            }
        }
    })
}

fn team_from_goal(goal: &str) -> Result<TeamName> {
    let words: Vec<String> = goal
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(3)
        .map(|w| w.to_ascii_lowercase())
        .collect();
    let stem = if words.is_empty() {
        "run".to_owned()
    } else {
        words.join("-")
    };
    let stem: String = stem.chars().take(40).collect();
    TeamName::new(&format!("{stem}-{:04x}", fastrand::u16(..)))
}

fn print_report(root: &Root, team: &TeamName) {
    match std::fs::read_to_string(root.team_dir(team).join("report.md")) {
        Ok(text) => println!("{text}"),
        Err(_) => println!("(no report: the lead did not finish its work)"),
    }
}

pub fn run(ctx: &Ctx, args: RunArgs) -> Result<u8> {
    if args.goal.trim().is_empty() {
        return Err(Error::usage(
            "give the team a goal: swarm run \"what to build\"",
        ));
    }
    if args.teammates == 0 {
        return Err(Error::usage("--teammates must be at least 1"));
    }
    let approver: Approver = args.approver.parse()?;
    // Fail here, not in the pane: a missing key or a bad provider is the person's to fix.
    crate::ui::cli::agent::llm_config(&args.model)?;
    let team = match &ctx.global.team {
        Some(n) => TeamName::new(n)?,
        None => team_from_goal(&args.goal)?,
    };
    let cwd = working_dir(args.cwd.as_deref())?;
    let settings = settings_from(ctx, &args.model, &args.permissions)?;
    let window = launch(
        ctx,
        &Launch {
            team: team.clone(),
            goal: args.goal.clone(),
            cwd,
            settings,
            env: env_map(),
            approver,
            teammates: args.teammates,
        },
    )?;
    println!(
        "team {team} started; its window: `swarm attach {team}`; live view: `swarm watch {team}`"
    );
    if !args.no_attach && std::io::stdout().is_terminal() {
        window.attach(inside_tmux())?;
        let lead = state::read(&ctx.root, &team, &AgentName::lead());
        if lead.is_some_and(|s| s.activity != Activity::Exited) {
            println!(
                "detached; the team keeps working. `swarm attach {team}` to look again, `swarm status` for a summary."
            );
            return Ok(0);
        }
    }
    let code = wait_for_lead(&ctx.root, &team, &window)?;
    print_report(&ctx.root, &team);
    Ok(code)
}

pub fn demo(ctx: &Ctx, args: DemoArgs) -> Result<u8> {
    if !(1..=3).contains(&args.teammates) {
        return Err(Error::usage("--teammates must be 1, 2 or 3 for the demo"));
    }
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("swarm-demo-{:08x}", fastrand::u32(..))),
    };
    if dir.exists()
        && std::fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(Error::conflict(format!(
            "{} is not empty; give the demo an empty directory with --dir",
            dir.display()
        )));
    }
    demo::make_job(&dir)?;
    let dir = dir.canonicalize().map_err(|e| Error::io("open", &dir, e))?;
    crate::llm::install_crypto_provider();
    let script = crate::llm::model_server::Script::from_json(demo::SCRIPT)
        .map_err(|e| Error::Other(format!("the built-in demo script is broken: {e}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("failed to start the async runtime: {e}")))?;
    let server = runtime.block_on(crate::llm::model_server::ModelServer::start_local(script))?;
    let team = TeamName::new(&format!("demo-{:04x}", fastrand::u16(..)))?;
    let settings = lead_settings(
        ctx,
        Some("scripted".to_owned()),
        None,
        Some(server.url()),
        Some(PermissionMode::AcceptEdits),
        demo::ALLOW.iter().map(|s| s.to_string()).collect(),
        Some(40),
    )?;
    // The demo needs no key; keep real ones out of its panes.
    let mut env = env_map();
    env.retain(|k, _| {
        !matches!(
            k.as_str(),
            "ANTHROPIC_API_KEY" | "ANTHROPIC_AUTH_TOKEN" | "OPENAI_API_KEY"
        )
    });
    println!(
        "swarm demo: team {team} builds a small toolkit in {}",
        dir.display()
    );
    let result = (|| -> Result<u8> {
        let window = launch(
            ctx,
            &Launch {
                team: team.clone(),
                goal: demo::GOAL.to_owned(),
                cwd: dir.clone(),
                settings,
                env,
                approver: Approver::Lead,
                teammates: args.teammates,
            },
        )?;
        if !args.no_attach && std::io::stdout().is_terminal() {
            println!(
                "attaching to the team window (detach with your tmux prefix, then d; the demo keeps going)"
            );
            window.attach(inside_tmux())?;
        }
        let code = wait_for_lead(&ctx.root, &team, &window)?;
        print_report(&ctx.root, &team);
        let (passed, output) = demo::run_check(&dir)?;
        println!("$ bash check.sh\n{output}");
        if let Ok(Some(w)) = TeamWindow::find(
            window.tmux(),
            &team,
            spawn::window_options(&ctx.root, &team),
        ) {
            let _ = w.close();
        }
        if code != 0 {
            return Ok(code);
        }
        if !passed {
            return Err(Error::CheckFailed(format!(
                "the job's check failed in {}",
                dir.display()
            )));
        }
        println!("the job's check passed; the result is in {}", dir.display());
        Ok(0)
    })();
    if !args.keep {
        let _ = roster::delete_files(&ctx.root, &team);
    }
    runtime.block_on(server.shutdown());
    result
}
