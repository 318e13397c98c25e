//! Acting on deaths: when a teammate's process is gone, what it left running in its
//! session (its tool commands) is ended, its open tasks go back to pending, its pending
//! approval requests expire, the roster stops calling it active, and the lead is told, with
//! a `teammate_terminated` message naming the tasks released.
//!
//! A teammate that worked in its own git worktree has it settled here too: removed when
//! unchanged, kept (and the lead told where) when not; see [`swarm_git::worktree`].
//!
//! A task whose owner is not on the roster any more goes back to pending too: the owner
//! left by a path that did not release it (a crash while being removed, or a Claude Code
//! lead taking it off), and nobody else would.
//!
//! Each pass also records the plan and permission requests in the lead's inbox (a Claude
//! Code teammate records none itself), so a person can answer them, tells the lead once
//! about a teammate stuck at a first-run dialog, and notes the pane a member that joined by
//! itself was seen in on the team's server (so that pane's end there is its death).
//!
//! Exactly once per process: whoever notices first (the lead's reconcile loop, the shutdown
//! ladder, `swarm status`) claims its exit report (`state/<agent>.<pid>.reported` with
//! `O_EXCL` on files; its fencing token's row on PostgreSQL); only that caller reports. On
//! a team whose processes beat, the report declares the process dead before its tasks go
//! back, so it can write nothing after (see `swarm_store::liveness`). A restarted lead therefore never repeats a report, and two observers never
//! both send one.

use std::path::Path;

use crate::error::Result;
use crate::life::status::{self, MemberStatus, TeamStatus};
use swarm_config::hooks::{Event as HookEvent, Hooks, Runner};
use swarm_config::project::UserDirs;
use swarm_store::Store;
use swarm_store::approvals;
use swarm_store::liveness;
use swarm_store::mailbox::{self, Envelope};
use swarm_store::protocol::{Protocol, TeammateTerminated};
use swarm_store::state::{Activity, ExitInfo};
use swarm_tmux::Tmux;
use swarm_util::names::{AgentName, LEAD, TeamName};

/// A death that was reported.
#[derive(Debug, Clone, PartialEq)]
pub struct Reported {
    pub name: String,
    pub reason: String,
    pub released: Vec<String>,
    /// What became of its worktree, if it had one.
    pub worktree: Option<String>,
}

/// One supervision pass: look at the team, report what ended. Returns the status seen.
pub fn reconcile(
    store: &Store,
    tmux: Option<&Tmux>,
    dirs: &UserDirs,
) -> Result<(TeamStatus, Vec<Reported>)> {
    reconcile_on(store, tmux, dirs, None)
}

/// [`reconcile`], the tasks read through `board` (see `status::observe_on`).
pub fn reconcile_on(
    store: &Store,
    tmux: Option<&Tmux>,
    dirs: &UserDirs,
    board: Option<&swarm_store::board::Board>,
) -> Result<(TeamStatus, Vec<Reported>)> {
    let seen = status::observe_on(store, tmux, board)?;
    if let Err(e) = record_requests(store, &seen) {
        tracing::warn!("failed to record the teammates' requests: {e}");
    }
    tell_blocked(store, &seen);
    record_seen_panes(store, &seen);
    let mut reported = report_exits(store, &seen, dirs);
    match release_orphans(store, &seen) {
        Ok(orphans) => reported.extend(orphans),
        Err(e) => tracing::warn!("failed to return the tasks of members who left: {e}"),
    }
    Ok((seen, reported))
}

/// Records every plan and permission request in the lead's inbox from a member of the
/// team, so a person can answer a teammate that records nothing itself (Claude Code) as
/// well as swarm's own (recording again is a no-op). The inbox is only read: whoever
/// reads the lead's mail still gets the request.
///
/// An inbox nobody drains (a team of `swarm spawn` with no lead agent) grows by an idle
/// notification per teammate turn, and was read in full twice a second: a version of it
/// read to the end with nothing left to retry is not read again (see `RECORDED`).
pub fn record_requests(store: &Store, seen: &TeamStatus) -> Result<()> {
    let lead = AgentName::lead();
    // The lead's inbox of this team under this root.
    let inbox = (store.root().path().to_path_buf(), store.team().clone());
    let before = store.mail().inbox_version(&lead);
    let mut recorded = RECORDED.lock().unwrap_or_else(|p| p.into_inner());
    if before.is_some() && recorded.get(&inbox) == before.as_ref() {
        return Ok(());
    }
    recorded.remove(&inbox);
    drop(recorded);
    // Whether every request in this version is settled: recorded, or never to be.
    let mut complete = true;
    for d in store.mail().read_all(&lead)? {
        let Some(p) = d.envelope.protocol() else {
            continue;
        };
        if !p.signed_by(&d.envelope.from) {
            continue;
        }
        if seen.member(&d.envelope.from).is_none() {
            complete = false;
            continue;
        }
        let record = match &p {
            Protocol::PermissionRequest(r) => approvals::from_permission(r),
            Protocol::PlanApprovalRequest(r) => approvals::from_plan(r, None),
            _ => continue,
        };
        // Its process is gone: nobody would read the answer.
        if seen
            .member(&record.agent)
            .is_some_and(|m| matches!(m.state.as_str(), "dead" | "exited"))
        {
            continue;
        }
        // Most were recorded long ago: a read, not a lock, says so.
        if store.approvals().get(&record.request_id).is_ok() {
            continue;
        }
        // One bad request (an id that names no file) must not hide the others.
        if let Err(e) = store.approvals().record(&record) {
            complete = false;
            tracing::warn!("failed to record {}: {e}", record.request_id);
        }
    }
    if let Some(version) = before
        && complete
        && version.settled()
        && store.mail().inbox_version(&lead) == before
    {
        RECORDED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(inbox, version);
    }
    Ok(())
}

/// Records the pane each member that joined by itself was seen in on the team's tmux
/// server, so that pane's end there later says the member ended (see
/// [`status::PANE_SEEN`]); until then a pane that is not there says nothing.
fn record_seen_panes(store: &Store, seen: &TeamStatus) {
    let open_untagged = |m: &&MemberStatus| {
        m.engine == "unknown"
            && m.pane_record
                .as_ref()
                .is_some_and(|p| !p.dead && p.agent.is_none())
    };
    if !seen.members.iter().any(|m| open_untagged(&m)) {
        return;
    }
    let Ok(config) = store.roster().load() else {
        return;
    };
    for st in seen.members.iter().filter(open_untagged) {
        let Some(m) = config.member(&st.name) else {
            continue;
        };
        if !status::pane_seen_unrecorded(m, st) {
            continue;
        }
        let recorded = store.roster().update_member(&st.name, |member| {
            let pane = member.tmux_pane_id.clone();
            member
                .extra
                .insert(status::PANE_SEEN.to_owned(), pane.into());
        });
        if let Err(e) = recorded {
            tracing::warn!("failed to record where {} runs: {e}", st.name);
        }
    }
}

/// Per lead inbox (a process may supervise several teams: tests), the settled version that
/// [`record_requests`] last read to the end with every request in it recorded or never to
/// be: the same version holds nothing new.
static RECORDED: std::sync::Mutex<
    std::collections::BTreeMap<(std::path::PathBuf, TeamName), mailbox::Version>,
> = std::sync::Mutex::new(std::collections::BTreeMap::new());

/// Tells the lead, once per process, which teammate waits at a first-run dialog and how
/// to clear it: nothing else would, and the teammate itself cannot.
fn tell_blocked(store: &Store, seen: &TeamStatus) {
    for m in seen.members.iter().filter(|m| m.state == "blocked") {
        let Ok(agent) = AgentName::parse_any(&m.name) else {
            continue;
        };
        let instance = format!("{}-dialog", m.pid.unwrap_or_default());
        if !store
            .agents()
            .claim_exit_report(&agent, &instance)
            .unwrap_or(false)
        {
            continue;
        }
        let why = m.detail.as_deref().unwrap_or("blocked by a dialog");
        let text = format!(
            "{} has not started: {why}. It reads no messages until that is done.",
            m.name
        );
        let mut envelope = Envelope::new("system", text.clone());
        envelope.summary = Some(format!("{} is blocked", m.name));
        match store.mail().deliver(&AgentName::lead(), envelope) {
            Ok(_) => tracing::info!("{text}"),
            Err(e) => tracing::warn!("failed to tell the lead that {} is blocked: {e}", m.name),
        }
    }
}

/// Returns to pending every open task whose owner is not on the roster. The roster is read
/// after the tasks, so an owner that joined meanwhile is found there.
fn release_orphans(store: &Store, seen: &TeamStatus) -> Result<Vec<Reported>> {
    let list = store.tasks();
    if seen.open_owners.is_empty() {
        return Ok(Vec::new());
    }
    let config = store.roster().load()?;
    let mut reported = Vec::new();
    for owner in &seen.open_owners {
        let name = owner.split('@').next().unwrap_or(owner);
        if config.member(name).is_some() {
            continue;
        }
        let released: Vec<String> = list.release(owner)?.into_iter().map(|t| t.id).collect();
        if released.is_empty() {
            continue;
        }
        tracing::info!(
            "{name} is not on the roster any more: returned task(s) #{} to pending",
            released.join(", #")
        );
        reported.push(Reported {
            name: name.to_owned(),
            reason: "left the roster".to_owned(),
            released,
            worktree: None,
        });
    }
    Ok(reported)
}

/// Reports every teammate in `status` whose process has ended and was not reported yet.
fn report_exits(store: &Store, status: &TeamStatus, dirs: &UserDirs) -> Vec<Reported> {
    status
        .members
        .iter()
        .filter(|m| {
            m.name != LEAD
                && !m.alive
                // With no pid it died before it registered: only its dead pane tells.
                && (m.pid.is_some() || m.pane_alive == Some(false))
                && matches!(m.state.as_str(), "dead" | "exited")
        })
        .filter_map(|m| match report_exit(store, m, dirs) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("failed to report that {} stopped: {e}", m.name);
                None
            }
        })
        .collect()
}

/// Reports one stopped teammate, unless someone already did.
pub fn report_exit(store: &Store, m: &MemberStatus, dirs: &UserDirs) -> Result<Option<Reported>> {
    let Ok(agent) = AgentName::parse_any(&m.name) else {
        return Ok(None);
    };
    // One report per process: its fencing token where processes beat, else its pid, or
    // before it registered, its pane.
    let instance = match (m.pid, &m.pane) {
        (Some(pid), _) => liveness::instance(m.token, pid),
        (None, Some(pane)) => format!("pane{}", pane.trim_start_matches('%')),
        (None, None) => return Ok(None),
    };
    if !store.agents().claim_exit_report(&agent, &instance)? {
        return Ok(None);
    }
    // Fenced before its tasks go back: a process declared dead that comes back (a paused
    // machine, a partition healed) cannot write over whoever takes them next.
    if let Some(token) = m.token {
        store.agents().declare_dead(token)?;
    }
    // Its tool commands die with it, so whoever takes its tasks next never races a
    // half-run command of its. A pid means something only on this host.
    if let Some(s) = m
        .state_file
        .as_ref()
        .filter(|s| liveness::is_here(s.host.as_deref()))
    {
        let ended = swarm_util::process::end_leftovers(s.pid, s.start_ticks);
        if ended > 0 {
            tracing::info!("ended {ended} process(es) {} left running", m.name);
        }
    }
    let mut released: Vec<String> = m
        .state_file
        .as_ref()
        .and_then(|s| s.exit.as_ref())
        .map(|e| e.released_tasks.clone())
        .unwrap_or_default();
    let list = store.tasks();
    let mut subjects = Vec::new();
    for t in list.release(&m.name)? {
        released.push(t.id.clone());
    }
    for id in &released {
        if let Ok(t) = list.get(id) {
            subjects.push(format!("#{} \"{}\"", t.id, t.subject));
        } else {
            subjects.push(format!("#{id}"));
        }
    }
    let clean = m.state == "exited";
    let reason = m
        .detail
        .clone()
        .unwrap_or_else(|| "process gone".to_owned());
    // Nobody waits for their answers any more; one that exited cleanly expired its own.
    if let Err(e) = store
        .approvals()
        .expire_all(&m.name, &format!("{} stopped: {reason}", m.name))
    {
        tracing::warn!("failed to expire {}'s pending requests: {e}", m.name);
    }
    // The agent could not record its end itself (nor run its SubagentStop hook): do it
    // for it. Read before the worktree is settled below: it names the project.
    let finished_itself = m
        .state_file
        .as_ref()
        .is_some_and(|s| s.activity == Activity::Exited);
    if !finished_itself {
        fire_subagent_stop(store, m, &reason, dirs);
    }
    record_end(store, &agent, m, &reason, &released);
    let _ = store
        .roster()
        .update_member(&m.name, |member| member.is_active = Some(false));
    let message = stopped_message(&m.name, clean, &reason, &subjects);
    let note = Protocol::TeammateTerminated(TeammateTerminated {
        message: message.clone(),
        agent: Some(m.name.clone()),
        released_task_ids: released.clone(),
    });
    let mut envelope = Envelope::new("system", note.to_text());
    envelope.summary = Some(format!("{} stopped", m.name));
    store.mail().deliver(&AgentName::lead(), envelope)?;
    tracing::info!("{message}");
    // A worktree on another host is settled by the ladder (`leave`), which reaches the
    // host: a watcher here must not wait on ssh to a host that may be gone.
    let worktree = liveness::is_here(m.host.as_deref())
        .then(|| swarm_git::settle::settle(store, &m.name, dirs))
        .flatten();
    if let Some(line) = &worktree {
        tracing::info!("{}: {line}", m.name);
    }
    Ok(Some(Reported {
        name: m.name.clone(),
        reason,
        released,
        worktree,
    }))
}

/// Writes the end of a teammate that could not write it itself (its state said it still
/// ran): exited, not cleanly, with the tasks released for it.
fn record_end(
    store: &Store,
    agent: &AgentName,
    m: &MemberStatus,
    reason: &str,
    released: &[String],
) {
    if let Some(mut s) = m
        .state_file
        .clone()
        .filter(|s| s.activity != Activity::Exited)
    {
        s.activity = Activity::Exited;
        s.current_task = None;
        s.detail = Some(reason.to_owned());
        s.exit = Some(ExitInfo {
            code: m.exit_code.unwrap_or(-1),
            reason: reason.to_owned(),
            released_tasks: released.to_vec(),
            clean: false,
        });
        let _ = store.agents().write_state(agent, &s);
    }
}

/// What the lead is told of a teammate that stopped, naming the tasks it released.
fn stopped_message(name: &str, clean: bool, reason: &str, released: &[String]) -> String {
    let mut message = if clean {
        format!("{name} has shut down ({reason}).")
    } else {
        format!("{name} was terminated ({reason}).")
    };
    if released.is_empty() {
        message.push_str(" It held no open tasks.");
    } else {
        message.push_str(&format!(
            " {} task(s) were unassigned: {}. Use TaskList to see them and give them to someone else.",
            released.len(),
            released.join(", ")
        ));
    }
    message
}

/// Runs the SubagentStop hooks of a teammate that died without running them, from the
/// project it was spawned for, on a thread of its own: a hook may take up to its timeout,
/// and the reconcile loop must not wait for it.
fn fire_subagent_stop(store: &Store, m: &MemberStatus, reason: &str, dirs: &UserDirs) {
    let Ok(config) = store.roster().load() else {
        return;
    };
    let Some(member) = config.member(&m.name) else {
        return;
    };
    let cwd = std::path::PathBuf::from(&member.cwd);
    let project = match store.worktrees().worktree(&m.name) {
        // `git_dir` is `<repo>/.git`.
        Ok(Some(w)) => w.git_dir.parent().map(Path::to_path_buf),
        _ => None,
    }
    .unwrap_or_else(|| dirs.project_dir(&cwd));
    let hooks = Hooks::load(&project, dirs);
    if hooks
        .commands(HookEvent::SubagentStop, member.agent_type.as_deref())
        .is_empty()
    {
        return;
    }
    let runner = Runner {
        hooks,
        // The teammate's own session id died with it.
        session_id: config.lead_session_id.clone().unwrap_or_default(),
        cwd,
        team: store.team().to_string(),
        agent: m.name.clone(),
        agent_type: member.agent_type.clone(),
    };
    let mode = m
        .mode
        .as_deref()
        .and_then(|mode| mode.parse().ok())
        .unwrap_or(swarm_config::permissions::PermissionMode::Default);
    let mut extra = serde_json::Map::new();
    extra.insert("stop_hook_active".into(), false.into());
    extra.insert("reason".into(), reason.into());
    let spawned = std::thread::Builder::new()
        .name("swarm-subagent-stop".into())
        // Problems are reported by the run itself.
        .spawn(move || drop(runner.fire(HookEvent::SubagentStop, mode, extra)));
    if let Ok(handle) = spawned {
        let mut running = STOP_HOOKS.lock().unwrap();
        running.retain(|h| !h.is_finished());
        running.push(handle);
    }
}

static STOP_HOOKS: std::sync::Mutex<Vec<std::thread::JoinHandle<()>>> =
    std::sync::Mutex::new(Vec::new());

/// Waits for the stop hooks this process started (each ends by its timeout at the latest).
pub fn wait_for_stop_hooks() {
    let handles = std::mem::take(&mut *STOP_HOOKS.lock().unwrap());
    for h in handles {
        let _ = h.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::stat::{UtimensatFlags, utimensat};
    use nix::sys::time::TimeSpec;
    use swarm_store::protocol::PlanApprovalRequest;
    use swarm_store::roster::NewMember;

    fn plan_request(store: &Store, n: u32) -> String {
        let id = format!("plan_approval-{n}@bob@{}", store.team());
        let request = Protocol::PlanApprovalRequest(PlanApprovalRequest {
            from: "bob".into(),
            timestamp: swarm_util::clock::now_iso(),
            plan_file_path: "/plans/bob.md".into(),
            plan_content: "1. do it".into(),
            request_id: id.clone(),
        });
        store
            .mail()
            .deliver(&AgentName::lead(), Envelope::new("bob", request.to_text()))
            .unwrap();
        id
    }

    /// Makes the lead's inbox look written a minute ago.
    fn age_inbox(store: &Store) {
        let path = store.root().inbox_path(store.team(), &AgentName::lead());
        let then = TimeSpec::new(swarm_util::clock::now_ms() / 1000 - 60, 0);
        utimensat(
            nix::fcntl::AT_FDCWD,
            &path,
            &then,
            &then,
            UtimensatFlags::NoFollowSymlink,
        )
        .unwrap();
    }

    #[test]
    fn an_inbox_read_to_the_end_is_read_again_only_once_it_changed() {
        let dir = tempfile::tempdir().unwrap();
        let root = swarm_store::Root::new(dir.path());
        let team = swarm_util::names::TeamName::new("t").unwrap();
        let store = swarm_store::Teams::new(root.clone())
            .create_team(&team, None, dir.path())
            .unwrap();
        store
            .roster()
            .add_member(NewMember {
                name: AgentName::new("bob").unwrap(),
                color: None,
                agent_type: None,
                model: None,
                prompt: None,
                plan_mode_required: false,
                cwd: dir.path().display().to_string(),
            })
            .unwrap();
        let first = plan_request(&store, 1);
        age_inbox(&store);
        let seen = status::observe(&store, None).unwrap();
        record_requests(&store, &seen).unwrap();
        assert!(store.approvals().get(&first).is_ok(), "recorded");
        // The same version of the inbox is not read again: a record taken away meanwhile
        // (only a test would) stays away.
        std::fs::remove_file(root.approval_path(&team, &first)).unwrap();
        record_requests(&store, &seen).unwrap();
        assert!(store.approvals().get(&first).is_err(), "read again");
        // A new message is a new version: read in full, both requests recorded.
        let second = plan_request(&store, 2);
        record_requests(&store, &seen).unwrap();
        assert!(store.approvals().get(&first).is_ok());
        assert!(store.approvals().get(&second).is_ok());
    }
}
