//! The tmux layer on a real tmux server: argv, environment and directory arriving exactly,
//! the batched pane query, errors, ids and names. One private server per test
//! (`-L <unique> -f /dev/null`, killed when the test's `TestEnv` drops). Programs in panes
//! are a Python script that records its argv, environment and directory, never a shell.
//! The team window's tests, in `team_window.rs`, share the helpers here.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use swarm_team::spawn::layout::session_name;
use swarm_team::spawn::window::{Placement, TeamWindow, TeamWindowOptions};
use swarm_tmux::{
    AGENT_OPTION, Direction, NewPane, NewSession, PANE_OPTION, PaneId, PaneRecord, PaneSpec, Size,
    TEAM_OPTION, Tmux, TmuxCommand, TmuxError,
};
use swarm_util::error::exit;
use swarm_util::names::{AgentName, TeamName};
use swarm_util::process;

use crate::harness::{TestEnv, wait_until};

/// Generous, so a loaded machine passes; a hang still fails in seconds, not minutes.
pub(crate) const WAIT: Duration = Duration::from_secs(15);

const DUMP_ENV: &str = "SWARM_TEST_DUMP";

/// Records argv (after the script), the whole environment and the directory as hex, so
/// the comparison is byte for byte; written to a temp name and renamed, so a reader never
/// sees half a file.
const DUMP_SCRIPT: &str = r#"import json, os, sys
out = os.environ["SWARM_TEST_DUMP"]
data = {
    "argv": [os.fsencode(a).hex() for a in sys.argv[1:]],
    "env": {k.hex(): v.hex() for k, v in os.environb.items()},
    "cwd": os.fsencode(os.getcwd()).hex(),
}
with open(out + ".tmp", "w") as f:
    json.dump(data, f)
os.rename(out + ".tmp", out)
"#;

pub(crate) fn python3() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())
        .expect("python3 on PATH")
}

pub(crate) fn sleeper(dir: &Path) -> PaneSpec {
    PaneSpec::new(dir, ["sleep", "1000"])
}

pub(crate) fn team(name: &str) -> TeamName {
    TeamName::new(name).unwrap()
}

pub(crate) fn agent(name: &str) -> AgentName {
    AgentName::new(name).unwrap()
}

pub(crate) fn opts(env: &TestEnv) -> TeamWindowOptions {
    TeamWindowOptions::new(env.dir.path().join("team.tmux.lock"))
}

pub(crate) fn pane(all: &[PaneRecord], id: PaneId) -> Option<&PaneRecord> {
    all.iter().find(|p| p.pane == id)
}

pub(crate) fn alive(tmux: &Tmux, id: PaneId) -> bool {
    pane(&tmux.list_panes().unwrap(), id).is_some()
}

/// A session that keeps the server up while panes come and go.
pub(crate) fn keeper(env: &TestEnv, tmux: &Tmux) -> NewPane {
    tmux.new_session(&NewSession {
        name: "keep",
        window_name: None,
        size: Some((200, 50)),
        spec: &sleeper(env.dir.path()),
    })
    .unwrap()
}

// ---------------------------------------------------------------------------------------
// argv, env and cwd arrive exactly; nothing is run by a shell or a format

struct Dump {
    argv: Vec<Vec<u8>>,
    env: HashMap<Vec<u8>, Vec<u8>>,
    cwd: Vec<u8>,
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn wait_dump(path: &Path) -> Dump {
    assert!(
        wait_until(WAIT, || path.exists()),
        "the pane's program never wrote {}",
        path.display()
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    Dump {
        argv: v["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| unhex(a.as_str().unwrap()))
            .collect(),
        env: v["env"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (unhex(k), unhex(v.as_str().unwrap())))
            .collect(),
        cwd: unhex(v["cwd"].as_str().unwrap()),
    }
}

/// Arguments a shell, tmux's argument parser or tmux's formats would change or run.
fn hostile(canary: &Path) -> Vec<String> {
    let c = canary.display();
    let mut v: Vec<String> = vec![
        format!("$(touch {c})"),
        format!("`touch {c}`"),
        format!("#(touch {c})"),
        format!("; touch {c}"),
        format!("x; touch {c};"),
        format!("a\nb; touch {c}"),
    ];
    v.extend(
        [
            ";",
            "x;",
            "x\\;",
            "a;b",
            "it's \"quoted\"",
            "'",
            "\"",
            "\\",
            "line one\nline two",
            "\ttab",
            "-n",
            "-",
            "--",
            "--help",
            "$HOME",
            "${HOME}",
            "~",
            "~/x",
            "  spaced  out  ",
            "",
            "#{pane_id}",
            "##",
            "%1",
            "{",
            "}",
            "*",
            "[a]",
            "é ünïcødé ✓",
            "&& || | > <",
        ]
        .map(String::from),
    );
    v
}

struct Probe {
    spec: PaneSpec,
    dump: PathBuf,
    args: Vec<String>,
}

/// A spec that records itself: argv, `-e` environment and a directory all full of
/// hostile text, every canary pointing into `canary_dir`.
fn probe(env: &TestEnv, name: &str) -> Probe {
    let base = env.dir.path().join(format!("probe-{name}"));
    let canary_dir = env.dir.path().join("canaries");
    std::fs::create_dir_all(&canary_dir).unwrap();
    let canary = |what: &str| canary_dir.join(format!("pwned-{name}-{what}"));
    // A directory whose path is itself hostile: tmux expands -c as a format.
    let cwd = base.join(format!(
        "#(touch {}) $(touch {}) %d %3 x;",
        canary("cwd-format").display(),
        canary("cwd-shell").display()
    ));
    std::fs::create_dir_all(&cwd).unwrap();
    let script = env.dir.path().join("dump.py");
    std::fs::write(&script, DUMP_SCRIPT).unwrap();
    let args = hostile(&canary("argv"));
    let mut spec = PaneSpec::new(
        &cwd,
        [
            python3().display().to_string(),
            script.display().to_string(),
        ],
    );
    spec.argv.extend(args.iter().cloned());
    for (i, value) in hostile(&canary("env")).into_iter().enumerate() {
        spec = spec.env(format!("SWARM_T_{i}"), value);
    }
    let dump = base.join("dump.json");
    spec = spec.env(DUMP_ENV, dump.display().to_string());
    Probe { spec, dump, args }
}

fn check(env: &TestEnv, p: &Probe) {
    let got = wait_dump(&p.dump);
    let want: Vec<Vec<u8>> = p.args.iter().map(|a| a.as_bytes().to_vec()).collect();
    assert_eq!(
        got.argv,
        want,
        "argv changed on its way:\n got: {:?}\nwant: {:?}",
        got.argv
            .iter()
            .map(|a| String::from_utf8_lossy(a))
            .collect::<Vec<_>>(),
        p.args
    );
    for (k, v) in &p.spec.env {
        assert_eq!(
            got.env
                .get(k.as_bytes())
                .map(|v| String::from_utf8_lossy(v).into_owned()),
            Some(v.clone()),
            "environment {k} changed on its way"
        );
    }
    assert_eq!(
        got.cwd,
        p.spec.cwd.canonicalize().unwrap().as_os_str().as_bytes(),
        "working directory changed on its way"
    );
    assert_no_canary(env);
}

fn assert_no_canary(env: &TestEnv) {
    // Every canary points into `canaries/`; the probe directories merely have canary paths
    // in their names.
    let dir = env.dir.path().join("canaries");
    let pwned: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        pwned.is_empty(),
        "something ran a shell or a format: {pwned:?}"
    );
}

#[test]
fn argv_env_and_cwd_arrive_byte_exact_on_every_spawn_path() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let keep = keeper(&env, &tmux);

    let p = probe(&env, "session");
    tmux.new_session(&NewSession {
        name: "probe",
        window_name: Some("probe"),
        size: Some((120, 40)),
        spec: &p.spec,
    })
    .unwrap();
    check(&env, &p);

    let p = probe(&env, "window");
    tmux.new_window(keep.session, Some("probe"), &p.spec)
        .unwrap();
    check(&env, &p);

    let p = probe(&env, "split");
    tmux.split_window(
        keep.pane,
        Direction::Horizontal,
        Some(Size::Percent(50)),
        &p.spec,
    )
    .unwrap();
    check(&env, &p);

    let p = probe(&env, "respawn");
    let holder = tmux
        .split_window(
            keep.pane,
            Direction::Vertical,
            None,
            &sleeper(env.dir.path()),
        )
        .unwrap();
    tmux.respawn_pane(holder, &p.spec).unwrap();
    check(&env, &p);

    let p = probe(&env, "teammate");
    let t = team("probe");
    let mut tw = TeamWindow::open(
        &tmux,
        &t,
        &sleeper(env.dir.path()),
        Placement::Detached,
        opts(&env),
    )
    .unwrap();
    tw.add_teammate(&agent("prober"), "blue", &p.spec).unwrap();
    check(&env, &p);
}

#[test]
fn a_one_word_argv_is_exec_d_not_given_to_a_shell() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let keep = keeper(&env, &tmux);
    let dir = env.dir.path().join("one word");
    std::fs::create_dir_all(&dir).unwrap();
    // tmux runs a single word with `sh -c`, which would run the `$(…)` in this file name.
    let program = dir.join("dump $(touch pwned-one-word) `touch pwned-tick` x;");
    std::fs::write(
        &program,
        format!("#!{}\n{DUMP_SCRIPT}", python3().display()),
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dump = dir.join("dump.json");
    let spec = PaneSpec::new(&dir, [program.display().to_string()])
        .env(DUMP_ENV, dump.display().to_string());
    tmux.new_window(keep.session, None, &spec).unwrap();
    let got = wait_dump(&dump);
    assert!(got.argv.is_empty(), "{:?}", got.argv);
    for canary in ["pwned-one-word", "pwned-tick"] {
        assert!(!dir.join(canary).exists(), "a shell ran the program's name");
    }
}

// ---------------------------------------------------------------------------------------
// The batched query

#[test]
fn batched_query_reports_tags_pids_and_how_panes_died() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path();
    let keep = keeper(&env, &tmux);
    let exits = tmux
        .split_window(keep.pane, Direction::Vertical, None, &sleeper(dir))
        .unwrap();
    let killed = tmux
        .split_window(keep.pane, Direction::Vertical, None, &sleeper(dir))
        .unwrap();
    for p in [exits, killed] {
        tmux.set_pane_option(p, "remain-on-exit", "on").unwrap();
    }
    let py = python3().display().to_string();
    tmux.respawn_pane(
        exits,
        &PaneSpec::new(dir, [py.as_str(), "-c", "import sys; sys.exit(3)"]),
    )
    .unwrap();
    let before = tmux.list_panes().unwrap();
    let victim = pane(&before, killed).unwrap().pid;
    assert!(process::signal(victim, Signal::SIGKILL));

    // Tagged on the pane itself.
    tmux.set_pane_option(keep.pane, TEAM_OPTION, "t").unwrap();
    tmux.set_pane_option(keep.pane, AGENT_OPTION, "lead")
        .unwrap();
    tmux.set_pane_option(keep.pane, PANE_OPTION, &keep.pane.to_string())
        .unwrap();
    // Tags a window passes down to every pane in it (here copied from the tagged pane)
    // must not make those panes ours.
    tmux.set_window_option(keep.window, TEAM_OPTION, "t")
        .unwrap();
    tmux.set_window_option(keep.window, AGENT_OPTION, "ghost")
        .unwrap();
    tmux.set_window_option(keep.window, PANE_OPTION, &keep.pane.to_string())
        .unwrap();

    assert!(
        wait_until(WAIT, || {
            let all = tmux.list_panes().unwrap();
            // The status arrives a moment after `dead`: tmux sees the pty close first.
            let done =
                |p: &PaneRecord| p.dead && (p.dead_status.is_some() || p.dead_signal.is_some());
            done(pane(&all, exits).unwrap()) && done(pane(&all, killed).unwrap())
        }),
        "{:#?}",
        tmux.list_panes().unwrap()
    );
    let all = tmux.list_panes().unwrap();
    assert_eq!(all.len(), 3);

    let lead = pane(&all, keep.pane).unwrap();
    assert!(!lead.dead);
    assert_eq!((lead.dead_status, lead.dead_signal), (None, None));
    assert!(
        process::is_alive(lead.pid),
        "pane_pid {} is not running",
        lead.pid
    );
    assert_eq!(lead.team.as_deref(), Some("t"));
    assert_eq!(lead.agent.as_deref(), Some("lead"));
    assert_eq!((lead.window, lead.session), (keep.window, keep.session));
    assert_eq!(lead.session_name, "keep");
    assert_eq!(lead.current_command, "sleep");

    let three = pane(&all, exits).unwrap();
    assert_eq!(three.dead_status, Some(3));
    assert_eq!(three.dead_signal, None);

    let nine = pane(&all, killed).unwrap();
    assert_eq!(nine.dead_signal, Some(9));
    assert_eq!(nine.pid, victim);

    for p in [three, nine] {
        assert_eq!(
            (p.team.as_deref(), p.agent.as_deref()),
            (None, None),
            "{} inherited its window's tags",
            p.pane
        );
        assert!(!p.belongs_to("t"));
    }
}

// ---------------------------------------------------------------------------------------
// Errors

#[test]
fn no_server_and_target_gone_are_told_apart() {
    let env = TestEnv::new();
    let tmux = env.tmux();

    // Never started: the socket does not exist.
    let e = tmux.list_panes().unwrap_err();
    assert!(e.is_no_server(), "{e:?}");
    assert!(!tmux.has_session("keep").unwrap());

    let keep = keeper(&env, &tmux);
    let gone: PaneId = "%999".parse().unwrap();
    let e = tmux.kill_pane(gone).unwrap_err();
    assert!(e.is_target_gone(), "{e:?}");
    let e = tmux.set_pane_option(gone, "@x", "1").unwrap_err();
    assert!(e.is_target_gone(), "{e:?}");
    let e = tmux.display(&gone, "#{pane_pid}").unwrap_err();
    assert!(e.is_target_gone(), "{e:?}");
    let err = e;
    assert_eq!(swarm::exit::exit_code(&err), exit::TMUX);
    assert_eq!(tmux.display(&keep.pane, "#{pane_width}").unwrap(), "200");

    // A server left with no session (it is exiting, or keeps running with `exit-empty
    // off`) has no panes; `list-panes -a` alone would say "no current target".
    let set = env
        .tmux_cmd()
        .args(["set-option", "-g", "exit-empty", "off"])
        .status()
        .unwrap();
    assert!(set.success());
    tmux.kill_session(keep.session).unwrap();
    assert_eq!(tmux.list_panes().unwrap(), []);
    assert!(!tmux.has_session("keep").unwrap());

    // kill-server: the socket file may stay behind, refusing connections.
    tmux.kill_server().unwrap();
    let e = tmux.list_panes().unwrap_err();
    assert!(e.is_no_server(), "{e:?}");
    let e = tmux.kill_pane(keep.pane).unwrap_err();
    assert!(
        e.is_no_server(),
        "after kill-server a target is not 'gone': {e:?}"
    );
    let err = e;
    assert_eq!(swarm::exit::exit_code(&err), exit::TMUX);
    assert!(
        err.to_string().contains("no tmux server is running"),
        "{err}"
    );
    tmux.kill_server().unwrap();

    // SIGKILL of the server leaves a stale socket; a new server can still take it over.
    let keep = keeper(&env, &tmux);
    let server_pid: i32 = tmux.display(&keep.pane, "#{pid}").unwrap().parse().unwrap();
    let pane_pid = pane(&tmux.list_panes().unwrap(), keep.pane).unwrap().pid;
    assert!(process::signal(server_pid, Signal::SIGKILL));
    assert!(wait_until(WAIT, || !process::is_alive(server_pid)));
    process::signal(pane_pid, Signal::SIGKILL);
    assert!(env.tmux_socket_path().exists(), "expected a stale socket");
    for e in [
        tmux.list_panes().unwrap_err(),
        tmux.kill_pane(keep.pane).unwrap_err(),
        tmux.set_pane_option(keep.pane, "@x", "1").unwrap_err(),
    ] {
        assert!(e.is_no_server(), "{e:?}");
    }
    assert!(!tmux.has_session("keep").unwrap());
    assert_eq!(tmux.session_by_name("keep").unwrap(), None);
    let again = keeper(&env, &tmux);
    assert!(alive(&tmux, again.pane));
}

#[test]
fn a_command_that_hangs_times_out() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    keeper(&env, &tmux);
    // `wait-for` blocks until its channel is signalled: a stand-in for a hung server.
    let slow = tmux.clone().timeout(Duration::from_millis(300));
    let e = slow.run(&TmuxCommand::wait_for("never")).unwrap_err();
    assert!(matches!(e, TmuxError::Timeout { .. }), "{e:?}");
    let err = e;
    assert_eq!(swarm::exit::exit_code(&err), exit::TMUX);
    // The server itself is fine, and a signalled channel does not block.
    let waiter = {
        let tmux = tmux.clone();
        std::thread::spawn(move || tmux.run(&TmuxCommand::wait_for("ready")))
    };
    assert!(wait_until(WAIT, || {
        tmux.run(&TmuxCommand::signal_channel("ready")).unwrap();
        waiter.is_finished()
    }));
    waiter.join().unwrap().unwrap();
}

// ---------------------------------------------------------------------------------------
// Ids and names

#[test]
fn pane_ids_keep_working_after_indexes_renumber() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path();
    let keep = keeper(&env, &tmux);
    let second = tmux
        .split_window(keep.pane, Direction::Horizontal, None, &sleeper(dir))
        .unwrap();
    let third = tmux
        .split_window(second, Direction::Horizontal, None, &sleeper(dir))
        .unwrap();
    let index_before = pane(&tmux.list_panes().unwrap(), third).unwrap().index;
    tmux.kill_pane(keep.pane).unwrap();
    tmux.set_pane_option(third, "@mark", "third").unwrap();
    tmux.set_pane_title(third, "still me %d #{pane_id}")
        .unwrap();
    let all = tmux.list_panes().unwrap();
    let after = pane(&all, third).unwrap();
    assert!(after.index < index_before, "indexes did not renumber");
    assert_eq!(after.title, "still me %d #{pane_id}");
    assert_eq!(tmux.display(&third, "#{@mark} %d").unwrap(), "third %d");
    assert_eq!(tmux.display(&second, "#{@mark}").unwrap(), "");
}

#[test]
fn session_names_are_matched_exactly() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path();
    let lead = tmux
        .new_session(&NewSession {
            name: "alpha-lead",
            window_name: None,
            size: None,
            spec: &sleeper(dir),
        })
        .unwrap();
    assert!(
        !tmux.has_session("alpha").unwrap(),
        "'alpha' prefix-matched 'alpha-lead'"
    );
    assert_eq!(tmux.session_by_name("alpha").unwrap(), None);
    let alpha = tmux
        .new_session(&NewSession {
            name: "alpha",
            window_name: None,
            size: None,
            spec: &sleeper(dir),
        })
        .unwrap();
    assert_eq!(tmux.session_by_name("alpha").unwrap(), Some(alpha.session));
    assert_eq!(
        tmux.session_by_name("alpha-lead").unwrap(),
        Some(lead.session)
    );
    tmux.kill_session(alpha.session).unwrap();
    assert!(tmux.has_session("alpha-lead").unwrap());
    assert!(!tmux.has_session("alpha").unwrap());
    let e = tmux
        .new_session(&NewSession {
            name: "alpha-lead",
            window_name: None,
            size: None,
            spec: &sleeper(dir),
        })
        .unwrap_err();
    assert!(matches!(e, TmuxError::SessionExists { .. }), "{e:?}");

    // Teams whose names are prefixes of each other stay apart too.
    let a = team("alpha");
    let b = team("alpha-lead");
    let mut opts_b = opts(&env);
    opts_b.lock_anchor = env.dir.path().join("b");
    let tb = TeamWindow::open(&tmux, &b, &sleeper(dir), Placement::Detached, opts_b).unwrap();
    let ta = TeamWindow::open(&tmux, &a, &sleeper(dir), Placement::Detached, opts(&env)).unwrap();
    assert_ne!(ta.session(), tb.session());
    assert_eq!(ta.close().unwrap(), 1);
    assert_eq!(tb.panes().unwrap().len(), 1);
    assert!(tmux.has_session(&session_name(&b)).unwrap());
}

#[test]
fn several_panes_are_captured_in_one_call_each_to_its_own() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path();
    let keep = keeper(&env, &tmux);
    // Two panes printing lines, one of them a line that looks like the batch's separator
    // but for the control character a terminal never keeps.
    let printer =
        |text: &str| PaneSpec::new(dir, ["sh", "-c", &format!("printf '{text}'; sleep 1000")]);
    let first = tmux
        .split_window(
            keep.pane,
            Direction::Horizontal,
            None,
            &printer("one\\ntwo\\n"),
        )
        .unwrap();
    let second = tmux
        .split_window(
            first,
            Direction::Horizontal,
            None,
            &printer("\\037%%0\\037\\nthree\\n"),
        )
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || {
            tmux.capture_pane(second, None).unwrap().contains("three")
                && tmux.capture_pane(first, None).unwrap().contains("two")
        }),
        "{:?} {:?}",
        tmux.capture_pane(first, None),
        tmux.capture_pane(second, None)
    );
    let all = tmux.capture_panes(&[second, first], None).unwrap();
    let ids: Vec<PaneId> = all.iter().map(|(p, _)| *p).collect();
    assert_eq!(ids, [second, first]);
    assert_eq!(all[1].1.trim_end(), "one\ntwo");
    assert!(
        all[0].1.contains("three") && !all[0].1.contains("one"),
        "{:?}",
        all[0].1
    );
    assert_eq!(all[0].1, tmux.capture_pane(second, None).unwrap());
    // A pane that is gone fails the batch, which the caller then asks without it.
    tmux.kill_pane(first).unwrap();
    assert!(tmux.capture_panes(&[second, first], None).is_err());
    assert!(tmux.capture_panes(&[], None).unwrap().is_empty());
}
