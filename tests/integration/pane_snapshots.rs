//! What a person sees, checked: `swarm status`, `swarm task list`, `swarm watch` and the
//! demo's team window captured from a real tmux pane (`capture-pane -p`) of a session made
//! 120x40 on the test's own socket, so a layout regression fails a test. Times, ages, pids,
//! paths and ids are normalised before the snapshot; each test says what else it leaves
//! out and why.

use std::process::Output;
use std::time::Duration;

use swarm_store::state::{Activity, AgentState, ExitInfo};
use swarm_util::clock;
use swarm_util::names::AgentName;

use crate::harness::{Guarded, SWARM, TestEnv, wait_until};

const WAIT: Duration = Duration::from_secs(30);
const HOUR_MS: i64 = 3_600_000;
/// Printed after the command in a pane, so a test knows its output is complete.
const DONE: &str = "[pane done]";

fn tmux(env: &TestEnv, args: &[&str]) -> Output {
    // The server inherits the test's environment: root and socket, nothing of the user's.
    env.tmux_cmd().args(args).output().unwrap()
}

/// A detached 120x40 session `name` running `command` under `sh -c` once its terminal is
/// that size, which then says [`DONE`] and stays, so its pane can be read.
fn open(env: &TestEnv, name: &str, command: &str) {
    // The pane's terminal may get its size a moment after its shell starts.
    let script = format!(
        "until [ \"$(stty size)\" = '40 120' ]; do sleep 0.05; done; {command}; echo '{DONE}'; sleep 600"
    );
    let out = tmux(
        env,
        &[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "120",
            "-y",
            "40",
            "sh",
            "-c",
            &script,
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
    let root = env.teams();
    let team = env.team_name("t");
    let quiet = clock::now_ms() - 2 * HOUR_MS;
    let write = |name: &str, activity: Activity, change: &dyn Fn(&mut AgentState)| {
        let mut s = AgentState::new(activity);
        s.pid = pid;
        s.start_ticks = swarm_util::process::start_ticks(pid);
        s.last_activity_ms = quiet;
        change(&mut s);
        root.open(&team)
            .unwrap()
            .agents()
            .write_state(&AgentName::parse_any(name).unwrap(), &s)
            .unwrap();
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
    for path in [
        env.dir.path().to_path_buf(),
        env.dir.path().canonicalize().unwrap(),
    ] {
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
    let (env, _sleeper) = varied_team();
    // 116 columns: the PID column (as wide as the pid) never fits beside a DETAIL of 24,
    // whatever the pid's digits, so the layout does not follow the machine's pid counter.
    let text = in_pane(
        &env,
        "status",
        &format!("stty cols 116 && {}", swarm_cmd("--team t status")),
        false,
    );
    for line in text.lines() {
        assert!(line.chars().count() <= 116, "{line:?}");
    }
    settings(&env, None).bind(|| insta::assert_snapshot!("status_pane_120x40", text));
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
    // The first frame is whole once its last line, the key help, is there.
    let drawn = |s: &str| s.contains("Members (6)") && s.contains("q quit");
    assert!(
        wait_until(WAIT, || drawn(&screen(&env, "watch", false))),
        "{}",
        screen(&env, "watch", false)
    );
    let text = screen(&env, "watch", false);
    tmux(&env, &["send-keys", "-t", "watch", "q"]);
    settings(&env, Some(pid)).bind(|| insta::assert_snapshot!("watch_pane_120x40", text));
}

#[test]
fn watch_has_colour_on_a_terminal_and_none_with_no_color() {
    let (env, _sleeper) = varied_team();
    let drawn = |s: &str| s.contains("Members (6)") && s.contains("q quit");
    // A foreground colour: `ESC[3Nm`, `ESC[38;…m` or `ESC[9Nm`, alone or after other
    // attributes.
    let colour = regex::Regex::new(r"\x1b\[(?:[0-9;]*;)?(?:3[0-8]|9[0-7])[;m]").unwrap();
    for (name, prefix, coloured) in [
        ("watch-colour", "", true),
        ("watch-plain", "NO_COLOR=1 ", false),
    ] {
        open(&env, name, &format!("{prefix}{}", swarm_cmd("watch t")));
        assert!(
            wait_until(WAIT, || drawn(&screen(&env, name, false))),
            "{}",
            screen(&env, name, false)
        );
        let text = screen(&env, name, true);
        tmux(&env, &["send-keys", "-t", name, "q"]);
        assert_eq!(colour.is_match(&text), coloured, "{name}: {text:?}");
    }
}

/// The demo as a person runs it from a tmux pane: its team window opens beside that pane in
/// the same 120x40 session. Snapshots: the window's panes (who, size, place), the lead's
/// pane up to "Waiting for bob's plan." (the lead's planning, which nothing else races;
/// after it the teammates' messages may reach the lead together or apart), and the
/// demo's own pane at the end (its report, with model calls and token counts replaced).
/// One teammate keeps it short on a loaded machine.
#[test]
fn the_demo_from_a_pane() {
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    // The demo must find its caller's tmux server from TMUX, which tmux sets in the pane;
    // refuse to go on with any other (never the user's).
    let command = format!(
        "case \"$TMUX\" in */{socket},*) env -u SWARM_TMUX_SOCKET {SWARM} demo --no-attach \
         --teammates 1 --dir {job};; *) echo \"not on the test's server: $TMUX\";; esac",
        socket = env.tmux_socket,
        job = job.display(),
    );
    open(&env, "main", &command);
    let lead_pane = || {
        let out = tmux(
            &env,
            &["list-panes", "-a", "-F", "#{pane_id} #{@swarm-agent}"],
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_suffix(" team-lead").map(str::to_owned))
    };
    let history = |pane: &str| {
        let out = tmux(&env, &["capture-pane", "-p", "-S", "-", "-t", pane]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    const MARK: &str = "Waiting for bob's plan.";
    let mut seen = (String::new(), String::new());
    let planned = wait_until(Duration::from_secs(120), || {
        let Some(pane) = lead_pane() else {
            return false;
        };
        let layout = tmux(
            &env,
            &[
                "list-panes",
                "-t",
                &pane,
                "-F",
                "#{@swarm-agent} #{pane_width}x#{pane_height} at #{pane_left},#{pane_top}",
            ],
        );
        seen = (
            String::from_utf8_lossy(&layout.stdout).into_owned(),
            history(&pane),
        );
        // The plan is shown, and bob's pane is made and tagged (the layout settled with
        // it): CI once read the layout in between.
        seen.1.contains(MARK) && seen.0.lines().any(|l| l.starts_with("bob "))
    });
    assert!(planned, "{}\n{}", seen.1, screen(&env, "main", false));
    let (layout, history) = seen;
    let upto = history.find(MARK).unwrap() + MARK.len();
    let lead = format!("{layout}---\n{}\n", &history[..upto]);
    assert!(
        wait_until(Duration::from_secs(180), || screen(&env, "main", false)
            .contains(DONE)),
        "{}",
        screen(&env, "main", false)
    );
    let end = screen(&env, "main", false);
    assert!(end.contains("the job's check passed"), "{end}");
    let mut settings = settings(&env, None);
    settings.add_filter(r"\bdemo-[0-9a-f]{4}\b", "demo-[team]");
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[port]");
    settings.add_filter(r"\b\d+ model calls", "[n] model calls");
    settings.add_filter(
        r"[\d.]+[kM]? tokens in, [\d.]+[kM]? out",
        "[n] tokens in, [n] out",
    );
    settings.bind(|| {
        insta::assert_snapshot!("demo_lead_pane_120x40", lead);
        insta::assert_snapshot!("demo_end_120x40", end);
    });
}
