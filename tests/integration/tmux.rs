//! The tmux layer and the team window on a real tmux server: one private server per test
//! (`-L <unique> -f /dev/null`, killed when the test's `TestEnv` drops). Programs in panes
//! are a Python script that records its argv, environment and directory, never a shell.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use swarm::store::names::{AgentName, TeamName};
use swarm::store::roster::{PALETTE, tmux_colour};
use swarm::team::layout::session_name;
use swarm::team::window::{Placement, TeamWindow, TeamWindowOptions};
use swarm::tmux::{
    AGENT_OPTION, Direction, NewPane, NewSession, PANE_OPTION, PaneId, PaneRecord, PaneSpec, Size,
    TEAM_OPTION, Tmux, TmuxCommand, TmuxError,
};
use swarm::util::error::exit;
use swarm::util::process;

use crate::harness::{TestEnv, wait_until};

/// Generous, so a loaded machine passes; a hang still fails in seconds, not minutes.
const WAIT: Duration = Duration::from_secs(15);

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

fn python3() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())
        .expect("python3 on PATH")
}

fn sleeper(dir: &Path) -> PaneSpec {
    PaneSpec::new(dir, ["sleep", "1000"])
}

fn team(name: &str) -> TeamName {
    TeamName::new(name).unwrap()
}

fn agent(name: &str) -> AgentName {
    AgentName::new(name).unwrap()
}

fn opts(env: &TestEnv) -> TeamWindowOptions {
    TeamWindowOptions::new(env.dir.path().join("team.tmux.lock"))
}

fn pane(all: &[PaneRecord], id: PaneId) -> Option<&PaneRecord> {
    all.iter().find(|p| p.pane == id)
}

fn alive(tmux: &Tmux, id: PaneId) -> bool {
    pane(&tmux.list_panes().unwrap(), id).is_some()
}

/// A session that keeps the server up while panes come and go.
fn keeper(env: &TestEnv, tmux: &Tmux) -> NewPane {
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
    let err: swarm::util::error::Error = e.into();
    assert_eq!(err.exit_code(), exit::TMUX);
    assert_eq!(tmux.display(&keep.pane, "#{pane_width}").unwrap(), "200");

    // A server left with no session (it is exiting, or keeps running with `exit-empty
    // off`) has no panes; `list-panes -a` alone would say "no current target".
    let set = std::process::Command::new("tmux")
        .args(["-L", &env.tmux_socket, "-f", "/dev/null"])
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
    let err: swarm::util::error::Error = e.into();
    assert_eq!(err.exit_code(), exit::TMUX);
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
    let err: swarm::util::error::Error = e.into();
    assert_eq!(err.exit_code(), exit::TMUX);
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

// ---------------------------------------------------------------------------------------
// The team window

fn option(tmux: &Tmux, p: PaneId, name: &str) -> String {
    tmux.display(&p, &format!("#{{{name}}}")).unwrap()
}

#[test]
fn team_window_lays_out_tags_and_overflows() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path();
    let t = team("blue-team");
    let mut tw =
        TeamWindow::open(&tmux, &t, &sleeper(dir), Placement::Detached, opts(&env)).unwrap();
    let sessions = tmux.list_sessions().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].name, "swarm-blue-team");
    assert_eq!(sessions[0].id, tw.session());
    let lead = tw.lead_pane().unwrap().expect("a lead pane");

    let names: Vec<String> = (1..=8).map(|i| format!("mate{i}")).collect();
    let mut ids = Vec::new();
    for (i, name) in names.iter().enumerate().take(3) {
        let colour = PALETTE[(i + 1) % PALETTE.len()];
        ids.push(
            tw.add_teammate(&agent(name), colour, &sleeper(dir))
                .unwrap(),
        );
    }

    // Lead on the left at about 30 % of 200 columns, full height; teammates to its right.
    let panes = tw.panes().unwrap();
    assert_eq!(panes.len(), 4);
    let l = pane(&panes, lead).unwrap();
    // `pane-border-status top` takes the first row.
    assert_eq!((l.left, l.top), (0, 1));
    assert!(
        (57..=63).contains(&l.width),
        "lead is {} columns wide",
        l.width
    );
    assert!(l.height >= 45, "lead is {} rows high", l.height);
    for id in &ids {
        let p = pane(&panes, *id).unwrap();
        assert_eq!(p.window, l.window);
        assert!(p.left > l.width, "{} is not right of the lead", p.pane);
    }

    for (i, name) in names.iter().enumerate().skip(3) {
        let colour = PALETTE[(i + 1) % PALETTE.len()];
        ids.push(
            tw.add_teammate(&agent(name), colour, &sleeper(dir))
                .unwrap(),
        );
    }
    let panes = tw.panes().unwrap();
    assert_eq!(panes.len(), 9);
    let mut per_window: BTreeMap<_, Vec<&PaneRecord>> = BTreeMap::new();
    for p in &panes {
        per_window.entry(p.window).or_default().push(p);
    }
    let counts: Vec<usize> = per_window.values().map(Vec::len).collect();
    assert_eq!(counts, [6, 3], "panes per window");
    assert!(per_window[&l.window].iter().any(|p| p.pane == lead));
    assert!(panes.iter().all(|p| p.session == tw.session()));

    // Every pane: tagged, kept when dead, its agent's name in its border in its colour.
    // Border styles are window options holding a format; `E:` expands one for a pane.
    let lead_colour = tmux_colour(PALETTE[0]);
    assert_eq!(
        pane(&panes, lead).unwrap().agent.as_deref(),
        Some("team-lead")
    );
    assert_eq!(
        option(&tmux, lead, "E:pane-border-style"),
        format!("fg={lead_colour}")
    );
    for (i, (id, name)) in ids.iter().zip(&names).enumerate() {
        let p = pane(&panes, *id).unwrap();
        let colour = tmux_colour(PALETTE[(i + 1) % PALETTE.len()]);
        assert_eq!(p.team.as_deref(), Some("blue-team"));
        assert_eq!(p.agent.as_deref(), Some(name.as_str()));
        assert_eq!(&p.title, name);
        assert!(!p.dead);
        assert_eq!(option(&tmux, *id, "remain-on-exit"), "on");
        assert_eq!(
            option(&tmux, *id, "E:pane-border-style"),
            format!("fg={colour}")
        );
        assert_eq!(
            option(&tmux, *id, "E:pane-active-border-style"),
            format!("fg={colour},bold")
        );
        assert_eq!(
            option(&tmux, *id, "pane-border-format"),
            format!("#[fg={colour},bold] #{{@swarm-agent}} #[default]")
        );
        assert_eq!(option(&tmux, *id, "pane-border-status"), "top");
    }
    // The purple and orange teammates use Claude Code's tmux colour names.
    assert_eq!(option(&tmux, ids[3], "E:pane-border-style"), "fg=magenta");
    assert_eq!(option(&tmux, ids[4], "E:pane-border-style"), "fg=colour208");

    // A fresh process finds the window from the tags and adds to it.
    let mut again = TeamWindow::find(&tmux, &t, opts(&env))
        .unwrap()
        .expect("found");
    assert_eq!(again.session(), tw.session());
    let tenth = again
        .add_teammate(&agent("mate9"), "cyan", &sleeper(dir))
        .unwrap();
    let panes = again.panes().unwrap();
    assert_eq!(panes.len(), 10);
    assert_ne!(pane(&panes, tenth).unwrap().window, l.window);

    // One pane per agent.
    let e = again
        .add_teammate(&agent("mate1"), "red", &sleeper(dir))
        .unwrap_err();
    assert_eq!(e.exit_code(), exit::CONFLICT, "{e}");
    // One window per team.
    let e =
        TeamWindow::open(&tmux, &t, &sleeper(dir), Placement::Detached, opts(&env)).unwrap_err();
    assert_eq!(e.exit_code(), exit::CONFLICT, "{e}");
    assert!(
        TeamWindow::find(&tmux, &team("other"), opts(&env))
            .unwrap()
            .is_none()
    );

    assert_eq!(tw.close().unwrap(), 10);
    assert!(TeamWindow::find(&tmux, &t, opts(&env)).unwrap().is_none());
    assert!(!tmux.has_session("swarm-blue-team").unwrap());
    // That was the server's last session, so it exits (exit-empty), a moment later;
    // until then it has no panes. Opening again starts a new one on the same socket.
    assert!(wait_until(WAIT, || match tmux.list_panes() {
        Ok(panes) => {
            assert!(panes.is_empty(), "{panes:?}");
            false
        }
        Err(e) => e.is_no_server(),
    }));
    let tw = TeamWindow::open(&tmux, &t, &sleeper(dir), Placement::Detached, opts(&env)).unwrap();
    assert_eq!(tw.panes().unwrap().len(), 1);
}

#[test]
fn a_teammate_that_dies_leaves_its_pane_and_exit_status() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path();
    let t = team("crashy");
    let mut tw =
        TeamWindow::open(&tmux, &t, &sleeper(dir), Placement::Detached, opts(&env)).unwrap();
    let py = python3().display().to_string();
    let p = tw
        .add_teammate(
            &agent("crasher"),
            "green",
            &PaneSpec::new(dir, [py.as_str(), "-c", "import sys; sys.exit(3)"]),
        )
        .unwrap();
    // tmux sees the pty close a moment before it reaps the process: wait for the status.
    assert!(wait_until(WAIT, || {
        tw.panes()
            .unwrap()
            .iter()
            .any(|r| r.pane == p && r.dead && r.dead_status.is_some())
    }));
    let r = tw
        .panes()
        .unwrap()
        .into_iter()
        .find(|r| r.pane == p)
        .unwrap();
    assert_eq!(r.dead_status, Some(3));
    assert_eq!(r.agent.as_deref(), Some("crasher"));
    // The dead pane still holds the agent's place until it is killed.
    let e = tw
        .add_teammate(&agent("crasher"), "green", &sleeper(dir))
        .unwrap_err();
    assert!(e.to_string().contains("(dead)"), "{e}");
    tw.kill_pane(p).unwrap();
    tw.add_teammate(&agent("crasher"), "green", &sleeper(dir))
        .unwrap();
}

#[test]
fn close_and_kill_pane_never_touch_a_users_panes() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path();
    let user = tmux
        .new_session(&NewSession {
            name: "user",
            window_name: None,
            size: Some((200, 50)),
            spec: &sleeper(dir),
        })
        .unwrap();
    let t = team("careful");
    let mut tw =
        TeamWindow::open(&tmux, &t, &sleeper(dir), Placement::Detached, opts(&env)).unwrap();
    let a = tw.add_teammate(&agent("a"), "blue", &sleeper(dir)).unwrap();
    let b = tw
        .add_teammate(&agent("b"), "green", &sleeper(dir))
        .unwrap();
    let lead = tw.lead_pane().unwrap().unwrap();
    // The user splits the team's window...
    let intruder = tmux
        .split_window(lead, Direction::Vertical, None, &sleeper(dir))
        .unwrap();
    // ...and forges the team's tags on their own window, naming their pane: a tag a pane
    // inherits from its window, which only a kill's pane-scope check sees through.
    tmux.set_window_option(user.window, TEAM_OPTION, "careful")
        .unwrap();
    tmux.set_window_option(user.window, PANE_OPTION, &user.pane.to_string())
        .unwrap();
    let listed = |tw: &TeamWindow| -> BTreeSet<PaneId> {
        tw.panes().unwrap().iter().map(|p| p.pane).collect()
    };
    assert_eq!(listed(&tw), BTreeSet::from([lead, a, b, user.pane]));

    for p in [user.pane, intruder] {
        let e = tw.kill_pane(p).unwrap_err();
        assert_eq!(e.exit_code(), exit::CONFLICT, "{e}");
        assert!(alive(&tmux, p));
    }

    tw.kill_pane(a).unwrap();
    assert!(!alive(&tmux, a));
    tw.kill_pane(a).unwrap();

    assert_eq!(tw.close().unwrap(), 2);
    assert!(!alive(&tmux, b) && !alive(&tmux, lead));
    assert!(alive(&tmux, user.pane));
    assert!(alive(&tmux, intruder));
    // The team's session stays while it holds the user's pane.
    assert!(tmux.has_session("swarm-careful").unwrap());
    assert_eq!(listed(&tw), BTreeSet::from([user.pane]));
    assert_eq!(tw.close().unwrap(), 0);
    assert!(alive(&tmux, user.pane));
}

#[test]
fn inside_tmux_the_team_gets_its_own_window_in_the_users_session() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path();
    let user = keeper(&env, &tmux);
    let t = team("inside");
    // As for a lead started from the user's pane ($TMUX_PANE).
    let placement = Placement::beside(&tmux, user.pane).unwrap();
    assert_eq!(placement, Placement::InSession(user.session));
    let mut tw = TeamWindow::open(&tmux, &t, &sleeper(dir), placement, opts(&env)).unwrap();
    assert_eq!(tw.session(), user.session);
    for name in ["a", "b"] {
        tw.add_teammate(&agent(name), "yellow", &sleeper(dir))
            .unwrap();
    }
    let all = tmux.list_panes().unwrap();
    let team_windows: BTreeSet<_> = all
        .iter()
        .filter(|p| p.belongs_to("inside"))
        .map(|p| p.window)
        .collect();
    assert_eq!(team_windows.len(), 1);
    assert!(
        !team_windows.contains(&user.window),
        "the user's window was split"
    );
    assert_eq!(all.iter().filter(|p| p.window == user.window).count(), 1);
    assert_eq!(
        tmux.display(&user.pane, "#{window_active}").unwrap(),
        "1",
        "focus moved off the user's window"
    );
    assert_eq!(tw.close().unwrap(), 3);
    let all = tmux.list_panes().unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].pane, user.pane);
}

#[test]
fn concurrent_processes_adding_teammates_respect_the_window_limit() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path().to_path_buf();
    let t = team("busy");
    let mut o = opts(&env);
    o.panes_per_window = 3;
    TeamWindow::open(&tmux, &t, &sleeper(&dir), Placement::Detached, o.clone()).unwrap();
    // Each thread opens the lock file itself, as separate processes would.
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let (tmux, t, o, dir) = (tmux.clone(), t.clone(), o.clone(), dir.clone());
            std::thread::spawn(move || {
                let mut tw = TeamWindow::find(&tmux, &t, o).unwrap().unwrap();
                for j in 0..2 {
                    tw.add_teammate(&agent(&format!("w{i}-{j}")), "pink", &sleeper(&dir))
                        .unwrap();
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    let tw = TeamWindow::find(&tmux, &t, o).unwrap().unwrap();
    let panes = tw.panes().unwrap();
    assert_eq!(panes.len(), 9);
    let agents: BTreeSet<_> = panes.iter().map(|p| p.agent.clone().unwrap()).collect();
    assert_eq!(agents.len(), 9);
    let mut per_window: BTreeMap<_, usize> = BTreeMap::new();
    for p in &panes {
        *per_window.entry(p.window).or_default() += 1;
    }
    assert_eq!(per_window.values().copied().collect::<Vec<_>>(), [3, 3, 3]);
}

#[test]
fn secrets_reach_the_pane_but_no_command_line() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let out = env.dir.path().join("secret.out");
    let secret = "sk-'quote\"dq$var;semi#{pane_id}\\back";
    let spec = PaneSpec::new(
        env.dir.path(),
        ["python3", "-c", "import os,sys; open(sys.argv[1],'w').write(os.environ.get('SWARM_TEST_KEY','<unset>'))", &out.display().to_string()],
    )
    .secret_env("SWARM_TEST_KEY", secret);
    let team = swarm::store::names::TeamName::new("sec").unwrap();
    let opts = swarm::team::window::TeamWindowOptions::new(env.dir.path().join("tmux.flock"));
    let lead = PaneSpec::new(env.dir.path(), ["sleep", "600"]);
    let mut tw = swarm::team::window::TeamWindow::open(
        &tmux,
        &team,
        &lead,
        swarm::team::window::Placement::Detached,
        opts,
    )
    .unwrap();
    let pane = tw
        .add_teammate(
            &swarm::store::names::AgentName::new("bob").unwrap(),
            "blue",
            &spec,
        )
        .unwrap();
    assert!(crate::harness::wait_until(Duration::from_secs(20), || {
        std::fs::read_to_string(&out).is_ok_and(|s| !s.is_empty())
    }));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), secret);
    let start = tmux.display(&pane, "#{pane_start_command}").unwrap();
    assert!(!start.contains("sk-"), "{start}");
    // Gone from the session environment again.
    let session_env = std::process::Command::new("tmux")
        .args([
            "-L",
            &env.tmux_socket,
            "show-environment",
            "-t",
            &tw.session().to_string(),
        ])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&session_env.stdout).contains("SWARM_TEST_KEY"));
    // A value tmux cannot be given quietly is refused, not passed in argv.
    let bad = PaneSpec::new(env.dir.path(), ["sleep", "1"]).secret_env("K", "line\nbreak");
    assert!(
        tw.add_teammate(
            &swarm::store::names::AgentName::new("carol").unwrap(),
            "green",
            &bad
        )
        .is_err()
    );
}
