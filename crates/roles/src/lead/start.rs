//! `swarm lead`'s start: its options resolved from its command line ([`LeadFlags`], which
//! the front end only parses), the process's [`Profile`] and the team the front end opened
//! for it, then the dispatcher run to its end.
//!
//! What the lead passes on to its teammates is resolved here too, once, by the rule every
//! spawn uses (`swarm_team::spawn::inherit::LeadSettings::inherited`).

use std::path::PathBuf;
use std::time::Duration;

use super::agent::LeadAgentOptions;
use super::dispatcher::{self, LeadOptions};
use crate::error::{Error, ExitCode, Result};
use swarm_config::permissions::Approver;
use swarm_config::profile::{ModelFlags, PermissionFlags, Profile};
use swarm_store::Store;
use swarm_team::life::shutdown::LadderOptions;
use swarm_team::spawn::inherit::Engine;
use swarm_team::spawn::launch::LaunchSettings;
use swarm_team::spawn::window;
use swarm_team::toolset::tools::LeadPowers;

/// `swarm lead`'s command line, as parsed.
#[derive(Debug, Clone)]
pub struct LeadFlags {
    /// Restore the lead's conversation and restart its unfinished teammates.
    pub resume: bool,
    /// Leave the teammates running when the lead stops.
    pub keep_team: bool,
    /// The goal (its file, read at the edge); none: the lead only supervises.
    pub goal: Option<String>,
    pub approver: Approver,
    /// The most teammates the lead agent may spawn.
    pub teammates: usize,
    /// The hosts new teammates go on.
    pub hosts: Vec<String>,
    /// Where the team works.
    pub cwd: Option<PathBuf>,
    pub model: ModelFlags,
    pub permissions: PermissionFlags,
    pub engine: Engine,
    pub claude_bin: Option<PathBuf>,
}

/// Where the lead process runs: what its launcher starts teammates with (its lead
/// settings with nothing chosen yet), whether its terminal is one to draw on, its pane.
#[derive(Debug, Clone)]
pub struct LeadPlace {
    pub launch: LaunchSettings,
    pub draw: bool,
    pub pane: Option<String>,
    /// The exit code an error ends the lead with (the binary's mapping).
    pub exit_code: ExitCode,
}

/// Runs the lead of the team `store` holds until it ends; returns the process exit code.
pub fn start(flags: LeadFlags, store: Store, place: LeadPlace, profile: &Profile) -> Result<u8> {
    store.roster().load()?;
    // The team's lead key, made at the team's first start and read again on a resume: every
    // message this lead writes to an inbox is signed with it (swarm_store::lead_key).
    swarm_store::mailbox::lead_key::signer(store.root(), store.team())?;
    let launch = &place.launch;
    let tmux = window::server_for(&store, launch.tmux_socket.as_deref(), &launch.env)?;
    let cwd = profile.working_dir(flags.cwd.as_deref());
    let inherits = || -> Result<LaunchSettings> {
        let lead = launch
            .lead
            .clone()
            .inherited(profile, &flags.model, &flags.permissions)
            .with_engine(&profile.settings, flags.engine, flags.claude_bin.as_deref())?;
        Ok(LaunchSettings {
            lead,
            cwd: cwd.as_ref().map_err(|e| Error::from(e.copy()))?.clone(),
            ..launch.clone()
        })
    };
    let agent = match &flags.goal {
        None => None,
        Some(goal) => Some(LeadAgentOptions {
            store: store.clone(),
            goal: goal.clone(),
            approver: flags.approver,
            llm: profile.llm_config(&flags.model)?,
            powers: LeadPowers {
                launcher: inherits()?.for_team(store.clone())?,
                max_teammates: flags.teammates,
                hosts: flags.hosts.clone(),
            },
            cwd: cwd.as_ref().map_err(|e| Error::from(e.copy()))?.clone(),
            resumed: flags.resume,
            max_turns: flags.permissions.max_turns,
            stall_after: Duration::from_secs(60),
            timings: profile.settings.timings.clone(),
            context_window: flags.model.context_window,
        }),
    };
    let resume = match (&agent, flags.resume) {
        (_, false) => None,
        (Some(a), true) => Some(a.powers.launcher.clone()),
        (None, true) => Some(inherits()?.for_team(store.clone())?),
    };
    let opts = LeadOptions {
        resume,
        store,
        tmux: Some(tmux),
        keep_team: flags.keep_team,
        reconcile_every: Duration::from_millis(500),
        ladder: LadderOptions::new(profile.settings.dirs.clone()),
        draw: place.draw,
        pane: place.pane,
        exit_code: place.exit_code,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Runtime(format!("failed to start the async runtime: {e}")))?;
    let code = runtime.block_on(dispatcher::run(opts, agent))?;
    Ok(u8::try_from(code).unwrap_or(1))
}
