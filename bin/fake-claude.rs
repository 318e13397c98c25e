//! swarm-fake-claude: a test stand-in for a Claude Code 2.1.328 teammate, on the wire only
//! (files; no model, no TUI). It takes the argv and environment Claude Code's lead passes a
//! pane teammate and does to the team's files what the real client was seen doing
//! (`docs/design/claude-code-client.md` §4): it empties its inbox instead of marking entries
//! read, flips the roster's `isActive`, answers with SendMessage-style envelopes, sends
//! `idle_notification`s without `completedTaskId`, sends itself a `task_assignment` when it
//! takes a task, writes tasks in Claude Code's key order, asks the lead `permission_request`s,
//! approves shutdown (leaving `isActive: true` behind) and exits 0, and exits 143 on SIGTERM
//! writing nothing.
//!
//! Texts it understands: `claim tasks` (claim and complete every ready task), `ask permission
//! <tool>` (ask the lead, then say `permission granted` or `permission denied`); any other
//! text is only acknowledged (`ack: <text>`). It records its argv, the names of its
//! environment variables and whether `ANTHROPIC_API_KEY` was set in
//! `<root>/teams/<team>/fake-claude-<name>.json`. `CLAUDE_CODE_FAKE_DIALOG=trust|api-key|bypass`
//! makes it print that first-run dialog and hang, never registering; `onboarding` makes it
//! print the offline client's onboarding failure and exit 1, as the real one does. The text
//! `show dialog <kind>` makes it print that dialog mid-run (inside a turn) and hang. At a
//! dialog each line on its stdin (a key) prints `(still at the dialog)`.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, Signal};
use serde_json::{Map, Value, json};
use swarm_util::{atomic, clock, json as js, lock};

const LIFE: Duration = Duration::from_secs(600);
const POLL: Duration = Duration::from_millis(100);
const LOCK_WAIT: Duration = Duration::from_secs(60);
const LEAD: &str = "team-lead";

struct Fake {
    team_dir: PathBuf,
    tasks_dir: PathBuf,
    name: String,
    color: String,
    queue: VecDeque<Value>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| {
        let i = args.iter().position(|a| a == f)?;
        args.get(i + 1).cloned()
    };
    let on = |k: &str| std::env::var(k).as_deref() == Ok("1");
    let (Some(name), Some(team), true, true) = (
        flag("--agent-name"),
        flag("--team-name"),
        on("CLAUDECODE"),
        on("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"),
    ) else {
        eprintln!(
            "swarm-fake-claude: not started as a teammate (needs CLAUDECODE=1, CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1, --agent-name and --team-name); the real client would open a plain session"
        );
        std::process::exit(1);
    };
    let root = match std::env::var_os("CLAUDE_CONFIG_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".claude"),
    };
    let team_dir = root.join("teams").join(&team);
    let mut vars: Vec<String> = std::env::vars_os()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    vars.sort();
    let record = json!({
        "argv": args,
        "env": vars,
        "anthropicApiKey": std::env::var_os("ANTHROPIC_API_KEY").is_some(),
    });
    let _ = std::fs::create_dir_all(&team_dir);
    write(
        &team_dir.join(format!("fake-claude-{name}.json")),
        &js::to_pretty(&record),
    );

    if let Ok(dialog) = std::env::var("CLAUDE_CODE_FAKE_DIALOG") {
        show_dialog(&dialog);
    }

    // SIGTERM: out at once with 143 and no file touched, as the real client does. Blocked
    // here and taken by sigwait on a thread, so no unsafe handler is needed.
    let mut term = SigSet::empty();
    term.add(Signal::SIGTERM);
    term.thread_block().expect("block SIGTERM");
    std::thread::spawn(move || {
        let _ = term.wait();
        std::process::exit(143);
    });

    let color = flag("--agent-color").unwrap_or_else(|| "blue".into());
    let mut fake = Fake {
        tasks_dir: root.join("tasks").join(&team),
        team_dir,
        name,
        color,
        queue: VecDeque::new(),
    };
    let end = Instant::now() + LIFE;
    while Instant::now() < end {
        match fake.next_message() {
            Some(m) => fake.handle(m),
            None => std::thread::sleep(POLL),
        }
    }
}

/// Prints first-run dialog `kind` as the client shows it, then waits for a key press that
/// never comes; the offline onboarding check instead fails and exits 1.
fn show_dialog(kind: &str) -> ! {
    let lines: &[&str] = match kind {
        "trust" => &["Quick safety check: Is this a project you … trust?"],
        "api-key" => &[
            "Detected a custom API key …",
            "Do you want to use this API key?",
        ],
        "bypass" => &[
            "WARNING: Claude Code running in Bypass Permissions mode …",
            "No, exit",
            "Yes, I accept",
        ],
        _ => &[
            "Unable to connect to Anthropic services",
            "Failed to connect to api.anthropic.com: EAI_AGAIN",
        ],
    };
    for l in lines {
        println!("{l}");
    }
    if !matches!(kind, "trust" | "api-key" | "bypass") {
        std::process::exit(1);
    }
    // As the client at a dialog: it reads keys, never its inbox, and shows the dialog
    // again after each (here a line on stdin), which tells a test it went round.
    for _ in std::io::stdin().lines().map_while(Result::ok) {
        println!("(still at the dialog)");
    }
    std::thread::sleep(LIFE);
    std::process::exit(0);
}

fn write(path: &Path, bytes: &[u8]) {
    atomic::write(path, bytes, false).expect("write");
}

fn read_json(path: &Path) -> Option<Value> {
    js::parse(&std::fs::read(path).ok()?).ok()
}

/// Read-modify-write of `path` under swarm's (and Claude Code's) lock of it.
fn locked<T>(path: &Path, f: impl FnOnce(&mut Value) -> T) -> T {
    let _guard = lock::lock(path, LOCK_WAIT).expect("lock");
    let mut value = read_json(path).unwrap_or(Value::Null);
    let before = value.clone();
    let out = f(&mut value);
    if value != before {
        write(path, &js::to_pretty(&value));
    }
    out
}

impl Fake {
    fn inbox(&self, who: &str) -> PathBuf {
        self.team_dir.join("inboxes").join(format!("{who}.json"))
    }

    /// The next message: queued, or taken (and deleted) from the inbox.
    fn next_message(&mut self) -> Option<Value> {
        if self.queue.is_empty() {
            let path = self.inbox(&self.name);
            let pending = read_json(&path)
                .and_then(|v| v.as_array().map(|a| !a.is_empty()))
                .unwrap_or(false);
            if pending {
                let taken = locked(&path, |v| match v {
                    Value::Array(a) => std::mem::take(a),
                    _ => Vec::new(),
                });
                self.queue.extend(taken);
            }
        }
        self.queue.pop_front()
    }

    fn append(&self, to: &str, envelope: Value) {
        locked(&self.inbox(to), |v| {
            if !v.is_array() {
                *v = json!([]);
            }
            v.as_array_mut().expect("array").push(envelope);
        });
    }

    /// A SendMessage envelope, as the real client appends it.
    fn say(&self, to: &str, text: &str) {
        let e = json!({"from": self.name, "text": text, "summary": summary(text),
            "timestamp": clock::now_iso(), "color": self.color, "msgV": 1,
            "msg_id": uuid::Uuid::new_v4().to_string(), "type": "message", "read": false});
        self.append(to, e);
    }

    /// A protocol message: its JSON compact in `text`.
    fn send_protocol(&self, to: &str, message: Value) {
        let e = json!({"from": self.name, "text": js::to_compact(&message),
            "timestamp": clock::now_iso(), "color": self.color, "read": false});
        self.append(to, e);
    }

    /// Sets this member's `isActive`; returns the member, if the roster has it.
    fn set_active(&self, active: bool) -> Option<Map<String, Value>> {
        locked(&self.team_dir.join("config.json"), |v| {
            let members = v.get_mut("members")?.as_array_mut()?;
            let m = members
                .iter_mut()
                .find(|m| m.get("name").and_then(Value::as_str) == Some(&self.name))?
                .as_object_mut()?;
            m.insert("isActive".into(), Value::Bool(active));
            Some(m.clone())
        })
    }

    fn handle(&mut self, envelope: Value) {
        let from = envelope["from"].as_str().unwrap_or(LEAD).to_owned();
        let text = envelope["text"].as_str().unwrap_or_default().to_owned();
        let protocol = serde_json::from_str::<Value>(&text)
            .ok()
            .filter(|v| v.get("type").is_some_and(Value::is_string));
        let Some(member) = self.set_active(true) else {
            // Without a roster entry the real client still talks, but never goes idle.
            if protocol.is_none() {
                self.say(&from, &format!("ack: {text}"));
            }
            return;
        };
        let result = match protocol {
            Some(p) if p["type"] == "shutdown_request" => {
                let pane = member
                    .get("tmuxPaneId")
                    .and_then(Value::as_str)
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned)
                    .or_else(|| std::env::var("TMUX_PANE").ok())
                    .unwrap_or_default();
                self.send_protocol(
                    LEAD,
                    json!({"type": "shutdown_approved",
                    "requestId": p["requestId"], "from": self.name,
                    "timestamp": clock::now_iso(), "paneId": pane, "backendType": "tmux"}),
                );
                // Exits mid-turn: `isActive: true` stays behind.
                std::process::exit(0);
            }
            Some(p) if p["type"] == "task_assignment" => {
                format!("Task #{} is mine.", p["taskId"].as_str().unwrap_or("?"))
            }
            Some(_) => "Noted.".to_owned(),
            None => {
                let reply = format!("ack: {text}");
                self.say(&from, &reply);
                if let Some(kind) = text.trim().strip_prefix("show dialog ") {
                    show_dialog(kind.trim());
                }
                if text.trim() == "claim tasks" {
                    self.claim_tasks();
                } else if let Some(tool) = text.trim().strip_prefix("ask permission ") {
                    let answer = self.ask_permission(tool.trim(), &member);
                    self.say(&from, answer);
                    return self.go_idle(answer);
                }
                reply
            }
        };
        self.go_idle(&result);
    }

    fn go_idle(&self, result: &str) {
        self.send_protocol(
            LEAD,
            json!({"type": "idle_notification", "from": self.name,
            "timestamp": clock::now_iso(), "idleReason": "available", "result": result}),
        );
        self.set_active(false);
    }

    fn ask_permission(&mut self, tool: &str, member: &Map<String, Value>) -> &'static str {
        let id = format!(
            "perm-{}-{}",
            clock::now_ms(),
            &uuid::Uuid::new_v4().simple().to_string()[..7]
        );
        let cwd = member.get("cwd").cloned().unwrap_or(json!(""));
        self.send_protocol(
            LEAD,
            json!({"type": "permission_request", "request_id": id,
            "agent_id": self.name, "tool_name": tool,
            "tool_use_id": format!("toolu_{}", uuid::Uuid::new_v4().simple()),
            "description": format!("Run {tool}"), "input": {"command": "true"},
            "permission_suggestions": [{"type": "addDirectories", "directories": [cwd],
                "destination": "session"}]}),
        );
        // Waits for its answer; whatever else arrives meanwhile waits its turn.
        let mut held = Vec::new();
        let end = Instant::now() + LIFE;
        let granted = loop {
            if Instant::now() > end {
                break false;
            }
            let Some(m) = self.next_message() else {
                std::thread::sleep(POLL);
                continue;
            };
            let p: Value =
                serde_json::from_str(m["text"].as_str().unwrap_or("")).unwrap_or_default();
            if p["type"] == "permission_response" && p["request_id"] == id.as_str() {
                break p["subtype"] == "success";
            }
            held.push(m);
        };
        for m in held.into_iter().rev() {
            self.queue.push_front(m);
        }
        if granted {
            "permission granted"
        } else {
            "permission denied"
        }
    }

    /// Claims every pending unblocked task, telling itself (the real client's quirk), then
    /// completes each.
    fn claim_tasks(&self) {
        let mut ids: Vec<u64> = std::fs::read_dir(&self.tasks_dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json")?.parse().ok())
            .collect();
        ids.sort();
        let status_of = |id: &str| {
            read_json(&self.tasks_dir.join(format!("{id}.json")))
                .and_then(|t| t["status"].as_str().map(str::to_owned))
        };
        for id in ids {
            let path = self.tasks_dir.join(format!("{id}.json"));
            let claimed = locked(&path, |t| {
                let ready = t["status"] == "pending"
                    && t["owner"].as_str().unwrap_or("").is_empty()
                    && t["blockedBy"].as_array().into_iter().flatten().all(|b| {
                        b.as_str()
                            .is_none_or(|b| status_of(b).is_none_or(|s| s == "completed"))
                    });
                if ready {
                    *t = claude_order(t, &self.name, "in_progress");
                }
                ready.then(|| t.clone())
            });
            let Some(task) = claimed else { continue };
            self.send_protocol(
                &self.name,
                json!({"type": "task_assignment",
                "taskId": task["id"], "subject": task["subject"],
                "description": task["description"], "assignedBy": self.name,
                "timestamp": clock::now_iso()}),
            );
            locked(&path, |t| *t = claude_order(t, &self.name, "completed"));
        }
    }
}

/// `task` with `owner` and `status` set, in Claude Code's key order.
fn claude_order(task: &Value, owner: &str, status: &str) -> Value {
    let mut rest = task.as_object().cloned().unwrap_or_default();
    rest.insert("owner".into(), json!(owner));
    rest.insert("status".into(), json!(status));
    let mut out = Map::new();
    for k in [
        "id",
        "subject",
        "description",
        "activeForm",
        "owner",
        "status",
        "blocks",
        "blockedBy",
    ] {
        let v = rest.shift_remove(k);
        match (k, v) {
            (_, Some(v)) => drop(out.insert(k.into(), v)),
            ("blocks" | "blockedBy" | "description", None) => drop(out.insert(
                k.into(),
                if k == "description" {
                    json!("")
                } else {
                    json!([])
                },
            )),
            _ => {}
        }
    }
    out.extend(rest);
    Value::Object(out)
}

fn summary(text: &str) -> String {
    text.lines().next().unwrap_or("").chars().take(60).collect()
}
