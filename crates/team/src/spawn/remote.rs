//! A teammate on another host (`swarm spawn NAME --host H`): the same argv and environment
//! a local one gets, started in a tmux session of its own on the host's tmux server
//! (`swarm-<team>`), through ssh.
//!
//! Order: the team must be on PostgreSQL (the host shares nothing else with the lead) and
//! the host must name its project directory; the roster entry is reserved, with the host
//! recorded (`swarmHost`); the host's own root is pointed at the team's database (`swarm
//! team link`, run there); the first instructions go to the teammate's inbox; when the
//! lead works in a git checkout, a worktree is made for it there (`git::remote_worktree`);
//! then a session is made on the host with a placeholder, the secrets are put in its
//! environment from stdin, the placeholder is replaced by the teammate, and the secrets are
//! taken out again, as the local team window does; its launch record keeps the host's
//! command, for `swarm resume`. Anything failing after the reservation takes the
//! reservation back.
//!
//! Also here, everything else swarm does on a teammate's host: its pane opened in this
//! terminal (`attach`), its session ended and its process made sure of (`end_session`,
//! `reap`), and the host made to forget a deleted team (`unlink`).
//!
//! Invariants: nothing reaches a command line on either side that is not argv, each word
//! quoted once for the remote shell (`swarm_tmux::Tmux::on_host`); secrets travel only on
//! ssh's stdin; the teammate's liveness is its heartbeat (its pid means nothing here, and
//! is signalled only there, by `swarm reap`, when its start time matches).

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::spawn::inherit::{self, Engine, TeammateCommand};
use crate::spawn::launch::{self, Launcher, SpawnRequest, Spawned, pane_spec};
use swarm_git::remote_worktree;
use swarm_hosts::Ssh;
use swarm_hosts::error::Error as HostError;
use swarm_store::Store;
use swarm_store::mailbox::Envelope;
use swarm_store::roster::NewMember;
use swarm_store::seam::NotForHosts;
use swarm_tmux::{NewSession, PaneSpec, Tmux};
use swarm_util::error::Base as _;
use swarm_util::names::LEAD;
use swarm_util::vars;

/// The roster field naming the host a member runs on.
pub const HOST_FIELD: &str = "swarmHost";

/// The roster's field listing the hosts whose roots were linked to the team, which forget
/// it when it is deleted.
pub const LINKED_HOSTS: &str = "swarmLinkedHosts";

/// How long one step on the host may take.
const STEP_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// What `swarm team link --json` says on the host.
#[derive(Deserialize)]
struct Linked {
    root: String,
}

impl Launcher {
    /// The host `req`'s agent definition names (`host:`), if it names one.
    pub fn defined_host(&self, req: &SpawnRequest) -> Option<String> {
        self.prepare(req).ok()?.definition?.host
    }

    /// `req` with its agent definition applied (the lead's project's), to work in `dir`
    /// on a host.
    fn prepare_for_host(&self, req: &SpawnRequest, dir: &str) -> Result<launch::Prepared> {
        let mut local = req.clone();
        local.cwd = self.cwd.clone();
        let mut prepared = self.prepare(&local)?;
        prepared.req.cwd = dir.into();
        Ok(prepared)
    }

    /// Spawns `req` on the host `ssh` reaches (its `cwd` is ignored: the host's directory).
    pub fn spawn_on_host(&self, req: &SpawnRequest, ssh: &Ssh) -> Result<Spawned> {
        let host = ssh.host();
        let team = self.store.team();
        let url = self.store.url_for_hosts().map_err(|why| match why {
            NotForHosts::Files => Error::usage(format!(
                "a teammate on another host needs its team on PostgreSQL: team '{team}' is files on this machine; make it with `swarm team create {team} --store URL`"
            )),
            NotForHosts::Socket(dir) => Error::usage(format!(
                "team '{team}' reaches its database through a Unix socket in {dir}, which another host cannot: make the team with a URL that names the server's address, e.g. --store postgres://swarm@db.example/swarm"
            )),
        })?;
        let url = host.database_url(&url);
        let dir = host.dir.clone().ok_or_else(|| {
            Error::usage(format!(
                "host '{}' names no project directory; add it again with --dir DIR",
                host.name
            ))
        })?;
        if self.engine(req) != Engine::Swarm {
            return Err(Error::usage(
                "a teammate on another host runs swarm's engine: drop --engine claude",
            ));
        }
        // A git project: the teammate works in a worktree of its own there, on its branch.
        let worktree = remote_worktree::plan(self.store.team(), &req.name, &self.cwd)?;
        if worktree.is_none() && req.isolation.is_some() {
            return Err(Error::usage(format!(
                "--isolation worktree needs a git repository, and {} is not inside one; run `git init` and commit there, or spawn without isolation",
                self.cwd.display()
            )));
        }
        let prepared = self.prepare_for_host(req, &dir)?;
        let api = inherit::resolve_api(&self.lead, &launch::spec(self.store.team(), &prepared, ""));
        self.check_model(&req.name, &api)?;
        let config = self.store.roster().load()?;
        launch::check_name_free(&config, self.store.team(), &req.name)?;
        let color = prepared
            .req
            .color
            .clone()
            .unwrap_or_else(|| config.next_color().to_owned());
        let spec = launch::spec(self.store.team(), &prepared, &color);
        let model = inherit::resolve_model(&self.lead, &self.env, &spec);
        // Whoever spawns it (a person by hand, the lead), the team is supervised here: the
        // lead's machine declares a silent host's teammates dead and gives their tasks back.
        let (_, opened_window) = self.supervised_window(&self.lead_command(&[]))?;
        let roster = self.store.roster();
        roster.add_member(NewMember {
            name: req.name.clone(),
            color: Some(color.clone()),
            agent_type: req.agent_type.clone(),
            model: model.clone(),
            prompt: prepared.req.prompt.clone(),
            plan_mode_required: req.plan_mode_required,
            cwd: dir.clone(),
        })?;
        let started = self.start_on_host(ssh, &url, &spec, &prepared.req, &dir, worktree.as_ref());
        let pane = match started {
            Ok(pane) => pane,
            Err(e) => {
                let _ = roster.remove_member(req.name.as_str());
                return Err(e);
            }
        };
        Ok(Spawned {
            name: req.name.to_string(),
            pane: format!("{}:{pane}", host.name),
            color,
            opened_window,
            worktree: started_worktree(&self.store, req.name.as_str()),
            model,
            provider: api.provider,
        })
    }

    /// What [`Launcher::spawn_on_host`] would run there, as lines a person can paste
    /// (secrets by name only); makes nothing. The host's root is shown as `$HOME/.claude`,
    /// its usual place: the spawn asks the host.
    pub fn dry_run_on_host(&self, req: &SpawnRequest, ssh: &Ssh) -> Result<Vec<String>> {
        let host = ssh.host();
        let url = host.database_url(
            &self
                .store
                .url_for_hosts()
                .unwrap_or_else(|_| "URL".to_owned()),
        );
        let dir = host.dir.clone().unwrap_or_else(|| "DIR".to_owned());
        let (mut lines, dir) = match remote_worktree::plan(self.store.team(), &req.name, &self.cwd)?
        {
            Some(plan) => remote_worktree::shown(ssh, self.store.team(), &dir, &plan),
            None => (Vec::new(), dir),
        };
        let prepared = self.prepare_for_host(req, &dir)?;
        let color = prepared
            .req
            .color
            .clone()
            .unwrap_or_else(|| "blue".to_owned());
        let spec = launch::spec(self.store.team(), &prepared, &color);
        let cmd = self.host_command(ssh, &spec, "$HOME/.claude", &dir)?;
        let team = self.store.team().as_str();
        let link = ssh.shown(&[
            host.swarm_bin(),
            "--json",
            "team",
            "link",
            team,
            "--store",
            &url,
        ]);
        let socket = format!("swarm-{team}");
        let session = format!("{team}-{}", req.name);
        let mut words: Vec<String> = [
            "tmux",
            "-L",
            &socket,
            "new-session",
            "-d",
            "-s",
            &session,
            "-c",
            &dir,
        ]
        .map(str::to_owned)
        .to_vec();
        for (k, v) in &cmd.env {
            words.extend(["-e".to_owned(), format!("{k}={v}")]);
        }
        for (k, _) in &cmd.secret_env {
            words.extend(["-e".to_owned(), format!("{k}=<from stdin>")]);
        }
        words.push("--".to_owned());
        words.extend(cmd.argv.iter().cloned());
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        lines.insert(0, link);
        lines.push(ssh.shown(&words));
        Ok(lines)
    }

    /// Everything after the reservation; returns the teammate's pane on the host. With a
    /// `worktree` plan the teammate works in the worktree made there, else in `dir`.
    fn start_on_host(
        &self,
        ssh: &Ssh,
        url: &str,
        spec: &inherit::SpawnSpec,
        req: &SpawnRequest,
        dir: &str,
        worktree: Option<&remote_worktree::Plan>,
    ) -> Result<String> {
        let host = ssh.host();
        let name = req.name.as_str();
        self.store.roster().update_member(name, |m| {
            m.extra.insert(HOST_FIELD.into(), host.name.clone().into());
            if let Some(role) = &host.db_role {
                m.extra.insert(
                    swarm_store::roster::DB_ROLE_FIELD.into(),
                    role.clone().into(),
                );
            }
            m.backend_type = Some("tmux".to_owned());
            m.engine = Some("swarm".to_owned());
        })?;
        // The team's lead key, made now if the lead has not started yet: the teammate gets it.
        swarm_store::mailbox::lead_key::signer(self.store.root(), self.store.team())?;
        let root = self.link(ssh, url)?;
        if let Some(prompt) = req.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
            self.store
                .mail()
                .deliver(&req.name, Envelope::new(LEAD, prompt))?;
        }
        let made = match worktree {
            Some(plan) => Some(remote_worktree::create(&self.store, ssh, dir, plan)?),
            None => None,
        };
        let started = self.start_in(ssh, spec, &root, made.as_ref().map_or(dir, |m| &m.cwd));
        if let (Some(m), Some(plan)) = (&made, worktree) {
            if started.is_err() {
                let store = &self.store;
                let _ = remote_worktree::remove(store, ssh, &m.record, &plan.lead_git_dir);
            } else {
                let path = m.record.path.display().to_string();
                self.store
                    .roster()
                    .update_member(name, |m| m.worktree_path = Some(path))?;
            }
        }
        started
    }

    /// Starts the teammate in `dir` on the host, in a session of its own, and keeps its
    /// launch record (for `swarm resume`); its pane.
    fn start_in(
        &self,
        ssh: &Ssh,
        spec: &inherit::SpawnSpec,
        root: &str,
        dir: &str,
    ) -> Result<String> {
        let name = spec.name.as_str();
        let cmd = self.host_command(ssh, spec, root, dir)?;
        let pane = self.start_command_on_host(ssh, name, &cmd)?;
        crate::spawn::launch_record::save_launch_on(
            &self.store,
            name,
            &cmd,
            Engine::Swarm,
            Some(&ssh.host().name),
        )?;
        Ok(pane)
    }

    /// Runs `cmd`, teammate `name`'s, on the host in a session of its own (one left from
    /// an earlier run of it is ended first); records its pane; its pane.
    pub(crate) fn start_command_on_host(
        &self,
        ssh: &Ssh,
        name: &str,
        cmd: &TeammateCommand,
    ) -> Result<String> {
        let host = ssh.host();
        let tmux = host_tmux(self.store.team(), ssh);
        let placeholder = PaneSpec::new(cmd.cwd.clone(), ["sleep", "86400"]);
        let session = format!("{}-{name}", self.store.team());
        // A session of an earlier run of it (its pane dead, or a hung process) is in the way.
        let _ = tmux.kill_session_named(&session);
        let made = tmux.new_session(&NewSession {
            name: &session,
            window_name: Some(name),
            size: Some((200, 50)),
            spec: &placeholder,
        })?;
        let names: Vec<&str> = cmd.secret_env.iter().map(|(k, _)| k.as_str()).collect();
        let started = tmux
            .set_session_environment_quietly(made.session, &cmd.secret_env)
            .and_then(|()| tmux.respawn_pane(made.pane, &pane_spec(cmd)));
        if let Err(e) = tmux.unset_session_environment(made.session, &names) {
            tracing::warn!(
                "failed to remove secrets from {session} on {}: {e}",
                host.name
            );
        }
        if let Err(e) = started {
            let _ = tmux.kill_session(made.session);
            return Err(e.into());
        }
        self.store
            .roster()
            .update_member(name, |m| m.tmux_pane_id = made.pane.to_string())?;
        tracing::info!("started {name} on host {} in {}", host.name, made.pane);
        Ok(made.pane.to_string())
    }

    /// Points the host's own root at the team's database (and says so in the roster, for
    /// the team's delete); returns that root.
    fn link(&self, ssh: &Ssh, url: &str) -> Result<String> {
        let host = ssh.host().name.clone();
        self.store.roster().update(|c| {
            let linked = c
                .extra
                .entry(LINKED_HOSTS)
                .or_insert_with(|| serde_json::Value::Array(Vec::new()));
            if let Some(list) = linked.as_array_mut()
                && !list.iter().any(|h| h.as_str() == Some(host.as_str()))
            {
                list.push(host.clone().into());
            }
            Ok(())
        })?;
        let bin = ssh.host().swarm_bin();
        let team = self.store.team().as_str();
        let out = ssh.run(
            &[bin, "--json", "team", "link", team, "--store", url],
            None,
            STEP_LIMIT,
        )?;
        if !out.status.success() {
            return Err(Error::OnHost(format!(
                "failed to link team '{team}' on host '{}': {}",
                ssh.host().name,
                swarm_hosts::ssh::last_line(&out.stderr)
            )));
        }
        let linked: Linked = serde_json::from_slice(&out.stdout).map_err(|e| {
            Error::OnHost(format!(
                "failed to read what `swarm team link` said on host '{}': {e}",
                ssh.host().name
            ))
        })?;
        Ok(linked.root)
    }

    /// The teammate's command there: the lead's settings with the host's swarm, root and
    /// tmux server.
    fn host_command(
        &self,
        ssh: &Ssh,
        spec: &inherit::SpawnSpec,
        root: &str,
        dir: &str,
    ) -> Result<TeammateCommand> {
        let config = self.store.roster().load()?;
        let mut settings = self.lead.clone();
        settings.exe = ssh.host().swarm_bin().into();
        settings.root = root.into();
        settings.tmux_socket = Some(format!("swarm-{}", self.store.team()));
        settings.session_id = config.lead_session_id.clone();
        let key = swarm_store::mailbox::lead_key::verify_key(self.store.root(), self.store.team())?;
        settings.lead_verify_key = key.map(|k| k.to_arg());
        let spec = inherit::SpawnSpec {
            cwd: dir.into(),
            ..spec.clone()
        };
        let mut cmd = inherit::teammate_command(&settings, &self.env, &spec, inherit::Place::Host);
        cmd.env
            .push((vars::SWARM_PROJECT_DIR.to_owned(), dir.to_owned()));
        cmd.cwd = dir.into();
        Ok(cmd)
    }
}

/// The worktree recorded for `agent`, if one was made for it.
fn started_worktree(store: &Store, agent: &str) -> Option<swarm_store::worktrees::Record> {
    store.worktrees().worktree(agent).ok()?
}

/// The session of member `name` of `team` on the host `host_name` names, ended over ssh
/// (its teammate gets SIGHUP, and stops as it would for any signal: it releases its tasks
/// and records its end). Returns a line saying what was done.
pub fn end_session(
    store: &Store,
    name: &str,
    host_name: &str,
    dirs: &swarm_config::project::UserDirs,
) -> Result<String> {
    let (root, team) = (store.root(), store.team());
    let ssh = ssh_to(root, host_name, dirs)?;
    match host_tmux(team, &ssh).kill_session_named(&format!("{team}-{name}")) {
        Ok(()) => Ok(format!("ended its session on host {host_name} (SIGHUP)")),
        Err(swarm_tmux::TmuxError::NoServer { .. } | swarm_tmux::TmuxError::TargetGone { .. }) => {
            Ok(format!("its session on host {host_name} had ended"))
        }
        Err(e) => Err(e.into()),
    }
}

/// The hosts whose roots were linked to the team (see [`LINKED_HOSTS`]).
pub fn linked_hosts(config: &swarm_store::roster::TeamConfig) -> Vec<String> {
    let listed = config.extra.get(LINKED_HOSTS).and_then(|v| v.as_array());
    listed
        .into_iter()
        .flatten()
        .filter_map(|h| h.as_str().map(str::to_owned))
        .collect()
}

/// Makes the host `host_name` forget `team` (`swarm team unlink`, run there): its pointer
/// and the files the team's agents kept there go.
pub fn unlink(
    store: &Store,
    host_name: &str,
    dirs: &swarm_config::project::UserDirs,
) -> Result<()> {
    let (root, team) = (store.root(), store.team());
    let ssh = ssh_to(root, host_name, dirs)?;
    let argv = [ssh.host().swarm_bin(), "team", "unlink", team.as_str()];
    let out = ssh.run(&argv, None, STEP_LIMIT)?;
    // Exit 3: it had forgotten the team already.
    if out.status.success() || out.status.code() == Some(3) {
        return Ok(());
    }
    Err(Error::OnHost(format!(
        "failed to make host '{host_name}' forget team '{team}': {}; run `swarm team unlink {team}` there",
        swarm_hosts::ssh::last_line(&out.stderr)
    )))
}

/// After its session was ended: waits on the host, up to `grace`, for member `name`'s
/// process (`pid`, started at `start_ticks` there) to go, then SIGKILLs it there (`swarm
/// reap`). Returns a line saying what was done, and whether it had to be killed.
#[allow(clippy::too_many_arguments)]
pub fn reap(
    root: &swarm_store::Root,
    name: &str,
    host_name: &str,
    dirs: &swarm_config::project::UserDirs,
    pid: i32,
    start_ticks: u64,
    grace: std::time::Duration,
) -> Result<(String, bool)> {
    let ssh = ssh_to(root, host_name, dirs)?;
    let (pid_s, start, grace_ms) = (
        pid.to_string(),
        start_ticks.to_string(),
        grace.as_millis().to_string(),
    );
    let argv = [ssh.host().swarm_bin(), "reap", &pid_s, &start, &grace_ms];
    let out = ssh.run(&argv, None, grace + STEP_LIMIT)?;
    let said = String::from_utf8_lossy(&out.stdout);
    match said.trim() {
        "gone" => Ok((
            format!("its process ended (pid {pid} on host {host_name})"),
            false,
        )),
        "killed" => Ok((
            format!(
                "still running {} s after its session ended: SIGKILL on host {host_name} (pid {pid})",
                grace.as_secs()
            ),
            true,
        )),
        _ => Err(Error::StillRunning(format!(
            "{name} is still running on host {host_name} after SIGKILL (pid {pid}): {}; check it by hand there",
            swarm_hosts::ssh::last_line(&out.stderr)
        ))),
    }
}

/// Opens the pane of member `name` of `team` on the host `host_name` names, in this
/// terminal (`ssh -t … tmux attach-session`), until the person detaches.
pub fn attach(
    store: &Store,
    name: &str,
    host_name: &str,
    dirs: &swarm_config::project::UserDirs,
) -> Result<()> {
    let (root, team) = (store.root(), store.team());
    let ssh = ssh_to(root, host_name, dirs)?;
    let (socket, session) = (format!("swarm-{team}"), format!("{team}-{name}"));
    let argv = ssh.argv(
        &["tmux", "-L", &socket, "attach-session", "-t", &session],
        true,
    );
    let status = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .status()
        .map_err(|e| HostError::Ssh(format!("failed to run ssh: {e}")))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(255) => Err(HostError::Unreachable(format!(
            "failed to reach host '{host_name}' over ssh; check it with `swarm host check {host_name}`"
        ))
        .into()),
        _ => Err(Error::Pane(format!(
            "failed to attach to {name}'s session {session} on host '{host_name}' ({status}); see `swarm status`"
        ))),
    }
}

/// ssh to the host the user named `name` (`swarm host add`), with their ssh settings.
pub fn ssh_to(
    root: &swarm_store::Root,
    name: &str,
    dirs: &swarm_config::project::UserDirs,
) -> Result<Ssh> {
    let hosts = swarm_hosts::Hosts::at(root.path(), root.lock_timeout());
    Ok(Ssh::to(&hosts, name, dirs.ssh_config.clone())?)
}

/// The team's tmux server on the host `ssh` reaches.
fn host_tmux(team: &swarm_util::names::TeamName, ssh: &Ssh) -> Tmux {
    Tmux::with_socket_name(format!("swarm-{team}")).on_host(ssh.prefix(false))
}

/// The host member `m` runs on, when it is not this one.
pub fn host_of(m: &swarm_store::roster::Member) -> Option<&str> {
    m.extra.get(HOST_FIELD).and_then(|h| h.as_str())
}
