//! Protocol messages: typed values carried as compact JSON in a mailbox message's `text`.
//!
//! Shapes, field names and request-id formats are Claude Code's (`docs/design/formats.md`
//! §5, §1.3), so a Claude Code lead or teammate understands what swarm writes and the other
//! way round. [`Protocol::parse`] returns `None` for anything that is not one of these
//! messages, and such text stays plain text.
//!
//! Most messages name their sender inside (`from`, a permission request's `agent_id`, a
//! task assignment's `assignedBy`). Whoever handles one checks that name against the
//! envelope's `from` ([`Protocol::signed_by`]) and ignores the message, with a warning, when
//! they disagree: that is a model pasting someone else's JSON, not that someone speaking.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use swarm_util::{clock, json};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Protocol {
    IdleNotification(IdleNotification),
    ShutdownRequest(ShutdownRequest),
    ShutdownApproved(ShutdownApproved),
    ShutdownRejected(ShutdownRejected),
    PlanApprovalRequest(PlanApprovalRequest),
    PlanApprovalResponse(PlanApprovalResponse),
    PermissionRequest(PermissionRequest),
    PermissionResponse(PermissionResponse),
    TaskAssignment(TaskAssignment),
    TeammateTerminated(TeammateTerminated),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdleNotification {
    pub from: String,
    pub timestamp: String,
    /// `available`, `interrupted` or `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_task_id: Option<String>,
    /// `resolved`, `blocked` or `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The teammate's final text, at most 4000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownRequest {
    pub request_id: String,
    pub from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub timestamp: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownApproved {
    pub request_id: String,
    pub from: String,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_type: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownRejected {
    pub request_id: String,
    pub from: String,
    pub reason: String,
    pub timestamp: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanApprovalRequest {
    pub from: String,
    pub timestamp: String,
    pub plan_file_path: String,
    pub plan_content: String,
    pub request_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanApprovalResponse {
    pub request_id: String,
    pub approved: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequest {
    pub request_id: String,
    /// The worker's name (Claude Code calls it an id).
    pub agent_id: String,
    pub tool_name: String,
    pub tool_use_id: String,
    pub description: String,
    pub input: Value,
    #[serde(default)]
    pub permission_suggestions: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionResponse {
    pub request_id: String,
    /// `success` or `error`.
    pub subtype: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<PermissionGrant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PermissionGrant {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_updates: Option<Vec<Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskAssignment {
    pub task_id: String,
    pub subject: String,
    pub description: String,
    pub assigned_by: String,
    pub timestamp: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeammateTerminated {
    pub message: String,
    /// swarm: who stopped, and which task ids went back to pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub released_task_ids: Vec<String>,
}

impl Protocol {
    /// The protocol message in `text`, if it is one.
    pub fn parse(text: &str) -> Option<Protocol> {
        let trimmed = text.trim_start();
        if !trimmed.starts_with('{') {
            return None;
        }
        json::parse(trimmed.as_bytes()).ok()
    }

    /// Compact JSON for an envelope's `text`.
    pub fn to_text(&self) -> String {
        json::to_compact(self)
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Protocol::IdleNotification(_) => "idle_notification",
            Protocol::ShutdownRequest(_) => "shutdown_request",
            Protocol::ShutdownApproved(_) => "shutdown_approved",
            Protocol::ShutdownRejected(_) => "shutdown_rejected",
            Protocol::PlanApprovalRequest(_) => "plan_approval_request",
            Protocol::PlanApprovalResponse(_) => "plan_approval_response",
            Protocol::PermissionRequest(_) => "permission_request",
            Protocol::PermissionResponse(_) => "permission_response",
            Protocol::TaskAssignment(_) => "task_assignment",
            Protocol::TeammateTerminated(_) => "teammate_terminated",
        }
    }

    /// The sender the message names inside itself, for the types that name one.
    pub fn named_sender(&self) -> Option<&str> {
        match self {
            Protocol::IdleNotification(m) => Some(&m.from),
            Protocol::ShutdownRequest(m) => Some(&m.from),
            Protocol::ShutdownApproved(m) => Some(&m.from),
            Protocol::ShutdownRejected(m) => Some(&m.from),
            Protocol::PlanApprovalRequest(m) => Some(&m.from),
            Protocol::PermissionRequest(m) => Some(&m.agent_id),
            Protocol::TaskAssignment(m) => Some(&m.assigned_by),
            Protocol::PlanApprovalResponse(_)
            | Protocol::PermissionResponse(_)
            | Protocol::TeammateTerminated(_) => None,
        }
    }

    /// Whether the message agrees with its envelope, from `envelope_from`, about who sent it.
    pub fn signed_by(&self, envelope_from: &str) -> bool {
        self.named_sender().is_none_or(|s| s == envelope_from)
    }

    /// For an answer to a shutdown request: whether the request it names was sent to
    /// `envelope_from`, the agent its envelope says answers (the id names its target,
    /// `shutdown-<ms>@<target>`). A teammate answers only its own request; any other
    /// message is not such an answer and passes.
    pub fn answers_own_request(&self, envelope_from: &str) -> bool {
        match self {
            Protocol::ShutdownApproved(ShutdownApproved { request_id, .. })
            | Protocol::ShutdownRejected(ShutdownRejected { request_id, .. }) => {
                shutdown_target(request_id) == Some(envelope_from)
            }
            _ => true,
        }
    }

    /// A one-line human rendering, for feeds and logs.
    pub fn describe(&self) -> String {
        match self {
            Protocol::IdleNotification(m) => {
                let mut s = format!("{} is idle", m.from);
                if let Some(r) = &m.idle_reason {
                    s.push_str(&format!(" ({r})"));
                }
                if let Some(t) = &m.completed_task_id {
                    s.push_str(&format!(
                        ", task #{t} {}",
                        m.completed_status.as_deref().unwrap_or("resolved")
                    ));
                }
                s
            }
            Protocol::ShutdownRequest(m) => {
                format!("shutdown requested by {} [{}]", m.from, m.request_id)
            }
            Protocol::ShutdownApproved(m) => {
                format!("{} approved shutdown [{}]", m.from, m.request_id)
            }
            Protocol::ShutdownRejected(m) => format!("{} rejected shutdown: {}", m.from, m.reason),
            Protocol::PlanApprovalRequest(m) => {
                format!("{} asks approval of a plan [{}]", m.from, m.request_id)
            }
            Protocol::PlanApprovalResponse(m) if m.approved => {
                format!("plan approved [{}]", m.request_id)
            }
            Protocol::PlanApprovalResponse(m) => format!(
                "plan rejected [{}]: {}",
                m.request_id,
                m.feedback.as_deref().unwrap_or("")
            ),
            Protocol::PermissionRequest(m) => format!(
                "{} asks permission for {}: {} [{}]",
                m.agent_id, m.tool_name, m.description, m.request_id
            ),
            Protocol::PermissionResponse(m) => {
                format!("permission {} [{}]", m.subtype, m.request_id)
            }
            Protocol::TaskAssignment(m) => format!(
                "task #{} assigned by {}: {}",
                m.task_id, m.assigned_by, m.subject
            ),
            Protocol::TeammateTerminated(m) => m.message.clone(),
        }
    }
}

/// `shutdown-<ms>@<target name>`.
pub fn shutdown_request_id(target: &str) -> String {
    format!("shutdown-{}@{target}", clock::now_ms())
}

/// The agent a shutdown request id was made for (`shutdown-<ms>@<target>`).
pub fn shutdown_target(request_id: &str) -> Option<&str> {
    let (ms, target) = request_id.strip_prefix("shutdown-")?.split_once('@')?;
    (!ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()) && !target.is_empty())
        .then_some(target)
}

/// `plan_approval-<ms>@<agent>@<team>`.
pub fn plan_request_id(agent: &str, team: &str) -> String {
    format!("plan_approval-{}@{agent}@{team}", clock::now_ms())
}

/// `perm-<ms>-<7 base36 chars>`.
pub fn permission_request_id() -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let suffix: String = (0..7)
        .map(|_| DIGITS[fastrand::usize(..DIGITS.len())] as char)
        .collect();
    format!("perm-{}-{suffix}", clock::now_ms())
}

/// The request-id shapes Claude Code 2.1.328 accepts.
pub fn is_valid_request_id(id: &str) -> bool {
    fn digits(s: &str) -> bool {
        (1..=20).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    }
    if let Some(rest) = id.strip_prefix("perm-") {
        return rest.split_once('-').is_some_and(|(ms, tail)| {
            digits(ms)
                && (1..=12).contains(&tail.len())
                && tail
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
        });
    }
    let rest = id
        .strip_prefix("shutdown-")
        .or_else(|| id.strip_prefix("plan_approval-"));
    let Some(rest) = rest else { return false };
    let mut parts = rest.split('@');
    let ms = parts.next().unwrap_or_default();
    let names: Vec<&str> = parts.collect();
    digits(ms)
        && (1..=2).contains(&names.len())
        && names
            .iter()
            .all(|n| (1..=300).contains(&n.len()) && !n.contains('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_like_claude_code() {
        let m = Protocol::ShutdownRequest(ShutdownRequest {
            request_id: "shutdown-1702500000000@researcher".into(),
            from: "team-lead".into(),
            reason: None,
            timestamp: "2026-02-12T05:22:25.366Z".into(),
        });
        assert_eq!(
            m.to_text(),
            r#"{"type":"shutdown_request","requestId":"shutdown-1702500000000@researcher","from":"team-lead","timestamp":"2026-02-12T05:22:25.366Z"}"#
        );
        assert_eq!(Protocol::parse(&m.to_text()), Some(m));
        let p = Protocol::PermissionRequest(PermissionRequest {
            request_id: "perm-1-abc".into(),
            agent_id: "bob".into(),
            tool_name: "Bash".into(),
            tool_use_id: "toolu_1".into(),
            description: "ls".into(),
            input: serde_json::json!({"command": "ls"}),
            permission_suggestions: vec![],
        });
        assert_eq!(
            p.to_text(),
            r#"{"type":"permission_request","request_id":"perm-1-abc","agent_id":"bob","tool_name":"Bash","tool_use_id":"toolu_1","description":"ls","input":{"command":"ls"},"permission_suggestions":[]}"#
        );
    }

    /// Field names, order and optional fields as `docs/design/formats.md` §5 gives them.
    #[test]
    fn every_message_type_is_written_and_read_as_claude_code_does() {
        let ts = || "2026-02-12T05:22:25.366Z".to_owned();
        let cases = [
            (
                Protocol::IdleNotification(IdleNotification {
                    from: "bob".into(),
                    timestamp: ts(),
                    idle_reason: None,
                    summary: None,
                    completed_task_id: None,
                    completed_status: None,
                    failure_reason: None,
                    result: None,
                }),
                r#"{"type":"idle_notification","from":"bob","timestamp":"2026-02-12T05:22:25.366Z"}"#,
            ),
            (
                Protocol::IdleNotification(IdleNotification {
                    from: "bob".into(),
                    timestamp: ts(),
                    idle_reason: Some("failed".into()),
                    summary: Some("[to alice] the parser is done".into()),
                    completed_task_id: Some("3".into()),
                    completed_status: Some("failed".into()),
                    failure_reason: Some("tests fail".into()),
                    result: Some("Done.\nSee src/parse.rs".into()),
                }),
                r#"{"type":"idle_notification","from":"bob","timestamp":"2026-02-12T05:22:25.366Z","idleReason":"failed","summary":"[to alice] the parser is done","completedTaskId":"3","completedStatus":"failed","failureReason":"tests fail","result":"Done.\nSee src/parse.rs"}"#,
            ),
            (
                Protocol::ShutdownApproved(ShutdownApproved {
                    request_id: "shutdown-1702500000000@bob".into(),
                    from: "bob".into(),
                    timestamp: ts(),
                    pane_id: Some("%3".into()),
                    backend_type: Some("tmux".into()),
                }),
                r#"{"type":"shutdown_approved","requestId":"shutdown-1702500000000@bob","from":"bob","timestamp":"2026-02-12T05:22:25.366Z","paneId":"%3","backendType":"tmux"}"#,
            ),
            (
                Protocol::ShutdownApproved(ShutdownApproved {
                    request_id: "shutdown-1702500000000@bob".into(),
                    from: "bob".into(),
                    timestamp: ts(),
                    pane_id: None,
                    backend_type: None,
                }),
                r#"{"type":"shutdown_approved","requestId":"shutdown-1702500000000@bob","from":"bob","timestamp":"2026-02-12T05:22:25.366Z"}"#,
            ),
            (
                Protocol::ShutdownRejected(ShutdownRejected {
                    request_id: "shutdown-1702500000000@bob".into(),
                    from: "bob".into(),
                    reason: "still on task #2".into(),
                    timestamp: ts(),
                }),
                r#"{"type":"shutdown_rejected","requestId":"shutdown-1702500000000@bob","from":"bob","reason":"still on task #2","timestamp":"2026-02-12T05:22:25.366Z"}"#,
            ),
            (
                Protocol::PlanApprovalRequest(PlanApprovalRequest {
                    from: "bob".into(),
                    timestamp: ts(),
                    plan_file_path: "/home/u/.claude/plans/bob.md".into(),
                    plan_content: "# Plan\n1. \"parse\"".into(),
                    request_id: "plan_approval-1702500000000@bob@alpha".into(),
                }),
                r##"{"type":"plan_approval_request","from":"bob","timestamp":"2026-02-12T05:22:25.366Z","planFilePath":"/home/u/.claude/plans/bob.md","planContent":"# Plan\n1. \"parse\"","requestId":"plan_approval-1702500000000@bob@alpha"}"##,
            ),
            (
                Protocol::PlanApprovalResponse(PlanApprovalResponse {
                    request_id: "plan_approval-1702500000000@bob@alpha".into(),
                    approved: true,
                    feedback: None,
                    timestamp: ts(),
                    permission_mode: Some("default".into()),
                }),
                r#"{"type":"plan_approval_response","requestId":"plan_approval-1702500000000@bob@alpha","approved":true,"timestamp":"2026-02-12T05:22:25.366Z","permissionMode":"default"}"#,
            ),
            (
                Protocol::PlanApprovalResponse(PlanApprovalResponse {
                    request_id: "plan_approval-1702500000000@bob@alpha".into(),
                    approved: false,
                    feedback: Some("split step 2".into()),
                    timestamp: ts(),
                    permission_mode: None,
                }),
                r#"{"type":"plan_approval_response","requestId":"plan_approval-1702500000000@bob@alpha","approved":false,"feedback":"split step 2","timestamp":"2026-02-12T05:22:25.366Z"}"#,
            ),
            (
                Protocol::PermissionResponse(PermissionResponse {
                    request_id: "perm-1702500000000-abc1234".into(),
                    subtype: "success".into(),
                    response: Some(PermissionGrant {
                        updated_input: Some(serde_json::json!({"command": "ls -la"})),
                        permission_updates: Some(vec![serde_json::json!({
                            "type": "addRules",
                            "rules": [{"toolName": "Bash", "ruleContent": "ls:*"}],
                            "behavior": "allow",
                            "destination": "session"
                        })]),
                    }),
                    error: None,
                }),
                r#"{"type":"permission_response","request_id":"perm-1702500000000-abc1234","subtype":"success","response":{"updated_input":{"command":"ls -la"},"permission_updates":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls:*"}],"behavior":"allow","destination":"session"}]}}"#,
            ),
            (
                Protocol::PermissionResponse(PermissionResponse {
                    request_id: "perm-1702500000000-abc1234".into(),
                    subtype: "success".into(),
                    response: Some(PermissionGrant::default()),
                    error: None,
                }),
                r#"{"type":"permission_response","request_id":"perm-1702500000000-abc1234","subtype":"success","response":{}}"#,
            ),
            (
                Protocol::PermissionResponse(PermissionResponse {
                    request_id: "perm-1702500000000-abc1234".into(),
                    subtype: "error".into(),
                    response: None,
                    error: Some("denied by the lead".into()),
                }),
                r#"{"type":"permission_response","request_id":"perm-1702500000000-abc1234","subtype":"error","error":"denied by the lead"}"#,
            ),
            (
                Protocol::TaskAssignment(TaskAssignment {
                    task_id: "2".into(),
                    subject: "Write the parser".into(),
                    description: "Parse the input".into(),
                    assigned_by: "team-lead".into(),
                    timestamp: ts(),
                }),
                r#"{"type":"task_assignment","taskId":"2","subject":"Write the parser","description":"Parse the input","assignedBy":"team-lead","timestamp":"2026-02-12T05:22:25.366Z"}"#,
            ),
            (
                Protocol::TeammateTerminated(TeammateTerminated {
                    message: "bob has shut down.".into(),
                    agent: None,
                    released_task_ids: vec![],
                }),
                r#"{"type":"teammate_terminated","message":"bob has shut down."}"#,
            ),
        ];
        for (message, wire) in cases {
            assert_eq!(message.to_text(), wire, "{}", message.kind());
            assert_eq!(Protocol::parse(wire), Some(message), "{wire}");
        }
    }

    #[test]
    fn plain_text_stays_plain() {
        for t in [
            "hello",
            "{not json",
            r#"{"type":"something_else"}"#,
            "[1,2]",
            r#"{"a":1}"#,
        ] {
            assert_eq!(Protocol::parse(t), None, "{t}");
        }
    }

    #[test]
    fn a_message_naming_another_sender_than_its_envelope_is_not_signed() {
        let request = |from: &str| {
            Protocol::ShutdownRequest(ShutdownRequest {
                request_id: "shutdown-1@bob".into(),
                from: from.into(),
                reason: None,
                timestamp: "2026-02-12T05:22:25.366Z".into(),
            })
        };
        assert!(request("team-lead").signed_by("team-lead"));
        assert!(!request("team-lead").signed_by("carol"));
        assert!(!request("carol").signed_by("team-lead"));
        let answer = Protocol::PlanApprovalResponse(PlanApprovalResponse {
            request_id: "plan_approval-1@bob@t".into(),
            approved: true,
            feedback: None,
            timestamp: "2026-02-12T05:22:25.366Z".into(),
            permission_mode: None,
        });
        // Names no sender: whether its envelope may send it is the receiver's question.
        assert!(answer.signed_by("anyone"));
    }

    #[test]
    fn a_shutdown_answer_answers_only_a_request_sent_to_its_sender() {
        let approved = |id: &str| {
            Protocol::ShutdownApproved(ShutdownApproved {
                request_id: id.into(),
                from: "carol".into(),
                timestamp: "2026-02-12T05:22:25.366Z".into(),
                pane_id: None,
                backend_type: None,
            })
        };
        assert!(approved(&shutdown_request_id("carol")).answers_own_request("carol"));
        assert!(!approved(&shutdown_request_id("bob")).answers_own_request("carol"));
        assert!(!approved("shutdown-x@carol").answers_own_request("carol"));
        assert!(!approved("plan_approval-1@carol@t").answers_own_request("carol"));
        assert_eq!(shutdown_target("shutdown-17@bob"), Some("bob"));
    }

    #[test]
    fn request_ids_have_claude_code_shapes() {
        assert!(is_valid_request_id(&shutdown_request_id("bob")));
        assert!(is_valid_request_id(&plan_request_id("bob", "alpha")));
        assert!(is_valid_request_id(&permission_request_id()));
        assert!(!is_valid_request_id("unspecified"));
        assert!(!is_valid_request_id("shutdown-x@bob"));
    }
}
