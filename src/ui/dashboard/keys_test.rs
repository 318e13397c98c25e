//! The dashboard's keys resolving approvals through a real team's files (a temp root,
//! no terminal): what `a`, `r`, Esc and Enter do, and what a stale screen shows.

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use swarm_store::approvals::{self, Approval, Decision, State};
use swarm_store::layout::Root;
use swarm_store::protocol::{
    PermissionRequest, PlanApprovalRequest, Protocol, permission_request_id, plan_request_id,
};
use swarm_store::roster::NewMember;
use swarm_tmux::Tmux;
use swarm_util::clock;
use swarm_util::names::{AgentName, TeamName};

use crate::ui::dashboard::app::Flow;
use crate::ui::dashboard::ui::Panel;
use crate::ui::dashboard::{App, Jumper, Source};

/// A team "alpha" with alice and bob, in a temp root.
struct TestEnv {
    _dir: tempfile::TempDir,
    root: Root,
}

impl TestEnv {
    fn with_team() -> TestEnv {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let team = TeamName::new("alpha").unwrap();
        swarm_store::Teams::new(root.clone())
            .create_team(&team, None, dir.path())
            .unwrap();
        for name in ["alice", "bob"] {
            swarm_store::Teams::new(root.clone())
                .open(&team)
                .unwrap()
                .roster()
                .add_member(NewMember {
                    name: AgentName::new(name).unwrap(),
                    color: None,
                    agent_type: None,
                    model: None,
                    prompt: None,
                    plan_mode_required: false,
                    cwd: dir.path().display().to_string(),
                })
                .unwrap();
        }
        TestEnv { _dir: dir, root }
    }

    fn store_root(&self) -> Root {
        self.root.clone()
    }

    fn team_name(&self, team: &str) -> TeamName {
        TeamName::new(team).unwrap()
    }

    /// A tmux server nobody started: the dashboard finds no panes.
    fn tmux(&self) -> Tmux {
        Tmux::with_socket_name(format!("swarm-unit-{}", std::process::id()))
            .config_file("/dev/null")
    }
}

fn plan(env: &TestEnv, agent: &str, created_ms: i64) -> Approval {
    let req = PlanApprovalRequest {
        from: agent.into(),
        timestamp: clock::now_iso(),
        plan_file_path: "/tmp/plan.md".into(),
        plan_content: "Refactor the lexer\n\n1. split\n2. test".into(),
        request_id: plan_request_id(agent, "alpha"),
    };
    let mut a = approvals::from_plan(&req, None);
    a.created_ms = created_ms;
    swarm_store::Teams::new(env.store_root().clone())
        .open(&env.team_name("alpha"))
        .unwrap()
        .approvals()
        .record(&a)
        .unwrap()
}

fn permission(env: &TestEnv, agent: &str, id: &str, created_ms: i64) -> Approval {
    let req = PermissionRequest {
        request_id: id.into(),
        agent_id: agent.into(),
        tool_name: "Bash".into(),
        tool_use_id: "toolu_1".into(),
        description: "Bash: cargo test".into(),
        input: serde_json::json!({"command": "cargo test"}),
        permission_suggestions: vec![],
    };
    let mut a = approvals::from_permission(&req);
    a.created_ms = created_ms;
    swarm_store::Teams::new(env.store_root().clone())
        .open(&env.team_name("alpha"))
        .unwrap()
        .approvals()
        .record(&a)
        .unwrap()
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::from(code)
}

fn app(env: &TestEnv) -> App {
    let source = Source::new(
        swarm_store::Teams::new(env.store_root().clone())
            .open(&env.team_name("alpha"))
            .unwrap(),
        Some(env.tmux()),
    );
    App::new(source)
        .unwrap()
        .with_jumper(Jumper::outside_tmux())
}

fn stored(env: &TestEnv, id: &str) -> Approval {
    swarm_store::Teams::new(env.store_root().clone())
        .open(&env.team_name("alpha"))
        .unwrap()
        .approvals()
        .get(id)
        .unwrap()
}

/// The protocol messages in `agent`'s live inbox.
fn inbox(env: &TestEnv, agent: &str) -> Vec<Protocol> {
    swarm_store::Teams::new(env.store_root().clone())
        .open(&env.team_name("alpha"))
        .unwrap()
        .mail()
        .read_all(&AgentName::parse_any(agent).unwrap())
        .unwrap()
        .into_iter()
        .filter_map(|d| d.envelope.protocol())
        .collect()
}

fn notice(app: &App) -> String {
    app.ui()
        .notice
        .as_ref()
        .map(|n| n.text.clone())
        .unwrap_or_default()
}

#[test]
fn keys_approve_and_reject_through_the_real_files() {
    let env = TestEnv::with_team();
    let now = clock::now_ms();
    let plan_req = plan(&env, "alice", now - 60_000);
    let perm_id = permission_request_id();
    permission(&env, "bob", &perm_id, now - 30_000);
    let mut app = app(&env);
    assert_eq!(app.snapshot().approvals.len(), 2);

    // Away from the queue, `a` only moves there: nothing is decided unseen.
    assert_eq!(app.handle_key(key(KeyCode::Char('a'))), Flow::Continue);
    assert_eq!(app.ui().focus, Panel::Approvals);
    assert_eq!(stored(&env, &plan_req.request_id).state, State::Pending);

    // `a` on the selected (oldest) request approves it, as a human, and answers alice.
    app.handle_key(key(KeyCode::Char('a')));
    let a = stored(&env, &plan_req.request_id);
    assert_eq!(
        (a.state, a.resolved_by.as_deref()),
        (State::Approved, Some("human"))
    );
    assert!(
        notice(&app).contains("approved alice's plan"),
        "{}",
        notice(&app)
    );
    assert!(inbox(&env, "alice").iter().any(|p| matches!(p,
        Protocol::PlanApprovalResponse(r) if r.request_id == plan_req.request_id && r.approved)));
    assert_eq!(app.snapshot().approvals.len(), 1, "the queue was reloaded");

    // `r` asks for feedback on the bottom line; Enter sends it.
    app.handle_key(key(KeyCode::Char('r')));
    for c in "not now".chars() {
        app.handle_key(key(KeyCode::Char(c)));
    }
    let screen = app.render_text(100, 30);
    assert!(
        screen.contains("reject bob's request: why (optional)? not now"),
        "{screen}"
    );
    app.handle_key(key(KeyCode::Enter));
    let r = stored(&env, &perm_id);
    assert_eq!(
        (r.state, r.resolved_by.as_deref(), r.feedback.as_deref()),
        (State::Rejected, Some("human"), Some("not now"))
    );
    assert!(inbox(&env, "bob").iter().any(|p| matches!(p,
        Protocol::PermissionResponse(r) if r.request_id == perm_id
            && r.subtype == "error" && r.error.as_deref() == Some("not now"))));
    assert!(app.snapshot().approvals.is_empty());

    // A plan cannot be rejected without saying what to change; Esc leaves it pending.
    let second = plan(&env, "alice", now - 10_000);
    app.refresh();
    app.handle_key(key(KeyCode::Char('r')));
    app.handle_key(key(KeyCode::Enter));
    assert!(notice(&app).contains("needs feedback"), "{}", notice(&app));
    app.handle_key(key(KeyCode::Esc));
    assert_eq!(stored(&env, &second.request_id).state, State::Pending);

    // Resolved elsewhere meanwhile: the error goes to the status line, nothing breaks.
    swarm_store::Teams::new(env.store_root().clone())
        .open(&env.team_name("alpha"))
        .unwrap()
        .approvals()
        .resolve(
            &second.request_id,
            Decision {
                approve: true,
                feedback: None,
                mode: None,
                by: "team-lead".into(),
                via: None,
            },
        )
        .unwrap();
    assert_eq!(app.snapshot().approvals.len(), 1, "the screen is stale");
    app.handle_key(key(KeyCode::Char('a')));
    let n = app.ui().notice.clone().unwrap();
    assert!(n.error, "{n:?}");
    assert!(
        n.text.contains("already approved by team-lead"),
        "{}",
        n.text
    );
    assert!(
        app.snapshot().approvals.is_empty(),
        "reloaded after the error"
    );

    // Jumping to a pane outside tmux says how to get there instead.
    app.handle_key(key(KeyCode::BackTab));
    app.handle_key(key(KeyCode::BackTab));
    assert_eq!(app.ui().focus, Panel::Members);
    app.handle_key(key(KeyCode::Down));
    app.handle_key(key(KeyCode::Enter));
    assert!(
        notice(&app).contains("alice has no tmux pane"),
        "{}",
        notice(&app)
    );
    assert_eq!(app.handle_key(key(KeyCode::Char('q'))), Flow::Quit);
}
