//! What a person sees, checked: `swarm status`, `swarm task list`, `swarm watch` and the
//! demo's team window captured from a real tmux pane (`capture-pane -p`) of a session made
//! 120x40 on the test's own socket, so a layout regression fails a test. Times, ages, pids,
//! paths and ids are normalised before the snapshot; each test says what else it leaves
//! out and why.

use std::process::Output;
use std::time::Duration;

use swarm::store::names::AgentName;
use swarm::store::state::{self, Activity, AgentState, ExitInfo};
use swarm::util::clock;

use crate::harness::{Guarded, SWARM, TestEnv, wait_until};

const WAIT: Duration = Duration::from_secs(30);
const HOUR_MS: i64 = 3_600_000;
/// Printed after the command in a pane, so a test knows its output is complete.
const DONE: &str = "[pane done]";

fn tmux(env: &TestEnv, args: &[&str]) -> Output {
    // The server inherits the test's environment: root and socket, nothing of the user's.
    env.command("tmux")
        .args(["-L", &env.tmux_socket, "-f", "/dev/null"])
        .args(args)
        .output()
        .unwrap()
}

/// A detached 120x40 session `name` running `command` under `sh -c`, which then says
/// [`DONE`] and stays, so its pane can be read.
fn open(env: &TestEnv, name: &str, command: &str) {
    let script = format!("{command}; echo '{DONE}'; sleep 600");
    let out = tmux(
        env,
        &[
            "new-session", "-d", "-s", name, "-x", "120", "-y", "40", "sh", "-c", &script,
        ],
    );
    assert!(out.status.success(), "{out:?}");
}

/// What the pane shows, trailing blank lines dropped; with `-e` its colours too.
fn screen(env: &TestEnv, target: &str, escapes: bool) -> String {
    let mut args = vec!["capture-pane", "-p", "-t", target];
    if escapes {
        args.push("-e");
    }
    let out = String::from_utf8_lossy(&tmux(env, &args).stdout).into_owned();
    format!("{}\n", out.trim_end())
}

/// Runs `command` in a fresh 120x40 pane and returns its screen once it is done.
fn in_pane(env: &TestEnv, name: &str, command: &str, escapes: bool) -> String {
    open(env, name, command);
    assert!(
        wait_until(WAIT, || screen(env, name, false).contains(DONE)),
        "{}",
        screen(env, name, false)
    );
    screen(env, name, escapes)
}

fn swarm_cmd(args: &str) -> String {
    format!("{SWARM} {args}")
}

/// A team whose members show every kind of state, with a long name and long details, all
/// of them two hours quiet (a stable age); the alive ones are a `sleep` the test owns.
fn varied_team() -> (TestEnv, Guarded) {
    let members = [
        "alice",
        "a-teammate-with-a-rather-long-name",
        "carol",
        "dave",
        "erin",
    ];
    let env = TestEnv::with_team("t", &members);
    let sleeper = Guarded(Some(
        std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap(),
    ));
    let pid = sleeper.0.as_ref().unwrap().id() as i32;
    let root = env.store_root();
    let team = env.team_name("t");
    let quiet = clock::now_ms() - 2 * HOUR_MS;
    let write = |name: &str, activity: Activity, change: &dyn Fn(&mut AgentState)| {
        let mut s = AgentState::new(activity);
        s.pid = pid;
        s.start_ticks = swarm::util::process::start_ticks(pid);
        s.last_activity_ms = quiet;
        change(&mut s);
        state::write(&root, &team, &AgentName::parse_any(name).unwrap(), &s).unwrap();
    };
    write("team-lead", Activity::Working, &|s| {
        s.detail = Some("stalled, waiting for alice".into());
    });
    write("alice", Activity::Working, &|s| {
        s.current_task = Some("1".into());
        s.usage.input_tokens = 12_345;
        s.usage.output_tokens = 678;
        s.model_calls = 3;
        s.cost_usd = 0.0123;
        s.set_rate_limited(Some((clock::now_ms() + HOUR_MS, "429 from the provider")));
    });
    write(
        "a-teammate-with-a-rather-long-name",
        Activity::ShuttingDown,
        &|_| {},
    );
    write("carol", Activity::Idle, &|_| {});
    write("dave", Activity::Exited, &|s| {
        s.exit = Some(ExitInfo {
            code: 137,
            reason: "killed by signal 9 while it was writing lib/upper.sh, which it had \
                     almost finished, so the next teammate has little left to do"
                .into(),
            released_tasks: Vec::new(),
            clean: false,
        });
    });
    write("erin", Activity::AwaitingApproval, &|s| {
        s.detail = Some(
            "waiting for plan approval of a plan that is rather long and needs cutting to fit \
             the terminal"
                .into(),
        );
    });
    for (subject, extra) in [
        ("Write lib/upper.sh", &[][..]),
        (
            "Write toolkit.sh, which sources every library in lib/ and dispatches on its \
             first argument, with a usage line for anything else",
            &["--blocked-by", "1"][..],
        ),
        ("Review", &[][..]),
    ] {
        let mut args = vec!["--team", "t", "task", "add", subject];
        args.extend_from_slice(extra);
        env.run(&args).success();
    }
    env.run(&["--team", "t", "task", "claim", "1", "--as", "alice"])
        .success();
    env.run(&[
        "--team",
        "t",
        "task",
        "claim",
        "3",
        "--as",
        "a-teammate-with-a-rather-long-name",
    ])
    .success();
    env.run(&["--team", "t", "task", "done", "3"]).success();
    (env, sleeper)
}

/// Only what changes from run to run is replaced: the members' ages are a fixed "2h ago",
/// so the harness's age filter (which swallows padding) is not used.
fn settings(env: &TestEnv, pid: Option<u32>) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    for path in [env.dir.path().to_path_buf(), env.dir.path().canonicalize().unwrap()] {
        settings.add_filter(&regex::escape(&path.display().to_string()), "$$TMP");
    }
    settings.add_filter(r"\b\d\d:\d\d:\d\d\b", "HH:MM:SS");
    if let Some(pid) = pid {
        // The pid column is as wide as the pid: both go, at a fixed width.
        settings.add_filter(&format!(r"\b{pid} +"), "[pid]  ");
        settings.add_filter(r"PID +", "PID    ");
    }
    settings
}

#[test]
fn status_in_a_pane_fits_long_states_names_and_details() {
    let (env, sleeper) = varied_team();
    let pid = sleeper.0.as_ref().unwrap().id();
    let text = in_pane(&env, "status", &swarm_cmd("--team t status"), false);
    for line in text.lines() {
        assert!(line.chars().count() <= 120, "{line:?}");
    }
    settings(&env, Some(pid)).bind(|| insta::assert_snapshot!("status_pane_120x40", text));
}

#[test]
fn task_list_in_a_pane_cuts_only_the_subject() {
    let (env, _sleeper) = varied_team();
    let text = in_pane(&env, "tasks", &swarm_cmd("--team t task list"), false);
    assert!(text.contains('…'), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 120, "{line:?}");
    }
    settings(&env, None).bind(|| insta::assert_snapshot!("task_list_pane_120x40", text));
}

/// A terminal gets colour (agent colours from the roster, state colours); a pipe, and a
/// terminal with `NO_COLOR` set, get none.
#[test]
fn colour_on_a_terminal_only_and_never_with_no_color() {
    let (env, _sleeper) = varied_team();
    let coloured = in_pane(&env, "colour", &swarm_cmd("--team t status"), true);
    // Working green is not shown (alice waits), waiting yellow, dead bold red, idle dim.
    for sgr in ["\x1b[33m", "\x1b[1m\x1b[31m", "\x1b[2m"] {
        assert!(coloured.contains(sgr), "{sgr:?} missing:\n{coloured:?}");
    }
    let tasks = in_pane(&env, "tasks", &swarm_cmd("--team t task list"), true);
    assert!(tasks.contains("\x1b[32m"), "{tasks:?}");

    let plain = in_pane(
        &env,
        "plain",
        &format!("NO_COLOR=1 {}", swarm_cmd("--team t status")),
        true,
    );
    assert!(!plain.contains('\x1b'), "{plain:?}");
    assert!(plain.contains("waiting for rate limit"), "{plain}");
    let piped = env.run(&["--team", "t", "status"]).success().stdout;
    assert!(!piped.contains('\x1b'), "{piped:?}");
    let piped = env.run(&["--team", "t", "task", "list"]).success().stdout;
    assert!(!piped.contains('\x1b'), "{piped:?}");
    // An empty NO_COLOR is no request (no-color.org).
    let empty = in_pane(
        &env,
        "empty",
        &format!("NO_COLOR= {}", swarm_cmd("--team t status")),
        true,
    );
    assert!(empty.contains("\x1b[33m"), "{empty:?}");
}

#[test]
fn watch_in_a_pane() {
    let (env, sleeper) = varied_team();
    let pid = sleeper.0.as_ref().unwrap().id();
    open(&env, "watch", &swarm_cmd("watch t"));
    assert!(
        wait_until(WAIT, || screen(&env, "watch", false).contains("Members (6)")),
        "{}",
        screen(&env, "watch", false)
    );
    // Drawn once more after the first frame, so what it shows has settled.
    std::thread::sleep(Duration::from_millis(1500));
    let text = screen(&env, "watch", false);
    tmux(&env, &["send-keys", "-t", "watch", "q"]);
    settings(&env, Some(pid)).bind(|| insta::assert_snapshot!("watch_pane_120x40", text));
}
