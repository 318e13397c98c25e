//! Running the demo: the scratch job, the scripted model served on loopback, a lead and
//! its teammates on it, then the job's own check.
//!
//! The demo needs no key and keeps real ones out of its panes. Whatever it starts goes
//! again when it ends, also when it fails: the model server, the team window (and with it
//! a session of its own), its teammates, and (unless asked to keep them) the team's files.
//! A demo that fails before its team has finished also removes the job's directory it
//! made; one that ran to the end leaves the job there to look at. Shown on a terminal, the
//! team window is closed to the person when the team is done, and the report follows.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::job;
use swarm_config::permissions::{Approver, PermissionMode};
use swarm_model_server::{ModelServer, Script};
use swarm_store::Teams;
use swarm_team::life::shutdown::LadderOptions;
use swarm_team::life::teardown;
use swarm_team::runs::run::{self as team_run, Goal};
use swarm_team::spawn::launch::{LaunchSettings, Launcher};
use swarm_team::spawn::show;
use swarm_team::spawn::window::TeamWindow;
use swarm_util::error::Base as _;
use swarm_util::names::TeamName;
use swarm_util::vars;

/// The credentials the demo keeps out of its panes.
const KEYS: [&str; 3] = [
    vars::ANTHROPIC_API_KEY,
    vars::ANTHROPIC_AUTH_TOKEN,
    vars::OPENAI_API_KEY,
];

pub struct Demo {
    /// Where the demo's team is made.
    pub teams: Teams,
    /// How to start the team; its working directory and lead model are the demo's.
    pub launch: LaunchSettings,
    /// Show the team window while it works.
    pub attach: bool,
    /// 1, 2 or 3.
    pub teammates: usize,
    /// Where to make the job (an empty or new directory; see [`scratch_dir`]).
    pub dir: PathBuf,
    /// Keep the team's files afterwards.
    pub keep: bool,
    pub job: job::Job,
}

/// A new directory for the job under `tmp` (the system's temp dir).
pub fn scratch_dir(tmp: &Path) -> PathBuf {
    tmp.join(format!("swarm-demo-{:08x}", fastrand::u32(..)))
}

/// A fresh name for a demo team.
pub fn team_name() -> Result<TeamName> {
    Ok(TeamName::new(&format!("demo-{:04x}", fastrand::u16(..)))?)
}

/// Runs the demo; returns the lead's exit code, or a check failure if the job's check did
/// not pass. `say` prints what the demo shows (stdout); `note` what it says about itself
/// while it waits (stderr).
pub fn run(demo: Demo, say: &dyn Fn(&str), note: &dyn Fn(&str)) -> Result<u8> {
    if !(1..=3).contains(&demo.teammates) {
        return Err(Error::usage("--teammates must be 1, 2 or 3 for the demo"));
    }
    let dir = demo.dir.clone();
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
    let made_dir = !dir.exists();
    job::make_job(&dir, demo.job)?;
    let dir = dir.canonicalize().map_err(|e| Error::io("open", &dir, e))?;
    swarm_llm::install_crypto_provider();
    let script = Script::from_json(demo.job.script())
        .map_err(|e| Error::Runtime(format!("the built-in demo script is broken: {e}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| Error::Runtime(format!("failed to start the async runtime: {e}")))?;
    let server = runtime.block_on(ModelServer::start_local(script))?;
    let mut launch = demo.launch;
    launch.cwd = dir.clone();
    launch.lead.provider = Some("scripted".to_owned());
    launch.lead.model = None;
    launch.lead.base_url = Some(server.url());
    launch.lead.permission_mode = PermissionMode::AcceptEdits;
    launch.lead.allow = demo.job.allow();
    launch.lead.max_turns = Some(40);
    let team = team_name()?;
    say(&format!(
        "swarm demo: team {team} builds a small toolkit in {}",
        dir.display()
    ));
    let goal = Goal {
        budget: Default::default(),
        merge: swarm_git::merge::Options {
            check: demo.job.merge_check().map(str::to_owned),
            ..Default::default()
        },
        text: demo.job.goal(),
        approver: Approver::Lead,
        teammates: demo.teammates,
        members: &[],
        hosts: &[],
    };
    // Set once the lead has finished: from then on a failure leaves the job to look at.
    let finished = std::cell::Cell::new(false);
    let mut opened: Option<Launcher> = None;
    let result = (|| -> Result<u8> {
        let store =
            team_run::make_team(&demo.teams, &team, &dir, &goal, launch.lead.permission_mode)?;
        let launcher = opened.insert(launch.clone().for_team(store)?);
        launcher.env.retain(|k, _| !KEYS.contains(&k.as_str()));
        let window = team_run::launch(launcher, &goal)?;
        let wait = || team_run::wait_for_lead(&launcher.store, &window, note);
        let code = if demo.attach {
            say(
                "showing the team window; you are back here when the team is done (to leave earlier: your tmux prefix, then d; the demo keeps going)",
            );
            let hint = "swarm demo: back to your shell when the team is done; prefix d leaves now";
            show::show_while(&window, &launcher.caller, Some(hint), say, wait)??
        } else {
            wait()?
        };
        finished.set(true);
        say(&team_run::report(&launcher.store));
        let (passed, output) = job::run_check(&dir)?;
        say(&format!("$ bash check.sh\n{output}"));
        if let Ok(Some(w)) = TeamWindow::find(window.tmux(), &team, launcher.window_options()) {
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
        say(&format!(
            "the job's check passed; the result is in {}",
            dir.display()
        ));
        Ok(0)
    })();
    if result.is_err() && !finished.get() {
        match &opened {
            Some(launcher) => clean_up_failed(launcher, demo.keep),
            // Nothing started: what a half-made team left goes.
            None if !demo.keep => {
                let _ = demo.teams.delete_team(&team);
            }
            None => {}
        }
        if made_dir && !demo.keep {
            let _ = std::fs::remove_dir_all(&dir);
        }
    } else if let (Some(launcher), false) = (&opened, demo.keep) {
        // The job's repository keeps the work, not the queue's scaffolding.
        swarm_git::merge::remove_integration(&launcher.store);
        let _ = demo.teams.delete_team(&team);
    }
    runtime.block_on(server.shutdown());
    result
}

/// After a failure: stops what the demo's team still runs and closes its window (with a
/// session of its own), and unless `keep` removes its files (a half-made team's too).
/// Whatever fails here is logged: the demo's own error is the one to tell.
fn clean_up_failed(launcher: &Launcher, keep: bool) {
    let store = &launcher.store;
    let quiet = |line: &str| tracing::info!("{line}");
    let ladder = LadderOptions {
        timeout: std::time::Duration::from_secs(10),
        ..LadderOptions::new(launcher.dirs.clone())
    };
    if !keep {
        // Stops the teammates, closes the window, waits for the lead to go, removes all.
        let window = launcher.window_options();
        if let Err(e) = teardown::delete(store, &launcher.tmux, window, &ladder, true, &quiet) {
            tracing::warn!("demo clean-up: {e}");
        }
        // What a dying lead wrote meanwhile.
        let _ = store.delete_team();
        return;
    }
    if store.roster().load().is_ok() {
        let stops =
            swarm_team::life::shutdown::stop_team(store, Some(&launcher.tmux), &ladder, &quiet);
        for e in stops.into_iter().filter_map(Result::err) {
            tracing::warn!("demo clean-up: {e}");
        }
    }
    if let Ok(Some(w)) = TeamWindow::find(&launcher.tmux, store.team(), launcher.window_options())
        && let Err(e) = w.close()
    {
        tracing::warn!("demo clean-up: {e}");
    }
}
