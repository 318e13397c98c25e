//! The approvals' contract: a request recorded once (recording again only fills in a
//! plan's mode), resolved exactly once (eight deciders racing over the same requests: one
//! wins each, and the teammate gets one answer each), expired only while pending, and a
//! plan approved before the lead recorded it gets the lead's mode from the roster; an
//! answer that came by mail is recorded once, as given, and sends nothing.

use std::collections::HashSet;

use serde_json::json;

use crate::backends::{Team, agent};
use crate::contract;
use swarm_store::approvals::{Approval, Decision, State, from_permission, from_plan};
use swarm_store::protocol::{PermissionRequest, PlanApprovalRequest, Protocol};
use swarm_util::clock;
use swarm_util::names::LEAD;

contract!(
    recording_again_keeps_the_record_and_only_fills_in_the_mode,
    a_request_is_resolved_once_and_its_teammate_answered_once,
    eight_deciders_racing_each_request_resolve_it_once,
    only_a_pending_request_expires,
    a_plan_approved_before_the_lead_saw_it_gets_the_leads_mode,
    an_answer_by_mail_is_recorded_once_and_sends_nothing,
);

fn plan(id: &str) -> PlanApprovalRequest {
    PlanApprovalRequest {
        from: "bob".into(),
        timestamp: clock::now_iso(),
        plan_file_path: "/plans/bob.md".into(),
        plan_content: "1. write it".into(),
        request_id: id.into(),
    }
}

fn permission(id: &str) -> Approval {
    from_permission(&PermissionRequest {
        request_id: id.into(),
        agent_id: "bob".into(),
        tool_name: "Bash".into(),
        tool_use_id: "t1".into(),
        description: "run ls".into(),
        input: json!({"command": "ls"}),
        permission_suggestions: Vec::new(),
    })
}

fn decision(approve: bool, by: &str) -> Decision {
    Decision {
        approve,
        feedback: None,
        mode: None,
        by: by.into(),
        via: None,
    }
}

/// The answers in bob's inbox, by request id.
fn answers(team: &Team) -> Vec<String> {
    team.mail()
        .read_unread(&agent("bob"))
        .unwrap()
        .into_iter()
        .filter_map(|d| match d.envelope.protocol()? {
            Protocol::PermissionResponse(r) => Some(r.request_id),
            Protocol::PlanApprovalResponse(r) => Some(r.request_id),
            _ => None,
        })
        .collect()
}

fn recording_again_keeps_the_record_and_only_fills_in_the_mode(team: &Team) {
    let id = "plan_approval-1@bob@contract";
    let first = team
        .approvals()
        .record(&from_plan(&plan(id), None))
        .unwrap();
    let mut again = from_plan(&plan(id), Some("acceptEdits".into()));
    again.created_ms += 1000;
    let stored = team.open().approvals().record(&again).unwrap();
    assert_eq!(stored.created_ms, first.created_ms);
    assert_eq!(stored.mode.as_deref(), Some("acceptEdits"));
    assert_eq!(
        team.approvals().list().unwrap(),
        std::slice::from_ref(&stored)
    );
    assert_eq!(team.approvals().get(id).unwrap(), stored);
    // Once it is decided, nothing recorded later changes it.
    team.approvals().expire(id, "bob stopped").unwrap().unwrap();
    let late = team
        .approvals()
        .record(&from_plan(&plan(id), Some("plan".into())))
        .unwrap();
    assert_eq!(late.state, State::Expired);
    assert_eq!(late.mode.as_deref(), Some("acceptEdits"));
    let bad = team.approvals().get("../x").unwrap_err();
    assert!(bad.is_usage(), "{bad}");
    let mut bad = permission("perm-1-a");
    bad.request_id = "nonsense".into();
    assert!(team.approvals().record(&bad).unwrap_err().is_usage());
    let unknown = team.approvals().get("perm-9-z").unwrap_err();
    assert!(unknown.is_not_found(), "{unknown}");
}

fn a_request_is_resolved_once_and_its_teammate_answered_once(team: &Team) {
    team.add(&["bob"]);
    let id = "perm-100-a";
    team.approvals().record(&permission(id)).unwrap();
    let done = team
        .approvals()
        .resolve(id, decision(true, "human"))
        .unwrap();
    assert_eq!(
        (done.state, done.resolved_by.as_deref()),
        (State::Approved, Some("human"))
    );
    let second = team
        .open()
        .approvals()
        .resolve(id, decision(false, LEAD))
        .unwrap_err();
    assert!(second.is_conflict(), "{second}");
    assert_eq!(
        second.to_string(),
        "request perm-100-a was already approved by human"
    );
    assert_eq!(team.approvals().get(id).unwrap(), done, "the first stands");
    assert_eq!(answers(team), [id], "one answer");
    let unknown = team
        .approvals()
        .resolve("perm-101-b", decision(true, "human"))
        .unwrap_err();
    assert!(unknown.is_not_found(), "{unknown}");
    // A plan is rejected only with feedback; refused, it stays pending and unanswered.
    let plan_id = "plan_approval-2@bob@contract";
    team.approvals()
        .record(&from_plan(&plan(plan_id), None))
        .unwrap();
    let bare = team
        .approvals()
        .resolve(plan_id, decision(false, LEAD))
        .unwrap_err();
    assert!(bare.is_usage(), "{bare}");
    assert_eq!(team.approvals().get(plan_id).unwrap().state, State::Pending);
    assert_eq!(answers(team), [id]);
}

fn eight_deciders_racing_each_request_resolve_it_once(team: &Team) {
    const REQUESTS: usize = 25;
    const DECIDERS: usize = 8;
    team.add(&["bob"]);
    let ids: Vec<String> = (0..REQUESTS).map(|i| format!("perm-{i}-r")).collect();
    for id in &ids {
        team.approvals().record(&permission(id)).unwrap();
    }
    let wins: Vec<(String, String)> = std::thread::scope(|scope| {
        let deciders: Vec<_> = (0..DECIDERS)
            .map(|d| {
                let (handle, ids) = (team.open(), &ids);
                scope.spawn(move || {
                    let me = format!("decider{d}");
                    let mut won = Vec::new();
                    for id in ids {
                        match handle.approvals().resolve(id, decision(d % 2 == 0, &me)) {
                            Ok(a) => won.push((a.request_id, me.clone())),
                            Err(e) => assert!(e.is_conflict(), "{e}"),
                        }
                    }
                    won
                })
            })
            .collect();
        deciders
            .into_iter()
            .flat_map(|d| d.join().unwrap())
            .collect()
    });
    let decided: HashSet<&str> = wins.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        wins.len(),
        REQUESTS,
        "{}: one winner per request",
        team.kind
    );
    assert_eq!(decided.len(), REQUESTS);
    for (id, by) in &wins {
        let a = team.approvals().get(id).unwrap();
        assert_eq!(
            a.resolved_by.as_ref(),
            Some(by),
            "the winner's decision stands"
        );
    }
    let mut answered = answers(team);
    answered.sort();
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(answered, expected, "one answer per request");
}

fn only_a_pending_request_expires(team: &Team) {
    team.add(&["bob"]);
    assert_eq!(team.approvals().expire("perm-1-x", "gone").unwrap(), None);
    for id in ["perm-1-a", "perm-2-b", "perm-3-c"] {
        team.approvals().record(&permission(id)).unwrap();
    }
    let mut carol = permission("perm-4-d");
    carol.agent = "carol".into();
    team.approvals().record(&carol).unwrap();
    team.approvals()
        .resolve("perm-2-b", decision(true, "human"))
        .unwrap();
    let expired = team.approvals().expire_all("bob", "bob stopped").unwrap();
    let ids: Vec<&str> = expired.iter().map(|a| a.request_id.as_str()).collect();
    assert_eq!(ids, ["perm-1-a", "perm-3-c"]);
    assert!(expired.iter().all(|a| a.state == State::Expired
        && a.resolved_by.as_deref() == Some("timeout")
        && a.feedback.as_deref() == Some("bob stopped")));
    assert!(
        team.approvals()
            .expire_all("bob", "again")
            .unwrap()
            .is_empty()
    );
    assert_eq!(team.approvals().expire("perm-2-b", "late").unwrap(), None);
    assert_eq!(
        team.approvals().get("perm-2-b").unwrap().state,
        State::Approved
    );
    assert_eq!(
        team.approvals().get("perm-4-d").unwrap().state,
        State::Pending
    );
    let err = team
        .approvals()
        .resolve("perm-1-a", decision(true, "human"))
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(
        err.to_string(),
        "request perm-1-a has expired (bob stopped); bob no longer waits for an answer"
    );
}

fn a_plan_approved_before_the_lead_saw_it_gets_the_leads_mode(team: &Team) {
    team.add(&["bob"]);
    team.roster()
        .update_member(LEAD, |lead| lead.mode = Some("acceptEdits".into()))
        .unwrap();
    let id = "plan_approval-3@bob@contract";
    team.approvals()
        .record(&from_plan(&plan(id), None))
        .unwrap();
    let decided = team
        .approvals()
        .resolve(id, decision(true, "human"))
        .unwrap();
    assert_eq!(decided.mode.as_deref(), Some("acceptEdits"));
    let answer = team
        .mail()
        .read_unread(&agent("bob"))
        .unwrap()
        .into_iter()
        .find_map(|d| match d.envelope.protocol() {
            Some(Protocol::PlanApprovalResponse(r)) => Some(r),
            _ => None,
        })
        .unwrap();
    assert!(answer.approved);
    assert_eq!(answer.permission_mode.as_deref(), Some("acceptEdits"));
}

fn an_answer_by_mail_is_recorded_once_and_sends_nothing(team: &Team) {
    team.add(&["bob"]);
    let id = "plan_approval-3@bob@contract";
    team.approvals()
        .record(&from_plan(&plan(id), None))
        .unwrap();
    let mut mailed = decision(false, LEAD);
    mailed.mode = Some("acceptEdits".into());
    let a = team
        .open()
        .approvals()
        .answered(id, mailed.clone())
        .unwrap()
        .expect("a pending request takes the answer");
    assert_eq!(a.state, State::Rejected);
    assert_eq!(a.resolved_by.as_deref(), Some(LEAD));
    assert!(a.feedback.is_some(), "a rejection keeps a reason: {a:?}");
    assert_eq!(team.approvals().get(id).unwrap(), a);
    assert!(answers(team).is_empty(), "an answer by mail sent one");
    // Once: a second answer, and a decision after it, change nothing.
    assert_eq!(team.approvals().answered(id, mailed).unwrap(), None);
    assert!(
        team.approvals()
            .resolve(id, decision(true, "human"))
            .is_err()
    );
    assert_eq!(team.approvals().get(id).unwrap(), a);
    assert_eq!(
        team.approvals()
            .answered("plan_approval-9@bob@contract", decision(true, LEAD))
            .unwrap(),
        None
    );
}
