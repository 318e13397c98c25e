//! A hand-built snapshot of a busy team, for rendering and key tests: members in every
//! state (working, idle, awaiting approval, dead, exited), tasks with dependencies and a
//! blocked one, a feed of plain and protocol messages, and two pending approvals.

use jiff::tz::TimeZone;
use serde_json::json;

use crate::ui::dashboard::model::{Snapshot, board_order};
use swarm_store::approvals::{Approval, Kind, State};
use swarm_store::mailbox::Envelope;
use swarm_store::protocol::{
    IdleNotification, PermissionRequest, PlanApprovalRequest, Protocol, ShutdownApproved,
    ShutdownRequest, TaskAssignment, TeammateTerminated,
};
use swarm_store::tasks::Task;
use swarm_team::life::status::MemberStatus;
use swarm_team::views::feed::{self, FeedEntry};
use swarm_util::clock;
use swarm_util::meter::Usage;

/// 2026-02-12T05:22:25Z.
pub const NOW: i64 = 1_770_873_745_000;

fn ago(secs: i64) -> i64 {
    NOW - secs * 1000
}

fn member(name: &str, color: &str, state: &str) -> MemberStatus {
    MemberStatus {
        name: name.to_owned(),
        agent_id: format!("{name}@alpha"),
        color: Some(color.to_owned()),
        agent_type: None,
        model: Some("claude-sonnet-4-5".to_owned()),
        provider: Some("anthropic".to_owned()),
        engine: "swarm".to_owned(),
        pid: None,
        host: None,
        token: None,
        pane: None,
        alive: false,
        pane_alive: None,
        state: state.to_owned(),
        detail: None,
        current_task: None,
        last_activity_ms: None,
        mode: None,
        usage: Usage::default(),
        cost_usd: 0.0,
        model_calls: 0,
        exit_code: None,
        transcript: None,
        rate_limited_until: None,
        rate_limit_reason: None,
        last_error: None,
        pane_record: None,
        state_file: None,
    }
}

fn live(mut m: MemberStatus, pid: i32, pane: &str, last: i64) -> MemberStatus {
    m.pid = Some(pid);
    m.pane = Some(pane.to_owned());
    m.alive = true;
    m.pane_alive = Some(true);
    m.last_activity_ms = Some(ago(last));
    m
}

fn used(mut m: MemberStatus, input: u64, output: u64, cost: f64) -> MemberStatus {
    m.usage = Usage {
        input_tokens: input,
        output_tokens: output,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: input / 2,
    };
    m.cost_usd = cost;
    m.model_calls = 7;
    m
}

pub fn members() -> Vec<MemberStatus> {
    let lead = used(
        live(member("team-lead", "red", "working"), 4100, "%0", 2),
        32_100,
        3_050,
        0.412,
    );
    let mut alice = used(
        live(member("alice", "blue", "awaiting-approval"), 4101, "%1", 5),
        12_000,
        2_400,
        0.108,
    );
    alice.current_task = Some("2".into());
    alice.detail = Some("waiting for plan approval".into());
    let mut bob = used(
        live(member("bob", "green", "working"), 4102, "%2", 1),
        8_400,
        950,
        0.051,
    );
    bob.current_task = Some("3".into());
    let carol = used(
        live(member("carol", "yellow", "idle"), 4103, "%3", 130),
        2_000,
        300,
        0.012,
    );
    let mut dave = member("dave", "purple", "dead");
    dave.pid = Some(4104);
    dave.pane = Some("%4".into());
    dave.pane_alive = Some(false);
    dave.detail = Some("killed by signal 9".into());
    dave.last_activity_ms = Some(ago(420));
    dave.exit_code = Some(137);
    let mut erin = used(member("erin", "orange", "exited"), 1_500, 120, 0.004);
    erin.pid = Some(4105);
    erin.detail = Some("shutdown approved by team-lead".into());
    erin.last_activity_ms = Some(ago(44));
    vec![lead, alice, bob, carol, dave, erin]
}

fn task(id: &str, subject: &str, status: &str, owner: Option<&str>, after: &[&str]) -> Task {
    serde_json::from_value(json!({
        "id": id,
        "subject": subject,
        "description": format!("{subject}, as agreed in the plan."),
        "status": status,
        "owner": owner,
        "blockedBy": after,
        "blocks": [],
    }))
    .unwrap()
}

pub fn tasks() -> Vec<Task> {
    let mut internal = task("7", "alice", "in_progress", Some("alice"), &[]);
    internal.metadata = Some(json!({"_internal": true}).as_object().unwrap().clone());
    let mut tasks = vec![
        task("1", "Sketch the AST", "completed", Some("alice"), &[]),
        task("2", "Write the lexer", "in_progress", Some("alice"), &["1"]),
        task("3", "Parse expressions", "in_progress", Some("bob"), &["1"]),
        task("4", "Parse statements", "pending", None, &["1", "2", "3"]),
        task("5", "Write the README", "pending", None, &[]),
        task(
            "6",
            "Benchmark against the old parser",
            "pending",
            None,
            &["4"],
        ),
        internal,
    ];
    tasks[0].blocks = vec!["2".into(), "3".into(), "4".into()];
    board_order(tasks)
}

fn envelope(from: &str, text: String, secs_ago: i64) -> Envelope {
    let mut e = Envelope::new(from, text);
    e.timestamp = clock::iso_from_ms(ago(secs_ago));
    e.msg_id = Some(format!("msg-{from}-{secs_ago}"));
    e
}

fn idle(from: &str, secs_ago: i64, completed: Option<&str>) -> String {
    Protocol::IdleNotification(IdleNotification {
        from: from.into(),
        timestamp: clock::iso_from_ms(ago(secs_ago)),
        idle_reason: Some("available".into()),
        summary: None,
        completed_task_id: completed.map(str::to_owned),
        completed_status: completed.map(|_| "resolved".to_owned()),
        failure_reason: None,
        result: None,
    })
    .to_text()
}

pub const PLAN_ID: &str = "plan_approval-1770873595000@alice@alpha";
pub const PERM_ID: &str = "perm-1770873735000-abc1234";

pub fn feed() -> Vec<FeedEntry> {
    let mut raw = first_messages();
    raw.extend(last_messages());
    for s in [280, 260, 240, 200, 30, 20] {
        raw.push((LEAD, envelope("carol", idle("carol", s, None), s), s == 20));
    }
    feed::build(
        raw.into_iter()
            .map(|(to, e, unread)| FeedEntry::new(to, &e, unread))
            .collect(),
    )
}

const LEAD: &str = "team-lead";

/// One message of the feed: to whom, the envelope, and whether it is still unread.
type Mail = (&'static str, Envelope, bool);

fn ts(secs_ago: i64) -> String {
    clock::iso_from_ms(ago(secs_ago))
}

/// The feed's older half: a death, instructions, an assignment, an idle notice, a plan
/// request and a question between teammates.
fn first_messages() -> Vec<Mail> {
    vec![
        (
            LEAD,
            envelope(
                "system",
                Protocol::TeammateTerminated(TeammateTerminated {
                    message: "dave was killed by signal 9; task #6 back to pending".into(),
                    agent: Some("dave".into()),
                    released_task_ids: vec!["6".into()],
                })
                .to_text(),
                420,
            ),
            false,
        ),
        (
            "alice",
            envelope(
                LEAD,
                "Please start on #2, the lexer.\nKeep the token types small; details in PLAN.md."
                    .into(),
                300,
            ),
            false,
        ),
        (
            "bob",
            envelope(
                LEAD,
                Protocol::TaskAssignment(TaskAssignment {
                    task_id: "3".into(),
                    subject: "Parse expressions".into(),
                    description: "Pratt parser".into(),
                    assigned_by: LEAD.into(),
                    timestamp: ts(290),
                })
                .to_text(),
                290,
            ),
            false,
        ),
        (
            LEAD,
            envelope("alice", idle("alice", 160, Some("1")), 160),
            false,
        ),
        (
            LEAD,
            envelope(
                "alice",
                Protocol::PlanApprovalRequest(PlanApprovalRequest {
                    from: "alice".into(),
                    timestamp: ts(150),
                    plan_file_path: "/work/PLAN-alice.md".into(),
                    plan_content: "Split the lexer into a tokenizer and a cursor".into(),
                    request_id: PLAN_ID.into(),
                })
                .to_text(),
                150,
            ),
            false,
        ),
        (
            "alice",
            envelope(
                "bob",
                "Which token type do you use for numbers?".into(),
                120,
            ),
            false,
        ),
    ]
}

/// The feed's newer half: a shutdown asked for and approved, a permission request and an
/// instruction, the last two unread.
fn last_messages() -> Vec<Mail> {
    vec![
        (
            "erin",
            envelope(
                LEAD,
                Protocol::ShutdownRequest(ShutdownRequest {
                    request_id: "shutdown-1770873695000@erin".into(),
                    from: LEAD.into(),
                    reason: Some("README is done".into()),
                    timestamp: ts(50),
                })
                .to_text(),
                50,
            ),
            false,
        ),
        (
            LEAD,
            envelope(
                "erin",
                Protocol::ShutdownApproved(ShutdownApproved {
                    request_id: "shutdown-1770873695000@erin".into(),
                    from: "erin".into(),
                    timestamp: ts(45),
                    pane_id: Some("%5".into()),
                    backend_type: Some("tmux".into()),
                })
                .to_text(),
                45,
            ),
            false,
        ),
        (
            LEAD,
            envelope(
                "bob",
                Protocol::PermissionRequest(PermissionRequest {
                    request_id: PERM_ID.into(),
                    agent_id: "bob".into(),
                    tool_name: "Bash".into(),
                    tool_use_id: "toolu_01".into(),
                    description: "cargo test --workspace".into(),
                    input: json!({"command": "cargo test --workspace"}),
                    permission_suggestions: vec![],
                })
                .to_text(),
                10,
            ),
            true,
        ),
        (
            "bob",
            envelope(LEAD, "Run the whole suite before you report.".into(), 3),
            true,
        ),
    ]
}

pub fn approvals() -> Vec<Approval> {
    vec![
        Approval {
            request_id: PLAN_ID.into(),
            kind: Kind::Plan,
            agent: "alice".into(),
            state: State::Pending,
            created_ms: ago(150),
            resolved_ms: None,
            resolved_by: None,
            resolved_via: None,
            summary: "plan: Split the lexer into a tokenizer and a cursor".into(),
            detail: json!("Split the lexer into a tokenizer and a cursor\n\n1. ...\n2. ..."),
            feedback: None,
            mode: None,
        },
        Approval {
            request_id: PERM_ID.into(),
            kind: Kind::Permission,
            agent: "bob".into(),
            state: State::Pending,
            created_ms: ago(10),
            resolved_ms: None,
            resolved_by: None,
            resolved_via: None,
            summary: "Bash: cargo test --workspace".into(),
            detail: json!({"command": "cargo test --workspace"}),
            feedback: None,
            mode: None,
        },
    ]
}

/// The whole team.
pub fn snapshot() -> Snapshot {
    Snapshot {
        team: "alpha".into(),
        description: Some("Port the parser to Rust".into()),
        now_ms: NOW,
        tz: TimeZone::UTC,
        tmux_reachable: true,
        budget: None,
        merge_queue: None,
        members: members(),
        tasks: tasks(),
        feed: feed(),
        approvals: approvals(),
        problems: Vec::new(),
    }
}
