//! Acting on deaths: when a teammate's process is gone, its open tasks go back to pending,
//! its pending approval requests expire, the roster stops calling it active, and the lead
//! is told, with a `teammate_terminated` message naming the tasks released.
//!
//! A teammate that worked in its own git worktree has it settled here too: removed when
//! unchanged, kept (and the lead told where) when not; see [`crate::worktree`].
//!
//! Exactly once per process: whoever notices first (the lead's reconcile loop, the shutdown
//! ladder, `swarm status`) creates `state/<agent>.<pid>.reported` with `O_EXCL`; only that
//! caller reports. A restarted lead therefore never repeats a report, and two observers never
//! both send one.

use std::io::ErrorKind;

use crate::error::{Error, Result};
use crate::mailbox::{self, Envelope};
use crate::names::{AgentName, LEAD, TeamName};
use crate::protocol::{Protocol, TeammateTerminated};
use crate::root::Root;
use crate::roster;
use crate::state::{self, Activity, ExitInfo};
use crate::status::{MemberStatus, TeamStatus};
use crate::tasks::TaskList;

/// A death that was reported.
#[derive(Debug, Clone, PartialEq)]
pub struct Reported {
    pub name: String,
    pub reason: String,
    pub released: Vec<String>,
    /// What became of its worktree, if it had one.
    pub worktree: Option<String>,
}

/// Reports every teammate in `status` whose process has ended and was not reported yet.
pub fn report_exits(root: &Root, team: &TeamName, status: &TeamStatus) -> Vec<Reported> {
    status
        .members
        .iter()
        .filter(|m| {
            m.name != LEAD
                && !m.alive
                && m.pid.is_some()
                && matches!(m.state.as_str(), "dead" | "exited")
        })
        .filter_map(|m| match report_exit(root, team, m) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("failed to report that {} stopped: {e}", m.name);
                None
            }
        })
        .collect()
}

/// Reports one stopped teammate, unless someone already did.
pub fn report_exit(root: &Root, team: &TeamName, m: &MemberStatus) -> Result<Option<Reported>> {
    let (Some(pid), Ok(agent)) = (m.pid, AgentName::parse_any(&m.name)) else {
        return Ok(None);
    };
    let dir = root.state_dir(team);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create directory", &dir, e))?;
    let marker = dir.join(format!("{}.{pid}.reported", m.name));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&marker)
    {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => return Ok(None),
        Err(e) => return Err(Error::io("create", &marker, e)),
    }
    let mut released: Vec<String> = m
        .state_file
        .as_ref()
        .and_then(|s| s.exit.as_ref())
        .map(|e| e.released_tasks.clone())
        .unwrap_or_default();
    let list = TaskList::new(root, team);
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
    if let Err(e) = crate::approvals::expire_all(
        root,
        team,
        &m.name,
        &format!("{} stopped: {reason}", m.name),
    ) {
        tracing::warn!("failed to expire {}'s pending requests: {e}", m.name);
    }
    // The agent could not record its end itself: record it for it.
    if let Some(mut s) = m
        .state_file
        .clone()
        .filter(|s| s.activity != Activity::Exited)
    {
        s.activity = Activity::Exited;
        s.current_task = None;
        s.detail = Some(reason.clone());
        s.exit = Some(ExitInfo {
            code: m.exit_code.unwrap_or(-1),
            reason: reason.clone(),
            released_tasks: released.clone(),
            clean: false,
        });
        let _ = state::write(root, team, &agent, &s);
    }
    let _ = roster::update_member(root, team, &m.name, |member| member.is_active = Some(false));
    let mut message = if clean {
        format!("{} has shut down ({reason}).", m.name)
    } else {
        format!("{} was terminated ({reason}).", m.name)
    };
    if released.is_empty() {
        message.push_str(" It held no open tasks.");
    } else {
        message.push_str(&format!(
            " {} task(s) were unassigned: {}. Use TaskList to see them and give them to someone else.",
            released.len(),
            subjects.join(", ")
        ));
    }
    let note = Protocol::TeammateTerminated(TeammateTerminated {
        message: message.clone(),
        agent: Some(m.name.clone()),
        released_task_ids: released.clone(),
    });
    let mut envelope = Envelope::new("system", note.to_text());
    envelope.summary = Some(format!("{} stopped", m.name));
    mailbox::deliver(root, team, &AgentName::lead(), envelope)?;
    tracing::info!("{message}");
    let worktree = crate::worktree::settle(root, team, &m.name);
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
