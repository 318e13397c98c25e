//! Approvals as durable state: every plan approval and permission request a teammate sends
//! the lead, with its request id and state, `teams/<team>/approvals/<request-id>.json`.
//!
//! A request is recorded once, by the teammate that asks, before it asks (recording again
//! is a no-op, except that the lead fills in a plan's mode, which the teammate cannot
//! know). It moves from `pending` to `approved`, `rejected` or `expired` exactly once (the
//! transition happens under the file's lock; a second resolution is refused with a
//! conflict), and its answer goes to the teammate's inbox in the same step, which wakes it
//! at once. Who decides is the caller's business: the lead's model, a person (`swarm
//! approve`, the dashboard), or a timeout; a request expires when its teammate stops
//! waiting for it, or stops.
//!
//! The rules are functions every backend calls, so none decides differently:
//! [`check_id`], [`recorded_again`], [`decide`] (with [`lead_mode_of`]) and [`expired`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::files;
use crate::layout::Root;
use crate::mailbox::{self, Envelope};
use crate::protocol::{
    PermissionGrant, PermissionRequest, PermissionResponse, PlanApprovalRequest,
    PlanApprovalResponse, Protocol,
};
use swarm_util::error::{Base as _, IoContext};
use swarm_util::names::{AgentName, LEAD, TeamName};
use swarm_util::{clock, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Plan,
    Permission,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Pending,
    Approved,
    Rejected,
    Expired,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Approved => "approved",
            State::Rejected => "rejected",
            State::Expired => "expired",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    pub request_id: String,
    pub kind: Kind,
    pub agent: String,
    pub state: State,
    pub created_ms: i64,
    #[serde(default)]
    pub resolved_ms: Option<i64>,
    /// Who decided: the acting agent's name (`team-lead`: the lead's model, through
    /// SendMessage or `swarm approve`), `human` (a person at the CLI or the dashboard), or
    /// `timeout`.
    #[serde(default)]
    pub resolved_by: Option<String>,
    /// Where a person decided, when it was not at a terminal: `web session <label>` for
    /// `swarm serve` (a label, never the session's secret). swarm's own field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_via: Option<String>,
    /// One line: the tool call, or the plan's first line.
    pub summary: String,
    /// The plan text, or the tool input.
    pub detail: Value,
    #[serde(default)]
    pub feedback: Option<String>,
    /// For plans: the permission mode the teammate gets on approval.
    #[serde(default)]
    pub mode: Option<String>,
}

/// A decision on a pending request.
#[derive(Debug, Clone)]
pub struct Decision {
    pub approve: bool,
    pub feedback: Option<String>,
    pub mode: Option<String>,
    pub by: String,
    /// Where the decider acted, if not at a terminal (recorded as `resolvedVia`).
    pub via: Option<String>,
}

/// Refuses what is not a request id (and so could not be a record's name).
pub fn check_id(id: &str) -> Result<()> {
    if id.is_empty()
        || id.contains('/')
        || id.contains('\0')
        || id.starts_with('.')
        || !crate::protocol::is_valid_request_id(id)
    {
        return Err(Error::usage(format!(
            "'{id}' is not a request id; see `swarm approvals`"
        )));
    }
    Ok(())
}

fn path(root: &Root, team: &TeamName, id: &str) -> Result<std::path::PathBuf> {
    check_id(id)?;
    Ok(root.approval_path(team, id))
}

/// The record for a plan approval request; `mode` is what the teammate gets when the plan
/// is approved without naming a mode (the lead's teammates' mode, as Claude Code does).
pub fn from_plan(req: &PlanApprovalRequest, mode: Option<String>) -> Approval {
    Approval {
        request_id: req.request_id.clone(),
        kind: Kind::Plan,
        agent: req.from.clone(),
        state: State::Pending,
        created_ms: clock::now_ms(),
        resolved_ms: None,
        resolved_by: None,
        resolved_via: None,
        summary: format!(
            "plan: {}",
            req.plan_content
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .chars()
                .take(100)
                .collect::<String>()
        ),
        detail: Value::String(req.plan_content.clone()),
        feedback: None,
        mode,
    }
}

/// The record for a permission request.
pub fn from_permission(req: &PermissionRequest) -> Approval {
    Approval {
        request_id: req.request_id.clone(),
        kind: Kind::Permission,
        agent: req.agent_id.clone(),
        state: State::Pending,
        created_ms: clock::now_ms(),
        resolved_ms: None,
        resolved_by: None,
        resolved_via: None,
        summary: req.description.clone(),
        detail: req.input.clone(),
        feedback: None,
        mode: None,
    }
}

/// What recording `new` again over `existing` changes: the record to write, if any. A
/// plan-mode teammate records its plan without the mode approval gives it (its own mode is
/// `plan`); the lead, recording the same request, knows it. Nothing else changes a record
/// once made. Every backend records by this rule.
pub fn recorded_again(existing: &Approval, new: &Approval) -> Option<Approval> {
    if existing.state == State::Pending && existing.mode.is_none() && new.mode.is_some() {
        let mut filled = existing.clone();
        filled.mode = new.mode.clone();
        return Some(filled);
    }
    None
}

/// Records a request as pending, unless it is known already. Returns the record as stored.
pub(crate) fn record(root: &Root, team: &TeamName, approval: &Approval) -> Result<Approval> {
    let p = path(root, team, &approval.request_id)?;
    let d = root.approvals_dir(team);
    std::fs::create_dir_all(&d).ctx("create directory", &d)?;
    let _guard = files::lock(root, &p)?;
    if let Some(existing) = read(root, &p)? {
        return Ok(match recorded_again(&existing, approval) {
            Some(filled) => {
                files::write(root, &p, &json::to_pretty(&filled))?;
                filled
            }
            None => existing,
        });
    }
    files::write(root, &p, &json::to_pretty(approval))?;
    Ok(approval.clone())
}

fn read(root: &Root, p: &std::path::Path) -> Result<Option<Approval>> {
    match files::read(root, p)? {
        Some(b) => {
            Ok(json::parse(&b)
                .map(Some)
                .map_err(|e| swarm_util::error::Error::Corrupt {
                    path: p.to_path_buf(),
                    reason: e.to_string(),
                })?)
        }
        None => Ok(None),
    }
}

/// The error for a request the team does not have.
pub fn unknown(team: &TeamName, id: &str) -> Error {
    Error::not_found(format!(
        "no request '{id}' in team '{team}'; see `swarm approvals`"
    ))
}

pub(crate) fn get(root: &Root, team: &TeamName, id: &str) -> Result<Approval> {
    read(root, &path(root, team, id)?)?.ok_or_else(|| unknown(team, id))
}

/// Every request, oldest first.
pub(crate) fn list(root: &Root, team: &TeamName) -> Result<Vec<Approval>> {
    let d = root.approvals_dir(team);
    let entries = match std::fs::read_dir(&d) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read directory", &d, e)),
    };
    let mut all: Vec<Approval> = entries
        .flatten()
        .filter(|e| {
            e.file_name().to_string_lossy().ends_with(".json")
                && !e.file_name().to_string_lossy().starts_with('.')
        })
        .filter_map(|e| read(root, &e.path()).ok().flatten())
        .collect();
    all.sort_by(|a, b| (a.created_ms, &a.request_id).cmp(&(b.created_ms, &b.request_id)));
    Ok(all)
}

/// A request decided: its record as it is now, and the answer for its teammate.
#[derive(Debug, Clone)]
pub struct Resolution {
    pub approval: Approval,
    /// The teammate that asked, who gets `answer`.
    pub to: AgentName,
    pub answer: Envelope,
}

/// Decides request `a` by `decision`: refused (a conflict naming the first decision) unless
/// it is pending, and a plan's rejection needs feedback. `lead_mode` is asked only for a
/// plan approved with no mode of its own (see [`lead_mode_of`]). Every backend decides by
/// this rule, then writes the record before (or with) the answer.
pub fn decide(
    a: &Approval,
    decision: Decision,
    lead_mode: impl FnOnce() -> Option<String>,
) -> Result<Resolution> {
    let id = &a.request_id;
    if a.state == State::Expired {
        return Err(Error::conflict(format!(
            "request {id} has expired ({}); {} no longer waits for an answer",
            a.feedback.as_deref().unwrap_or("nobody answered in time"),
            a.agent
        )));
    }
    if a.state != State::Pending {
        return Err(Error::conflict(format!(
            "request {id} was already {} by {}",
            a.state.as_str(),
            a.resolved_by.as_deref().unwrap_or("someone")
        )));
    }
    if !decision.approve
        && a.kind == Kind::Plan
        && decision
            .feedback
            .as_deref()
            .is_none_or(|f| f.trim().is_empty())
    {
        return Err(Error::usage(
            "rejecting a plan needs feedback saying what to change (--feedback TEXT)",
        ));
    }
    // A plan approved before the lead recorded its mode (a person was quicker) still gets
    // the lead's: the roster has it.
    let mode = decision
        .mode
        .clone()
        .or_else(|| a.mode.clone())
        .or_else(|| (a.kind == Kind::Plan).then(lead_mode).flatten());
    let answer = answer(a, &decision, mode.as_deref());
    let mut a = a.clone();
    a.state = if decision.approve {
        State::Approved
    } else {
        State::Rejected
    };
    a.resolved_ms = Some(clock::now_ms());
    a.resolved_by = Some(decision.by.clone());
    a.resolved_via = decision.via;
    a.feedback = decision.feedback;
    a.mode = mode;
    Ok(Resolution {
        to: AgentName::parse_any(&a.agent)?,
        approval: a,
        answer: Envelope::new(LEAD, answer.to_text()),
    })
}

/// The protocol message that tells `a`'s teammate the decision.
fn answer(a: &Approval, decision: &Decision, mode: Option<&str>) -> Protocol {
    match a.kind {
        Kind::Plan => Protocol::PlanApprovalResponse(PlanApprovalResponse {
            request_id: a.request_id.clone(),
            approved: decision.approve,
            feedback: decision.feedback.clone().filter(|_| !decision.approve),
            timestamp: clock::now_iso(),
            permission_mode: decision
                .approve
                .then(|| mode.unwrap_or("default").to_owned()),
        }),
        Kind::Permission => Protocol::PermissionResponse(PermissionResponse {
            request_id: a.request_id.clone(),
            subtype: if decision.approve { "success" } else { "error" }.to_owned(),
            // Claude Code runs the tool only with the input it may use and the rule
            // changes to make, both present (docs/design/claude-code-client.md §3).
            response: decision.approve.then(|| PermissionGrant {
                updated_input: Some(a.detail.clone()),
                permission_updates: Some(Vec::new()),
            }),
            error: (!decision.approve).then(|| {
                decision
                    .feedback
                    .clone()
                    .unwrap_or_else(|| "denied".to_owned())
            }),
        }),
    }
}

/// Resolves a pending request exactly once and sends the answer to the teammate.
pub(crate) fn resolve(
    root: &Root,
    team: &TeamName,
    id: &str,
    decision: Decision,
) -> Result<Approval> {
    let p = path(root, team, id)?;
    // Records are never deleted, so one that is not there yet needs no lock to say so
    // (and its directory may not exist for the lock file either).
    if !p.exists() {
        return Err(unknown(team, id));
    }
    let _guard = files::lock(root, &p)?;
    let a = read(root, &p)?.ok_or_else(|| unknown(team, id))?;
    let lead_mode = || {
        crate::roster::load(root, team)
            .ok()
            .and_then(|c| lead_mode_of(&c))
    };
    let done = decide(&a, decision, lead_mode)?;
    // Written before the answer goes out: a crash between leaves it resolved but
    // unanswered (the teammate's own timeout covers that), never answered twice.
    files::write(root, &p, &json::to_pretty(&done.approval))?;
    mailbox::deliver(root, team, &done.to, done.answer)?;
    Ok(done.approval)
}

/// Records an answer that came by mail (see `seam::Approvals::answered`): decides a
/// pending request without sending anything; `None` if there is none pending.
pub(crate) fn answered(
    root: &Root,
    team: &TeamName,
    id: &str,
    decision: Decision,
) -> Result<Option<Approval>> {
    let p = path(root, team, id)?;
    if !p.exists() {
        return Ok(None);
    }
    let _guard = files::lock(root, &p)?;
    let Some(a) = read(root, &p)?.and_then(|a| answered_by_mail(&a, decision)) else {
        return Ok(None);
    };
    files::write(root, &p, &json::to_pretty(&a))?;
    Ok(Some(a))
}

/// `a` decided by an answer that came by mail, if it is still pending (`None`: decided or
/// expired already). Every backend records such answers by this rule: the answer stands as
/// it was given, so a rejection without feedback is recorded too.
pub fn answered_by_mail(a: &Approval, mut decision: Decision) -> Option<Approval> {
    if a.state != State::Pending {
        return None;
    }
    if !decision.approve
        && decision
            .feedback
            .as_deref()
            .is_none_or(|f| f.trim().is_empty())
    {
        decision.feedback = Some("(no feedback given)".to_owned());
    }
    decide(a, decision, || None).ok().map(|done| done.approval)
}

/// The permission mode the team's lead runs in, as its roster entry records it, unless it
/// is `plan` (which a teammate leaving plan mode never gets).
pub fn lead_mode_of(config: &crate::roster::TeamConfig) -> Option<String> {
    config.member(LEAD)?.mode.clone().filter(|m| m != "plan")
}

/// `a` expired because `why`, if it is still pending (`None`: it was decided already).
/// Every backend expires by this rule.
pub fn expired(a: &Approval, why: &str) -> Option<Approval> {
    if a.state != State::Pending {
        return None;
    }
    let mut a = a.clone();
    a.state = State::Expired;
    a.resolved_ms = Some(clock::now_ms());
    a.resolved_by = Some("timeout".to_owned());
    a.feedback = Some(why.to_owned());
    Some(a)
}

/// Marks a pending request expired (its teammate stopped waiting, or stopped). `None` when
/// there is no such request or it was resolved already.
pub(crate) fn expire(
    root: &Root,
    team: &TeamName,
    id: &str,
    why: &str,
) -> Result<Option<Approval>> {
    let p = path(root, team, id)?;
    if !p.exists() {
        return Ok(None);
    }
    let _guard = files::lock(root, &p)?;
    let Some(a) = read(root, &p)?.and_then(|a| expired(&a, why)) else {
        return Ok(None);
    };
    files::write(root, &p, &json::to_pretty(&a))?;
    Ok(Some(a))
}

/// Expires every request of `agent` still pending: it stopped, so nobody waits for them.
pub(crate) fn expire_all(
    root: &Root,
    team: &TeamName,
    agent: &str,
    why: &str,
) -> Result<Vec<Approval>> {
    let mut expired = Vec::new();
    for a in list(root, team)? {
        if a.agent == agent && a.state == State::Pending {
            expired.extend(expire(root, team, &a.request_id, why)?);
        }
    }
    Ok(expired)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(id: &str) -> PlanApprovalRequest {
        PlanApprovalRequest {
            from: "bob".into(),
            timestamp: clock::now_iso(),
            plan_file_path: "/plans/bob.md".into(),
            plan_content: "1. write it".into(),
            request_id: id.into(),
        }
    }

    #[test]
    fn recording_again_keeps_the_record_and_only_fills_in_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let (root, team) = (Root::new(dir.path()), TeamName::new("t").unwrap());
        let id = "plan_approval-1@bob@t";
        let first = record(&root, &team, &from_plan(&plan(id), None)).unwrap();
        let mut again = from_plan(&plan(id), Some("acceptEdits".into()));
        again.created_ms += 1000;
        let stored = record(&root, &team, &again).unwrap();
        assert_eq!(stored.created_ms, first.created_ms);
        assert_eq!(stored.mode.as_deref(), Some("acceptEdits"));
        assert_eq!(list(&root, &team).unwrap(), [stored]);
        // Once it is decided, nothing recorded later changes it.
        expire(&root, &team, id, "bob stopped").unwrap().unwrap();
        let late = record(&root, &team, &from_plan(&plan(id), Some("plan".into()))).unwrap();
        assert_eq!(late.state, State::Expired);
        assert_eq!(late.mode.as_deref(), Some("acceptEdits"));
    }

    #[test]
    fn a_plan_approved_before_the_lead_saw_it_gets_the_leads_mode() {
        let dir = tempfile::tempdir().unwrap();
        let (root, team) = (Root::new(dir.path()), TeamName::new("t").unwrap());
        crate::roster::create(&root, &team, None, dir.path()).unwrap();
        crate::roster::add_member(
            &root,
            &team,
            crate::roster::NewMember {
                name: AgentName::new("bob").unwrap(),
                color: None,
                agent_type: None,
                model: None,
                prompt: None,
                plan_mode_required: true,
                cwd: String::new(),
            },
        )
        .unwrap();
        crate::Teams::new(root.clone())
            .open(&team)
            .unwrap()
            .roster()
            .update_member(LEAD, |lead| lead.mode = Some("acceptEdits".into()))
            .unwrap();
        // Recorded by bob alone: the lead has not filled in the mode yet.
        let id = "plan_approval-3@bob@t";
        record(&root, &team, &from_plan(&plan(id), None)).unwrap();
        let decided = resolve(
            &root,
            &team,
            id,
            Decision {
                approve: true,
                feedback: None,
                mode: None,
                by: "human".into(),
                via: None,
            },
        )
        .unwrap();
        assert_eq!(decided.mode.as_deref(), Some("acceptEdits"));
        let answer = crate::mailbox::read_all(&root, &team, &AgentName::new("bob").unwrap())
            .unwrap()
            .into_iter()
            .find_map(|d| match d.envelope.protocol() {
                Some(Protocol::PlanApprovalResponse(r)) => Some(r),
                _ => None,
            })
            .unwrap();
        assert_eq!(answer.permission_mode.as_deref(), Some("acceptEdits"));
    }

    #[test]
    fn an_expired_request_cannot_be_decided_and_an_unknown_one_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let (root, team) = (Root::new(dir.path()), TeamName::new("t").unwrap());
        let decision = || Decision {
            approve: true,
            feedback: None,
            mode: None,
            by: "human".into(),
            via: None,
        };
        let err = resolve(&root, &team, "plan_approval-1@bob@t", decision()).unwrap_err();
        assert!(err.is_not_found(), "{err}");
        assert_eq!(
            expire(&root, &team, "plan_approval-1@bob@t", "x").unwrap(),
            None
        );
        assert!(!dir.path().join("teams").exists(), "created files");
        let id = "plan_approval-2@bob@t";
        record(&root, &team, &from_plan(&plan(id), None)).unwrap();
        assert_eq!(
            expire_all(&root, &team, "bob", "bob stopped")
                .unwrap()
                .len(),
            1
        );
        assert!(expire_all(&root, &team, "bob", "again").unwrap().is_empty());
        let err = resolve(&root, &team, id, decision()).unwrap_err();
        assert!(
            matches!(err, Error::Base(swarm_util::error::Error::Conflict(_))),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "request plan_approval-2@bob@t has expired (bob stopped); bob no longer waits for an answer"
        );
    }
}
