//! Hooks: the user's commands run at team events, configured as in Claude Code.
//!
//! Read from `<project>/.claude/settings.json`, `<project>/.claude/settings.local.json` and
//! `<user>/settings.json` (see [`crate::project`]); every file's hooks apply, in that order:
//!
//! ```json
//! {"hooks": {"TaskCompleted": [{"matcher": "", "hooks": [
//!     {"type": "command", "command": "./scripts/check.sh", "timeout": 60}]}]}}
//! ```
//!
//! Events swarm fires (others in the files are Claude Code's and are left alone):
//! - `TeammateIdle`: before a teammate sends its idle notification. Exit 2 feeds the
//!   hook's stderr back to the model and the teammate keeps working.
//! - `TaskCreated`: after TaskCreate wrote the task. Exit 2 deletes it again and the tool
//!   fails with the feedback.
//! - `TaskCompleted`: before TaskUpdate marks a task completed. Exit 2 refuses it with the
//!   feedback.
//! - `SubagentStart` / `SubagentStop`: when a teammate starts and stops; they cannot block.
//!   Their `matcher` is a regular expression matched against the whole agent type; the
//!   other events ignore `matcher`, as Claude Code's do.
//!
//! Each command runs as `sh -c <command>` in the project directory (with
//! `CLAUDE_PROJECT_DIR` set to it) in its own process group, the event as JSON on stdin
//! (Claude Code's field names). Exit 0 is success; exit 2 blocks (when the event can) with
//! stderr as the feedback; any other status, a command that cannot start, and a command
//! still running at its timeout (default 60 s; the whole group is killed) are reported on
//! stderr and in the log, and never block. A hook can therefore delay an agent by at most
//! its timeout, never hang it.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::{Map, Value, json};

use crate::permissions::PermissionMode;
use crate::project::UserDirs;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How much of a hook's stdout and stderr is kept.
const OUTPUT_CAP: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Event {
    TeammateIdle,
    TaskCreated,
    TaskCompleted,
    SubagentStart,
    SubagentStop,
}

impl Event {
    pub const ALL: [Event; 5] = [
        Event::TeammateIdle,
        Event::TaskCreated,
        Event::TaskCompleted,
        Event::SubagentStart,
        Event::SubagentStop,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Event::TeammateIdle => "TeammateIdle",
            Event::TaskCreated => "TaskCreated",
            Event::TaskCompleted => "TaskCompleted",
            Event::SubagentStart => "SubagentStart",
            Event::SubagentStop => "SubagentStop",
        }
    }

    /// Whether exit code 2 changes what happens.
    pub fn can_block(self) -> bool {
        matches!(
            self,
            Event::TeammateIdle | Event::TaskCreated | Event::TaskCompleted
        )
    }

    fn uses_matcher(self) -> bool {
        matches!(self, Event::SubagentStart | Event::SubagentStop)
    }
}

#[derive(Debug, Clone)]
pub struct HookCommand {
    pub command: String,
    pub timeout: Duration,
    /// The settings file it came from.
    pub source: PathBuf,
}

#[derive(Debug, Clone)]
struct Group {
    matcher: Option<Regex>,
    commands: Vec<HookCommand>,
}

/// Every configured hook of the events swarm fires.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    groups: BTreeMap<Event, Vec<Group>>,
    /// Where the commands run.
    pub dir: PathBuf,
    /// What was wrong with the settings files (each entry names its file).
    pub problems: Vec<String>,
}

/// What running an event's hooks came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Some hook exited 2 (on an event that can block): its stderr, the feedback.
    pub blocked: Option<String>,
    /// Hooks that failed without blocking, one line each.
    pub problems: Vec<String>,
    /// How many commands ran.
    pub ran: usize,
}

impl Hooks {
    /// The hooks for an agent working in `cwd`.
    pub fn load(cwd: &Path, dirs: &UserDirs) -> Hooks {
        let dir = dirs.project_dir(cwd);
        let mut files = vec![
            dir.join(".claude").join("settings.json"),
            dir.join(".claude").join("settings.local.json"),
        ];
        if let Some(user) = &dirs.claude {
            let user = user.join("settings.json");
            if !files.contains(&user) {
                files.push(user);
            }
        }
        Hooks::load_files(&dir, &files)
    }

    pub fn load_files(dir: &Path, files: &[PathBuf]) -> Hooks {
        let mut hooks = Hooks {
            dir: dir.to_path_buf(),
            ..Hooks::default()
        };
        let mut disabled = false;
        for file in files {
            let text = match swarm_util::bounded::config_file(file) {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(e) => {
                    hooks.problems.push(e.to_string());
                    continue;
                }
            };
            let settings: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    hooks.problems.push(format!(
                        "failed to parse {}: {e}; its hooks are ignored",
                        file.display()
                    ));
                    continue;
                }
            };
            disabled |= settings.get("disableAllHooks") == Some(&Value::Bool(true));
            hooks.add_file(file, &settings);
        }
        if disabled {
            hooks.groups.clear();
        }
        hooks
    }

    fn add_file(&mut self, file: &Path, settings: &Value) {
        let Some(events) = settings.get("hooks") else {
            return;
        };
        let Some(events) = events.as_object() else {
            self.problems.push(format!(
                "{}: 'hooks' must be an object of event names",
                file.display()
            ));
            return;
        };
        for event in Event::ALL {
            let Some(groups) = events.get(event.as_str()) else {
                continue;
            };
            let at = format!("{}: hooks.{}", file.display(), event.as_str());
            let Some(groups) = groups.as_array() else {
                self.problems.push(format!("{at} must be a list"));
                continue;
            };
            for (i, group) in groups.iter().enumerate() {
                match parse_group(file, event, group) {
                    Ok(g) => self.groups.entry(event).or_default().push(g),
                    Err(e) => self.problems.push(format!("{at}[{i}]: {e}; skipped")),
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.groups.values().all(|g| g.is_empty())
    }

    /// The commands `event` runs for `subject` (the agent type, for the events that match).
    pub fn commands(&self, event: Event, subject: Option<&str>) -> Vec<&HookCommand> {
        let mut out: Vec<&HookCommand> = Vec::new();
        for group in self.groups.get(&event).into_iter().flatten() {
            let applies = match (&group.matcher, event.uses_matcher()) {
                (Some(m), true) => m.is_match(subject.unwrap_or("")),
                _ => true,
            };
            if applies {
                for c in &group.commands {
                    // The same command from two files runs once, as in Claude Code.
                    if !out.iter().any(|o| o.command == c.command) {
                        out.push(c);
                    }
                }
            }
        }
        out
    }

    /// Runs `event`'s hooks one after another with `payload` on stdin.
    pub fn run(&self, event: Event, subject: Option<&str>, payload: &Value) -> Outcome {
        let mut outcome = Outcome::default();
        let commands = self.commands(event, subject);
        if commands.is_empty() {
            return outcome;
        }
        let input = format!("{payload}\n");
        let mut feedback = Vec::new();
        for cmd in commands {
            outcome.ran += 1;
            let shown = short(&cmd.command);
            match run_command(cmd, &self.dir, input.as_bytes()) {
                Ran::Exited { code: 0, .. } => {}
                Ran::Exited {
                    code: 2, stderr, ..
                } if event.can_block() => {
                    feedback.push(stderr.trim().to_owned());
                }
                Ran::Exited { code, stderr, .. } => outcome.problems.push(format!(
                    "{} hook `{shown}` exited with {code}{}",
                    event.as_str(),
                    first_line(&stderr)
                )),
                Ran::Signalled(sig) => outcome.problems.push(format!(
                    "{} hook `{shown}` was killed by signal {sig}",
                    event.as_str()
                )),
                Ran::TimedOut => outcome.problems.push(format!(
                    "{} hook `{shown}` did not finish within {} s and was killed",
                    event.as_str(),
                    cmd.timeout.as_secs_f64()
                )),
                Ran::Failed(e) => outcome.problems.push(format!(
                    "{} hook `{shown}` could not run: {e}",
                    event.as_str()
                )),
            }
        }
        if !feedback.is_empty() {
            let text = feedback
                .into_iter()
                .filter(|f| !f.is_empty())
                .collect::<Vec<_>>()
                .join("\n");
            outcome.blocked = Some(if text.is_empty() {
                "(the hook gave no reason)".to_owned()
            } else {
                text
            });
        }
        for p in &outcome.problems {
            report(p);
        }
        outcome
    }
}

/// Shows a hook problem where the user looks (stderr: the agent's pane) and logs it.
pub fn report(problem: &str) {
    // Not eprintln!: a closed pane must not turn a hook report into a panic.
    let _ = writeln!(std::io::stderr(), "swarm: hook: {problem}");
    // Into a teammate's log too; info, so a command's own stderr does not show it twice.
    tracing::info!("hook: {problem}");
}

fn short(command: &str) -> String {
    let line = command.lines().next().unwrap_or("");
    if line.chars().count() > 60 {
        format!("{}…", line.chars().take(60).collect::<String>())
    } else {
        line.to_owned()
    }
}

fn first_line(stderr: &str) -> String {
    stderr
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| format!(": {}", short(l)))
        .unwrap_or_default()
}

fn parse_group(file: &Path, event: Event, group: &Value) -> Result<Group, String> {
    let matcher = match group.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if m.is_empty() || m == "*" => None,
        Some(Value::String(m)) if event.uses_matcher() => Some(
            Regex::new(&format!("^(?:{m})$"))
                .map_err(|e| format!("matcher '{m}' is not a valid regular expression: {e}"))?,
        ),
        Some(Value::String(_)) => None,
        Some(_) => return Err("'matcher' must be a string".to_owned()),
    };
    let entries = group
        .get("hooks")
        .and_then(Value::as_array)
        .ok_or("needs a 'hooks' list")?;
    let mut commands = Vec::new();
    for entry in entries {
        match entry.get("type").and_then(Value::as_str) {
            Some("command") => {}
            Some(other) => {
                return Err(format!(
                    "hook type '{other}' is not supported by swarm (only 'command')"
                ));
            }
            None => return Err("a hook needs \"type\": \"command\"".to_owned()),
        }
        let command = entry
            .get("command")
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
            .ok_or("a command hook needs a non-empty 'command'")?;
        let timeout = match entry.get("timeout") {
            None | Some(Value::Null) => DEFAULT_TIMEOUT,
            Some(v) => match v.as_f64() {
                Some(s) if s > 0.0 && s.is_finite() => Duration::from_secs_f64(s.min(86_400.0)),
                _ => return Err("'timeout' must be a positive number of seconds".to_owned()),
            },
        };
        commands.push(HookCommand {
            command: command.to_owned(),
            timeout,
            source: file.to_path_buf(),
        });
    }
    Ok(Group { matcher, commands })
}

#[derive(Debug)]
enum Ran {
    Exited {
        code: i32,
        #[allow(dead_code)]
        stdout: String,
        stderr: String,
    },
    Signalled(i32),
    TimedOut,
    Failed(String),
}

/// Reads a pipe to its end, keeping the first `OUTPUT_CAP` bytes.
fn drain(mut pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = OUTPUT_CAP.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        let _ = tx.send(String::from_utf8_lossy(&kept).into_owned());
    });
    rx
}

fn kill_group(pgid: u32) {
    if let Ok(pgid) = i32::try_from(pgid) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

fn run_command(cmd: &HookCommand, dir: &Path, input: &[u8]) -> Ran {
    use std::os::unix::process::ExitStatusExt;
    let started = Instant::now();
    let deadline = started + cmd.timeout;
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg(&cmd.command)
        .current_dir(dir)
        .env("CLAUDE_PROJECT_DIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so a timeout kills what it started too.
        .process_group(0)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return Ran::Failed(format!("failed to start sh in {}: {e}", dir.display())),
    };
    let pgid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.to_vec();
        // A hook that never reads its stdin must not block us on a full pipe.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let out = child.stdout.take().map(drain);
    let err = child.stderr.take().map(drain);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                kill_group(pgid);
                let _ = child.wait();
                return Ran::Failed(format!("failed to wait for it: {e}"));
            }
        }
    };
    let Some(status) = status else {
        kill_group(pgid);
        let _ = child.wait();
        return Ran::TimedOut;
    };
    // What it left running in the background may hold the pipes open: wait for them
    // only until the deadline, then kill its group.
    let collect = |rx: Option<mpsc::Receiver<String>>| -> Option<String> {
        let rx = rx?;
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(s) => Some(s),
            Err(_) => {
                kill_group(pgid);
                rx.recv_timeout(Duration::from_secs(1)).ok()
            }
        }
    };
    let stdout = collect(out).unwrap_or_default();
    let stderr = collect(err).unwrap_or_default();
    match (status.code(), status.signal()) {
        (Some(code), _) => Ran::Exited {
            code,
            stdout,
            stderr,
        },
        (None, Some(sig)) => Ran::Signalled(sig),
        (None, None) => Ran::Failed("it ended without a status".to_owned()),
    }
}

/// Who fires the events: an agent's hooks and the fields every payload carries.
#[derive(Debug, Clone)]
pub struct Runner {
    pub hooks: Hooks,
    pub session_id: String,
    pub cwd: PathBuf,
    pub team: String,
    pub agent: String,
    pub agent_type: Option<String>,
}

impl Runner {
    /// The payload of `event`: Claude Code's common fields, the team's, then `extra`.
    pub fn payload(&self, event: Event, mode: PermissionMode, extra: Map<String, Value>) -> Value {
        let mut p = Map::new();
        p.insert("session_id".into(), json!(self.session_id));
        p.insert("cwd".into(), json!(self.cwd));
        p.insert("permission_mode".into(), json!(mode.as_str()));
        p.insert("hook_event_name".into(), json!(event.as_str()));
        p.insert(
            "agent_id".into(),
            json!(format!("{}@{}", self.agent, self.team)),
        );
        if let Some(t) = &self.agent_type {
            p.insert("agent_type".into(), json!(t));
        }
        p.insert("team_name".into(), json!(self.team));
        if self.agent != swarm_util::names::LEAD {
            p.insert("teammate_name".into(), json!(self.agent));
        }
        p.extend(extra);
        Value::Object(p)
    }

    pub fn fire(&self, event: Event, mode: PermissionMode, extra: Map<String, Value>) -> Outcome {
        if self
            .hooks
            .commands(event, self.agent_type.as_deref())
            .is_empty()
        {
            return Outcome::default();
        }
        let payload = self.payload(event, mode, extra);
        self.hooks.run(event, self.agent_type.as_deref(), &payload)
    }

    /// The fields of a task event.
    pub fn task_fields(id: &str, subject: &str, description: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("task_id".into(), json!(id));
        m.insert("task_subject".into(), json!(subject));
        if !description.is_empty() {
            m.insert("task_description".into(), json!(description));
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks(dir: &Path, settings: Value) -> Hooks {
        let file = dir.join("settings.json");
        std::fs::write(&file, settings.to_string()).unwrap();
        Hooks::load_files(dir, &[file])
    }

    fn command(cmd: &str, timeout: f64) -> Value {
        json!({"type": "command", "command": cmd, "timeout": timeout})
    }

    #[test]
    fn exit_codes_block_report_or_pass() {
        let t = tempfile::tempdir().unwrap();
        let h = hooks(
            t.path(),
            json!({"hooks": {
                "TaskCompleted": [{"hooks": [
                    command("cat > payload.json; exit 0", 5.0),
                    command("echo 'not yet: add tests' >&2; exit 2", 5.0),
                    command("echo broken >&2; exit 3", 5.0),
                ]}],
                "SubagentStop": [{"hooks": [command("exit 2", 5.0)]}],
                "PreToolUse": [{"matcher": "Bash", "hooks": [command("exit 2", 5.0)]}],
            }}),
        );
        assert!(h.problems.is_empty(), "{:?}", h.problems);
        let out = h.run(Event::TaskCompleted, None, &json!({"task_id": "7"}));
        assert_eq!(out.ran, 3);
        assert_eq!(out.blocked.as_deref(), Some("not yet: add tests"));
        assert_eq!(
            out.problems,
            vec!["TaskCompleted hook `echo broken >&2; exit 3` exited with 3: broken".to_owned()]
        );
        let payload: Value =
            serde_json::from_slice(&std::fs::read(t.path().join("payload.json")).unwrap()).unwrap();
        assert_eq!(payload["task_id"], "7");
        // Exit 2 on an event that cannot block is only a problem.
        let out = h.run(Event::SubagentStop, None, &json!({}));
        assert_eq!(out.blocked, None);
        assert_eq!(out.problems.len(), 1);
        assert_eq!(h.run(Event::TeammateIdle, None, &json!({})).ran, 0);
    }

    #[test]
    fn a_hook_past_its_timeout_is_killed_with_what_it_started() {
        let t = tempfile::tempdir().unwrap();
        let h = hooks(
            t.path(),
            json!({"hooks": {"TeammateIdle": [{"hooks": [
                command("sleep 30 & echo $! > bg.pid; sleep 30", 0.5),
                command("(sleep 30 &) ; echo fast >&2; exit 2", 2.0),
            ]}]}}),
        );
        let started = Instant::now();
        let out = h.run(Event::TeammateIdle, None, &json!({}));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(
            out.problems,
            vec![
                "TeammateIdle hook `sleep 30 & echo $! > bg.pid; sleep 30` did not finish within 0.5 s and was killed"
                    .to_owned()
            ]
        );
        assert_eq!(out.blocked.as_deref(), Some("fast"));
        let bg: i32 = std::fs::read_to_string(t.path().join("bg.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let gone = (0..250).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            !swarm_util::process::is_alive(bg)
        });
        assert!(gone, "the hook's background child survived");
    }

    #[test]
    fn matchers_and_bad_entries() {
        let t = tempfile::tempdir().unwrap();
        let h = hooks(
            t.path(),
            json!({"hooks": {
                "SubagentStart": [
                    {"matcher": "Explore|Plan", "hooks": [command("exit 0", 1.0)]},
                    {"matcher": "(", "hooks": [command("exit 0", 1.0)]},
                    {"hooks": [{"type": "prompt", "prompt": "x"}]},
                    {"hooks": [command("exit 0", -1.0)]},
                ],
                "TaskCreated": [{"matcher": "ignored", "hooks": [command("true", 1.0)]}],
            }}),
        );
        assert_eq!(h.problems.len(), 3, "{:?}", h.problems);
        assert!(
            h.problems[0].contains("hooks.SubagentStart[1]"),
            "{:?}",
            h.problems
        );
        assert_eq!(h.commands(Event::SubagentStart, Some("Explore")).len(), 1);
        assert_eq!(h.commands(Event::SubagentStart, Some("Explorer")).len(), 0);
        assert_eq!(h.commands(Event::TaskCreated, None).len(), 1);
        let bad = hooks(t.path(), json!([]));
        assert!(bad.is_empty());
        std::fs::write(t.path().join("settings.json"), "{oops").unwrap();
        let bad = Hooks::load_files(t.path(), &[t.path().join("settings.json")]);
        assert!(
            bad.problems[0].starts_with("failed to parse"),
            "{:?}",
            bad.problems
        );
    }

    #[test]
    fn payload_has_claude_codes_fields() {
        let r = Runner {
            hooks: Hooks::default(),
            session_id: "s-1".into(),
            cwd: "/w".into(),
            team: "t".into(),
            agent: "bob".into(),
            agent_type: Some("Explore".into()),
        };
        let p = r.payload(
            Event::TaskCreated,
            PermissionMode::AcceptEdits,
            Runner::task_fields("3", "Fix it", "the bug"),
        );
        assert_eq!(
            p,
            json!({"session_id": "s-1", "cwd": "/w", "permission_mode": "acceptEdits",
                "hook_event_name": "TaskCreated", "agent_id": "bob@t", "agent_type": "Explore",
                "team_name": "t", "teammate_name": "bob", "task_id": "3",
                "task_subject": "Fix it", "task_description": "the bug"})
        );
    }

    #[test]
    fn a_hooks_file_over_the_size_limit_is_skipped_naming_it() {
        let t = tempfile::tempdir().unwrap();
        let pad = "x".repeat(2 << 20);
        let h = hooks(
            t.path(),
            json!({"pad": pad, "hooks": {"SubagentStop": [{"hooks": [command("true", 5.0)]}]}}),
        );
        assert!(h.commands(Event::SubagentStop, None).is_empty());
        let file = t.path().join("settings.json").display().to_string();
        assert!(
            h.problems
                .iter()
                .any(|p| p.contains(&file) && p.contains("over the 1 MiB limit")),
            "{:?}",
            h.problems
        );
    }
}
